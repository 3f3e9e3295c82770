"""What the caller knows that the log does not: cluster metadata and output options."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping


@dataclass(frozen=True)
class Context:
    """Inputs of the reducer besides the records.

    topic_names: topic id (base64url, as decoded) -> name, from cluster metadata; used for ids that
        the group's own partition-metadata records (types 4/9/15) do not name.
    partition_counts: topic -> partition count, for "subscribed partitions nobody owns"; the
        group's partition-metadata records add to it.
    num_partitions: partition count of `__consumer_offsets` (coordinator partition of a group).
    emit_offset_events: False skips `offset_committed` events (the hot path's only allocation).
    """

    topic_names: Mapping[str, str] = field(default_factory=dict)
    partition_counts: Mapping[str, int] = field(default_factory=dict)
    num_partitions: int = 50
    emit_offset_events: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.num_partitions, int) or self.num_partitions < 1:
            raise ValueError(f"num_partitions must be a positive integer, not {self.num_partitions!r}")
