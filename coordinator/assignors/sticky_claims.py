"""What the sticky family knows before assigning: claims, generations, racks.

Members report the partitions they held (StickyAssignor: in user data; cooperative-sticky:
as owned partitions) with a generation. Claims on the same partition are settled here the way
Kafka settles them: the newer generation wins, equal generations void the claim for both.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .java_order import string_hash_order
from .model import AssignorInput, Partition

NO_GENERATION = -1


@dataclass
class MemberClaim:
    partitions: list[Partition]
    generation: int | None      # as carried with the claim; None when the member sent none
    reported_generation: int     # the subscription's generation id, -1 when absent


def member_claims(inp: AssignorInput, cooperative: bool) -> dict[str, MemberClaim]:
    claims = {}
    for member in inp.subscriptions:
        reported = inp.generations.get(member, NO_GENERATION)
        reported = reported if reported >= 0 else NO_GENERATION
        owned = list(inp.previous.get(member, []))
        if cooperative:
            # cooperative-sticky always encodes a generation, DEFAULT (-1) for a fresh member
            generation: int | None = reported
        else:
            generation = reported if reported >= 0 else None
        claims[member] = MemberClaim(owned, generation, reported)
    return claims


@dataclass
class SettledClaims:
    member_order: list[str]                      # Kafka's iteration order of the members
    owned: dict[str, list[Partition]]            # claims that survived, in claim order
    contested: set[Partition] = field(default_factory=set)   # equal-generation double claims
    identical_subscriptions: bool = True
    # Kafka's leader keeps this maximum across rebalances in its assignor instance; each call
    # here behaves like a freshly elected leader, which is what matters while generations grow.
    max_generation: int = NO_GENERATION


def settle_claims(inp: AssignorInput, claims: dict[str, MemberClaim]) -> SettledClaims:
    order = string_hash_order(inp.subscriptions)
    topics_with_metadata = set(inp.subscribed_topics_with_metadata())
    settled = SettledClaims(order, {})
    reference: set[str] = set()
    claimant: dict[Partition, str] = {}
    for member in order:
        topics = inp.subscriptions[member]
        if not reference:
            reference.update(topics)
        elif settled.identical_subscriptions and not (len(topics) == len(reference) and reference.issuperset(topics)):
            settled.identical_subscriptions = False
        claim = claims[member]
        generation = claim.generation if claim.generation is not None else NO_GENERATION
        settled.max_generation = max(settled.max_generation, generation)
        kept: list[Partition] = []
        settled.owned[member] = kept
        for tp in claim.partitions:
            if tp[0] not in topics_with_metadata:
                continue
            other = claimant.get(tp)
            if other is None:
                kept.append(tp)
                claimant[tp] = member
                continue
            other_generation = claims[other].reported_generation
            if generation == other_generation:
                settled.contested.add(tp)
                _remove_first(settled.owned[other], tp)
                claimant[tp] = member
            elif generation > other_generation:
                kept.append(tp)
                _remove_first(settled.owned[other], tp)
                claimant[tp] = member
    return settled


def _remove_first(items: list[Partition], tp: Partition) -> None:
    if tp in items:
        items.remove(tp)


class RackInfo:
    """Rack placement as the sticky assignors see it (empty maps when rack-awareness is off)."""

    def __init__(self, inp: AssignorInput, all_partitions: list[Partition]) -> None:
        members_by_rack: dict[str, list[str]] = {}
        for member in inp.subscriptions:
            rack = inp.member_rack(member)
            if rack:
                members_by_rack.setdefault(rack, []).append(member)
        replica_racks: dict[Partition, frozenset[str]] = {}
        if members_by_rack:
            replica_racks = {tp: inp.replica_racks(tp) for tp in all_partitions}
        all_partition_racks = frozenset().union(*replica_racks.values()) if replica_racks else frozenset()
        use = (bool(members_by_rack) and not all_partition_racks.isdisjoint(members_by_rack)
               and any(r != all_partition_racks for r in replica_racks.values()))
        self.member_racks: dict[str, str] = (
            {m: rack for rack, ms in members_by_rack.items() for m in ms} if use else {})
        self.partition_racks: dict[Partition, frozenset[str]] = replica_racks if use else {}
        # Computed from the replica racks even when rack-awareness ends up off: Kafka still uses
        # it to order unassigned partitions whenever any member has a rack.
        self.members_per_partition = {
            tp: sum(len(members_by_rack.get(r, ())) for r in racks) for tp, racks in replica_racks.items()}

    def mismatch(self, member: str, tp: Partition) -> bool:
        rack = self.member_racks.get(member)
        return rack is not None and rack not in self.partition_racks.get(tp, frozenset())

    def order_by_rack_members(self, partitions: list[Partition]) -> list[Partition]:
        if not self.members_per_partition:
            return partitions
        return sorted(partitions, key=lambda tp: self.members_per_partition.get(tp, 0))

    def next_rack_member(self, tp: Partition, members: list[str], first: int) -> int:
        racks = self.partition_racks.get(tp)
        if not racks:
            return -1
        for i in range(len(members)):
            index = (first + i) % len(members)
            rack = self.member_racks.get(members[index])
            if rack is not None and rack in racks:
                return index
        return -1
