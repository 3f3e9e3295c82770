"""The job on a Spark standalone cluster, with 1 and with 2 workers (prints figures; asserts
nothing).

The job runs as users run it on a cluster: `spark-submit --master spark://... --deploy-mode client
deploy/groupscope/launch.py run`, on a master and N workers of 1 core each started from the
installed PySpark on 127.0.0.1 (tests/support/spark_cluster.py). Its data are commits made
through Kafka's OffsetCommit API (benchmarks/commit_load.py), so the broker writes
`__consumer_offsets` itself: a preloaded backlog, then a steady load. For each worker count:

* start-up: spark-submit until the exporter answers (driver JVM, executors, query start);
* catch-up: from then until `groupscope_ready` is 1, i.e. the backlog the job saw at start is
  read; the backlog is the preload plus the commits of earlier runs' steady phases;
* latency: the same job, caught up, while `commit_load.steady` commits at `--rate` commits/s; a
  commit's latency is the moment a scrape of /metrics first shows its commit timestamp minus that
  timestamp (so it includes up to one `--scrape-interval`), measured after `--settle` seconds.

A CPU probe (a fixed pure-Python loop, seconds) is printed first and last: on a shared machine it
tells how much of the machine the figures had.

Usage (from the repository root):
    python -m benchmarks.cluster [--records N] [--groups N] [--partitions N] [--workers 1 2]
        [--rate R] [--trigger S] [--latency-seconds S] [--settle S] [--scrape-interval S]
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
from pathlib import Path

from benchmarks import commit_load
from benchmarks._stopping import stop_everything_at_exit
from tests.support.kafka_broker import (OFFSETS_TOPIC, OFFSETS_TOPIC_PARTITIONS, end_offsets, free_port,
                                        start_kafka)
from tests.support.scrape_support import scrape
from tests.support.spark_cluster import (spark_cluster, spark_submit_command, start_submitted,
                                         stop_submitted)

LAUNCH = Path(__file__).resolve().parents[1] / "deploy" / "groupscope" / "launch.py"
CLUSTER_NAME = "bench"
CPU_PROBE = "import time;t=time.time();sum(i*i for i in range(10**7));print(round(time.time()-t,2))"
COMMIT_TS_SERIES = "kafka_consumergroup_commit_timestamp_seconds{"


def cpu_probe() -> str:
    done = subprocess.run(["python3", "-c", CPU_PROBE], capture_output=True, text=True, timeout=120)
    return done.stdout.strip() or done.stderr.strip()


def job_env(base: dict[str, str], args, bootstrap: str, workdir: Path, port: int) -> dict[str, str]:
    """The job's configuration, all through GROUPSCOPE_ variables (config.example.yaml's keys)."""
    return {**base,
            "GROUPSCOPE_CLUSTER__NAME": CLUSTER_NAME,
            "GROUPSCOPE_SOURCE__BOOTSTRAP_SERVERS": bootstrap,
            "GROUPSCOPE_SOURCE__STARTING_OFFSETS": "earliest",
            "GROUPSCOPE_CHECKPOINT__PATH": str(workdir / "checkpoint"),
            "GROUPSCOPE_HISTORY__PATH": str(workdir / "history"),
            "GROUPSCOPE_EXPORTER__LISTEN": f"127.0.0.1:{port}",
            "GROUPSCOPE_TRIGGER__INTERVAL": f"{args.trigger}s"}


def metrics_text(port: int) -> str | None:
    try:
        return scrape(port)[1]
    except (urllib.error.URLError, ConnectionError, OSError):
        return None


def ready(text: str) -> bool:
    series = f'groupscope_ready{{cluster="{CLUSTER_NAME}"}} '
    return any(line.startswith(series) and float(line[len(series):]) == 1
               for line in text.splitlines())


def commit_timestamps(text: str) -> dict[str, float]:
    """Series labels -> commit timestamp (seconds) of every partition the exporter shows."""
    out = {}
    for line in text.splitlines():
        if line.startswith(COMMIT_TS_SERIES):
            labels, _, value = line.rpartition(" ")
            out[labels] = float(value)
    return out


def wait_for(what: str, check, process: subprocess.Popen, log: Path, timeout_s: float,
             interval_s: float = 0.1):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the job exited ({process.returncode}) before {what}:\n"
                               f"{log.read_text(errors='replace')[-3000:]}")
        result = check()
        if result:
            return result
        time.sleep(interval_s)
    raise RuntimeError(f"{what}: not within {timeout_s}s:\n{log.read_text(errors='replace')[-3000:]}")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def steady_latencies(args, port: int, bootstrap: str, first_round: int) -> list[float]:
    """Latencies (s) of the commits made after `--settle` seconds of load at `--rate`."""
    producer = multiprocessing.Process(target=commit_load.steady, args=(
        bootstrap, args.rate, args.settle + args.latency_seconds, args.groups, args.partitions,
        first_round))
    seen = commit_timestamps(metrics_text(port) or "")
    producer.start()
    measured_from = time.time() + args.settle
    latencies: list[float] = []
    stop_at = None
    while stop_at is None or time.time() < stop_at:
        if stop_at is None and not producer.is_alive():
            stop_at = time.time() + args.trigger + 5.0  # the last commits' batch
        text = metrics_text(port)
        now = time.time()
        for labels, ts in commit_timestamps(text or "").items():
            if seen.get(labels) != ts:
                seen[labels] = ts
                if ts >= measured_from:
                    latencies.append(now - ts)
        time.sleep(args.scrape_interval)
    producer.join()
    return latencies


def run_on_cluster(args, workers: int, bootstrap: str, workdir: Path, first_round: int) -> None:
    backlog = sum(end_offsets(bootstrap, OFFSETS_TOPIC, range(OFFSETS_TOPIC_PARTITIONS)).values())
    with spark_cluster(workers=workers, cores=1, memory=args.worker_memory) as cluster:
        port = free_port()
        run_dir = workdir / f"workers-{workers}"
        run_dir.mkdir()
        log = run_dir / "job.log"
        conf = dict(args.conf)
        command = spark_submit_command(cluster, LAUNCH, ["run"], conf=conf)
        started = time.perf_counter()
        process = start_submitted(command, job_env(cluster.env, args, bootstrap, run_dir, port),
                                  run_dir, log)
        try:
            first = wait_for("the exporter answers", lambda: metrics_text(port), process, log, 300)
            up = time.perf_counter()
            if not ready(first):
                wait_for("groupscope_ready", lambda: ready(metrics_text(port) or ""), process, log,
                         args.catchup_timeout)
            caught_up = time.perf_counter()
            catch_up = caught_up - up
            print(f"{workers} worker(s): start-up {up - started:.1f}s; catch-up of {backlog:,} "
                  f"commits {catch_up:.1f}s = {backlog / catch_up:,.0f} commits/s "
                  f"(trigger {args.trigger}s; up to 0.1s of polling)")
            if args.latency_seconds > 0:
                latencies = steady_latencies(args, port, bootstrap, first_round)
                if not latencies:
                    print(f"{workers} worker(s): latency: no measured commit reached /metrics")
                    return
                print(f"{workers} worker(s): latency at {args.rate:,.0f} commits/s, trigger "
                      f"{args.trigger}s: p50 {percentile(latencies, 0.5):.2f}s, p99 "
                      f"{percentile(latencies, 0.99):.2f}s, max {max(latencies):.2f}s over "
                      f"{len(latencies):,} commits (scraped every {args.scrape_interval}s, "
                      f"{args.latency_seconds:.0f}s after {args.settle:.0f}s of load)")
        finally:
            stop_submitted(process)


def preload(bootstrap: str, args) -> int:
    """The backlog, committed through the OffsetCommit API; returns the rounds written."""
    commit_load.create_topics(bootstrap, args.groups, args.partitions)
    started = time.perf_counter()
    rounds = args.records // (args.groups * args.partitions)
    count = commit_load.preload(bootstrap, args.groups, args.partitions, rounds)
    print(f"preloaded {count:,} commits in {time.perf_counter() - started:.1f}s: {args.groups} "
          f"groups x {args.partitions} partitions x {rounds} rounds ({os.cpu_count()} cores)")
    return rounds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--groups", type=int, default=400)
    parser.add_argument("--partitions", type=int, default=25, help="partitions per group")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--worker-memory", default="1g")
    parser.add_argument("--trigger", type=float, default=0.5, help="trigger interval, seconds")
    parser.add_argument("--catchup-timeout", type=float, default=1800.0)
    parser.add_argument("--rate", type=float, default=1_000.0, help="steady commits/s")
    parser.add_argument("--latency-seconds", type=float, default=30.0)
    parser.add_argument("--settle", type=float, default=30.0,
                        help="seconds of load before latencies are measured")
    parser.add_argument("--scrape-interval", type=float, default=0.1)
    parser.add_argument("--conf", action="append", default=[], type=lambda s: tuple(s.split("=", 1)),
                        help="extra Spark setting key=value for spark-submit (repeatable)")
    args = parser.parse_args()

    print(f"CPU probe before: {cpu_probe()}s")
    broker = start_kafka()
    workdir = Path(tempfile.mkdtemp(prefix="groupscope-cluster-bench-"))
    try:
        rounds = preload(broker.bootstrap, args)
        for workers in args.workers:
            run_on_cluster(args, workers, broker.bootstrap, workdir, rounds + 1)
    finally:
        broker.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"CPU probe after: {cpu_probe()}s")


if __name__ == "__main__":
    stop_everything_at_exit()
    main()
