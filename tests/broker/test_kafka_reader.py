"""The groupscope-kafka stream reader's driver and executor methods, called directly (no Spark)
against the test broker: what Spark would plan and read, trigger by trigger."""
from __future__ import annotations

import logging
import pickle
import uuid

from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from tests.support.kafka_broker import create_topic, produce_raw
from streaming.sources.kafka_options import parse_options
from streaming.sources.kafka_stream import KafkaStreamReader


def _reader(bootstrap, topic, **extra):
    return KafkaStreamReader(parse_options({"kafka.bootstrap.servers": bootstrap, "topic": topic,
                                            "fetchTimeoutMs": "5000", **extra}))


def _read_all(reader, start, end):
    rows = []
    for split in reader.partitions(start, end):
        # Spark pickles the reader to its executors: the copy must work without driver state.
        executor_copy = pickle.loads(pickle.dumps(reader))
        for batch in executor_copy.read(split):
            columns = batch.to_pydict()
            rows += list(zip(columns["partition"], columns["offset"], columns["value"]))
    return sorted(rows)


def test_topic_created_after_start_is_picked_up_from_its_first_offset(broker, caplog):
    topic = f"late-{uuid.uuid4().hex[:8]}"
    reader = _reader(broker.bootstrap, topic, startingOffsets="latest")
    with caplog.at_level(logging.WARNING, logger="groupscope.sources"):
        start = reader.initialOffset()
    assert start == {topic: {}}
    assert any(f"topic {topic} not found" in r.getMessage() for r in caplog.records)
    assert reader.latestOffset(start, ReadAllAvailable()) == start

    create_topic(broker.bootstrap, topic, 2)
    produce_raw(broker.bootstrap, topic, [(p, b"k", b"v%d" % i, 1) for i, p in enumerate([0, 1, 1])])
    end = reader.latestOffset(start, ReadAllAvailable())
    assert end == {topic: {"0": 1, "1": 2}}
    assert _read_all(reader, start, end) == [(0, 0, b"v0"), (1, 0, b"v1"), (1, 1, b"v2")]
    # With no partitions the answer was not kept: asked again, it has them now.
    assert reader.initialOffset() == {topic: {"0": 1, "1": 2}}
    reader.stop()


def test_initial_offsets_stay_what_they_first_were(broker):
    # Spark asks twice before the first batch; both answers must agree.
    topic = f"init-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 1)
    produce_raw(broker.bootstrap, topic, [(0, b"k", b"a%d" % i, 1) for i in range(2)])
    reader = _reader(broker.bootstrap, topic, startingOffsets="latest")
    assert reader.initialOffset() == {topic: {"0": 2}}
    produce_raw(broker.bootstrap, topic, [(0, b"k", b"b%d" % i, 1) for i in range(3)])
    assert reader.initialOffset() == {topic: {"0": 2}}
    fresh = _reader(broker.bootstrap, topic, startingOffsets="latest")
    assert fresh.initialOffset() == {topic: {"0": 5}}  # the log did move on
    reader.stop()
    fresh.stop()


def test_limits_and_available_now_target(broker):
    topic = f"lim-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 2)
    produce_raw(broker.bootstrap, topic, [(i % 2, b"k", b"a%d" % i, 1) for i in range(10)])
    reader = _reader(broker.bootstrap, topic, maxRecordsPerTrigger="4", recordsPerSplit="2")
    assert reader.getDefaultReadLimit() == ReadMaxRows(4)
    start = reader.initialOffset()
    assert start == {topic: {"0": 0, "1": 0}}
    reader.prepareForTriggerAvailableNow()
    produce_raw(broker.bootstrap, topic, [(0, b"k", b"late", 1)])  # after the target: not read

    seen, batches = [], 0
    while True:
        end = reader.latestOffset(start, reader.getDefaultReadLimit())
        if end == start:
            break
        assert len(reader.partitions(start, end)) == 2  # 4 records in splits of 2
        seen += _read_all(reader, start, end)
        start, batches = end, batches + 1
    assert batches == 3
    assert [v for _, _, v in sorted(seen, key=lambda r: (r[1], r[0]))] == [
        b"a%d" % i for i in range(10)]
    assert reader.reportLatestOffset() == {topic: {"0": 6, "1": 5}}
    reader.stop()


def _task_sizes(reader, topic, start, end):
    tasks = reader.partitions({topic: {str(p): o for p, o in start.items()}},
                              {topic: {str(p): o for p, o in end.items()}})
    return [sum(r.size for r in task.ranges) for task in tasks]


def test_a_catch_up_is_read_in_few_even_tasks():
    # Each task costs a worker round trip and a connection: 1M records over 50 partitions are
    # two tasks, one per core, not one per 100,000 records.
    reader = _reader("127.0.0.1:9", "t")
    sizes = [20_000 - (p * 997) % 3_000 for p in range(50)]  # 1M at most
    two = _task_sizes(reader, "t", {p: 0 for p in range(50)}, dict(enumerate(sizes)))
    assert len(two) == 2 and sum(two) == sum(sizes)
    assert abs(two[0] - two[1]) <= max(sizes)
    # Three million: six even tasks of about 500,000.
    six = _task_sizes(reader, "t", {p: 0 for p in range(50)}, {p: 60_000 for p in range(50)})
    assert sum(six) == 3_000_000 and len(six) == 6 and max(six) - min(six) <= 60_000
    # One busy partition is still cut, so both cores read it.
    busy = _task_sizes(reader, "t", {0: 0}, {0: 400_000})
    assert busy == [200_000, 200_000]
    # Both sizes can be set.
    small = _reader("127.0.0.1:9", "t", recordsPerSplit="10", recordsPerTask="10")
    assert _task_sizes(small, "t", {0: 0, 1: 0}, {0: 25, 1: 5}) == [9, 9, 7, 5]
    # Just over two tasks' worth: four even tasks, not two full ones and a third alone.
    over = _task_sizes(reader, "t", {p: 0 for p in range(50)}, {p: 20_001 for p in range(50)})
    assert len(over) == 4 and max(over) - min(over) <= 20_001
