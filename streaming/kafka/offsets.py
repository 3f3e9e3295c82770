"""The offsets/metadata client: one interface for everything that asks the cluster about offsets
rather than reading records — the source's offset planning (driver), the job's progress on the
offsets topic, and the end-offset poller. Two implementations: kafka-python
(streaming/kafka/client.py, the default) and confluent-kafka (streaming/kafka/confluent_client.py).

Offsets are asked for (topic, partition) pairs across topics, so one round costs one ListOffsets
request per partition leader; `earliest`/`latest` are the one-topic forms the source uses.
"""
from __future__ import annotations

import base64
import logging
import uuid
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Mapping, Sequence

if TYPE_CHECKING:
    from streaming.sources.kafka_options import KafkaSourceOptions

TopicPartition = tuple[str, int]
TOPIC_AUTHORIZATION_FAILED = 29  # Kafka's error code
# OffsetsClient.first_records: the fetch size asked a partition (Kafka answers with the first
# record batch whole even when it is larger).
FIRST_RECORD_FETCH_BYTES = 16 << 10


class NotAuthorized(Exception):
    """The client's principal lacks an ACL; the message says which and what to grant."""


# What a read refused by the broker's authorizer fails its Spark task with: the job tells that
# failure from any other by this text (streaming/job/lifecycle.py).
READ_REFUSED = "may not READ topic"


def not_authorized_to_read(topic: str) -> NotAuthorized:
    return _refused("READ", topic)


def not_authorized_to_describe(topic: str) -> NotAuthorized:
    return _refused("DESCRIBE", topic)


def _refused(operation: str, topic: str) -> NotAuthorized:
    """Either way the grant to ask for is READ (which includes DESCRIBE)."""
    return NotAuthorized(
        f"this principal may not {operation} topic {topic} (TOPIC_AUTHORIZATION_FAILED): grant "
        f"it READ on the topic{' (which includes DESCRIBE)' if operation != 'READ' else ''}, "
        f"e.g. kafka-acls.sh --add --allow-principal User:<name> --operation Read --topic {topic}"
        f"{_OR_ADMIN if topic == OFFSETS_TOPIC else ''}")


def readable_partitions(client: "OffsetsClient", topic: str, read_checked: bool) -> list[int]:
    """The topic's partitions ([] when it does not exist yet), or NotAuthorized when the
    principal may not describe it or, unless `read_checked`, may not fetch from it."""
    partitions = client.partitions(topic)
    if partitions and not read_checked and not client.may_read(topic, partitions[0]):
        raise not_authorized_to_read(topic)
    return partitions


OFFSETS_TOPIC = "__consumer_offsets"
# Managed Kafka never grants it: the Admin API is the way in there.
_OR_ADMIN = ("; where that cannot be granted (managed Kafka), use source.type admin, which needs "
             "DESCRIBE on the groups and topics only")


class OffsetsClient(ABC):
    @abstractmethod
    def partitions(self, topic: str) -> list[int]:
        """The topic's partitions ([] when it does not exist), from metadata of that topic only:
        describing every topic of a large cluster to count one topic's partitions is expensive."""

    @abstractmethod
    def start_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """Log start offsets."""

    @abstractmethod
    def end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """Log end offsets (the last stable offset under read_committed): where the source may
        read up to."""

    def log_end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """High watermarks, past any open transaction: the log end offset as Kafka's tools
        show it, which lag is taken to (streaming/kafka/log_ends.py). This default is right
        for a client reading uncommitted."""
        return self.end_offsets(partitions)

    def first_record_times(self, partitions: Sequence[TopicPartition]
                           ) -> dict[TopicPartition, float]:
        """When each partition's first record still in the log was written (seconds): no
        unconsumed record is older, so no time lag may be longer. Partitions without records
        are left out; clients that cannot ask leave out all."""
        return {}

    @abstractmethod
    def topic_metadata(self) -> tuple[Mapping[str, str], Mapping[str, int]]:
        """({topic id in Kafka's printed form: topic name}, {topic name: partition count}) of
        every topic: KIP-848 assignments name topics by id only."""

    @abstractmethod
    def close(self) -> None: ...

    def may_read(self, topic: str, partition: int) -> bool:
        """Whether the broker lets this principal fetch from the partition (a refused fetch
        would fail the Spark task that tried it). Clients that cannot ask say True."""
        return True

    def first_records(self, positions: Mapping[TopicPartition, int], timeout_s: float
                      ) -> dict[TopicPartition, float]:
        """The timestamp (seconds) of the first record at or after each position (the first
        still in the log, if retention removed it), read within `timeout_s`: a partition
        with nothing to read yet, or not answered in time, is left out. Raises NotAuthorized
        when the principal may not read a topic."""
        raise NotImplementedError("this Kafka client cannot read records for lag.time_method")

    def earliest(self, topic: str, partitions: list[int]) -> dict[int, int]:
        return _of_topic(self.start_offsets([(topic, p) for p in partitions]))

    def latest(self, topic: str, partitions: list[int]) -> dict[int, int]:
        return _of_topic(self.end_offsets([(topic, p) for p in partitions]))


def close_quietly(client, what: str) -> None:
    """Close a client being dropped (after a failure, or at a stop): a failure to close it says
    nothing new, and must not hide what made the caller drop it."""
    if client is None:
        return
    try:
        client.close()
    except Exception:
        logging.getLogger("groupscope.kafka").debug("closing the %s failed", what, exc_info=True)


def _of_topic(offsets: Mapping[TopicPartition, int]) -> dict[int, int]:
    return {partition: offset for (_topic, partition), offset in offsets.items()}


def kafka_topic_id(value: uuid.UUID | str | bytes) -> str:
    """Kafka's printed form of a topic id (base64url without padding, what the decoder emits)
    from a UUID, its string form, or its 16 bytes."""
    if isinstance(value, str):
        value = uuid.UUID(value)
    raw = value.bytes if isinstance(value, uuid.UUID) else value
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def offsets_client(options: KafkaSourceOptions, timeout_s: float | None = None) -> OffsetsClient:
    """The client `options.client` names, with the connection settings of `options` (the
    `kafka.*` passthrough), answering log end offsets as well (LogEnds). `timeout_s` bounds
    each request (None: the client's default)."""
    from streaming.kafka.log_ends import ConfluentLog, KafkaPythonLog, LogEnds

    if options.client == "confluent":
        from streaming.kafka.confluent_client import REQUEST_TIMEOUT_S, ConfluentOffsets
        config = options.confluent_config()
        return LogEnds(ConfluentOffsets(config, timeout_s),
                       lambda: ConfluentLog(config, timeout_s or REQUEST_TIMEOUT_S))
    from streaming.kafka.client import KafkaPythonOffsets
    config = options.kafka_python_config()
    return LogEnds(KafkaPythonOffsets(config, timeout_s), lambda: KafkaPythonLog(config, timeout_s))
