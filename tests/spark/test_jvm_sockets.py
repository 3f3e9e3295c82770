"""A job that runs for months must not hold a socket per micro-batch: Spark 4.2.0's state server
for transformWithState never closed the connection it accepted from each task's Python worker
(SPARK-58932, fixed in 4.2.1), so the JVM gained two sockets in CLOSE_WAIT a micro-batch (a soak
showed 26 a minute at the default trigger) until it ran out of ports."""
from __future__ import annotations

import os

from streaming.job.lifecycle import Job
from tests.support.job_support import mixed_timeline, replay_config, timeline_lines, write_capture

_CLOSE_WAIT = "08"


def close_wait_sockets(pid: int) -> int:
    """Sockets of process `pid` in CLOSE_WAIT: the peer closed, the process never did."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue  # closed meanwhile
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    count = 0
    for table in ("tcp", "tcp6"):
        with open(f"/proc/{pid}/net/{table}") as fh:
            next(fh)
            for line in fh:
                fields = line.split()
                if fields[3] == _CLOSE_WAIT and fields[9] in inodes:
                    count += 1
    return count


def test_micro_batches_leave_no_socket_behind(spark, tmp_path):
    jvm_pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
    lines = timeline_lines(mixed_timeline())
    capture = write_capture(str(tmp_path / "capture.jsonl"), lines)
    config = replay_config(tmp_path, capture, GROUPSCOPE_SOURCE__MAX_RECORDS_PER_TRIGGER=str(len(lines) // 8 + 1),
                           GROUPSCOPE_TRIGGER__INTERVAL="100ms")
    before = close_wait_sockets(jvm_pid)
    job = Job(config, spark=spark, start_exporter=False, start_poller=False)
    try:
        job.start().processAllAvailable()
        batches = job.sink.batches
    finally:
        job.stop()
    assert batches >= 8
    assert close_wait_sockets(jvm_pid) - before < batches // 2, "sockets left behind by micro-batches"
