"""Shards: jobs on disjoint subsets of the offsets topic's partitions (`source.partitions`) serve
between them exactly the series one job on every partition serves, since Kafka keeps every record
of a group in one partition (docs/operations.md)."""
from __future__ import annotations

import os
import time
import uuid

from coordinator import partition_for
from coordinator.records import encode
from streaming.config import load_config
from streaming.exporter.evaluation import build_families
from streaming.job.lifecycle import Job
from tests.support.kafka_broker import create_topic, produce_raw
from tests.support.state_timeline import group_metadata, member, offset_commit

PARTITIONS = 6
T0 = int(time.time() * 1000) - 60_000


def _records() -> list:
    out = []
    for g in range(12):
        group = f"shard-group-{g}"
        where = partition_for(group, PARTITIONS)
        recs = [offset_commit(group, "orders", p, 10 * g + p, T0 + p) for p in range(3)]
        if g % 3 == 0:
            recs.append(group_metadata(group, 2, [member("m1", ["orders"], [("orders", 0), ("orders", 1)])]))
        out += [(where, *encode(rec), T0 + i) for i, rec in enumerate(recs)]
    return out


def _comparable(value):
    """A sample's value; a histogram as its buckets, sum and count."""
    return (tuple(value.counts), value.sum, value.count) if hasattr(value, "counts") else value


def _served(spark, tmp_path, bootstrap: str, topic: str, name: str, partitions: list[int]):
    env = {"GROUPSCOPE_SOURCE__BOOTSTRAP_SERVERS": bootstrap, "GROUPSCOPE_SOURCE__TOPIC": topic,
           "GROUPSCOPE_SOURCE__PARTITIONS": str(partitions),
           "GROUPSCOPE_CHECKPOINT__PATH": os.path.join(str(tmp_path), name, "checkpoint"),
           "GROUPSCOPE_HISTORY__PATH": os.path.join(str(tmp_path), name, "history")}
    job = Job(load_config(None, env=env), spark=spark, start_exporter=False, start_poller=False)
    try:
        job.start().processAllAvailable()
        deadline = time.monotonic() + 30
        while not job.view.ready and time.monotonic() < deadline:
            time.sleep(0.5)  # the progress target is asked at most every few seconds
        families = build_families(job.view, now_s=T0 / 1000.0 + 60)
    finally:
        job.stop()
    by_group = {(f.name, values): _comparable(number) for f in families if "group" in f.label_names
                for values, number in f.samples}
    records = {values: number for f in families if f.name == "groupscope_records"
               for values, number in f.samples}
    return by_group, records, job.view.ready


def test_two_shards_serve_what_one_job_serves(spark, broker, tmp_path):
    topic = f"offsets-shards-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    produce_raw(broker.bootstrap, topic, _records())
    whole, whole_records, _ = _served(spark, tmp_path, broker.bootstrap, topic, "whole", [])
    first, first_records, first_ready = _served(spark, tmp_path, broker.bootstrap, topic, "first", [0, 1, 2])
    second, second_records, second_ready = _served(spark, tmp_path, broker.bootstrap, topic, "second", [3, 4, 5])
    groups = lambda series: {values[1] for _, values in series}  # noqa: E731 (cluster, group, ...)
    assert groups(whole) == {f"shard-group-{g}" for g in range(12)}
    assert groups(first) and groups(second) and not groups(first) & groups(second)
    assert {**first, **second} == whole
    assert {k: first_records.get(k, 0) + second_records.get(k, 0) for k in whole_records} == whole_records
    assert first_ready and second_ready  # each is ready once its own partitions are read
