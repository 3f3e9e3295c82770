"""Reading one planned offset range to its end: real clients against the test broker, plus
scripted clients for outages and lost data (which the broker cannot be made to produce)."""
from __future__ import annotations

import logging
import uuid

import pytest

from tests.support.kafka_broker import create_topic
from streaming.kafka.offsets import offsets_client
from streaming.sources.kafka_options import KafkaSourceOptions
from streaming.sources.kafka_stream import partition_client
from streaming.kafka.offset_ranges import OffsetRange
from streaming.kafka.range_reader import (OffsetOutOfRange, Polled, ReadSettings,
                                            SourceReadError, read_range)

FAST = ReadSettings(timeout_s=2.0, warn_after_s=0.2, max_backoff_s=0.1)


def _rows(batches):
    out = []
    for batch in batches:
        columns = batch.to_pydict()
        out += list(zip(columns["partition"], columns["offset"], columns["key"], columns["value"]))
    return out


def _transactional_topic(bootstrap: str) -> tuple[str, list[tuple]]:
    """A partition whose log has transaction markers between (and after) the records."""
    from kafka import KafkaProducer

    topic = f"tx-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, topic, 1)
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"t-{topic}")
    producer.init_transactions()
    written = []
    for round_ in range(3):
        producer.begin_transaction()
        futures = [producer.send(topic, key=b"k%d" % i, value=b"r%d-%d" % (round_, i), partition=0)
                   for i in range(2)]
        producer.commit_transaction()
        written += [(0, f.get(10).offset, b"k%d" % i, b"r%d-%d" % (round_, i))
                    for i, f in enumerate(futures)]
    producer.close()
    return topic, written


@pytest.mark.parametrize("client", ["kafka-python", "confluent"])
def test_range_read_crosses_offset_gaps_and_stops_at_the_planned_end(broker, client):
    topic, written = _transactional_topic(broker.bootstrap)
    options = KafkaSourceOptions(bootstrap_servers=broker.bootstrap, topic=topic, client=client)
    lookup = offsets_client(options)
    try:
        assert lookup.partitions(topic) == [0]
        end = lookup.latest(topic, [0])[0]
        assert lookup.earliest(topic, [0]) == {0: 0}
    finally:
        lookup.close()
    offsets = [w[1] for w in written]
    assert offsets != list(range(len(offsets)))  # markers leave gaps
    assert end > offsets[-1]  # and the log ends with a marker

    whole = _rows(read_range(lambda: partition_client(options, 0), topic, OffsetRange(0, 0, end), FAST))
    assert whole == written
    # A range that starts inside and ends on a gap returns just the records it covers.
    part = _rows(read_range(lambda: partition_client(options, 0), topic,
                            OffsetRange(0, offsets[1], offsets[3] + 1), FAST))
    assert part == written[1:4]


def test_unreachable_broker_fails_the_range_with_a_clear_message(caplog):
    options = KafkaSourceOptions(bootstrap_servers="127.0.0.1:9", topic="t",
                                 client_options={"bootstrap.timeout.ms": "300"})
    with caplog.at_level(logging.WARNING, logger="groupscope.sources"):
        with pytest.raises(SourceReadError) as caught:
            list(read_range(lambda: partition_client(options, 3), "t", OffsetRange(3, 10, 20), FAST))
    assert "t-3" in str(caught.value)
    assert any("retrying" in r.getMessage() for r in caplog.records)


class ScriptedClient:
    """Plays back a list of poll outcomes: a Polled, or an exception to raise."""

    def __init__(self, script, earliest=0, latest=10**9):
        self.script = list(script)
        self.position = None
        self._earliest, self._latest = earliest, latest
        self.closed = False

    def seek(self, offset):
        self.position = offset

    def poll(self):
        step = self.script.pop(0) if self.script else Polled([], [], [], [], [], self.position)
        if isinstance(step, Exception):
            raise step
        self.position = max(self.position, step.position)
        return step

    def earliest(self):
        return self._earliest

    def latest(self):
        return self._latest

    def close(self):
        self.closed = True


def _polled(offsets, position=None):
    return Polled(list(offsets), [b"k"] * len(offsets), [b"v"] * len(offsets),
                  [0] * len(offsets), [0] * len(offsets),
                  position if position is not None else offsets[-1] + 1)


def test_outage_mid_range_is_retried_without_skipping(caplog):
    client = ScriptedClient([_polled([0, 1, 2]), ConnectionError("broker down"),
                             ConnectionError("broker down"), _polled([], 3), _polled([3, 5], 7),
                             _polled([7, 8, 9, 10, 11])])
    settings = ReadSettings(timeout_s=5.0, warn_after_s=0.0, max_backoff_s=0.01)
    with caplog.at_level(logging.WARNING, logger="groupscope.sources"):
        rows = _rows(read_range(lambda: client, "t", OffsetRange(0, 0, 10), settings))
    assert [r[1] for r in rows] == [0, 1, 2, 3, 5, 7, 8, 9]
    assert client.closed
    assert any("broker down" in r.getMessage() for r in caplog.records)


def test_lost_records_are_skipped_with_a_warning_or_fail_on_request(caplog):
    script = [OffsetOutOfRange("gone"), _polled([5, 6])]
    with caplog.at_level(logging.WARNING, logger="groupscope.sources"):
        rows = _rows(read_range(lambda: ScriptedClient(script, earliest=5), "t",
                                OffsetRange(0, 2, 7), FAST))
    assert [r[1] for r in rows] == [5, 6]
    assert any("records 2..4 of t-0 are gone" in r.getMessage() for r in caplog.records)

    strict = ReadSettings(timeout_s=1.0, fail_on_data_loss=True)
    with pytest.raises(SourceReadError, match="failOnDataLoss"):
        list(read_range(lambda: ScriptedClient([OffsetOutOfRange("gone")], earliest=5), "t",
                        OffsetRange(0, 2, 7), strict))


def test_truncated_log_ends_the_range_early_instead_of_hanging(caplog):
    client = ScriptedClient([_polled([0, 1])], latest=2)
    with caplog.at_level(logging.WARNING, logger="groupscope.sources"):
        rows = _rows(read_range(lambda: client, "t", OffsetRange(0, 0, 5), FAST))
    assert [r[1] for r in rows] == [0, 1]
    assert any("truncated" in r.getMessage() for r in caplog.records)
