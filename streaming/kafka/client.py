"""kafka-python behind the source: offset look-ups on the driver, range reads on executors."""
from __future__ import annotations

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import OffsetOutOfRangeError

from streaming.kafka.batches import concat_columns, use_columnar_records
from streaming.kafka.offset_ranges import OffsetRange
from streaming.kafka.range_reader import OffsetOutOfRange, Polled, SharedRanges
from streaming.kafka.records import CREATE_TIME

POLL_TIMEOUT_MS = 500
# What one poll may return: records, or fetch responses once the columnar iterator is in use.
MAX_POLL_RECORDS = 20_000


class KafkaPythonOffsets:
    """Partition list and earliest/latest offsets of a topic (latest = LSO under read_committed)."""

    def __init__(self, config: dict) -> None:
        self._consumer = KafkaConsumer(**config, enable_auto_commit=False, group_id=None)

    def partitions(self, topic: str) -> list[int]:
        found = self._consumer.partitions_for_topic(topic)
        if not found:
            # A topic created after our last metadata refresh: ask again before answering "none".
            self._consumer.topics()
            found = self._consumer.partitions_for_topic(topic)
        return sorted(found or ())

    def earliest(self, topic: str, partitions: list[int]) -> dict[int, int]:
        answer = self._consumer.beginning_offsets([TopicPartition(topic, p) for p in partitions])
        return {tp.partition: offset for tp, offset in answer.items()}

    def latest(self, topic: str, partitions: list[int]) -> dict[int, int]:
        answer = self._consumer.end_offsets([TopicPartition(topic, p) for p in partitions])
        return {tp.partition: offset for tp, offset in answer.items()}

    def at_time(self, topic: str, partitions: list[int], when_ms: int) -> dict[int, int | None]:
        """First offset whose timestamp is at or after `when_ms` (None: no such record yet)."""
        answer = self._consumer.offsets_for_times({TopicPartition(topic, p): when_ms
                                                   for p in partitions})
        return {tp.partition: (found.offset if found is not None else None)
                for tp, found in answer.items()}

    def close(self) -> None:
        self._consumer.close()


class KafkaPythonPartition:
    """A consumer assigned to one partition, without a group (nothing is ever committed)."""

    def __init__(self, config: dict, topic: str, partition: int) -> None:
        self._tp = TopicPartition(topic, partition)
        self._consumer = _reading_consumer(config)
        self._consumer.assign([self._tp])
        self._columnar = use_columnar_records(self._consumer)

    def seek(self, offset: int) -> None:
        self._consumer.seek(self._tp, offset)

    def poll(self) -> Polled:
        try:
            batches = self._consumer.poll(timeout_ms=POLL_TIMEOUT_MS)
        except OffsetOutOfRangeError as exc:
            raise OffsetOutOfRange(str(exc)) from exc
        polled = _polled(batches.get(self._tp, ()), self._columnar)
        # The position moves past transaction markers and aborted records as well.
        polled.position = self._consumer.position(self._tp)
        return polled

    def earliest(self) -> int:
        return self._consumer.beginning_offsets([self._tp])[self._tp]

    def latest(self) -> int:
        return self._consumer.end_offsets([self._tp])[self._tp]

    def close(self) -> None:
        self._consumer.close()


class KafkaPythonRanges(SharedRanges):
    """Several ranges of different partitions read through one kafka-python consumer."""

    def __init__(self, config: dict, topic: str, ranges: list[OffsetRange]) -> None:
        super().__init__(ranges)
        self._tps = {rng.partition: TopicPartition(topic, rng.partition) for rng in ranges}
        self._consumer = _reading_consumer(config)
        self._consumer.assign(list(self._tps.values()))
        for rng in ranges:
            self._consumer.seek(self._tps[rng.partition], rng.start)
        self._columnar = use_columnar_records(self._consumer)

    def _poll(self, unfinished: list[int]) -> tuple[list[tuple[int, Polled]], bool]:
        try:
            batches = self._consumer.poll(timeout_ms=POLL_TIMEOUT_MS)
        except Exception:  # the one-partition path knows what to do about it
            return [], True
        polls = []
        for partition in unfinished:
            tp = self._tps[partition]
            polled = _polled(batches.get(tp, ()), self._columnar)
            # The position moves past transaction markers and aborted records as well.
            polled.position = self._consumer.position(tp)
            polls.append((partition, polled))
        return polls, False

    def _pause(self, partitions: list[int]) -> None:
        self._consumer.pause(*(self._tps[p] for p in partitions))

    def close(self) -> None:
        self._consumer.close()


def _reading_consumer(config: dict) -> KafkaConsumer:
    """A consumer without a group (nothing is ever committed) that fails on a position outside
    the log instead of resetting it."""
    return KafkaConsumer(**config, enable_auto_commit=False, group_id=None,
                         auto_offset_reset="none", max_poll_records=MAX_POLL_RECORDS,
                         fetch_max_bytes=64 << 20, max_partition_fetch_bytes=16 << 20)


def _polled(records: list, columnar: bool) -> Polled:
    """What a poll returned for one partition as columns: `RecordColumns` per fetch response
    (streaming/kafka/batches.py) or, where kafka-python has no hook for them, its
    records. The position is left for the caller to set."""
    if not columnar:
        return Polled([r.offset for r in records], [r.key for r in records],
                      [r.value for r in records], [r.timestamp for r in records],
                      [r.timestamp_type if r.timestamp_type is not None else CREATE_TIME
                       for r in records], 0)
    chunks = [chunk for columns in records for chunk in columns.chunks]
    return Polled(*concat_columns(chunks), 0)
