"""Input shapes shared by every assignor, and their validation.

Every assignor receives an `AssignorInput`: user input checked once here, so the algorithm
modules can trust it and stay close to the decisions they re-implement.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

from .java_order import string_key, uuid_bits

Partition = tuple[str, int]
Assignment = dict[str, list[Partition]]


class AssignorError(ValueError):
    """Input an assignor cannot work on (unknown strategy, malformed subscriptions, ...)."""


@dataclass(frozen=True)
class AssignorInput:
    partitions_per_topic: dict[str, int]
    # member -> subscribed topics, both in the caller's order (Kafka's iteration order for the
    # server assignors, which iterate hash tables the caller recorded)
    subscriptions: dict[str, list[str]]
    previous: dict[str, list[Partition]] = field(default_factory=dict)
    generations: dict[str, int] = field(default_factory=dict)
    racks: dict[str, str] = field(default_factory=dict)
    partition_racks: dict[Partition, frozenset[str]] = field(default_factory=dict)
    topic_ids: dict[str, str] = field(default_factory=dict)

    def partitions_of(self, topic: str) -> list[Partition]:
        return [(topic, p) for p in range(self.partitions_per_topic.get(topic, 0))]

    def subscribed_topics_with_metadata(self) -> list[str]:
        """Topics someone subscribes to and that have partitions, sorted like Java strings.

        The client assignors only ever see these (AbstractPartitionAssignor skips the rest).
        """
        topics = {t for topics in self.subscriptions.values() for t in topics}
        return sorted((t for t in topics if self.partitions_per_topic.get(t, 0) > 0), key=string_key)

    def member_rack(self, member: str) -> str | None:
        rack = self.racks.get(member)
        return rack or None

    def replica_racks(self, tp: Partition) -> frozenset[str]:
        return self.partition_racks.get(tp, frozenset())


def sorted_members(members: Iterable[str]) -> list[str]:
    return sorted(members, key=string_key)


def sort_partitions(partitions: Iterable[Partition]) -> list[Partition]:
    """TopicPartitionComparator order: topic (Java string order), then partition."""
    return sorted(partitions, key=lambda tp: (string_key(tp[0]), tp[1]))


def _partition(item: object, where: str) -> Partition:
    if (not isinstance(item, (list, tuple)) or len(item) != 2 or not isinstance(item[0], str)
            or isinstance(item[1], bool) or not isinstance(item[1], int) or item[1] < 0):
        raise AssignorError(f"{where}: expected a (topic, partition) pair, got {item!r}")
    return (item[0], item[1])


def build_input(partitions_per_topic: Mapping[str, int],
                subscriptions: Mapping[str, Iterable[str]],
                previous: Mapping[str, Iterable[object]] | None = None,
                generations: Mapping[str, int] | None = None,
                racks: Mapping[str, str | None] | None = None,
                partition_racks: Mapping[object, Iterable[str]] | None = None,
                topic_ids: Mapping[str, str] | None = None) -> AssignorInput:
    if not isinstance(partitions_per_topic, Mapping):
        raise AssignorError("partitions_per_topic must map topic -> partition count")
    counts: dict[str, int] = {}
    for topic, count in partitions_per_topic.items():
        if not isinstance(topic, str) or isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise AssignorError(f"partitions_per_topic: bad entry {topic!r}: {count!r}")
        counts[topic] = count
    if not isinstance(subscriptions, Mapping):
        raise AssignorError("subscriptions must map member id -> list of topics")
    subs: dict[str, list[str]] = {}
    for member, topics in subscriptions.items():
        if not isinstance(member, str) or isinstance(topics, str) or not isinstance(topics, Iterable):
            raise AssignorError(f"subscriptions: bad entry {member!r}: {topics!r}")
        topic_list = list(dict.fromkeys(topics))
        if not all(isinstance(t, str) for t in topic_list):
            raise AssignorError(f"subscriptions: member {member!r} has a non-string topic")
        subs[member] = topic_list
    prev: dict[str, list[Partition]] = {}
    for member, owned in (previous or {}).items():
        prev[member] = [_partition(item, f"previous[{member!r}]") for item in owned]
        for topic, partition in prev[member]:
            # Topics never shrink in Kafka; a higher partition number is a mistake in the input
            # (a topic missing from partitions_per_topic is fine: it was deleted).
            if topic in counts and partition >= counts[topic]:
                raise AssignorError(f"previous[{member!r}]: {topic}-{partition} does not exist "
                                    f"({topic} has {counts[topic]} partitions)")
    gens: dict[str, int] = {}
    for member, generation in (generations or {}).items():
        if isinstance(generation, bool) or not isinstance(generation, int):
            raise AssignorError(f"generations: member {member!r} has non-integer generation {generation!r}")
        gens[member] = generation
    member_racks = {m: r for m, r in (racks or {}).items() if r}
    p_racks = {_partition(tp, "partition_racks"): frozenset(rs) for tp, rs in (partition_racks or {}).items()}
    ids = dict(topic_ids or {})
    for topic, topic_id in ids.items():
        try:
            uuid_bits(topic_id)
        except (ValueError, TypeError) as exc:
            raise AssignorError(f"topic_ids[{topic!r}]: {topic_id!r} is not a base64url topic id") from exc
    return AssignorInput(counts, subs, prev, gens, member_racks, p_racks, ids)
