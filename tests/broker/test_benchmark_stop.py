"""A benchmark stopped by SIGTERM stops every process it started and removes its temporary
folders, then exits (benchmarks/_stopping.py): `python -m benchmarks.burrow` on a tiny shape,
stopped once its Kafka broker runs (and ZooKeeper, where Burrow is installed) and its groupscope
job has started its driver JVM."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from tests.support.jvm_children import children_of
from tests.support.kafka_broker import REPO_ROOT

TINY = ("--commits", "200", "--commits-large", "400", "--groups", "10", "--groups-large", "20",
        "--partitions", "2", "--steady-seconds", "1", "--settle", "1", "--many-groups", "0",
        "--timeout", "300")
STOP_TIMEOUT_S = 300.0   # the job's own stop (up to a minute), the broker's, the sweep's
# (pid, its start time in /proc/<pid>/stat) -> its command line, as last read: one read may
# come between a fork and the exec that names the command
Seen = dict[tuple[int, str], str]


def _start_time(pid: int) -> str | None:
    """Field 22 of /proc/<pid>/stat, None once the process is gone or a zombie: with the pid it
    names one process, whatever reuses the pid later."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else fields[19]


def _record_tree(root: int, seen: Seen) -> None:
    frontier = [root]
    while frontier:
        for pid, command in children_of(frontier.pop(), "").items():
            started = _start_time(pid)
            if started is not None:
                seen[(pid, started)] = command
            frontier.append(pid)


def _alive(seen: Seen) -> dict[int, str]:
    return {pid: command for (pid, started), command in seen.items() if _start_time(pid) == started}


def _has(seen: Seen, marker: str) -> bool:
    return any(marker in command for command in seen.values())


def _job_started_its_jvm(seen: Seen) -> bool:
    """The groupscope job runs, and below it the Spark driver's JVM: a tree three deep."""
    return _has(seen, "groupscope run") and _has(seen, "org.apache.spark.deploy.SparkSubmit")


def test_a_stopped_benchmark_leaves_no_process_and_no_temporary_folder(tmp_path):
    sig = signal.SIGTERM   # SIGINT takes the same path: tests/unit/test_bench_stopping.py has both
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    log_path = tmp_path / "bench.log"
    seen: Seen = {}
    with open(log_path, "wb") as log:
        bench = subprocess.Popen([sys.executable, "-m", "benchmarks.burrow", *TINY], cwd=REPO_ROOT,
                                 env=dict(os.environ, TMPDIR=str(scratch)), stdout=log,
                                 stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not (_has(seen, " kafka.Kafka ") and _job_started_its_jvm(seen)):
            assert bench.poll() is None, log_path.read_text()[-3000:]
            assert time.monotonic() < deadline, f"no broker and job after 300 s: {seen}"
            _record_tree(bench.pid, seen)
            time.sleep(0.2)
        bench.send_signal(sig)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while bench.poll() is None and time.monotonic() < deadline:
            _record_tree(bench.pid, seen)   # whatever the stop itself starts is checked too
            time.sleep(0.2)
        assert _alive(seen) == {}
        assert list(scratch.iterdir()) == []
        assert bench.poll() == 128 + sig, log_path.read_text()[-3000:]
    finally:   # what a failed stop left, never left for the next test: the session is the test's
        for pid in _alive(seen):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.killpg(bench.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        bench.wait()
