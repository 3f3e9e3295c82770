"""groupscope run as users run it: `.venv/bin/groupscope run -c <yaml>` in a subprocess, against a
real broker's `__consumer_offsets`, scraped over HTTP like Prometheus does; or the same job, from
the same config file, as a query of the test session's Spark (`run_groupscope_job`), for tests
about what the job shows rather than how its process starts and stops: a query starts in a
second where a process needs a JVM of its own.

The history is written as JSON lines with `snapshot_interval: 0`, so every group a micro-batch
touches gets a snapshot: the per-member assignment (not a metric series, only a count is) is read
from there.
"""
from __future__ import annotations

import logging
import os
import subprocess
import time
import urllib.error
import uuid
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streaming.job.history import latest_snapshots, read_history
from tests.support.kafka_broker import REPO_ROOT, free_port
from tests.support.scrape_support import parse, scrape
from tests.support.processes import stop_gracefully

GROUPSCOPE = REPO_ROOT / ".venv" / "bin" / "groupscope"
CLUSTER = "parity"

Samples = dict[str, dict[frozenset, float]]


@dataclass
class GroupscopeJob:
    process: subprocess.Popen | None
    port: int
    workdir: Path
    job: Any = None  # the streaming.job.lifecycle.Job of an in-process run
    _log_handler: logging.Handler | None = None

    @property
    def history_path(self) -> str:
        return str(self.workdir / "history")

    def log(self) -> str:
        return (self.workdir / "job.log").read_text(errors="replace")

    def scrape(self) -> Samples:
        return parse(scrape(self.port)[1])

    def snapshots(self) -> dict[str, dict[str, Any]]:
        """The latest snapshot of every group in the job's history (the job's own reading of the
        group's state, members with their partitions included)."""
        return dict(latest_snapshots(read_history(self.history_path, "snapshots")))

    def caught_up(self, samples: Samples) -> bool:
        """The job has read `__consumer_offsets` to the end it last saw."""
        progress = samples.get("groupscope_offsets_topic_lag", {})
        ready = samples.get("groupscope_ready", {}).get(frozenset({("cluster", CLUSTER)}))
        return ready == 1 and bool(progress) and all(v == 0 for v in progress.values())

    def stop(self) -> None:
        """SIGTERM (the job's clean stop), SIGKILL after 30 s; an in-process job's own stop."""
        if self.job is not None:
            try:
                self.job.stop()
            finally:
                if self._log_handler is not None:
                    logging.getLogger("groupscope").removeHandler(self._log_handler)
                    self._log_handler.close()
            return
        stop_gracefully(self.process, 30)


def _config(bootstrap: str, workdir: Path, port: int, member_lag: bool = False,
            time_method: str = "estimate", share_state: bool = False,
            rate_window: str | None = None, include: tuple[str, ...] = ()) -> str:
    # source.share_state (on by default) only where a test watches share groups' delivery
    # state: its second query costs every other job's start and triggers
    return f"""cluster: {{name: {CLUSTER}}}
metrics: {{member_lag: {str(member_lag).lower()}}}
source: {{bootstrap_servers: "{bootstrap}", share_state: {str(share_state).lower()}}}
checkpoint: {{path: "{workdir / 'checkpoint'}"}}
history: {{path: "{workdir / 'history'}", format: json, snapshot_interval: 0s}}
exporter: {{listen: "127.0.0.1:{port}"}}
lag: {{poll_interval: 1s, time_method: {time_method}{
    f", rate_window: {rate_window}" if rate_window else ""}}}
trigger: {{interval: 0.5s}}
groups: {{dead_grace: 1h{f", include: {list(include)!r}" if include else ""}}}
"""


def start_groupscope_job(bootstrap: str, workdir: Path, timeout_s: float = 120.0,
                         time_method: str = "estimate") -> GroupscopeJob:
    """Start the job on `bootstrap` and wait until it serves `/metrics` (on a new broker
    `__consumer_offsets` appears only with the first group, so readiness is checked later, at
    each quiet point: `caught_up`). `time_method`: lag.time_method."""
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = workdir / "groupscope.yaml"
    config.write_text(_config(bootstrap, workdir, port, time_method=time_method))
    env = {k: v for k, v in os.environ.items() if not k.startswith("GROUPSCOPE_")}
    with open(workdir / "job.log", "ab") as log:
        process = subprocess.Popen([str(GROUPSCOPE), "run", "-c", str(config)], cwd=workdir,
                                   stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, env=env)
    job = GroupscopeJob(process, port, workdir)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"groupscope run exited with {process.returncode}:\n{job.log()[-3000:]}")
        try:
            if scrape(port)[0] == 200:
                return job
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        time.sleep(0.5)
    job.stop()
    raise RuntimeError(f"groupscope run not ready in {timeout_s}s:\n{job.log()[-3000:]}")


def run_groupscope_job(spark, bootstrap: str, workdir: Path, member_lag: bool = False,
                       share_state: bool = False, time_method: str = "estimate",
                       rate_window: str | None = None,
                       include: tuple[str, ...] = ()) -> GroupscopeJob:
    """The job of `start_groupscope_job`'s config file, as a query of `spark` in this process,
    serving its own exporter (`member_lag`: metrics.member_lag; `share_state`:
    source.share_state; `time_method`, `rate_window`: lag's; `include`: groups.include). Its
    log is groupscope's log while it runs (every in-process job's lines, when several run at once)."""
    from streaming.config import load_config
    from streaming.job.lifecycle import Job

    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "groupscope.yaml"
    config.write_text(_config(bootstrap, workdir, 0, member_lag, time_method=time_method,
                              share_state=share_state, rate_window=rate_window,
                              include=include))
    handler = logging.FileHandler(workdir / "job.log")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger("groupscope")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    # Active queries of one session need names of their own.
    job = Job(load_config(str(config), env={}), spark=spark,
              query_name=f"groupscope-{uuid.uuid4().hex[:8]}")
    try:
        job.start()
    except BaseException:
        logger.removeHandler(handler)
        handler.close()
        raise
    return GroupscopeJob(None, job.exporter.port, workdir, job, handler)
