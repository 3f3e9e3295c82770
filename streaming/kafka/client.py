"""kafka-python: the offsets/metadata client (streaming/kafka/offsets.py) and the source's range
reads on executors."""
from __future__ import annotations

import logging
import time
from typing import Mapping, Sequence

from kafka import KafkaAdminClient, KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.errors import OffsetOutOfRangeError, TopicAuthorizationFailedError

from streaming.kafka.batches import concat_columns, use_columnar_records
from streaming.kafka.kafka_python_net import admin, close, consumer
from streaming.kafka.offset_ranges import OffsetRange
from streaming.kafka.offsets import (FIRST_RECORD_FETCH_BYTES, TOPIC_AUTHORIZATION_FAILED,
                                     OffsetsClient, TopicPartition, kafka_topic_id,
                                     not_authorized_to_describe, not_authorized_to_read)
from streaming.kafka.range_reader import OffsetOutOfRange, Polled, SharedRanges
from streaming.kafka.records import CREATE_TIME

POLL_TIMEOUT_MS = 500
# What one poll may return: records, or fetch responses once the columnar iterator is in use.
MAX_POLL_RECORDS = 20_000
log = logging.getLogger("groupscope.kafka")


class KafkaPythonOffsets(OffsetsClient):
    """Offsets through a consumer without a group: its fetcher groups ListOffsets requests per
    partition leader. Metadata through an admin client, opened on the first metadata question,
    which can describe named topics only (the consumer's own look-up describes every topic)."""

    def __init__(self, config: dict, timeout_s: float | None = None) -> None:
        if timeout_s is not None:
            # Also the default timeout of the consumer's offset look-ups.
            config = dict(config, request_timeout_ms=int(timeout_s * 1000))
        self._config = config
        self._consumer = consumer(**config, enable_auto_commit=False, group_id=None)
        self._admin: KafkaAdminClient | None = None
        self._reader: KafkaConsumer | None = None  # first_records: opened on first use
        self.reader_polls = 0  # first_records' polls: each sends at most one fetch a broker

    def _describe(self, topics: list[str] | None) -> list[dict]:
        """Metadata of `topics` (None: every topic)."""
        if self._admin is None:
            self._admin = admin(**self._config)
        return self._admin.describe_topics(topics)

    def partitions(self, topic: str) -> list[int]:
        answer = [t for t in self._describe([topic]) if t.get("name") == topic]
        if any(t.get("error_code") == TOPIC_AUTHORIZATION_FAILED for t in answer):
            raise not_authorized_to_describe(topic)
        found = [t for t in answer if not t.get("error_code")]
        return sorted(p["partition_index"] for t in found for p in t.get("partitions") or ())

    def start_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return self._ask(self._consumer.beginning_offsets, partitions)

    def end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return self._ask(self._consumer.end_offsets, partitions)

    @staticmethod
    def _ask(method, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        if not partitions:
            return {}
        answer = method([KafkaTopicPartition(t, p) for t, p in partitions])
        return {(tp.topic, tp.partition): offset for tp, offset in answer.items()
                if offset is not None}

    def topic_metadata(self) -> tuple[dict[str, str], dict[str, int]]:
        names: dict[str, str] = {}
        counts: dict[str, int] = {}
        for topic in self._describe(None):
            if topic.get("error_code"):
                continue
            name = topic["name"]
            counts[name] = len(topic.get("partitions") or ())
            topic_id = topic.get("topic_id")
            if topic_id:
                names[kafka_topic_id(str(topic_id))] = name
        return names, counts

    def may_read(self, topic: str, partition: int) -> bool:
        """One fetch at the log end: answered at once when refused, empty after the fetch's
        wait when allowed."""
        tp = KafkaTopicPartition(topic, partition)
        end = self._consumer.end_offsets([tp]).get(tp)
        self._consumer.assign([tp])
        try:
            if end is not None:
                self._consumer.seek(tp, end)
            self._consumer.poll(timeout_ms=2 * POLL_TIMEOUT_MS, max_records=1)
            return True
        except TopicAuthorizationFailedError:
            return False
        finally:
            self._consumer.unsubscribe()  # no fetching in the background

    def first_records(self, positions: Mapping[TopicPartition, int], timeout_s: float
                      ) -> dict[TopicPartition, float]:
        """One consumer fetches them all: its fetcher asks each leader once for all of its
        partitions, and a small partition fetch size keeps each answer to about one batch."""
        if not positions:
            return {}
        if self._reader is None:
            # From the log start when the position is gone: retention took those records.
            self._reader = consumer(**self._config, enable_auto_commit=False, group_id=None,
                                    auto_offset_reset="earliest",
                                    max_partition_fetch_bytes=FIRST_RECORD_FETCH_BYTES)
        reader = self._reader
        tps = {KafkaTopicPartition(t, p): (t, p) for t, p in positions}
        reader.assign(list(tps))
        found: dict[TopicPartition, float] = {}
        try:
            for tp, key in tps.items():
                reader.seek(tp, positions[key])
            deadline = time.monotonic() + timeout_s
            while len(found) < len(tps) and time.monotonic() < deadline:
                self.reader_polls += 1
                try:
                    batches = reader.poll(timeout_ms=POLL_TIMEOUT_MS // 5)
                except TopicAuthorizationFailedError as exc:
                    named = exc.args[0] if exc.args else ()
                    topics = sorted(named) if isinstance(named, (set, frozenset, list, tuple)) \
                        else [str(named)]
                    raise not_authorized_to_read(", ".join(map(str, topics))) from None
                for tp, records in batches.items():
                    key = tps[tp]
                    first = next((r for r in records if r.offset >= positions[key]), None)
                    # Not paused once found: kafka-python parks a paused partition's fetched
                    # data and did not fetch it again when it was next assigned.
                    if first is not None and key not in found:
                        found[key] = first.timestamp / 1000.0
        finally:
            reader.assign([])  # nothing fetched in the background
        return found

    def at_time(self, topic: str, partitions: list[int], when_ms: int) -> dict[int, int | None]:
        """First offset whose timestamp is at or after `when_ms` (None: no such record yet)."""
        answer = self._consumer.offsets_for_times({KafkaTopicPartition(topic, p): when_ms
                                                   for p in partitions})
        return {tp.partition: (found.offset if found is not None else None)
                for tp, found in answer.items()}

    def close(self) -> None:
        for client in (self._consumer, self._admin, self._reader):
            if client is None:
                continue
            try:
                close(client)
            except Exception:  # closing a broken client must not hide the original problem
                log.debug("closing kafka client failed", exc_info=True)


class KafkaPythonPartition:
    """A consumer assigned to one partition, without a group (nothing is ever committed)."""

    def __init__(self, config: dict, topic: str, partition: int) -> None:
        self._tp = KafkaTopicPartition(topic, partition)
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
        except TopicAuthorizationFailedError:
            raise not_authorized_to_read(self._tp.topic) from None
        polled = _polled(batches.get(self._tp, ()), self._columnar)
        # The position moves past transaction markers and aborted records as well.
        polled.position = self._consumer.position(self._tp)
        return polled

    def earliest(self) -> int:
        return self._consumer.beginning_offsets([self._tp])[self._tp]

    def latest(self) -> int:
        return self._consumer.end_offsets([self._tp])[self._tp]

    def close(self) -> None:
        close(self._consumer)


class KafkaPythonRanges(SharedRanges):
    """Several ranges of different partitions read through one kafka-python consumer."""

    def __init__(self, config: dict, topic: str, ranges: list[OffsetRange]) -> None:
        super().__init__(ranges)
        self._tps = {rng.partition: KafkaTopicPartition(topic, rng.partition) for rng in ranges}
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
        close(self._consumer)


def _reading_consumer(config: dict) -> KafkaConsumer:
    """A consumer without a group (nothing is ever committed) that fails on a position outside
    the log instead of resetting it."""
    return consumer(**config, enable_auto_commit=False, group_id=None,
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
