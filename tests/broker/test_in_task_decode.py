"""The decode stage inside our sources' read tasks gives the rows the separate mapInArrow stage
gives, and Spark receives only what survives decoding."""
from __future__ import annotations

import gc
import os
import uuid
from collections import Counter

import pytest

from tests.support.kafka_broker import create_topic, produce_raw
from tests.support.collector_probe import collections_in_fresh_interpreter, garbage_collections
from coordinator.records import decode, encode
from tests.support.job_support import bad_records, mixed_timeline, replay_config, timeline_lines, write_capture
from streaming.config import load_config
from streaming.pipeline.decode_stage import decoded_stream
from streaming.pipeline.monitor_rows import COUNT_RECORDS, COUNT_SKIPPED, MONITOR_KEY, PROGRESS
from streaming.sources import build_source

MAX_RECORDS = 20


def _run(frame, checkpoint) -> tuple[list[list[tuple]], int]:
    """Rows of each micro-batch of an availableNow run, and the rows Spark counted as input."""
    batches: list[list[tuple]] = []

    def collect(batch, batch_id):
        rows = [(r.group, r.o_partition, r.o_offset, r.ts_ms, r.key and bytes(r.key),
                 r.value and bytes(r.value)) for r in batch.collect()]
        batches.append(sorted(rows, key=repr))  # monitor rows hold nulls: no tuple order

    query = (frame.writeStream.foreachBatch(collect).trigger(availableNow=True)
             .option("checkpointLocation", str(checkpoint)).start())
    query.awaitTermination(600)
    assert query.exception() is None
    return batches, sum(p["numInputRows"] for p in query.recentProgress)


def _counts(batches: list[list[tuple]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in (r for b in batches for r in b):
        if row[0] == MONITOR_KEY and row[4] != PROGRESS.encode():
            label = row[4].decode()
            counts[label] = counts.get(label, 0) + int(row[5])
    return counts


def _batch_summary(batch: list[tuple]) -> tuple:
    """A micro-batch's group rows, its counts and its highest offset per partition: how the
    counts are split over monitor rows follows Spark's Arrow batches and may differ."""
    progress: dict[int, int] = {}
    for row in batch:
        if row[0] == MONITOR_KEY and row[4] == PROGRESS.encode():
            progress[row[1]] = max(row[2], progress.get(row[1], -1))
    return [r for r in batch if r[0] != MONITOR_KEY], _counts([batch]), progress


def _same_as_mapinarrow(spark, config, tmp_path, records: int) -> list[list[tuple]]:
    in_task, in_task_input = _run(build_source(spark, config, decoded=True), tmp_path / "a")
    staged, raw_input = _run(decoded_stream(build_source(spark, config)), tmp_path / "b")
    assert [_batch_summary(b) for b in in_task] == [_batch_summary(b) for b in staged]
    assert raw_input == records
    data_rows = sum(1 for b in in_task for r in b if r[0] != MONITOR_KEY)
    # What reaches Spark is the decoded rows alone: superseded commits never leave the task.
    assert in_task_input == sum(len(b) for b in in_task)
    assert data_rows < records - 2
    assert {r[0] for b in in_task for r in b} == {MONITOR_KEY, "orders-app", "tmp-group", "payments"}
    return in_task


def test_replay_source_decodes_in_its_tasks(spark, tmp_path):
    tl = mixed_timeline()
    capture = write_capture(str(tmp_path / "capture.jsonl"), timeline_lines(tl, bad_records()))
    config = replay_config(tmp_path, capture,
                           GROUPSCOPE_SOURCE__MAX_RECORDS_PER_TRIGGER=str(MAX_RECORDS))
    batches = _same_as_mapinarrow(spark, config, tmp_path, len(tl.entries) + 2)
    counts = _counts(batches)
    assert counts.pop(COUNT_SKIPPED + "malformed") == 1
    assert counts.pop(COUNT_SKIPPED + "unknown_type") == 1
    assert counts == {COUNT_RECORDS + name: n for name, n in Counter(
        decode(*encode(rec)).type_name for rec, *_ in tl.entries).items()}


@pytest.mark.parametrize("client", ["kafka-python", "confluent"])
def test_kafka_source_decodes_in_its_tasks(spark, broker, tmp_path, client):
    topic = f"decoded-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 50)
    tl = mixed_timeline()
    records = [(partition, *encode(rec), ts) for rec, partition, _offset, ts in tl.entries]
    produce_raw(broker.bootstrap, topic, records)
    env = {"GROUPSCOPE_SOURCE__BOOTSTRAP_SERVERS": broker.bootstrap,
           "GROUPSCOPE_SOURCE__TOPIC": topic, "GROUPSCOPE_SOURCE__CLIENT": client}
    batches = _same_as_mapinarrow(spark, load_config(None, env=env), tmp_path, len(records))
    assert sum(_counts(batches).values()) == len(records)


def read_task_scenario(folder: str) -> list[int]:
    """collector_probe scenario: one read task of a replayed capture, decoding as it reads."""
    from streaming.sources.in_task_decode import DecodedReplayStreamReader

    lines = timeline_lines(mixed_timeline(), bad_records()) * 20
    capture = write_capture(os.path.join(folder, "capture.jsonl"), lines)
    reader = DecodedReplayStreamReader(capture, None, 100_000)
    (split,) = reader.partitions({"line": 0}, {"line": len(lines)})
    with garbage_collections() as collections:
        batches = list(reader.read(split))
    assert gc.isenabled()
    groups = {g for b in batches for g in b.column("group").to_pylist() if g != MONITOR_KEY}
    assert {"orders-app", "payments"} <= groups
    return collections


def test_a_read_task_reads_and_decodes_without_a_garbage_collection(tmp_path):
    # A few objects per record read, none in cycles: the collector would scan them over and
    # over (streaming.gc_pause). The rows themselves are checked against the mapInArrow stage
    # by the tests above.
    collections = collections_in_fresh_interpreter("tests.broker.test_in_task_decode:read_task_scenario",
                                                   str(tmp_path))
    assert len(collections) <= 1  # at most one, as the collector is turned back on
