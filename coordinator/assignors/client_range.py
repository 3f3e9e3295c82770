"""Client-side RangeAssignor ("range"): per topic, contiguous spans over the sorted subscribers.

Rack-aware variant: when members and replicas carry racks (and racks are not uniform), spans
are first filled with partitions whose replicas sit in the member's rack, co-partitioned topics
(same subscribers, same partition count) together, then topped up without rack matching.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Callable

from .java_order import string_hash_order
from .model import Assignment, AssignorInput, Partition, sort_partitions, sorted_members


class _TopicSpans:
    """Per-topic bookkeeping: how many partitions each subscriber may still take."""

    def __init__(self, topic: str, inp: AssignorInput, subscribers: list[str]) -> None:
        self.topic = topic
        self.members = sorted_members(subscribers)
        count = inp.partitions_per_topic[topic]
        self.unassigned: dict[Partition, None] = dict.fromkeys(inp.partitions_of(topic))
        self.taken = {m: 0 for m in self.members}
        self.base = count // len(self.members) if self.members else 0
        self.extra_left = count % len(self.members) if self.members else 0
        self.member_racks = {m: inp.member_rack(m) for m in self.members}
        consumer_racks = {r for r in self.member_racks.values() if r}
        self.replica_racks: dict[Partition, frozenset[str]] = {}
        partition_racks: set[str] = set()
        if consumer_racks:
            self.replica_racks = {tp: inp.replica_racks(tp) for tp in self.unassigned}
            for racks in self.replica_racks.values():
                partition_racks |= racks
        self.needs_rack_matching = (bool(consumer_racks) and not consumer_racks.isdisjoint(partition_racks)
                                    and any(r != partition_racks for r in self.replica_racks.values()))

    def capacity(self, member: str) -> int:
        return max(0, self.base + (1 if self.extra_left > 0 else 0) - self.taken[member])

    def racks_match(self, member: str, tp: Partition) -> bool:
        rack = self.member_racks[member]
        return rack is None or rack in self.replica_racks.get(tp, frozenset())

    def give(self, member: str, partitions: list[Partition], out: Assignment) -> None:
        out[member].extend(partitions)
        self.taken[member] += len(partitions)
        if self.taken[member] > self.base:
            self.extra_left -= 1
        for tp in partitions:
            self.unassigned.pop(tp, None)


def _fill_spans(state: _TopicSpans, allowed: Callable[[str, Partition], bool], out: Assignment) -> None:
    for member in state.members:
        if not state.unassigned:
            return
        limit = state.capacity(member)
        chosen = [tp for tp in state.unassigned if allowed(member, tp)][:limit]
        if chosen:
            state.give(member, chosen, out)


def _fill_co_partitioned(members: list[str], count: int, states: list[_TopicSpans], out: Assignment) -> None:
    remaining = list(members)
    for p in range(count):
        chosen = next((m for m in remaining
                       if all(s.racks_match(m, (s.topic, p)) and s.capacity(m) > 0 for s in states)), None)
        if chosen is None:
            continue
        for s in states:
            s.give(chosen, [(s.topic, p)], out)
        if not any(s.capacity(chosen) > 0 for s in states):
            remaining.remove(chosen)
            if not remaining:
                return


def _rack_matching_pass(states: list[_TopicSpans], out: Assignment) -> None:
    # Topics only interact when they share the exact subscriber list and partition count.
    groups: dict[tuple, list[_TopicSpans]] = defaultdict(list)
    for s in states:
        key = (tuple((m, s.member_racks[m]) for m in s.members), len(s.replica_racks))
        groups[key].append(s)
    for (members, count), group in groups.items():
        if len(group) > 1:
            _fill_co_partitioned([m for m, _ in members], count, group, out)
        elif group[0].needs_rack_matching:
            _fill_spans(group[0], group[0].racks_match, out)


def assign_range(inp: AssignorInput) -> Assignment:
    subscribers: dict[str, list[str]] = defaultdict(list)
    for member, topics in inp.subscriptions.items():
        for topic in topics:
            subscribers[topic].append(member)
    # Kafka walks its partitions-per-topic HashMap, which orders each member's list.
    topics = string_hash_order(inp.subscribed_topics_with_metadata())
    states = [_TopicSpans(t, inp, subscribers[t]) for t in topics]
    out: Assignment = {m: [] for m in inp.subscriptions}
    rack_aware = any(s.needs_rack_matching for s in states)
    if rack_aware:
        _rack_matching_pass(states, out)
    for s in states:
        _fill_spans(s, lambda _m, _tp: True, out)
    if rack_aware:
        out = {m: sort_partitions(ps) for m, ps in out.items()}
    return out
