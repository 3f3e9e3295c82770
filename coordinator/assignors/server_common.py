"""What the KIP-848 (group-coordinator side) assignors see of a group.

The coordinator resolves subscribed topic names against its metadata, so a member's topic set
only holds existing topics; the current target assignment arrives grouped by topic.
"""
from __future__ import annotations

from dataclasses import dataclass

from .java_order import hash_order, string_key, uuid_bits, uuid_hash
from .model import Assignment, AssignorInput


@dataclass(frozen=True)
class ServerGroup:
    members: list[str]                              # Kafka's iteration order of the member ids
    topics: dict[str, list[str]]                    # member -> existing subscribed topics, in order
    target: dict[str, dict[str, list[int]]]         # member -> topic -> partitions, as iterated
    counts: dict[str, int]
    homogeneous: bool

    def empty_assignment(self) -> Assignment:
        return {m: [] for m in self.members}


def server_group(inp: AssignorInput) -> ServerGroup:
    members = list(inp.subscriptions)
    topics = {m: [t for t in inp.subscriptions[m] if inp.partitions_per_topic.get(t, 0) > 0] for m in members}
    target: dict[str, dict[str, list[int]]] = {}
    for m in members:
        grouped: dict[str, list[int]] = {}
        for topic, partition in inp.previous.get(m, []):
            grouped.setdefault(topic, []).append(partition)
        target[m] = {t: grouped[t] for t in _target_topic_order(inp, topics[m], grouped)}
    # Like ModernGroup.subscriptionType: judged on the subscribed names, existing or not.
    names = [frozenset(ts) for ts in inp.subscriptions.values()]
    homogeneous = len(set(names)) <= 1
    return ServerGroup(members, topics, target, dict(inp.partitions_per_topic), homogeneous)


def _target_topic_order(inp: AssignorInput, subscribed: list[str], grouped: dict[str, list[int]]) -> list[str]:
    """Order in which Kafka walks a member's current target assignment.

    That target is a `HashMap` keyed by topic id, filled in topic id order (as when rebuilt from
    a sorted record); the reference vectors agree with this. With ids known the order is
    reproduced. Without ids the member's topic list (the caller's rendering of Kafka's topic
    order) stands in for it.
    """
    if all(t in inp.topic_ids for t in grouped):
        by_id = sorted(grouped, key=lambda t: uuid_bits(inp.topic_ids[t]))
        return hash_order(by_id, lambda t: uuid_hash(inp.topic_ids[t]))
    position = {t: i for i, t in enumerate(subscribed)}
    return sorted(grouped, key=lambda t: position.get(t, len(position)))


def topic_id_key(inp: AssignorInput):
    """Sort key for topics the way `Uuid.compareTo` orders their ids (names when ids are unknown)."""
    def key(topic: str):
        topic_id = inp.topic_ids.get(topic)
        return (0, uuid_bits(topic_id)) if topic_id else (1, string_key(topic))
    return key
