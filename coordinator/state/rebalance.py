"""Comparing two assignments: what one rebalance changed, and how good the result is.

An assignment here is `{member_id: {(topic, partition), ...}}` (Connect groups use
(connector, task) and Streams groups (subtopology, partition) the same way).
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

Owners = Mapping[str, Iterable[tuple[str, int]]]


def _owner_of(owners: Owners) -> dict[tuple[str, int], str]:
    # A partition listed under two members (a transient double claim) counts for the first in
    # member-id order, so the result does not depend on dict order.
    out: dict[tuple[str, int], str] = {}
    for mid in sorted(owners, reverse=True):
        for tp in owners[mid]:
            out[tuple(tp)] = mid
    return out


def _pairs(tps: Iterable[tuple[str, int]]) -> list[list]:
    return [[t, p] for t, p in sorted(tps)]


def diff_assignments(old: Owners, new: Owners,
                     released: Mapping[tuple[str, int], str] | None = None) -> dict[str, list]:
    """Members joined/left/kept and partitions revoked/assigned/kept/moved between two assignments.

    revoked: partitions a member owned before and does not own after; assigned: partitions a member
    owns after and did not own before; kept: same owner before and after; moved: assigned to a
    different member than their last owner. The last owner is the owner before or, for a partition
    nobody owned before, the member that gave it up earlier as listed in `released` (cooperative
    assignors move a partition in two rebalances: revoked in one, assigned in the next).
    """
    old_owner, new_owner = _owner_of(old), _owner_of(new)
    revoked = [tp for tp, mid in old_owner.items() if new_owner.get(tp) != mid]
    assigned = [tp for tp, mid in new_owner.items() if old_owner.get(tp) != mid]
    kept = [tp for tp, mid in new_owner.items() if old_owner.get(tp) == mid]
    released = released or {}
    moved = [tp for tp in assigned
             if tp in old_owner or (tp in released and released[tp] != new_owner[tp])]
    return {
        "members_joined": sorted(set(new) - set(old)),
        "members_left": sorted(set(old) - set(new)),
        "members_kept": sorted(set(old) & set(new)),
        "partitions_revoked": _pairs(revoked),
        "partitions_assigned": _pairs(assigned),
        "partitions_kept": _pairs(kept),
        "partitions_moved": _pairs(moved),
    }


def assignment_quality(owners: Owners, subscriptions: Mapping[str, Iterable[str]],
                       partition_counts: Mapping[str, int] | None) -> dict[str, Any]:
    """Partitions per member (min, max, skew), idle members and unowned subscribed partitions.

    skew is the largest max-minus-min among members with identical subscriptions (comparing
    members that could not be given the same topics says nothing about the assignor).
    unowned_partitions counts, per subscribed topic whose partition count is known, the partitions
    no member owns; it is None when no subscribed topic has a known count.
    """
    counts = {mid: len(set(map(tuple, tps))) for mid, tps in owners.items()}
    by_subscription: dict[tuple[str, ...], list[int]] = {}
    for mid, n in counts.items():
        by_subscription.setdefault(tuple(sorted(subscriptions.get(mid, ()))), []).append(n)
    skew = max((max(ns) - min(ns) for ns in by_subscription.values()), default=0)
    unowned = None
    topics = sorted({t for mid in owners for t in subscriptions.get(mid, ())})
    known = [t for t in topics if partition_counts and t in partition_counts]
    if known:
        owned: dict[str, set[int]] = {}
        for tps in owners.values():
            for t, p in tps:
                owned.setdefault(t, set()).add(p)
        unowned = {t: sum(1 for p in range(partition_counts[t]) if p not in owned.get(t, ())) for t in known}
    return {
        "members": len(counts),
        "min_partitions": min(counts.values(), default=0),
        "max_partitions": max(counts.values(), default=0),
        "skew": skew,
        "idle_members": sum(1 for n in counts.values() if n == 0),
        "unowned_partitions": unowned,
    }
