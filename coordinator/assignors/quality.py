"""How good an assignment is, and what it moved: for comparing assignors and for `whatif`.

The group-level figures (the `quality` dict of a rebalance event, see docs/contracts.md) come
from `coordinator.state.rebalance`, so the monitor and the assignor lab report the same numbers;
this module adds the per-member and per-partition detail behind them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from coordinator.state.rebalance import assignment_quality, diff_assignments

from .model import Partition, sort_partitions

Owners = Mapping[str, Iterable[Partition]]


@dataclass(frozen=True)
class AssignmentQuality:
    partitions_per_member: dict[str, int]
    min_partitions: int
    max_partitions: int
    skew: int                                   # worst max-min among identically subscribed members
    idle_members: tuple[str, ...]               # members owning nothing, sorted
    unowned: dict[str, tuple[int, ...]] | None  # subscribed topic -> partitions nobody owns

    def to_dict(self) -> dict[str, Any]:
        """The `quality` shape of a rebalance event."""
        return {
            "members": len(self.partitions_per_member),
            "min_partitions": self.min_partitions,
            "max_partitions": self.max_partitions,
            "skew": self.skew,
            "idle_members": len(self.idle_members),
            "unowned_partitions": (None if self.unowned is None
                                   else {t: len(ps) for t, ps in self.unowned.items()}),
        }


def quality(assignment: Owners, subscriptions: Mapping[str, Iterable[str]],
            partitions_per_topic: Mapping[str, int] | None = None) -> AssignmentQuality:
    """Quality of `assignment` for members subscribed as in `subscriptions`.

    Unowned partitions need partition counts; they are None when no subscribed topic has one.
    """
    owners = {m: {tuple(tp) for tp in tps} for m, tps in assignment.items()}
    subs = {m: list(ts) for m, ts in subscriptions.items()}
    summary = assignment_quality(owners, subs, partitions_per_topic)
    per_member = {m: len(tps) for m, tps in owners.items()}
    unowned = None
    if summary["unowned_partitions"] is not None:
        owned = {tp for tps in owners.values() for tp in tps}
        unowned = {t: tuple(p for p in range(partitions_per_topic[t]) if (t, p) not in owned)
                   for t in summary["unowned_partitions"]}
    return AssignmentQuality(
        partitions_per_member=per_member,
        min_partitions=summary["min_partitions"],
        max_partitions=summary["max_partitions"],
        skew=summary["skew"],
        idle_members=tuple(sorted(m for m, n in per_member.items() if n == 0)),
        unowned=unowned,
    )


def moved(previous: Owners, new: Owners) -> list[Partition]:
    """Partitions owned both before and after, by a different member (sorted)."""
    return sort_partitions(tuple(tp) for tp in diff_assignments(previous, new)["partitions_moved"])
