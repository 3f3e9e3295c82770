"""A steady-state task's small ranges read through one client (confluent-kafka or kafka-python):
exactly the records of each range, across transaction markers, and what the shared client cannot
finish is handed to the one-range-at-a-time path (real broker)."""
from __future__ import annotations

import logging
import uuid

import pytest

from tests.support.kafka_broker import create_topic, produce_raw
from streaming.sources import kafka_stream
from streaming.sources.kafka_options import KafkaSourceOptions
from streaming.sources.kafka_stream import KafkaRangePartition, KafkaStreamReader
from streaming.kafka.offset_ranges import OffsetRange
from streaming.kafka.range_reader import ReadSettings

FAST = ReadSettings(timeout_s=3.0, warn_after_s=0.2, max_backoff_s=0.1)
CLIENTS = pytest.mark.parametrize("client", ["kafka-python", "confluent"])


def _rows(batches) -> list[tuple]:
    out = []
    for batch in batches:
        columns = batch.to_pydict()
        out += list(zip(columns["partition"], columns["offset"], columns["key"], columns["value"]))
    return sorted(out)


@pytest.fixture
def counted_single_clients(monkeypatch):
    """Partitions for which the one-range path opened a client."""
    opened: list[int] = []
    original = kafka_stream.partition_client

    def counting(options, partition, end=None):
        opened.append(partition)
        return original(options, partition, end)

    monkeypatch.setattr(kafka_stream, "partition_client", counting)
    return opened


def _reader(bootstrap: str, topic: str, client: str) -> KafkaStreamReader:
    return KafkaStreamReader(KafkaSourceOptions(bootstrap_servers=bootstrap, topic=topic,
                                                client=client, read=FAST))


@CLIENTS
def test_small_ranges_share_one_client_and_stop_at_their_ends(broker, counted_single_clients,
                                                              client):
    topic = f"shared-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 4)
    records = [(p, b"k%d" % i, b"p%d-%d" % (p, i), 1_700_000_000_000 + i)
               for i in range(30) for p in range(4)]
    positions = produce_raw(broker.bootstrap, topic, records)
    written = {(p, o): (k, v) for (p, o), (_, k, v, _) in zip(positions, records)}
    # Each range starts and ends inside its partition's log: records after the end exist.
    ranges = [OffsetRange(0, 3, 17), OffsetRange(1, 0, 30), OffsetRange(2, 10, 11),
              OffsetRange(3, 29, 30)]
    task = KafkaRangePartition(ranges)

    reader = _reader(broker.bootstrap, topic, client)
    assert reader._together(ranges)
    got = _rows(reader.read(task))

    expected = sorted((r.partition, o, *written[(r.partition, o)])
                      for r in ranges for o in range(r.start, r.end))
    assert got == expected
    assert counted_single_clients == []  # nothing was left for the one-range path
    assert got == _rows(reader._read_each(ranges))  # the same as range by range


@CLIENTS
def test_transaction_markers_inside_and_at_the_end_of_ranges(broker, counted_single_clients,
                                                             client):
    from kafka import KafkaProducer

    topic = f"shared-tx-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 2)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=f"t-{topic}")
    producer.init_transactions()
    written = []
    for round_ in range(3):
        producer.begin_transaction()
        futures = [(p, producer.send(topic, key=b"k", value=b"r%d-%d" % (round_, p), partition=p))
                   for p in (0, 1)]
        producer.commit_transaction()
        written += [(p, f.get(10).offset, b"k", b"r%d-%d" % (round_, p)) for p, f in futures]
    producer.close()
    ends = {p: max(o for q, o, _, _ in written if q == p) + 2 for p in (0, 1)}  # past the marker
    assert [o for p, o, _, _ in written if p == 0] != [0, 1, 2]  # markers leave gaps

    reader = _reader(broker.bootstrap, topic, client)
    got = _rows(reader.read(KafkaRangePartition([OffsetRange(p, 0, ends[p]) for p in (0, 1)])))
    assert got == sorted(written)
    assert counted_single_clients == []


@CLIENTS
def test_what_the_shared_client_cannot_finish_goes_range_by_range(broker, counted_single_clients,
                                                                     caplog, client):
    topic = f"shared-short-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 2)
    records = [(p, b"k", b"v%d" % i, 1_700_000_000_000) for i in range(5) for p in (0, 1)]
    produce_raw(broker.bootstrap, topic, records)
    # Partition 1's planned end is past its log's end (as after a truncation): the shared
    # client reads what there is, stalls, and hands partition 1 over; partition 0 is done.
    ranges = [OffsetRange(0, 0, 5), OffsetRange(1, 2, 9)]
    reader = _reader(broker.bootstrap, topic, client)
    with caplog.at_level(logging.WARNING, logger="groupscope.sources"):
        got = _rows(reader.read(KafkaRangePartition(ranges)))
    assert [(p, o) for p, o, _, _ in got] == [(0, o) for o in range(5)] + [(1, o) for o in (2, 3, 4)]
    assert counted_single_clients == [1]
    assert any("truncated" in r.getMessage() for r in caplog.records)


@CLIENTS
def test_large_or_repeated_partition_tasks_read_range_by_range(client):
    reader = KafkaStreamReader(KafkaSourceOptions(bootstrap_servers="127.0.0.1:9", client=client))
    assert not reader._together([OffsetRange(0, 0, 10)])
    assert not reader._together([OffsetRange(0, 0, 10), OffsetRange(0, 10, 20)])
    assert not reader._together([OffsetRange(0, 0, 40_000), OffsetRange(1, 0, 40_000)])


class _Error:
    def __init__(self, code: int) -> None:
        self._code = code

    def code(self) -> int:
        return self._code


class _Message:
    def __init__(self, partition: int, offset: int, error: _Error | None = None) -> None:
        self._partition, self._offset, self._error = partition, offset, error

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def error(self):
        return self._error

    def key(self) -> bytes:
        return b"k%d" % self._offset

    def value(self) -> bytes:
        return b"v"

    def timestamp(self) -> tuple[int, int]:
        return 1, 1_700_000_000_000


class _ScriptedConsumer:
    def __init__(self, polls: list[list[_Message]]) -> None:
        self.polls = polls

    def assign(self, _partitions) -> None:
        pass

    def pause(self, _partitions) -> None:
        pass

    def consume(self, num_messages: int, timeout: float) -> list[_Message]:
        return self.polls.pop(0) if self.polls else []


def test_records_before_an_error_in_the_same_poll_are_handed_out(monkeypatch):
    from confluent_kafka import KafkaError

    from streaming.kafka import confluent_client

    polls = [[_Message(0, 0), _Message(0, 1), _Message(1, 7, _Error(KafkaError.OFFSET_OUT_OF_RANGE)),
              _Message(0, 2)]]
    monkeypatch.setattr(confluent_client, "_consumer", lambda config: _ScriptedConsumer(polls))
    shared = confluent_client.ConfluentRanges({}, "t", [OffsetRange(0, 0, 5), OffsetRange(1, 7, 9)])
    handed = [(p, polled.offsets) for p, polled in shared.poll_all()]
    # What the positions count as read went out; the rest is for the one-range path.
    assert handed == [(0, [0, 1])]
    assert shared.positions == {0: 2, 1: 7}
