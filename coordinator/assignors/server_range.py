"""KIP-848 RangeAssignor ("server-range").

Per topic, contiguous ranges over the topic's subscribers sorted by member id, the first
`partitions % subscribers` of them getting one extra. The current target plays no part, so
for unchanged membership and metadata the result is the same every time.
"""
from __future__ import annotations

from .model import Assignment, AssignorInput, sorted_members
from .server_common import server_group


def assign_server_range(inp: AssignorInput) -> Assignment:
    group = server_group(inp)
    out = group.empty_assignment()
    members = sorted_members(group.members)
    if not members:
        return out
    if group.homogeneous:
        subscribers = {t: members for t in group.topics[members[0]]}
    else:
        subscribers = {}
        for member in members:
            for topic in group.topics[member]:
                subscribers.setdefault(topic, []).append(member)
    for topic, topic_members in subscribers.items():
        count = group.counts[topic]
        quota, extra = divmod(count, len(topic_members))
        start = 0
        for member in topic_members:
            size = quota + (1 if extra > 0 else 0)
            extra -= 1
            end = min(start + size, count)
            out[member].extend((topic, p) for p in range(start, end))
            start = end
    return out
