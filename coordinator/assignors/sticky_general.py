"""Sticky family, differing subscriptions: the general ("balance by moving") path.

Surviving claims are kept, the rest goes to the least-loaded eligible member, then single
partitions are moved from members holding 2+ more than some eligible peer until no such move
exists. Moves prefer returning a partition to its previous-generation owner, and avoid moving
partitions back and forth between the same two members. A rebalance that does not lower the
pairwise imbalance score is thrown away in favour of the plain keep-what-you-own result.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from .java_order import JavaHashSet, string_key, topic_partition_hash
from .model import Assignment, AssignorInput, Partition
from .sticky_claims import NO_GENERATION, MemberClaim, RackInfo, SettledClaims


@dataclass(frozen=True)
class _PreviousOwner:
    member: str
    generation: int


class _Movements:
    """Partition moves made so far, to undo a move rather than chain a new one."""

    def __init__(self) -> None:
        self.by_topic: dict[str, dict[tuple[str, str], JavaHashSet]] = {}
        self.moves: dict[Partition, tuple[str, str]] = {}

    def _forget(self, tp: Partition) -> tuple[str, str]:
        pair = self.moves.pop(tp)
        per_topic = self.by_topic[tp[0]]
        per_topic[pair].discard(tp)
        if not len(per_topic[pair]):
            del per_topic[pair]
        if not per_topic:
            del self.by_topic[tp[0]]
        return pair

    def _record(self, tp: Partition, pair: tuple[str, str]) -> None:
        self.moves[tp] = pair
        per_topic = self.by_topic.setdefault(tp[0], {})
        if pair not in per_topic:
            per_topic[pair] = JavaHashSet(lambda p: topic_partition_hash(*p))
        per_topic[pair].add(tp)

    def move(self, tp: Partition, old: str, new: str) -> None:
        if tp in self.moves:
            source, _ = self._forget(tp)
            if source != new:
                self._record(tp, (source, new))
        else:
            self._record(tp, (old, new))

    def partition_to_move(self, tp: Partition, old: str, new: str) -> Partition:
        per_topic = self.by_topic.get(tp[0])
        if per_topic is None:
            return tp
        if tp in self.moves:
            old = self.moves[tp][0]
        reverse = per_topic.get((new, old))
        return tp if reverse is None else reverse.first()


class GeneralBuilder:
    def __init__(self, inp: AssignorInput, claims: dict[str, MemberClaim], settled: SettledClaims,
                 racks: RackInfo) -> None:
        self.inp = inp
        self.claims = claims
        self.settled = settled
        self.racks = racks
        self.counts = {t: inp.partitions_per_topic[t] for t in inp.subscribed_topics_with_metadata()}
        order = settled.member_order
        self.topic_members: dict[str, list[str]] = {t: [] for t in self.counts}
        self.member_topics: dict[str, list[str]] = {}
        for member in order:
            topics = [t for t in inp.subscriptions[member] if t in self.counts]
            self.member_topics[member] = topics
            for t in topics:
                self.topic_members[t].append(member)
        self.current: Assignment = {m: list(settled.owned[m]) for m in order}
        self.owner: dict[Partition, str] = {tp: m for m, ps in self.current.items() for tp in ps}
        topics_sorted = sorted(self.counts, key=lambda t: (len(self.topic_members[t]), string_key(t)))
        self.sorted_partitions = [(t, p) for t in topics_sorted for p in range(self.counts[t])]
        self.active: set[str] = set()
        self.revocation_required = False
        self.movements = _Movements()

    # -- the member set ordered by load (Kafka keeps it in a TreeSet) ---------------------------
    def _by_load(self) -> list[str]:
        return sorted(self.active, key=lambda m: (len(self.current[m]), string_key(m)))

    def _max_size(self, member: str) -> int:
        return sum(self.counts[t] for t in self.member_topics[member])

    def build(self) -> Assignment:
        previous = self._previous_owners()
        kept = self._keep_owned()
        unassigned = [tp for tp in self.sorted_partitions if tp not in kept]
        self.active = set(self.current)
        self._balance(previous, unassigned)
        return self.current

    def _previous_owners(self) -> dict[Partition, _PreviousOwner]:
        """Claims of members older than the newest generation, newest generation winning."""
        previous: dict[Partition, _PreviousOwner] = {}
        newest = self.settled.max_generation
        for member in self.settled.member_order:
            claim = self.claims[member]
            if claim.generation is not None and claim.generation < newest:
                generation = claim.generation
            elif claim.generation is None and newest > NO_GENERATION:
                generation = NO_GENERATION
            else:
                continue
            for tp in claim.partitions:
                known = previous.get(tp)
                if known is None or generation > known.generation:
                    previous[tp] = _PreviousOwner(member, generation)
        return previous

    def _keep_owned(self) -> set[Partition]:
        kept: set[Partition] = set()
        for member, partitions in self.current.items():
            subscribed = set(self.inp.subscriptions[member])
            for tp in list(partitions):
                if tp[0] not in self.counts:
                    partitions.remove(tp)
                    self.owner.pop(tp, None)
                elif tp[0] not in subscribed or self.racks.mismatch(member, tp):
                    # the stale owner entry stays, as in Kafka; the partition gets a new one below
                    partitions.remove(tp)
                    self.revocation_required = True
                else:
                    kept.add(tp)
        return kept

    def _place(self, partitions: list[Partition], racks: RackInfo | None) -> list[Partition]:
        """Give each partition to the least-loaded eligible member; return those left over."""
        left = []
        for tp in partitions:
            for member in self._by_load():
                if tp[0] in self.member_topics[member] and (racks is None or not racks.mismatch(member, tp)):
                    self.current[member].append(tp)
                    self.owner[tp] = member
                    break
            else:
                left.append(tp)
        return left

    def _can_move(self, member: str) -> bool:
        partitions = self.current[member]
        if len(partitions) < self._max_size(member):
            return True
        return any(len(self.topic_members[tp[0]]) >= 2 for tp in partitions)

    def _balance(self, previous: dict[Partition, _PreviousOwner], unassigned: list[Partition]) -> None:
        initializing = all(not ps for ps in self.current.values())
        to_place = unassigned
        if self.racks.member_racks:
            to_place = self._place(unassigned, self.racks)
        self._place(to_place, None)

        movable_topics = {t for t, ms in self.topic_members.items() if len(ms) >= 2}
        all_movable = [tp for tp in self.sorted_partitions if tp[0] in movable_topics]
        unassigned_movable = [tp for tp in unassigned if tp[0] in movable_topics]
        fixed: Assignment = {}
        for member in self.member_topics:
            if not self._can_move(member):
                self.active.discard(member)
                fixed[member] = self.current.pop(member)

        before = {m: list(ps) for m, ps in self.current.items()}
        owners_before = dict(self.owner)
        if not self.revocation_required:
            self._reassign(unassigned_movable, previous)
        moved = self._reassign(all_movable, previous)
        if not initializing and moved and _imbalance(self.current) >= _imbalance(before):
            self.current = before
            self.owner = owners_before
        self.current.update(fixed)

    def _is_balanced(self) -> bool:
        ordered = self._by_load()
        if len(self.current[ordered[0]]) >= len(self.current[ordered[-1]]) - 1:
            return True
        holder = {tp: m for m, ps in self.current.items() for tp in ps}
        for member in ordered:
            mine = self.current[member]
            if len(mine) == self._max_size(member):
                continue
            mine_set = set(mine)
            for topic in self.member_topics[member]:
                for p in range(self.counts[topic]):
                    tp = (topic, p)
                    if tp not in mine_set and len(mine) + 1 < len(self.current[holder[tp]]):
                        return False
        return True

    def _reassign(self, partitions: list[Partition], previous: dict[Partition, _PreviousOwner]) -> bool:
        moved_any = False
        while True:
            modified = False
            for tp in partitions:
                if self._is_balanced():
                    break
                member = self.owner[tp]
                load = len(self.current[member])
                prior = previous.get(tp)
                if prior is not None and load > len(self.current[prior.member]) + 1:
                    self._move(tp, prior.member)
                    moved_any = modified = True
                    continue
                if self._has_lighter_peer(tp, member, load):
                    self._move(tp, self._lightest_taker(tp))
                    moved_any = modified = True
            if not modified:
                return moved_any

    def _has_lighter_peer(self, tp: Partition, member: str, load: int) -> bool:
        peers = self.topic_members[tp[0]]
        rack = self.racks.member_racks.get(member)
        replica_racks = self.racks.partition_racks.get(tp, frozenset())
        if rack is not None and rack in replica_racks:
            # Kafka first looks among same-rack peers; finding none, it falls back to all peers.
            for peer in peers:
                peer_rack = self.racks.member_racks.get(peer)
                if peer_rack is not None and peer_rack in replica_racks and load > len(self.current[peer]) + 1:
                    return True
        return any(load > len(self.current[peer]) + 1 for peer in peers)

    def _lightest_taker(self, tp: Partition) -> str:
        return next(m for m in self._by_load() if tp[0] in self.member_topics[m])

    def _move(self, tp: Partition, new: str) -> None:
        actual = self.movements.partition_to_move(tp, self.owner[tp], new)
        old = self.owner[actual]
        self.movements.move(actual, old, new)
        self.current[old].remove(actual)
        self.current[new].append(actual)
        self.owner[actual] = new


def _imbalance(assignment: Assignment) -> int:
    return sum(abs(len(a) - len(b)) for a, b in combinations(assignment.values(), 2))
