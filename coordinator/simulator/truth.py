"""The simulator's ground truth: what really happened, to score estimators against.

Times are wall-clock ms (the scenario's `start_ms` plus simulated time). A rebalance here is what
the monitor reports as one (coordinator/state/estimator.py): classic, one stored generation
step; KIP-848, from the first group epoch bump of a converged group until every member is
STABLE at the target assignment epoch.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

TopicPartition = tuple[str, int]


@dataclass
class TrueRebalance:
    protocol: str
    trigger: str
    start_ms: int                 # classic: coordinator enters PreparingRebalance; KIP-848: epoch bump record
    from_generation: int
    trigger_ms: int | None = None  # when the cause happened (a crash precedes its session expiry)
    join_end_ms: int | None = None  # classic: entered CompletingRebalance (current_state_timestamp)
    end_ms: int | None = None       # classic: group metadata record; KIP-848: record that converged
    to_generation: int | None = None
    members_before: list[str] = field(default_factory=list)
    members_after: list[str] = field(default_factory=list)
    partitions_moved: list[TopicPartition] = field(default_factory=list)
    downtime: list[dict[str, Any]] = field(default_factory=list)
    end_offset: int | None = None   # offset in __consumer_offsets of the record that ended it
    first_reaction_ms: int | None = None  # classic: first member acting on it (commit, then JoinGroup)

    def to_dict(self) -> dict[str, Any]:
        return {
            "protocol": self.protocol, "trigger": self.trigger, "trigger_ms": self.trigger_ms,
            "start_ms": self.start_ms, "first_reaction_ms": self.first_reaction_ms, "join_end_ms": self.join_end_ms, "end_ms": self.end_ms,
            "duration_seconds": None if self.end_ms is None else (self.end_ms - self.start_ms) / 1000.0,
            "from_generation": self.from_generation, "to_generation": self.to_generation,
            "end_offset": self.end_offset,
            "members_before": sorted(self.members_before), "members_after": sorted(self.members_after),
            "partitions_moved": [list(tp) for tp in sorted(self.partitions_moved)],
            "downtime": self.downtime,
        }


@dataclass
class GroundTruth:
    protocol: str
    strategy: str
    rebalances: list[TrueRebalance] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)   # emptied, deleted, static rejoin, ...
    lag: list[dict[str, Any]] = field(default_factory=list)      # periodic samples
    open: TrueRebalance | None = None
    stopped_since: dict[TopicPartition, tuple[int, str | None]] = field(default_factory=dict)
    unattributed_downtime: list[dict[str, Any]] = field(default_factory=list)

    def begin(self, rebalance: TrueRebalance) -> TrueRebalance:
        if self.open is None:
            self.open = rebalance
        return self.open

    def finish(self, end_ms: int, to_generation: int, members_after: list[str],
               moved: list[TopicPartition], end_offset: int | None) -> TrueRebalance | None:
        done = self.open
        if done is None:
            return None
        done.end_ms, done.to_generation = end_ms, to_generation
        done.members_after, done.partitions_moved, done.end_offset = members_after, moved, end_offset
        self.rebalances.append(done)
        self.open = None
        return done

    def member_reacted(self, t_ms: int) -> None:
        if self.open is not None and self.open.first_reaction_ms is None:
            self.open.first_reaction_ms = t_ms

    def partition_stopped(self, tp: TopicPartition, t_ms: int, owner: str) -> None:
        self.stopped_since[tp] = (t_ms, owner)

    def partition_resumed(self, tp: TopicPartition, t_ms: int, owner: str) -> None:
        """Attributes the stall that ends now to the rebalance it spans: a classic partition resumes
        after the SyncGroup that ended its rebalance, a KIP-848 one usually while it is still open.
        A stall no rebalance ended (a static member back within its session) is kept apart."""
        stopped = self.stopped_since.pop(tp, None)
        if stopped is None:
            return
        since, previous = stopped
        record = {"topic": tp[0], "partition": tp[1], "stopped_ms": since, "resumed_ms": t_ms,
                  "seconds": (t_ms - since) / 1000.0, "moved": previous != owner}
        if self.protocol == "consumer" and self.open is not None:
            self.open.downtime.append(record)
            return
        last = self.rebalances[-1] if self.rebalances else None
        if last is not None and last.end_ms is not None and since <= last.end_ms <= t_ms:
            last.downtime.append(record)
        else:
            self.unattributed_downtime.append(record)

    def note(self, event: str, t_ms: int, **fields: Any) -> None:
        self.events.append({"event": event, "timestamp_ms": t_ms, **fields})

    def to_dict(self) -> dict[str, Any]:
        return {"protocol": self.protocol, "strategy": self.strategy,
                "rebalances": [r.to_dict() for r in self.rebalances],
                "unfinished_rebalance": None if self.open is None else self.open.to_dict(),
                "events": self.events, "downtime_without_rebalance": self.unattributed_downtime,
                "lag": self.lag}
