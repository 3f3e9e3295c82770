"""A scenario from a group's recorded history: replay what really happened under another assignor.

`whatif` reads a capture of `__consumer_offsets`; the reducer's events give, for one group, when
members joined and left and how fast its committed offsets advanced. `HistoryRecorder` collects
those facts from the events, and `scenario_from_history` turns them into a `Scenario` whose steps
resize the group at the same moments, on topics produced at the observed rates, so that the
simulator can tell what each assignor would have cost on the group's own rebalances.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from coordinator.simulator.scenario import ClientSpec, Scenario, Step, TopicSpec
from coordinator.state.events import MEMBER_JOINED, MEMBER_LEFT, OFFSET_COMMITTED, Event

TopicPartition = tuple[str, int]
# From an assignment to the partition's first processed message, as real Java consumers took it
# (median of 236-424 ms over the strategies of the canary run in docs/simulator.md).
FETCH_START_MS = 300


@dataclass(frozen=True)
class GroupHistory:
    """What a capture showed of one group."""

    group: str
    membership: tuple[tuple[int, int], ...]       # (timestamp ms, members after the change), in order
    partitions: dict[str, int]                    # topic -> partition count
    rates: dict[str, float]                       # topic -> messages/s, from the committed offsets
    start_ms: int
    end_ms: int
    session_timeout_ms: int | None = None
    rebalance_timeout_ms: int | None = None

    @property
    def changes(self) -> int:
        return max(0, len(self.membership) - 1)


@dataclass
class HistoryRecorder:
    """Collects, from the reducer's events, each group's member count over time and the first and
    last commit of each of its partitions."""

    members: dict[str, set[str]] = field(default_factory=dict)
    membership: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    commits: dict[str, dict[TopicPartition, tuple[tuple[int, int], tuple[int, int]]]] = field(default_factory=dict)
    span: dict[str, tuple[int, int]] = field(default_factory=dict)

    def add(self, events: Iterable[Event]) -> None:
        for e in events:
            first, last = self.span.get(e.group, (e.timestamp_ms, e.timestamp_ms))
            self.span[e.group] = (min(first, e.timestamp_ms), max(last, e.timestamp_ms))
            if e.event in (MEMBER_JOINED, MEMBER_LEFT):
                members = self.members.setdefault(e.group, set())
                (members.add if e.event == MEMBER_JOINED else members.discard)(e.fields["member_id"])
                points = self.membership.setdefault(e.group, [])
                # One record can carry several joins and leaves: keep one point per moment.
                if points and points[-1][0] == e.timestamp_ms:
                    points[-1] = (e.timestamp_ms, len(members))
                else:
                    points.append((e.timestamp_ms, len(members)))
            elif e.event == OFFSET_COMMITTED:
                tp = (e.fields["topic"], e.fields["partition_id"])
                seen = (e.timestamp_ms, e.fields["committed_offset"])
                by_tp = self.commits.setdefault(e.group, {})
                by_tp[tp] = (by_tp[tp][0], seen) if tp in by_tp else (seen, seen)

    def history(self, group: str, partitions: dict[str, int], session_timeout_ms: int | None = None,
                rebalance_timeout_ms: int | None = None) -> GroupHistory:
        start, end = self.span.get(group, (0, 0))
        # Drop points that change nothing (a leave and a join in one moment, then the same count).
        kept: list[tuple[int, int]] = []
        for t, n in self.membership.get(group, []):
            if not kept or kept[-1][1] != n:
                kept.append((t, n))
        return GroupHistory(group, tuple(kept), dict(partitions), self.rates(group, partitions), start, end,
                            session_timeout_ms, rebalance_timeout_ms)

    def rates(self, group: str, partitions: dict[str, int]) -> dict[str, float]:
        """Messages/s per topic: each partition's committed-offset advance over the time between its
        first and last commit (a group that keeps up commits what is produced), scaled to the
        topic's partitions when only some were seen advancing."""
        per_topic: dict[str, list[float]] = {}
        for (topic, _p), ((t0, o0), (t1, o1)) in self.commits.get(group, {}).items():
            if t1 > t0 and o1 >= o0:
                per_topic.setdefault(topic, []).append((o1 - o0) * 1000.0 / (t1 - t0))
        return {topic: sum(r) / len(r) * partitions.get(topic, len(r)) for topic, r in per_topic.items() if r}


def scenario_from_history(history: GroupHistory, strategies: tuple[str, ...], *,
                          default_rate: float = 1.0, processing_rate: float | None = None,
                          latency_budget_ms: int = 5000, tail_ms: int = 60_000,
                          heartbeat_interval_ms: int = 3000, auto_commit_interval_ms: int = 5000,
                          fetch_start_ms: int = FETCH_START_MS) -> Scenario:
    """The group's membership changes as scale steps from its first member on; topics at the
    observed rates (`default_rate` messages/s for one without two commits to measure by);
    `processing_rate` per partition defaults to ten times the busiest partition's produce rate."""
    if not history.membership:
        raise ValueError(f"group {history.group!r} has no member joins in the capture")
    if not history.partitions:
        raise ValueError(f"group {history.group!r} has no known topic partitions")
    origin, first_count = history.membership[0]
    topics = tuple(TopicSpec(t, n, max(history.rates.get(t, default_rate), 1e-3))
                   for t, n in sorted(history.partitions.items()))
    per_partition = max(t.rate / t.partitions for t in topics)
    steps = tuple(Step(t - origin, "scale", n) for t, n in history.membership[1:])
    client_kwargs = {"heartbeat_interval_ms": heartbeat_interval_ms, "auto_commit_interval_ms": auto_commit_interval_ms,
                     "fetch_start_ms": fetch_start_ms}
    if history.session_timeout_ms:
        client_kwargs["session_timeout_ms"] = history.session_timeout_ms
    if history.rebalance_timeout_ms:
        client_kwargs["rebalance_timeout_ms"] = history.rebalance_timeout_ms
    clients = ClientSpec(count=first_count, topics=tuple(t.name for t in topics),
                         processing_rate=processing_rate or 10.0 * per_partition, **client_kwargs)
    last_step = steps[-1].at_ms if steps else 0
    return Scenario(name=f"replay-{history.group}", group=history.group,
                    duration_ms=max(last_step, history.end_ms - origin) + tail_ms, topics=topics,
                    clients=clients, steps=steps, strategies=strategies, latency_budget_ms=latency_budget_ms)
