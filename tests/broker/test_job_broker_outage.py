"""A broker outage in the middle of a run: the job keeps running, reads nothing while the broker is
away, and continues where it stopped once the broker is back, with nothing skipped or counted
twice.

The outage is a crash: the broker is killed (SIGKILL) and restarted on the same address with its
log kept on disk, then new records arrive. This test has a broker of its own: killing the
session's broker would take it away from the other tests.
"""
from __future__ import annotations

import os
import time

from tests.support.kafka_broker import create_topic, produce_raw, start_kafka
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


def _committed(job: Job) -> int | None:
    return job.view.committed("outage-app").get(("orders", 0))


def test_job_survives_a_broker_outage(spark, tmp_path):
    broker = start_kafka()
    job = None
    try:
        create_topic(broker.bootstrap, TOPIC, 50)
        produce_raw(broker.bootstrap, TOPIC, _commits(0, 9))
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

        broker.kill()                    # the outage: triggers keep firing against nothing
        batches = job.sink.batches
        time.sleep(6)
        assert job.query.isActive and job.query.exception() is None
        assert job.sink.batches == batches  # nothing read while the broker was away

        broker.restart()                 # back on the same address with its log, and more
        produce_raw(broker.bootstrap, TOPIC, _commits(10, 19))
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
