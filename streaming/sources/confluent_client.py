"""confluent-kafka (librdkafka) behind the source: the `fast` extra, several times quicker than
kafka-python at parsing record batches. Same duties as `kafka_python_client`."""
from __future__ import annotations

from confluent_kafka import (Consumer, IsolationLevel, KafkaError, KafkaException,
                             TopicPartition, TIMESTAMP_LOG_APPEND_TIME)
from confluent_kafka.admin import AdminClient, OffsetSpec

from streaming.sources.range_reader import OffsetOutOfRange, Polled
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


class ConfluentPartition:
    def __init__(self, config: dict, topic: str, partition: int) -> None:
        self._topic, self._partition = topic, partition
        self._consumer = Consumer({
            "group.id": "groupscope-source",  # required by librdkafka; nothing is committed
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "error",
            "fetch.max.bytes": 64 << 20,
            "max.partition.fetch.bytes": 16 << 20,
            **config,
        })
        self._position = 0

    def seek(self, offset: int) -> None:
        self._consumer.assign([TopicPartition(self._topic, self._partition, offset)])
        self._position = offset

    def poll(self) -> Polled:
        messages = self._consumer.consume(num_messages=MAX_POLL_RECORDS, timeout=POLL_TIMEOUT_S)
        offsets, keys, values, stamps, kinds = [], [], [], [], []
        for message in messages:
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    # At the end of the readable log: anything before it (markers too) is passed.
                    self._position = max(self._position, message.offset())
                    continue
                if error.code() in (KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._AUTO_OFFSET_RESET):
                    raise OffsetOutOfRange(error.str())
                raise KafkaException(error)
            kind, stamp = message.timestamp()
            offsets.append(message.offset())
            keys.append(message.key())
            values.append(message.value())
            stamps.append(stamp)
            kinds.append(LOG_APPEND_TIME if kind == TIMESTAMP_LOG_APPEND_TIME else CREATE_TIME)
        if offsets:
            self._position = max(self._position, offsets[-1] + 1)
        return Polled(offsets, keys, values, stamps, kinds, self._position)

    def _watermarks(self) -> tuple[int, int]:
        return self._consumer.get_watermark_offsets(
            TopicPartition(self._topic, self._partition), timeout=REQUEST_TIMEOUT_S)

    def earliest(self) -> int:
        return self._watermarks()[0]

    def latest(self) -> int:
        return self._watermarks()[1]

    def close(self) -> None:
        self._consumer.close()
