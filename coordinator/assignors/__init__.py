"""Pure-Python re-implementations of Kafka's partition assignors.

`assign()` returns what Kafka's own class returns for the same input: the client assignors a
consumer group leader runs (range, roundrobin, sticky, cooperative-sticky) and the KIP-848
assignors the group coordinator runs (server-uniform, server-range).

Where Kafka's decisions depend on Java hash-table iteration order, the client assignors compute
that order from the member ids themselves; the server assignors take it from the caller: the
order of `subscriptions` is the member iteration order and each topic list the topic order.
"""
from __future__ import annotations

from typing import Callable, Iterable, Mapping

from .client_range import assign_range
from .client_roundrobin import assign_roundrobin
from .client_sticky import assign_cooperative_sticky, assign_sticky
from .model import Assignment, AssignorError, AssignorInput, Partition, build_input
from .server_range import assign_server_range
from .server_uniform import assign_server_uniform

__all__ = ["STRATEGIES", "Assignment", "AssignorError", "Partition", "assign"]

_STRATEGIES: dict[str, Callable[[AssignorInput], Assignment]] = {
    "range": assign_range,
    "roundrobin": assign_roundrobin,
    "sticky": assign_sticky,
    "cooperative-sticky": assign_cooperative_sticky,
    "server-uniform": assign_server_uniform,
    "server-range": assign_server_range,
}
STRATEGIES = tuple(_STRATEGIES)


def assign(strategy: str,
           partitions_per_topic: Mapping[str, int],
           subscriptions: Mapping[str, Iterable[str]],
           previous: Mapping[str, Iterable[Partition]] | None = None,
           generations: Mapping[str, int] | None = None,
           racks: Mapping[str, str | None] | None = None,
           partition_racks: Mapping[Partition, Iterable[str]] | None = None,
           topic_ids: Mapping[str, str] | None = None) -> Assignment:
    """Assign partitions like Kafka's `strategy` assignor.

    previous: owned partitions per member (sticky family; list order as the member reported them)
      or the current target assignment (server assignors).
    generations: generation each member reports; -1 or absent for a new member.
    racks / partition_racks: member rack ids and, per (topic, partition), the racks of its
      replicas; rack-aware variants switch on as in Kafka when both are given.
    topic_ids: base64 topic ids, used by server-uniform to break ties the way Kafka orders UUIDs.
    Returns every member, mapped to its list of (topic, partition).
    """
    try:
        run = _STRATEGIES[strategy]
    except (KeyError, TypeError):
        raise AssignorError(f"unknown assignor strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}")
    inp = build_input(partitions_per_topic, subscriptions, previous, generations, racks, partition_racks, topic_ids)
    if not inp.subscriptions:
        return {}
    return run(inp)
