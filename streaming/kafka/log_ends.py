"""What lag is measured against, asked of the log itself rather than of a reader's view of it.

The offsets client answers as the source reads: under read_committed its end offset is the last
stable offset, where an open transaction begins, because the source must not plan reads past
it. Lag is another question. Kafka's own tools take it to the high watermark (GetOffsetShell,
LOG-END-OFFSET of the consumer-group command, the share-group command's lag), and a consumer that
reads uncommitted, or a share group that already received the open transaction's records, is
past the last stable offset: against it, its lag would be negative. So `LogEnds` wraps an
offsets client and adds, from a read_uncommitted client of its own opened on first use:
- `log_end_offsets`: the high watermarks;
- `first_record_times`: the timestamp of each partition's first record still in the log
  (ListOffsets for timestamp 0, which DESCRIBE allows): no unconsumed record is older.
"""
from __future__ import annotations

from typing import Any, Mapping, Protocol, Sequence

from streaming.kafka.offsets import OffsetsClient, TopicPartition, close_quietly


class LogReader(Protocol):
    def high_watermarks(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]: ...

    def first_record_times(self, partitions: Sequence[TopicPartition]
                           ) -> dict[TopicPartition, float]: ...

    def close(self) -> None: ...


class LogEnds(OffsetsClient):
    """`client`, plus the log's own end offsets and first record times (`open_reader` makes
    the client that asks for them, on first use: the source's planning never does)."""

    def __init__(self, client: OffsetsClient, open_reader) -> None:
        self.client = client
        self._open_reader = open_reader
        self._reader: LogReader | None = None

    def _log(self) -> LogReader:
        if self._reader is None:
            self._reader = self._open_reader()
        return self._reader

    def log_end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return self._log().high_watermarks(partitions) if partitions else {}

    def first_record_times(self, partitions: Sequence[TopicPartition]
                           ) -> dict[TopicPartition, float]:
        return self._log().first_record_times(partitions) if partitions else {}

    # ---- the wrapped client's answers ------------------------------------------------------

    def partitions(self, topic: str) -> list[int]:
        return self.client.partitions(topic)

    def start_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return self.client.start_offsets(partitions)

    def end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return self.client.end_offsets(partitions)

    def topic_metadata(self):
        return self.client.topic_metadata()

    def may_read(self, topic: str, partition: int) -> bool:
        return self.client.may_read(topic, partition)

    def first_records(self, positions: Mapping[TopicPartition, int], timeout_s: float
                      ) -> dict[TopicPartition, float]:
        return self.client.first_records(positions, timeout_s)

    def __getattr__(self, name: str) -> Any:
        # what one implementation has beyond the interface (e.g. kafka-python's at_time)
        return getattr(self.__dict__["client"], name)

    def close(self) -> None:
        reader, self._reader = self._reader, None
        close_quietly(reader, "log end offsets client")
        self.client.close()


class KafkaPythonLog:
    """kafka-python: a consumer without a group, reading uncommitted."""

    def __init__(self, config: dict, timeout_s: float | None = None) -> None:
        from streaming.kafka.kafka_python_net import consumer

        config = dict(config, isolation_level="read_uncommitted")
        if timeout_s is not None:
            config["request_timeout_ms"] = int(timeout_s * 1000)
        self._consumer = consumer(**config, enable_auto_commit=False, group_id=None)

    def high_watermarks(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        from kafka import TopicPartition as KafkaTopicPartition

        answer = self._consumer.end_offsets([KafkaTopicPartition(t, p) for t, p in partitions])
        return {(tp.topic, tp.partition): offset for tp, offset in answer.items()
                if offset is not None}

    def first_record_times(self, partitions: Sequence[TopicPartition]
                           ) -> dict[TopicPartition, float]:
        from kafka import TopicPartition as KafkaTopicPartition

        answer = self._consumer.offsets_for_times({KafkaTopicPartition(t, p): 0
                                                   for t, p in partitions})
        return {(tp.topic, tp.partition): found.timestamp / 1000.0
                for tp, found in answer.items() if found is not None and found.timestamp >= 0}

    def close(self) -> None:
        from streaming.kafka.kafka_python_net import close

        close(self._consumer)


class ConfluentLog:
    """confluent-kafka: ListOffsets through an admin client, reading uncommitted."""

    def __init__(self, config: dict, timeout_s: float) -> None:
        from confluent_kafka.admin import AdminClient

        self._admin = AdminClient({k: v for k, v in config.items() if k != "isolation.level"})
        self._timeout_s = timeout_s

    def _list(self, partitions: Sequence[TopicPartition], spec) -> dict[TopicPartition, Any]:
        from confluent_kafka import IsolationLevel, TopicPartition as ConfluentTopicPartition

        futures = self._admin.list_offsets({ConfluentTopicPartition(t, p): spec
                                            for t, p in partitions},
                                           isolation_level=IsolationLevel.READ_UNCOMMITTED,
                                           request_timeout=self._timeout_s)
        return {(tp.topic, tp.partition): future.result() for tp, future in futures.items()}

    def high_watermarks(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        from confluent_kafka.admin import OffsetSpec

        return {tp: info.offset for tp, info in self._list(partitions, OffsetSpec.latest()).items()}

    def first_record_times(self, partitions: Sequence[TopicPartition]
                           ) -> dict[TopicPartition, float]:
        from confluent_kafka.admin import OffsetSpec

        return {tp: info.timestamp / 1000.0
                for tp, info in self._list(partitions, OffsetSpec.for_timestamp(0)).items()
                if info.offset >= 0 and info.timestamp >= 0}

    def close(self) -> None:
        self._admin = None
