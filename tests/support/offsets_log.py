"""Kafka's own bytes: the records of `__consumer_offsets` that belong to given groups, read from
the broker as its group coordinator wrote them, and decoded with groupscope's codec.

A test makes the broker write what it wants to check (a classic group, a KIP-848 group with a
regular expression, a share group, a streams group) and reads back only its own groups' records,
so what other tests wrote into the same topic does not matter."""
from __future__ import annotations

import time
from collections import defaultdict

from coordinator import partition_for
from coordinator.records import Record, decode, encode
from coordinator.records.codec import decode_share_state, encode_share_state
from tests.support.kafka_broker import OFFSETS_TOPIC, OFFSETS_TOPIC_PARTITIONS

SHARE_STATE_TOPIC = "__share_group_state"

RawRecord = tuple[bytes, bytes | None]


def group_records(bootstrap: str, groups: set[str], topic: str = OFFSETS_TOPIC,
                  timeout_s: float = 30.0) -> list[RawRecord]:
    """Every record (key, value; value None for a tombstone) in `topic` whose key names one of
    `groups`, in log order per partition, read to the partitions' current ends. In
    `__consumer_offsets` only the groups' own partitions are read; in the share-state topic
    (keyed by share-partition, and short) every partition."""
    from kafka import KafkaConsumer, TopicPartition

    needles = [group.encode() for group in groups]
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             isolation_level="read_committed")
    try:
        numbers = ({partition_for(g, OFFSETS_TOPIC_PARTITIONS) for g in groups}
                   if topic == OFFSETS_TOPIC else consumer.partitions_for_topic(topic) or ())
        partitions = [TopicPartition(topic, p) for p in sorted(numbers)]
        assert partitions, f"{topic} has no partitions (yet)"
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        ends = consumer.end_offsets(partitions)
        deadline = time.monotonic() + timeout_s
        out: list[RawRecord] = []
        while any(consumer.position(tp) < ends[tp] for tp in partitions):
            assert time.monotonic() < deadline, \
                f"__consumer_offsets not read to {ends} within {timeout_s}s"
            for records in consumer.poll(timeout_ms=500).values():
                out.extend((r.key, r.value) for r in records
                           if r.key is not None and any(n in r.key for n in needles))
        return out
    finally:
        consumer.close()


def decoded_by_type(raw: list[RawRecord], share_state: bool = False) -> dict[int, list[Record]]:
    """`raw` decoded and grouped by record type (`share_state`: records of the share-state
    topic). Each record must decode without a warning and encode back to the very bytes Kafka
    wrote: no field left unread, none read wrong."""
    read, write = (decode_share_state, encode_share_state) if share_state else (decode, encode)
    by_type: dict[int, list[Record]] = defaultdict(list)
    for key, value in raw:
        record = read(key, value)
        assert not record.warnings, (record.type_name, record.warnings, key.hex())
        assert write(record) == (key, value), \
            f"{record.type_name} does not encode back to Kafka's bytes: {record.to_dict()}"
        by_type[record.type].append(record)
    return dict(by_type)


def values(by_type: dict[int, list[Record]], record_type: int) -> list[dict]:
    """The non-tombstone values of one record type."""
    return [r.value for r in by_type.get(record_type, ()) if r.value is not None]
