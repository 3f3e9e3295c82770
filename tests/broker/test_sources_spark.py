"""The streaming sources inside a real Spark session, against the real test broker.

Spark is slow to start and to plan micro-batches, so these tests are few and each checks several
things on one query.
"""
from __future__ import annotations

import base64
import json
import uuid

import pyspark
import pytest

from tests.support.kafka_broker import create_topic, produce_raw
from streaming.errors import UserError
from streaming.config import load_config
from streaming.sources import KAFKA_SCHEMA, build_source


def _config(tmp_path, **source):
    env = {f"GROUPSCOPE_SOURCE__{k.upper()}": str(v) for k, v in source.items()}
    return load_config(None, env=env)


def _run_available_now(frame, checkpoint) -> list[list[tuple]]:
    """Rows of each micro-batch of an availableNow run, as (partition, offset, key, value, ts_ms)."""
    batches: list[list[tuple]] = []

    def collect(batch, batch_id):
        rows = batch.collect()
        batches.append(sorted((r.partition, r.offset, r.key and bytes(r.key),
                               r.value and bytes(r.value), int(r.timestamp.timestamp() * 1000),
                               r.topic, r.timestampType) for r in rows))

    query = (frame.writeStream.foreachBatch(collect).trigger(availableNow=True)
             .option("checkpointLocation", str(checkpoint)).start())
    query.awaitTermination(600)
    assert query.exception() is None
    return batches


def _records(count: int, partitions: int, seed: str) -> list[tuple]:
    return [(i % partitions, f"{seed}-k{i}".encode(), None if i % 7 == 3 else f"v{i}".encode(),
             1_700_000_000_000 + i) for i in range(count)]


def _expected(topic, records, positions):
    return sorted((p, o, k, v, ts, topic, 0) for (_, k, v, ts), (p, o) in zip(records, positions))


@pytest.mark.parametrize("client", ["kafka-python", "confluent"])
def test_kafka_source_reads_exactly_what_was_produced(spark, broker, tmp_path, client):
    topic = f"src-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 3)
    first = _records(40, 3, "a")
    first_positions = produce_raw(broker.bootstrap, topic, first)
    config = _config(tmp_path, bootstrap_servers=broker.bootstrap, topic=topic,
                     max_records_per_trigger=15, client=client)
    frame = build_source(spark, config)
    assert frame.isStreaming and frame.schema == KAFKA_SCHEMA

    batches = _run_available_now(frame, tmp_path / "ck")
    assert [len(b) for b in batches] == [15, 15, 10]  # maxRecordsPerTrigger, nothing lost
    assert sorted(r for b in batches for r in b) == _expected(topic, first, first_positions)

    # Restart from the checkpoint: only the new records, no duplicates.
    second = _records(7, 3, "b")
    second_positions = produce_raw(broker.bootstrap, topic, second)
    again = _run_available_now(build_source(spark, config), tmp_path / "ck")
    assert sorted(r for b in again for r in b) == _expected(topic, second, second_positions)


def test_starting_offsets_json_and_latest(spark, broker, tmp_path):
    topic = f"start-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 2)
    records = _records(20, 2, "s")
    positions = produce_raw(broker.bootstrap, topic, records)
    starting = json.dumps({topic: {"0": 6, "1": -1}})
    config = _config(tmp_path, bootstrap_servers=broker.bootstrap, topic=topic,
                     starting_offsets=starting)
    rows = [r for b in _run_available_now(build_source(spark, config), tmp_path / "ck") for r in b]
    wanted = [r for r in _expected(topic, records, positions) if r[0] == 0 and r[1] >= 6]
    assert sorted(rows) == wanted and len(wanted) == 4


def test_replay_source_reads_a_capture_file_in_limited_batches(spark, tmp_path):
    capture = tmp_path / "capture.jsonl"
    lines = []
    for i in range(25):
        value = None if i == 4 else base64.b64encode(f"v{i}".encode()).decode()
        lines.append(json.dumps({"partition": i % 5, "offset": i // 5, "timestamp": 1_700_000_000_000 + i,
                                 "key": base64.b64encode(f"k{i}".encode()).decode(), "value": value}))
    capture.write_text("\n".join(lines) + "\n" + '{"partition": 1, "offs')  # torn last line
    config = _config(tmp_path, type="replay", replay_path=capture, max_records_per_trigger=10)
    batches = _run_available_now(build_source(spark, config), tmp_path / "ck")
    assert [len(b) for b in batches] == [10, 10, 5]
    rows = sorted(r for b in batches for r in b)
    assert rows == sorted((i % 5, i // 5, f"k{i}".encode(), None if i == 4 else f"v{i}".encode(),
                           1_700_000_000_000 + i, "__consumer_offsets", 0) for i in range(25))


def test_builtin_kafka_source_without_its_jars_says_what_to_add(spark, tmp_path):
    config = _config(tmp_path, type="kafka")
    with pytest.raises(UserError) as caught:
        build_source(spark, config)
    message = str(caught.value)
    assert "\n" not in message
    assert f"--packages org.apache.spark:spark-sql-kafka-0-10_2.13:{pyspark.__version__}" in message
    assert f".cache/spark-kafka-{pyspark.__version__}/jars" in message
