"""ConsumerProtocol Subscription and Assignment, versions 0-3 (the `consumer` protocol type).

Leniency, decided from the spec and the captured vectors:

* A version above 3 is read with the v3 layout. Bytes after the last field of the version (Java
  ignores them) are kept in `trailing`, not in `to_dict()`, so that re-encoding reproduces the blob.
* Truncation at a field boundary is accepted: old Go clients (bsm/sarama-cluster) wrote a v1
  header without `OwnedPartitions`. Kafka's own Java reader rejects such blobs, but a monitor
  should still show the member's topics. Missing trailing fields take their schema defaults
  (`user_data` None, `owned_partitions` [], `generation_id` -1, `rack_id` None) and the object
  is marked `truncated=True`. The version header and the first field (`topics` /
  `assigned_partitions`) are required. A field cut in the middle is a `DecodeError`.
* A zero-length blob means "nothing" (an empty assignment before SyncGroup, hand-made empty
  subscriptions). It decodes to an object with `version=None` and no topics/partitions, whose
  `to_dict()` is `{"version": None, "topics": [], "user_data": None}` (subscription) or
  `{"version": None, "assigned_partitions": [], "user_data": None}` (assignment), and which
  encodes back to zero bytes.
* A negative version is a `DecodeError`, as in Kafka.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, TypeVar

from coordinator.errors import DecodeError
from coordinator.protocol.wire import Reader, Writer, bytes_from_hex, hex_or_none

T = TypeVar("T")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")

# Smallest encoding of a topic entry (empty name, no partitions), to reject absurd counts early.
_MIN_TOPIC_PARTITIONS = 6


@dataclass(frozen=True)
class TopicPartitions:
    topic: str
    partitions: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"topic": self.topic, "partitions": list(self.partitions)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "TopicPartitions":
        return cls(data["topic"], tuple(int(p) for p in data["partitions"]))


def group_partitions(pairs: Iterable[tuple[str, int]], sort: bool = True) -> tuple[TopicPartitions, ...]:
    """Groups (topic, partition) pairs per topic.

    With `sort=True` topics and partitions are sorted, as Kafka's serializer does for
    `OwnedPartitions`; with `sort=False` topics keep first-seen order and partitions keep their
    order, as Kafka writes `AssignedPartitions`.
    """
    grouped: dict[str, list[int]] = {}
    for topic, partition in pairs:
        grouped.setdefault(topic, []).append(int(partition))
    topics = sorted(grouped) if sort else list(grouped)
    return tuple(TopicPartitions(t, tuple(sorted(grouped[t]) if sort else grouped[t])) for t in topics)


@dataclass(frozen=True)
class Subscription:
    version: int | None
    topics: tuple[str, ...] = ()
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartitions, ...] = ()
    generation_id: int = -1
    rack_id: str | None = None
    trailing: bytes = field(default=b"", repr=False)
    truncated: bool = field(default=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"version": self.version, "topics": list(self.topics),
                               "user_data": hex_or_none(self.user_data)}
        if self.version is None:
            return out
        if self.version >= 1:
            out["owned_partitions"] = [tp.to_dict() for tp in self.owned_partitions]
        if self.version >= 2:
            out["generation_id"] = self.generation_id
        if self.version >= 3:
            out["rack_id"] = self.rack_id
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Subscription":
        return cls(
            version=data["version"],
            topics=tuple(data.get("topics", ())),
            user_data=bytes_from_hex(data.get("user_data"), "user_data"),
            owned_partitions=tuple(TopicPartitions.from_dict(tp) for tp in data.get("owned_partitions", ())),
            generation_id=int(data.get("generation_id", -1)),
            rack_id=data.get("rack_id"),
        )


@dataclass(frozen=True)
class Assignment:
    version: int | None
    assigned_partitions: tuple[TopicPartitions, ...] = ()
    user_data: bytes | None = None
    trailing: bytes = field(default=b"", repr=False)
    truncated: bool = field(default=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version,
                "assigned_partitions": [tp.to_dict() for tp in self.assigned_partitions],
                "user_data": hex_or_none(self.user_data)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Assignment":
        return cls(
            version=data["version"],
            assigned_partitions=tuple(TopicPartitions.from_dict(tp)
                                      for tp in data.get("assigned_partitions", ())),
            user_data=bytes_from_hex(data.get("user_data"), "user_data"),
        )


def _read_version(reader: Reader) -> int:
    version = reader.int16("version")
    if version < 0:
        raise DecodeError(f"{reader.what}: unsupported version {version}", reason="unsupported_version")
    return version


def _read_topic_partitions(reader: Reader) -> TopicPartitions:
    topic = reader.string("topic")
    return TopicPartitions(topic, reader.int32_array("partitions"))


def read_topic_partitions_array(reader: Reader, field: str) -> tuple[TopicPartitions, ...]:
    """An array of {topic, [int32 partition]}: the shape shared by several embedded formats."""
    return tuple([_read_topic_partitions(reader) for _ in range(reader.count(field, _MIN_TOPIC_PARTITIONS))])


def _write_topic_partitions(writer: Writer, tp: TopicPartitions) -> None:
    writer.string(tp.topic).int32_array(tp.partitions)


class _NotPlain(Exception):
    """The blob is not a plain, complete one: let the careful reader handle (or reject) it."""


# The `_plain_*` functions decode complete, well-formed blobs in straight-line code and raise
# (`_NotPlain`, `struct.error` or `UnicodeDecodeError`) on anything else. Group snapshots carry
# one subscription and one assignment per member, so this path matters for throughput; the
# `_careful_*` functions are the reference and handle truncation and errors.
_NOT_PLAIN = (_NotPlain, struct.error, UnicodeDecodeError)


def _plain_string(data: bytes, pos: int) -> tuple[str | None, int]:
    """A (nullable) int16-length string at `pos`; the caller rejects None where it is not allowed."""
    (size,) = _I16.unpack_from(data, pos)
    end = pos + 2 + size
    if size < 0:
        return None, pos + 2
    if end > len(data):
        raise _NotPlain
    return data[pos + 2:end].decode("utf-8"), end


def _plain_nullable_bytes(data: bytes, pos: int) -> tuple[bytes | None, int]:
    (size,) = _I32.unpack_from(data, pos)
    end = pos + 4 + size
    if size < 0:
        return None, pos + 4
    if end > len(data):
        raise _NotPlain
    return data[pos + 4:end], end


def _plain_count(data: bytes, pos: int, min_item_size: int) -> int:
    (count,) = _I32.unpack_from(data, pos)
    if count < 0 or count * min_item_size > len(data) - pos - 4:
        raise _NotPlain
    return count


def _plain_topic_partitions(data: bytes, pos: int) -> tuple[tuple[TopicPartitions, ...], int]:
    count = _plain_count(data, pos, _MIN_TOPIC_PARTITIONS)
    pos += 4
    items = []
    for _ in range(count):
        topic, pos = _plain_string(data, pos)
        (n,) = _I32.unpack_from(data, pos)
        if topic is None or n < 0:
            raise _NotPlain
        items.append(TopicPartitions(topic, struct.unpack_from(f">{n}i", data, pos + 4)))
        pos += 4 + 4 * n
    return tuple(items), pos


def _plain_subscription(data: bytes) -> Subscription:
    (version,) = _I16.unpack_from(data, 0)
    if version < 0:
        raise _NotPlain
    topics = []
    pos = 6
    for _ in range(_plain_count(data, 2, 2)):
        topic, pos = _plain_string(data, pos)
        if topic is None:
            raise _NotPlain
        topics.append(topic)
    user_data, pos = _plain_nullable_bytes(data, pos)
    owned: tuple[TopicPartitions, ...] = ()
    generation_id, rack_id = -1, None
    if version >= 1:
        owned, pos = _plain_topic_partitions(data, pos)
    if version >= 2:
        (generation_id,) = _I32.unpack_from(data, pos)
        pos += 4
    if version >= 3:
        rack_id, pos = _plain_string(data, pos)
    return Subscription(version, tuple(topics), user_data, owned, generation_id, rack_id, data[pos:])


def _careful_subscription(data: bytes) -> Subscription:
    reader = Reader(data, "consumer subscription")
    version = _read_version(reader)
    topics = tuple(reader.string_array("topics"))
    # Each later field may be missing (truncated blob) only if everything after it is missing too.
    if reader.at_end():
        return Subscription(version, topics, truncated=True)
    user_data = reader.nullable_bytes("user_data")
    owned: tuple[TopicPartitions, ...] = ()
    generation_id, rack_id = -1, None
    if version >= 1:
        if reader.at_end():
            return Subscription(version, topics, user_data, truncated=True)
        owned = read_topic_partitions_array(reader, "owned_partitions")
    if version >= 2:
        if reader.at_end():
            return Subscription(version, topics, user_data, owned, truncated=True)
        generation_id = reader.int32("generation_id")
    if version >= 3:
        if reader.at_end():
            return Subscription(version, topics, user_data, owned, generation_id, truncated=True)
        rack_id = reader.nullable_string("rack_id")
    return Subscription(version, topics, user_data, owned, generation_id, rack_id, reader.data[reader.pos:])


def _plain_assignment(data: bytes) -> Assignment:
    (version,) = _I16.unpack_from(data, 0)
    if version < 0:
        raise _NotPlain
    partitions, pos = _plain_topic_partitions(data, 2)
    user_data, pos = _plain_nullable_bytes(data, pos)
    return Assignment(version, partitions, user_data, data[pos:])


def _careful_assignment(data: bytes) -> Assignment:
    reader = Reader(data, "consumer assignment")
    version = _read_version(reader)
    partitions = read_topic_partitions_array(reader, "assigned_partitions")
    if reader.at_end():
        return Assignment(version, partitions, None, truncated=True)
    user_data = reader.nullable_bytes("user_data")
    return Assignment(version, partitions, user_data, reader.data[reader.pos:])


def _decode(data: bytes, plain: Callable[[bytes], T], careful: Callable[[bytes], T], nothing: T) -> T:
    if len(data) == 0:
        return nothing
    data = bytes(data)
    try:
        return plain(data)
    except _NOT_PLAIN:
        return careful(data)


def decode_subscription(data: bytes) -> Subscription:
    """Decodes a ConsumerProtocolSubscription blob (see the module notes on leniency)."""
    return _decode(data, _plain_subscription, _careful_subscription, Subscription(version=None))


def decode_assignment(data: bytes) -> Assignment:
    """Decodes a ConsumerProtocolAssignment blob (the same body in v0-v3)."""
    return _decode(data, _plain_assignment, _careful_assignment, Assignment(version=None))


def encode_subscription(subscription: Subscription | Mapping[str, Any]) -> bytes:
    """Writes the subscription as Kafka's serializer does at its version (v4+ uses the v3 layout)."""
    sub = subscription if isinstance(subscription, Subscription) else Subscription.from_dict(subscription)
    if sub.version is None:
        return b""
    writer = Writer().int16(sub.version)
    writer.array(sub.topics, writer.string)
    writer.nullable_bytes(sub.user_data)
    if sub.version >= 1:
        writer.array(sub.owned_partitions, lambda tp: _write_topic_partitions(writer, tp))
    if sub.version >= 2:
        writer.int32(sub.generation_id)
    if sub.version >= 3:
        writer.nullable_string(sub.rack_id)
    return writer.raw(sub.trailing).getvalue()


def encode_assignment(assignment: Assignment | Mapping[str, Any]) -> bytes:
    asg = assignment if isinstance(assignment, Assignment) else Assignment.from_dict(assignment)
    if asg.version is None:
        return b""
    writer = Writer().int16(asg.version)
    writer.array(asg.assigned_partitions, lambda tp: _write_topic_partitions(writer, tp))
    writer.nullable_bytes(asg.user_data)
    return writer.raw(asg.trailing).getvalue()
