"""`groupscope run -c config.yaml`: the monitoring job, until stopped.

Works the same under `spark-submit` (the session spark-submit made is used, and its master wins)
and as a plain command (a session is built from `spark.master`).
"""
from __future__ import annotations

import logging
import os
import threading

from streaming.errors import UserError
from streaming.cli.commands.signals import spark_outside_the_process_group, stop_on_signals
from streaming.config import load_fleet
from streaming.kafka.client_settings import SettingError
from streaming.kafka.close_noise import quiet_closes
from streaming.kafka.refusal_noise import quiet_refusals


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "run", help="run the monitoring job (reads __consumer_offsets, serves /metrics)",
        description="Run the groupscope streaming job with a YAML config "
                    "(see config.example.yaml; GROUPSCOPE_* environment variables override it).")
    parser.add_argument("-c", "--config", help="YAML config file (default: $GROUPSCOPE_CONFIG, "
                        "else every key at its default)")
    parser.set_defaults(func=run)


def _job(fleet: list, stop: threading.Event):
    """What runs the config: a query per cluster (several clusters), an Admin API poller
    (`source.type: admin`, no Spark) or the streaming job."""
    from streaming.job.admin_job import AdminJob
    from streaming.job.fleet import Fleet
    from streaming.job.lifecycle import Job

    try:
        if len(fleet) > 1:
            return Fleet(fleet, stop_asked=stop)
        if fleet[0].source.type == "admin":
            return AdminJob(fleet[0])
        return Job(fleet[0], stop_asked=stop)
    except ValueError as exc:  # a client setting that cannot be used, named
        raise UserError(f"{'clusters' if len(fleet) > 1 else 'source'}: {exc}") from None


def run(args) -> int:
    fleet = load_fleet(args.config)
    config = fleet[0]
    # groupscope's own messages at INFO; the libraries' (kafka-python logs every connection it
    # opens and closes, py4j its callback server) only from WARNING.
    logging.basicConfig(level=logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("groupscope")
    log.setLevel(logging.INFO)
    quiet_closes()
    quiet_refusals()
    stop = stop_on_signals(threading.Event())  # a stop asked for while Spark starts counts too
    if config.source.type == "simulator" and len(fleet) == 1:
        # A demo source: every start runs the scenarios afresh (its capture file lives here).
        from streaming.cli.commands.demo import Demo

        work_dir = os.path.join(config.checkpoint.path, "simulator")
        os.makedirs(work_dir, exist_ok=True)
        demo = Demo(config, work_dir).start()
        job, stop_job = demo.job, demo.stop
    else:
        job = _job(fleet, stop)
        stop_job = job.stop
        try:
            with spark_outside_the_process_group():
                job.start()
        except OSError as exc:  # e.g. the exporter's port is taken
            raise UserError(f"cannot start: {exc}") from None
        except SettingError as exc:  # found as the Kafka clients are made: a secret, a store
            stop_job()
            raise UserError(f"source: {exc}") from None
    stop_on_signals(stop)  # again: starting Spark replaced the SIGINT handler
    if job.exporter is not None:
        host = config.exporter.listen.rpartition(":")[0]
        scheme = "https" if config.exporter.tls.cert else "http"
        log.info("serving metrics on %s://%s:%d/metrics", scheme, host, job.exporter.port)
    try:
        job.wait(stop)
    except RuntimeError as exc:
        raise UserError(f"the streaming query failed: {exc}") from None
    finally:
        stop_job()
    return 0
