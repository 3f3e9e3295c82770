"""Client-side RoundRobinAssignor ("roundrobin").

All partitions, topics in Java string order, are dealt to members sorted by id; a cursor goes
round the members and skips those not subscribed to the partition's topic, without resetting
between topics, which is why heterogeneous subscriptions can end up uneven.
"""
from __future__ import annotations

from .model import Assignment, AssignorInput, sorted_members


def assign_roundrobin(inp: AssignorInput) -> Assignment:
    out: Assignment = {m: [] for m in inp.subscriptions}
    members = sorted_members(inp.subscriptions)
    subscribed = {m: set(ts) for m, ts in inp.subscriptions.items()}
    cursor = 0
    for topic in inp.subscribed_topics_with_metadata():
        for tp in inp.partitions_of(topic):
            while topic not in subscribed[members[cursor]]:
                cursor = (cursor + 1) % len(members)
            out[members[cursor]].append(tp)
            cursor = (cursor + 1) % len(members)
    return out
