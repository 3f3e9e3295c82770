"""KIP-848 UniformAssignor ("server-uniform"), homogeneous and heterogeneous builders.

Homogeneous groups: each member keeps its current target up to its quota (members met earlier
in iteration order get the extra partitions) and the freed or new partitions fill the members
left under quota, in iteration order. Heterogeneous groups: everything still subscribed is kept,
unowned partitions go to the least-loaded subscriber (topics with the most partitions per
subscriber first), then topics are rebalanced by moving partitions from the most to the least
loaded subscribers, up to 16 sweeps.
"""
from __future__ import annotations

from .model import Assignment, AssignorError, AssignorInput, Partition
from .server_common import ServerGroup, server_group, topic_id_key

_MAX_SWEEPS = 16


def assign_server_uniform(inp: AssignorInput) -> Assignment:
    group = server_group(inp)
    if not group.members:
        return {}
    if group.homogeneous:
        return _homogeneous(group)
    return _Heterogeneous(inp, group).build()


def _homogeneous(group: ServerGroup) -> Assignment:
    out = group.empty_assignment()
    topics = group.topics[group.members[0]]
    if not topics:
        return out
    subscribed = set(topics)
    assigned = {(t, p) for target in group.target.values() for t, ps in target.items() for p in ps}
    unassigned: list[Partition] = []
    total = 0
    for topic in topics:
        unassigned.extend((topic, p) for p in range(group.counts[topic]) if (topic, p) not in assigned)
        total += group.counts[topic]
    n = len(group.members)
    min_quota, extra_left = divmod(total, n)
    unfilled: list[tuple[str, int]] = []
    for index, member in enumerate(group.members):
        quota = min_quota
        gets_extra = extra_left > 0
        if gets_extra:
            quota += 1
        for topic, partitions in group.target[member].items():
            if topic not in subscribed:
                continue
            if len(partitions) <= quota:
                quota -= len(partitions)
                out[member].extend((topic, p) for p in partitions)
                continue
            for p in partitions:
                if quota > 0:
                    quota -= 1
                    out[member].append((topic, p))
                else:
                    unassigned.append((topic, p))
        # Give the extra slot back if enough members remain to absorb the extras.
        if quota > 0 and gets_extra and n - index > extra_left:
            quota -= 1
            gets_extra = False
        if quota > 0:
            unfilled.append((member, quota))
        if gets_extra:
            extra_left -= 1
    cursor = 0
    for member, quota in unfilled:
        take = unassigned[cursor:cursor + quota]
        out[member].extend(take)
        cursor += len(take)
    if cursor < len(unassigned):
        raise AssignorError("server-uniform: partitions were left unassigned")
    return out


class _LoadOrder:
    """Walks a topic's subscribers from least and from most loaded without re-sorting.

    Loads change while walking; the walk tracks ranges of equally loaded members instead.
    """

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.order: list[int] = []

    def start(self, members: list[int]) -> int:
        if not members:
            raise AssignorError("server-uniform: cannot balance a topic without subscribers")
        self.order = sorted(members, key=lambda i: (self.sizes[i], i))
        n = len(self.order)
        self.least_end = 0
        self.least_load = self.sizes[self.order[0]] - 1
        self.next_least = 0
        self.most_start = n
        self.most_end = n
        self.most_load = self.sizes[self.order[-1]] + 1
        self.next_most = n - 1
        return self.sizes[self.order[-1]] - self.sizes[self.order[0]]

    def least_loaded(self) -> int:
        if self.next_least >= self.least_end:
            self.least_load += 1
            while self.least_end < len(self.order) and self.sizes[self.order[self.least_end]] == self.least_load:
                self.least_end += 1
            self.next_least = 0
        member = self.order[self.next_least]
        self.next_least += 1
        return member

    def most_loaded(self) -> int:
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                self.most_load = self.sizes[self.order[self.most_start - 1]]
            else:
                self.most_load -= 1
            while self.most_start > 0 and self.sizes[self.order[self.most_start - 1]] == self.most_load:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = self.order[self.next_most]
        self.next_most -= 1
        return member

    def drop_last_most_loaded(self) -> None:
        slot = self.next_most + 1
        self.order[slot], self.order[self.most_end - 1] = self.order[self.most_end - 1], self.order[slot]
        self.most_end -= 1

    def balanced(self) -> bool:
        return self.most_load - self.least_load <= 1


class _Heterogeneous:
    def __init__(self, inp: AssignorInput, group: ServerGroup) -> None:
        self.group = group
        self.members = group.members
        self.subscribers: dict[str, list[int]] = {}
        for index, member in enumerate(self.members):
            for topic in group.topics[member]:
                self.subscribers.setdefault(topic, []).append(index)
        self.sizes = [0] * len(self.members)
        self.owners = {t: [-1] * group.counts[t] for t in self.subscribers}
        self.out: dict[str, dict[str, set[int]]] = {m: {} for m in self.members}
        id_key = topic_id_key(inp)

        def topic_order(topic: str):
            count, subs = group.counts[topic], len(self.subscribers[topic])
            return (-(count / subs), subs, id_key(topic))
        self.topic_order = topic_order

    def build(self) -> Assignment:
        if not self.subscribers:
            return self.group.empty_assignment()
        self._keep_subscribed()
        self._place_unowned()
        movable = [t for t, subs in self.subscribers.items() if len(subs) >= 2]
        if movable:
            self._balance(sorted(movable, key=self.topic_order))
        return {m: [(t, p) for t, ps in self.out[m].items() for p in sorted(ps)] for m in self.members}

    def _keep_subscribed(self) -> None:
        for index, member in enumerate(self.members):
            subscribed = set(self.group.topics[member])
            for topic, partitions in self.group.target[member].items():
                if topic not in subscribed:
                    continue
                self.sizes[index] += len(partitions)
                self.out[member].setdefault(topic, set()).update(partitions)
                for p in partitions:
                    self.owners[topic][p] = index

    def _place_unowned(self) -> None:
        unowned = {t: [p for p, o in enumerate(owners) if o == -1] for t, owners in self.owners.items()}
        walker = _LoadOrder(self.sizes)
        for topic in sorted((t for t, ps in unowned.items() if ps), key=self.topic_order):
            walker.start(self.subscribers[topic])
            for p in unowned[topic]:
                self._give(topic, p, walker.least_loaded())

    def _give(self, topic: str, partition: int, index: int) -> None:
        old = self.owners[topic][partition]
        if old != -1:
            partitions = self.out[self.members[old]][topic]
            partitions.discard(partition)
            if not partitions:
                del self.out[self.members[old]][topic]
            self.sizes[old] -= 1
        self.out[self.members[index]].setdefault(topic, set()).add(partition)
        self.owners[topic][partition] = index
        self.sizes[index] += 1

    def _balance(self, topics: list[str]) -> None:
        walker = _LoadOrder(self.sizes)
        last_changed = -1
        for _ in range(_MAX_SWEEPS):
            for position, topic in enumerate(topics):
                if position == last_changed:
                    return
                moved = self._balance_topic(topic, walker)
                if moved > 0 or last_changed == -1:
                    last_changed = position

    def _balance_topic(self, topic: str, walker: _LoadOrder) -> int:
        if walker.start(self.subscribers[topic]) <= 1:
            return 0
        owners = self.owners[topic]
        partitions = sorted(range(len(owners)), key=lambda p: (owners[p], p))
        start: dict[int, int] = {}
        end: dict[int, int] = {}
        for i, p in enumerate(partitions):
            start.setdefault(owners[p], i)
            end[owners[p]] = i + 1
        moved = 0
        while not walker.balanced():
            while True:
                donor = walker.most_loaded()
                if donor == -1:
                    break
                if donor not in end or end[donor] - start[donor] <= 0:
                    walker.drop_last_most_loaded()
                    continue
                break
            if donor == -1:
                break
            partition = partitions[end[donor] - 1]
            end[donor] -= 1
            taker = walker.least_loaded()
            if walker.balanced():
                break
            self._give(topic, partition, taker)
            moved += 1
        return moved
