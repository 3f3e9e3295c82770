"""StickyAssignor user data (`sticky` protocol): the member's previous assignment.

No version prefix: an array of {topic, [partition]} optionally followed by an int32 generation
(KIP-341). Like Kafka, read it with the generation first and fall back to the layout without it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from coordinator.protocol.consumer import TopicPartitions, read_topic_partitions_array
from coordinator.protocol.wire import Reader, Writer


@dataclass(frozen=True)
class StickyUserData:
    previous_assignment: tuple[TopicPartitions, ...]
    generation: int | None  # None: the v0 layout, which carries no generation

    def to_dict(self) -> dict[str, Any]:
        return {"previous_assignment": [tp.to_dict() for tp in self.previous_assignment],
                "generation": self.generation}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "StickyUserData":
        return cls(tuple(TopicPartitions.from_dict(tp) for tp in data["previous_assignment"]),
                   data.get("generation"))


def decode_sticky_user_data(data: bytes) -> StickyUserData:
    """Raises DecodeError when even the previous assignment cannot be read."""
    reader = Reader(data, "sticky user data")
    partitions = read_topic_partitions_array(reader, "previous_assignment")
    # Like Kafka: without room for a whole generation this is the v0 layout, and bytes after
    # the last field are ignored.
    if reader.remaining() >= 4:
        return StickyUserData(partitions, reader.int32("generation"))
    return StickyUserData(partitions, None)


def encode_sticky_user_data(user_data: StickyUserData | Mapping[str, Any]) -> bytes:
    data = user_data if isinstance(user_data, StickyUserData) else StickyUserData.from_dict(user_data)
    writer = Writer()
    writer.array(data.previous_assignment,
                 lambda tp: writer.string(tp.topic).int32_array(tp.partitions))
    if data.generation is not None:
        writer.int32(data.generation)
    return writer.getvalue()
