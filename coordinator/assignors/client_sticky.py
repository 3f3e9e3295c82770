"""Client-side StickyAssignor ("sticky") and CooperativeStickyAssignor ("cooperative-sticky").

Both share one algorithm; identical subscriptions take the quota path, anything else the general
balancing path. The cooperative variant then withholds every partition that changes owner: it is
handed out only in the follow-up rebalance, once its old owner has revoked it.
"""
from __future__ import annotations

from .model import Assignment, AssignorInput, Partition
from .sticky_claims import RackInfo, member_claims, settle_claims
from .sticky_constrained import ConstrainedBuilder
from .sticky_general import GeneralBuilder


def _sticky(inp: AssignorInput, cooperative: bool) -> tuple[Assignment, dict[Partition, str] | None]:
    claims = member_claims(inp, cooperative)
    settled = settle_claims(inp, claims)
    every = [tp for t in inp.subscribed_topics_with_metadata() for tp in inp.partitions_of(t)]
    racks = RackInfo(inp, every)
    if settled.identical_subscriptions:
        builder = ConstrainedBuilder(inp, settled, racks)
        return builder.build(), builder.transferring
    return GeneralBuilder(inp, claims, settled, racks).build(), None


def assign_sticky(inp: AssignorInput) -> Assignment:
    return _sticky(inp, cooperative=False)[0]


def _changing_owner(inp: AssignorInput, assignment: Assignment) -> dict[Partition, str]:
    gained: dict[Partition, str] = {}
    released: set[Partition] = set()
    for member, assigned in assignment.items():
        owned = inp.previous.get(member, [])
        owned_set, assigned_set = set(owned), set(assigned)
        gained.update((tp, member) for tp in assigned if tp not in owned_set)
        released.update(tp for tp in owned if tp not in assigned_set)
    return {tp: m for tp, m in gained.items() if tp in released}


def assign_cooperative_sticky(inp: AssignorInput) -> Assignment:
    assignment, transferring = _sticky(inp, cooperative=True)
    if transferring is None:
        transferring = _changing_owner(inp, assignment)
    for tp, member in transferring.items():
        assignment[member].remove(tp)
    return assignment
