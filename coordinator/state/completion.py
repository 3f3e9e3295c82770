"""Turning a finished rebalance into its events: the rebalance, then the downtime of each moved
partition (estimator.py defines both)."""
from __future__ import annotations

from typing import Any, Iterable

from coordinator.state.context import Context
from coordinator.state.estimator import downtime_seconds
from coordinator.state.events import REBALANCE, REBALANCE_DOWNTIME, Event, Position
from coordinator.state.group import COMMIT_TS, GroupState
from coordinator.state.rebalance import assignment_quality, diff_assignments


def last_commit_ms(state: GroupState, topic: str, partition: int) -> int | None:
    entry = state.offsets.get((topic, partition))
    return None if entry is None else entry[COMMIT_TS]


def complete_rebalance(state: GroupState, pos: Position, ctx: Context, old_owners: dict[str, Any],
                       from_generation: int, start_ms: int, start_method: str, sync_seconds: float | None,
                       protocol: str | None,
                       handovers: Iterable[tuple[str, int, float]] | None = None,
                       all_stalled: bool = False) -> list[Event]:
    """The rebalance event ending at `pos` (also recorded as the group's last rebalance) followed
    by one `rebalance_downtime` event per moved partition.

    `handovers` lists (topic, partition, downtime seconds) measured as the partitions changed
    hands (KIP-848); None means they changed hands at `pos` (classic: the generation's record),
    where the moved partitions are measured, counting those a member gave up in an earlier
    rebalance (`state.released`) as well, and with `all_stalled` (an eager rebalance) the kept
    partitions too.
    """
    new_owners = state.owners()
    to_generation = state.generation if state.group_type == "classic" else state.group_epoch
    # the caller's cluster metadata is fresher than what the group's records last saw
    counts = dict(state.partition_counts)
    counts.update(ctx.partition_counts)
    fields: dict[str, Any] = {
        "group_type": state.group_type,
        "protocol": protocol,
        "from_generation": from_generation,
        "to_generation": to_generation,
        "start_ms": start_ms,
        "start_method": start_method,
        "end_ms": pos.timestamp_ms,
        "sync_seconds": sync_seconds,
        "duration_seconds": (pos.timestamp_ms - start_ms) / 1000.0,
    }
    fields.update(diff_assignments(old_owners, new_owners, state.released if handovers is None else None))
    fields["quality"] = assignment_quality(new_owners, state.subscriptions(), counts)
    event = pos.event(REBALANCE, state.group, **fields)
    state.last_rebalance = event.to_dict()
    if handovers is None:
        stalled = fields["partitions_moved"] + (fields["partitions_kept"] if all_stalled else [])
        handovers = [(t, p, downtime_seconds(last_commit_ms(state, t, p), pos.timestamp_ms))
                     for t, p in sorted(stalled)]
    events = [event]
    for topic, partition, seconds in handovers:
        if seconds is not None:
            events.append(pos.event(REBALANCE_DOWNTIME, state.group, to_generation=to_generation, topic=topic,
                                    partition_id=partition, downtime_seconds=seconds))
    return events
