"""Sticky family, identical subscriptions: the quota-based ("constrained") path.

Every member may hold between floor(P/N) and ceil(P/N) partitions, and only P mod N of them the
larger number. Members keep their owned partitions up to their quota (lowest partition numbers
first), then the rest are dealt out in topic/partition order to the members still below quota.
"""
from __future__ import annotations

from .java_order import string_key
from .model import Assignment, AssignorInput, Partition, sort_partitions
from .sticky_claims import RackInfo, SettledClaims


class ConstrainedBuilder:
    def __init__(self, inp: AssignorInput, claims: SettledClaims, racks: RackInfo) -> None:
        self.inp = inp
        self.claims = claims
        self.racks = racks
        members = claims.member_order
        total = sum(inp.partitions_per_topic[t] for t in inp.subscribed_topics_with_metadata())
        self.min_quota = total // len(members)
        self.max_quota = -(-total // len(members))
        self.expected_over_min = total % len(members)
        self.over_min = 0
        self.assignment: Assignment = {m: [] for m in members}
        self.maybe_revoked: dict[Partition, str] = {}
        self.under_min: list[str] = []
        self.at_min: list[str] = []
        # partition -> new owner, for moves the cooperative protocol must do in two steps
        self.transferring: dict[Partition, str] = {}

    def build(self) -> Assignment:
        kept = self._keep_owned()
        unassigned = self._unassigned(kept)
        self.under_min.sort(key=string_key)
        self.at_min.sort(key=string_key)
        unassigned = self.racks.order_by_rack_members(unassigned)
        unassigned = self._deal_within_racks(unassigned)
        self._deal_round_robin(unassigned)
        return self.assignment

    def _count_over_min(self) -> None:
        self.over_min += 1
        if self.over_min == self.expected_over_min:
            self.at_min.clear()

    def _keep_owned(self) -> set[Partition]:
        kept: set[Partition] = set()
        for member in self.claims.member_order:
            owned = []
            for tp in self.claims.owned[member]:
                if self.racks.mismatch(member, tp):
                    self.maybe_revoked[tp] = member
                else:
                    owned.append(tp)
            owned.sort(key=lambda tp: (tp[1], string_key(tp[0])))
            owned = [tp for tp in owned if tp not in self.claims.contested]
            if len(owned) < self.min_quota:
                keep = owned
                self.under_min.append(member)
            elif len(owned) >= self.max_quota and self.over_min < self.expected_over_min:
                self._count_over_min()
                keep = owned[:self.max_quota]
            else:
                keep = owned[:self.min_quota]
                if self.over_min < self.expected_over_min:
                    self.at_min.append(member)
            for tp in owned[len(keep):]:
                self.maybe_revoked[tp] = member
            self.assignment[member].extend(keep)
            kept.update(keep)
        return kept

    def _unassigned(self, kept: set[Partition]) -> list[Partition]:
        every = [tp for t in self.inp.subscribed_topics_with_metadata() for tp in self.inp.partitions_of(t)]
        return [tp for tp in sort_partitions(every) if tp not in kept]

    def _give(self, tp: Partition, member: str) -> int:
        self.assignment[member].append(tp)
        previous_owner = self.maybe_revoked.get(tp)
        if (previous_owner is not None and previous_owner != member) or tp in self.claims.contested:
            self.transferring[tp] = member
        return len(self.assignment[member])

    def _deal_within_racks(self, unassigned: list[Partition]) -> list[Partition]:
        if not self.racks.member_racks:
            return unassigned
        left: list[Partition] = []
        cursor = 0
        for tp in unassigned:
            member = None
            index = self.racks.next_rack_member(tp, self.under_min, cursor)
            if index >= 0:
                member = self.under_min[index]
                count = len(self.assignment[member]) + 1
                if count >= self.min_quota:
                    self.under_min.remove(member)
                    if count < self.max_quota and self.over_min < self.expected_over_min:
                        self.at_min.append(member)
                else:
                    index += 1
                cursor = index % len(self.under_min) if self.under_min else 0
            elif self.at_min:
                first = self.racks.next_rack_member(tp, self.at_min, 0)
                if first >= 0:
                    member = self.at_min[first]
                    if len(self.assignment[member]) + 1 == self.max_quota:
                        del self.at_min[first]
                        self._count_over_min()
            if member is None:
                left.append(tp)
            else:
                self._give(tp, member)
        return left

    def _deal_round_robin(self, unassigned: list[Partition]) -> None:
        position = 0   # cursor into under_min, restarted when it runs off the end
        for tp in unassigned:
            from_under = True
            if position < len(self.under_min):
                member = self.under_min[position]
                position += 1
            elif not self.under_min and not self.at_min:
                raise RuntimeError(f"sticky assignor ran out of members for {tp}")
            elif not self.under_min:
                member = self.at_min.pop(0)
                from_under = False
            else:
                position = 0
                member = self.under_min[position]
                position += 1
            count = self._give(tp, member)
            if count == self.min_quota:
                if from_under:
                    position -= 1
                    del self.under_min[position]
                self.at_min.append(member)
            elif count == self.max_quota:
                self.over_min += 1   # unlike the other passes, Kafka does not clear at_min here
