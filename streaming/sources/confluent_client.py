"""confluent-kafka (librdkafka) behind the source: the `fast` extra, several times quicker than
kafka-python at parsing record batches. Same duties as `kafka_python_client`."""
from __future__ import annotations

from typing import Iterator

from confluent_kafka import (Consumer, IsolationLevel, KafkaError, KafkaException,
                             TopicPartition, TIMESTAMP_LOG_APPEND_TIME)
from confluent_kafka.admin import AdminClient, OffsetSpec

from streaming.sources.offset_ranges import OffsetRange
from streaming.sources.range_reader import IDLE_POLLS, OffsetOutOfRange, Polled
from streaming.sources.records import CREATE_TIME, LOG_APPEND_TIME

POLL_TIMEOUT_S = 0.5
MAX_POLL_RECORDS = 20_000
REQUEST_TIMEOUT_S = 30.0


def _isolation(config: dict) -> IsolationLevel:
    if config.get("isolation.level") == "read_uncommitted":
        return IsolationLevel.READ_UNCOMMITTED
    return IsolationLevel.READ_COMMITTED


class ConfluentOffsets:
    def __init__(self, config: dict) -> None:
        self._isolation = _isolation(config)
        self._admin = AdminClient({k: v for k, v in config.items() if k != "isolation.level"})

    def partitions(self, topic: str) -> list[int]:
        metadata = self._admin.list_topics(topic, timeout=REQUEST_TIMEOUT_S)
        found = metadata.topics.get(topic)
        if found is None or found.error is not None:
            return []
        return sorted(found.partitions)

    def _list(self, topic: str, partitions: list[int], spec: OffsetSpec) -> dict[int, int]:
        futures = self._admin.list_offsets({TopicPartition(topic, p): spec for p in partitions},
                                           isolation_level=self._isolation,
                                           request_timeout=REQUEST_TIMEOUT_S)
        return {tp.partition: future.result().offset for tp, future in futures.items()}

    def earliest(self, topic: str, partitions: list[int]) -> dict[int, int]:
        return self._list(topic, partitions, OffsetSpec.earliest())

    def latest(self, topic: str, partitions: list[int]) -> dict[int, int]:
        return self._list(topic, partitions, OffsetSpec.latest())

    def close(self) -> None:
        self._admin = None


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


class ConfluentRanges:
    """Several ranges of different partitions read through one client.

    In steady state a micro-batch is a few records in each of many partitions; one client per
    range costs a connection, a metadata request and librdkafka's threads each time (a task of 25
    such ranges: 110 ms of CPU against 15 ms through one client). `poll_all` reads until every
    range is done or something unusual happens (an error, or a poll that moves nothing); then
    `positions` says where each range stands, and the caller reads the rest of each range
    with the careful one-partition path (retries, lost records, truncation)."""

    def __init__(self, config: dict, topic: str, ranges: list[OffsetRange]) -> None:
        self._topic = topic
        self.positions = {rng.partition: rng.start for rng in ranges}
        self._ends = {rng.partition: rng.end for rng in ranges}
        self._consumer = _consumer(config)
        self._consumer.assign([TopicPartition(topic, rng.partition, rng.start) for rng in ranges])

    def _open(self) -> list[int]:
        return [p for p, position in self.positions.items() if position < self._ends[p]]

    def poll_all(self) -> Iterator[tuple[int, Polled]]:
        """(partition, records polled for it) until all ranges are read or the fast path stops;
        records come in offset order per partition and may run past the range's end (new
        records since planning), which the caller cuts off."""
        idle_polls = 0
        while True:
            unfinished = self._open()
            if not unfinished:
                return
            wanted = min(MAX_POLL_RECORDS, sum(self._ends[p] - self.positions[p] for p in unfinished))
            try:
                messages = self._consumer.consume(num_messages=max(1, wanted),
                                                  timeout=POLL_TIMEOUT_S)
            except KafkaException:
                return
            by_partition: dict[int, list] = {}
            moved = failed = False
            for message in messages:
                partition, error = message.partition(), message.error()
                if partition not in self.positions:
                    continue
                if error is None:
                    by_partition.setdefault(partition, []).append(message)
                    position = message.offset() + 1
                elif error.code() == KafkaError._PARTITION_EOF:
                    position = message.offset()
                else:
                    failed = True  # the one-partition path knows what to do about it
                    break
                if position > self.positions[partition]:
                    self.positions[partition] = position
                    moved = True
            # Positions already count the records collected above: they must go out first.
            for partition, found in by_partition.items():
                yield partition, _columns(found)
            if failed:
                return
            done = [TopicPartition(self._topic, p) for p in unfinished
                    if self.positions[p] >= self._ends[p]]
            if done:
                self._consumer.pause(done)
            idle_polls = 0 if moved else idle_polls + 1
            if idle_polls >= IDLE_POLLS:
                return

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
