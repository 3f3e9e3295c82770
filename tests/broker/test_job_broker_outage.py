"""A broker outage in the middle of a run: the job keeps running, reads nothing while the broker is
away, and continues where it stopped once the broker is back, with nothing skipped or counted
twice.

tansu keeps its data in memory, so "the broker comes back" is a new tansu on the same address with
the same log produced again (the same records at the same offsets) plus new records. This test
has a broker of its own: stopping the session's broker would take it away from the other tests.
"""
from __future__ import annotations

import os
import time

from tests.support.tansu import create_topic, produce_raw, start_broker
from coordinator import partition_for
from coordinator.records import encode
from tests.support.state_timeline import offset_commit
from streaming.config import load_config
from streaming.job.lifecycle import Job

T0 = int(time.time() * 1000)
TOPIC = "offsets-outage"


def _commits(first: int, last: int) -> list:
    p = partition_for("outage-app", 50)
    out = []
    for i in range(first, last + 1):
        key, value = encode(offset_commit("outage-app", "orders", 0, i, T0 + i))
        out.append((p, key, value, T0 + i))
    return out


def _log(bootstrap: str, last: int) -> None:
    create_topic(bootstrap, TOPIC, 50)
    produce_raw(bootstrap, TOPIC, _commits(0, last))


def _committed(job: Job) -> int | None:
    group = job.view.groups.get("outage-app")
    entry = group.partitions.get(("orders", 0)) if group else None
    return entry.offset if entry else None


def test_job_survives_a_broker_outage(spark, tmp_path):
    broker = start_broker()
    port = int(broker.bootstrap.rsplit(":", 1)[1])
    job = None
    try:
        _log(broker.bootstrap, 9)
        env = {
            "GROUPSCOPE_SOURCE__BOOTSTRAP_SERVERS": broker.bootstrap,
            "GROUPSCOPE_SOURCE__TOPIC": TOPIC,
            "GROUPSCOPE_CHECKPOINT__PATH": os.path.join(str(tmp_path), "checkpoint"),
            "GROUPSCOPE_HISTORY__PATH": os.path.join(str(tmp_path), "history"),
            "GROUPSCOPE_TRIGGER__INTERVAL": "500ms",
            "GROUPSCOPE_LAG__TIMEOUT": "2s",
        }
        job = Job(load_config(None, env=env), spark=spark, start_exporter=False, start_poller=False)
        job.start().processAllAvailable()
        assert _committed(job) == 9

        broker.stop()                    # the outage: triggers keep firing against nothing
        batches = job.sink.batches
        time.sleep(6)
        assert job.query.isActive and job.query.exception() is None
        assert job.sink.batches == batches  # nothing read while the broker was away

        broker = start_broker(port=port)  # back on the same address, same log, and more
        _log(broker.bootstrap, 19)
        # The query's own triggers pick the log up again (processAllAvailable could wait forever
        # if they did not, so the test only watches, with a deadline).
        deadline = time.monotonic() + 180
        while _committed(job) != 19 and time.monotonic() < deadline and job.query.isActive:
            time.sleep(0.5)
        assert _committed(job) == 19
        assert job.query.exception() is None
        assert job.view.records_total == {"offset_commit": 20}  # the first ten once, not twice
    finally:
        if job is not None:
            job.stop()
        broker.stop()
