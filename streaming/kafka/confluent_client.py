"""confluent-kafka (librdkafka) behind the source: the `fast` extra, which fetches in librdkafka's
own threads. Its `consume()` makes a Python message object per record, so since kafka-python's
batches are parsed in bulk (streaming/kafka/v2_record_columns.py) a catch-up is no faster with
it on the reference machine. Same duties as streaming/kafka/client.py, and the same offsets
client interface (streaming/kafka/offsets.py)."""
from __future__ import annotations

import time
from typing import Mapping, Sequence

from confluent_kafka import (Consumer, IsolationLevel, KafkaError, KafkaException,
                             TopicCollection, TopicPartition, TIMESTAMP_LOG_APPEND_TIME)
from confluent_kafka.admin import AdminClient, OffsetSpec

from streaming.kafka.offset_ranges import OffsetRange
from streaming.kafka.offsets import (FIRST_RECORD_FETCH_BYTES, TOPIC_AUTHORIZATION_FAILED,
                                     OffsetsClient, kafka_topic_id, not_authorized_to_describe,
                                     not_authorized_to_read)
from streaming.kafka.offsets import TopicPartition as TopicPartitionKey
from streaming.kafka.range_reader import OffsetOutOfRange, Polled, SharedRanges
from streaming.kafka.records import CREATE_TIME, LOG_APPEND_TIME

POLL_TIMEOUT_S = 0.5
MAX_POLL_RECORDS = 20_000
REQUEST_TIMEOUT_S = 30.0


def _isolation(config: dict) -> IsolationLevel:
    if config.get("isolation.level") == "read_uncommitted":
        return IsolationLevel.READ_UNCOMMITTED
    return IsolationLevel.READ_COMMITTED


class ConfluentOffsets(OffsetsClient):
    def __init__(self, config: dict, timeout_s: float | None = None) -> None:
        self._isolation = _isolation(config)
        self._timeout_s = timeout_s if timeout_s is not None else REQUEST_TIMEOUT_S
        self._admin = AdminClient({k: v for k, v in config.items() if k != "isolation.level"})
        self._config = config
        self._reader: Consumer | None = None  # first_records: opened on first use

    def partitions(self, topic: str) -> list[int]:
        metadata = self._admin.list_topics(topic, timeout=self._timeout_s)
        found = metadata.topics.get(topic)
        if found is not None and found.error is not None \
                and found.error.code() == TOPIC_AUTHORIZATION_FAILED:
            raise not_authorized_to_describe(topic)
        if found is None or found.error is not None:
            return []
        return sorted(found.partitions)

    def _list(self, partitions: Sequence[TopicPartitionKey], spec: OffsetSpec
              ) -> dict[TopicPartitionKey, int]:
        if not partitions:
            return {}
        futures = self._admin.list_offsets({TopicPartition(t, p): spec for t, p in partitions},
                                           isolation_level=self._isolation,
                                           request_timeout=self._timeout_s)
        return {(tp.topic, tp.partition): future.result().offset
                for tp, future in futures.items()}

    def start_offsets(self, partitions: Sequence[TopicPartitionKey]) -> dict[TopicPartitionKey, int]:
        return self._list(partitions, OffsetSpec.earliest())

    def end_offsets(self, partitions: Sequence[TopicPartitionKey]) -> dict[TopicPartitionKey, int]:
        return self._list(partitions, OffsetSpec.latest())

    def topic_metadata(self) -> tuple[dict[str, str], dict[str, int]]:
        listed = self._admin.list_topics(timeout=self._timeout_s).topics
        counts = {name: len(topic.partitions) for name, topic in listed.items()
                  if topic.error is None}
        names: dict[str, str] = {}
        if not counts:
            return names, counts
        # Topic ids are only in DescribeTopics' answer, not in the metadata list_topics keeps.
        described = self._admin.describe_topics(TopicCollection(list(counts)),
                                                request_timeout=self._timeout_s)
        for name, future in described.items():
            try:
                topic_id = future.result().topic_id
            except KafkaException:  # deleted since it was listed
                continue
            names[kafka_topic_id(_uuid_bytes(topic_id))] = name
        return names, counts

    def first_records(self, positions: Mapping[TopicPartitionKey, int], timeout_s: float
                      ) -> dict[TopicPartitionKey, float]:
        if not positions:
            return {}
        if self._reader is None:
            # From the log start when the position is gone: retention took those records.
            self._reader = _consumer({**self._config, "auto.offset.reset": "earliest",
                                      "max.partition.fetch.bytes": FIRST_RECORD_FETCH_BYTES})
        reader = self._reader
        assigned = [TopicPartition(t, p, o) for (t, p), o in positions.items()]
        reader.assign(assigned)
        found: dict[TopicPartitionKey, float] = {}
        deadline = time.monotonic() + timeout_s
        try:
            while len(found) < len(positions) and time.monotonic() < deadline:
                for message in reader.consume(num_messages=MAX_POLL_RECORDS, timeout=0.1):
                    error = message.error()
                    if error is not None:
                        if error.code() == TOPIC_AUTHORIZATION_FAILED:
                            raise not_authorized_to_read(message.topic())
                        continue  # end of a partition: nothing to read there yet
                    key = (message.topic(), message.partition())
                    if key not in found and message.offset() >= positions.get(key, 0):
                        found[key] = message.timestamp()[1] / 1000.0
                        reader.pause([TopicPartition(*key)])
        finally:
            reader.resume(assigned)  # librdkafka keeps a pause through unassign and assign
            reader.unassign()
        return found

    def close(self) -> None:
        self._admin = None
        if self._reader is not None:
            self._reader.close()
            self._reader = None


def _uuid_bytes(value) -> bytes:
    """The 16 bytes of a confluent-kafka Uuid (its halves come as signed 64-bit numbers)."""
    mask = (1 << 64) - 1
    return ((value.get_most_significant_bits() & mask).to_bytes(8, "big")
            + (value.get_least_significant_bits() & mask).to_bytes(8, "big"))


def _consumer(config: dict) -> Consumer:
    return Consumer({
        "group.id": "groupscope-source",  # required by librdkafka; nothing is committed
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "error",
        "fetch.max.bytes": 64 << 20,
        "max.partition.fetch.bytes": 16 << 20,
        **config,
    })


def _columns(messages: list) -> Polled:
    """The records of `messages` (no errors among them) as columns; position not set."""
    # Column by column: this runs once per record read, so it stays in comprehensions.
    stamps = [message.timestamp() for message in messages]
    return Polled([message.offset() for message in messages],
                  [message.key() for message in messages],
                  [message.value() for message in messages],
                  [stamp for _, stamp in stamps],
                  [LOG_APPEND_TIME if kind == TIMESTAMP_LOG_APPEND_TIME else CREATE_TIME
                   for kind, _ in stamps], 0)


class ConfluentRanges(SharedRanges):
    """Several ranges of different partitions read through one confluent-kafka client."""

    def __init__(self, config: dict, topic: str, ranges: list[OffsetRange]) -> None:
        super().__init__(ranges)
        self._topic = topic
        self._consumer = _consumer(config)
        self._consumer.assign([TopicPartition(topic, rng.partition, rng.start) for rng in ranges])

    def _poll(self, unfinished: list[int]) -> tuple[list[tuple[int, Polled]], bool]:
        wanted = min(MAX_POLL_RECORDS, sum(self._ends[p] - self.positions[p] for p in unfinished))
        try:
            messages = self._consumer.consume(num_messages=max(1, wanted), timeout=POLL_TIMEOUT_S)
        except KafkaException:
            return [], True
        by_partition: dict[int, list] = {}
        positions: dict[int, int] = {}
        failed = False
        for message in messages:
            partition, error = message.partition(), message.error()
            if partition not in self.positions:
                continue
            if error is None:
                by_partition.setdefault(partition, []).append(message)
                positions[partition] = message.offset() + 1
            elif error.code() == KafkaError._PARTITION_EOF:
                positions[partition] = max(positions.get(partition, 0), message.offset())
            else:
                failed = True  # records before the error still go out; the rest is for later
                break
        polls = []
        for partition, position in positions.items():
            polled = _columns(by_partition.get(partition, []))
            polled.position = position
            polls.append((partition, polled))
        return polls, failed

    def _pause(self, partitions: list[int]) -> None:
        self._consumer.pause([TopicPartition(self._topic, p) for p in partitions])

    def close(self) -> None:
        self._consumer.close()


class ConfluentPartition:
    """`end` (exclusive), when known, caps each poll: librdkafka's consume() returns only once it
    has the number of messages asked for or its timeout expires, so asking for more than the
    range holds would wait out the timeout at the end of every range."""

    def __init__(self, config: dict, topic: str, partition: int, end: int | None = None) -> None:
        self._topic, self._partition, self._end = topic, partition, end
        self._consumer = _consumer(config)
        self._position = 0
        self._assigned = False

    def seek(self, offset: int) -> None:
        if self._assigned and self._position == offset:
            return  # opened ahead and already fetching from there (kafka_stream.read)
        self._consumer.assign([TopicPartition(self._topic, self._partition, offset)])
        self._assigned = True
        self._position = offset

    def poll(self) -> Polled:
        wanted = MAX_POLL_RECORDS
        if self._end is not None:
            wanted = max(1, min(wanted, self._end - self._position))
        messages = self._consumer.consume(num_messages=wanted, timeout=POLL_TIMEOUT_S)
        if any(message.error() is not None for message in messages):
            messages = self._without_errors(messages)
        polled = _columns(messages)
        if polled.offsets:
            self._position = max(self._position, polled.offsets[-1] + 1)
        polled.position = self._position
        return polled

    def _without_errors(self, messages: list) -> list:
        """The records among `messages`; end-of-partition notices move the position, other
        errors raise."""
        records = []
        for message in messages:
            error = message.error()
            if error is None:
                records.append(message)
            elif error.code() == KafkaError._PARTITION_EOF:
                # At the end of the readable log: anything before it (markers too) is passed.
                self._position = max(self._position, message.offset())
            elif error.code() in (KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._AUTO_OFFSET_RESET):
                raise OffsetOutOfRange(error.str())
            elif error.code() == TOPIC_AUTHORIZATION_FAILED:
                raise not_authorized_to_read(self._topic)
            else:
                raise KafkaException(error)
        return records

    def _watermarks(self) -> tuple[int, int]:
        return self._consumer.get_watermark_offsets(
            TopicPartition(self._topic, self._partition), timeout=REQUEST_TIMEOUT_S)

    def earliest(self) -> int:
        return self._watermarks()[0]

    def latest(self) -> int:
        return self._watermarks()[1]

    def close(self) -> None:
        self._consumer.close()
