"""Events the reducer emits while it replays `__consumer_offsets`.

Every event names the record that produced it by its position in `__consumer_offsets`
(offsets-topic partition and offset), so the same record stream always yields the same events,
whatever micro-batches it was cut into.
"""
from __future__ import annotations

from typing import Any

OFFSET_COMMITTED = "offset_committed"
OFFSET_DELETED = "offset_deleted"
GROUP_EMPTIED = "group_emptied"
GROUP_DELETED = "group_deleted"
MEMBER_JOINED = "member_joined"
MEMBER_LEFT = "member_left"
REBALANCE = "rebalance"
REBALANCE_DOWNTIME = "rebalance_downtime"


class Event:
    """One event. Immutable by convention; `fields` are the name-specific extras of `to_dict()`.

    A plain slotted class rather than a dataclass: offset commits create one per record on the hot
    path, and this is the cheapest object that still compares by value.
    """

    __slots__ = ("event", "group", "timestamp_ms", "partition", "offset", "fields")

    def __init__(self, event: str, group: str, timestamp_ms: int, partition: int, offset: int,
                 fields: dict[str, Any]) -> None:
        self.event = event
        self.group = group
        self.timestamp_ms = timestamp_ms
        self.partition = partition
        self.offset = offset
        self.fields = fields

    def to_dict(self) -> dict[str, Any]:
        out = {"event": self.event, "group": self.group, "timestamp_ms": self.timestamp_ms,
               "partition": self.partition, "offset": self.offset}
        out.update(self.fields)
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Event) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((self.event, self.group, self.partition, self.offset))

    def __repr__(self) -> str:
        return f"Event({self.to_dict()!r})"


class Position:
    """Where a record sits in `__consumer_offsets` and when it was appended."""

    __slots__ = ("partition", "offset", "timestamp_ms")

    def __init__(self, partition: int, offset: int, timestamp_ms: int) -> None:
        self.partition = partition
        self.offset = offset
        self.timestamp_ms = timestamp_ms

    def event(self, name: str, group: str, **fields: Any) -> Event:
        return Event(name, group, self.timestamp_ms, self.partition, self.offset, fields)
