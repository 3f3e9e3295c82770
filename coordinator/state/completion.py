"""Turning a finished rebalance into an event and into the group's new rebalance baseline."""
from __future__ import annotations

from typing import Any

from coordinator.state.context import Context
from coordinator.state.events import REBALANCE, Event, Position
from coordinator.state.group import COMMIT_TS, GroupState
from coordinator.state.rebalance import assignment_quality, diff_assignments


def complete_rebalance(state: GroupState, pos: Position, ctx: Context, old_owners: dict[str, Any],
                       from_generation: int, start_ms: int, start_method: str, sync_seconds: float | None,
                       protocol: str | None) -> Event:
    """Builds the rebalance event ending at `pos`, records it as the group's last rebalance, and
    arms per-partition downtime measurement for the moved partitions."""
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
    fields.update(diff_assignments(old_owners, new_owners))
    fields["quality"] = assignment_quality(new_owners, state.subscriptions(), counts)
    event = pos.event(REBALANCE, state.group, **fields)
    state.last_rebalance = event.to_dict()
    # Downtime of a moved partition = first commit after the end - its last commit before the end
    # (the old owner's final commit, usually part of the pre-rebalance burst).
    state.pending_downtime = {}
    for t, p in fields["partitions_moved"]:
        entry = state.offsets.get((t, p))
        if entry is not None:
            state.pending_downtime[(t, p)] = [to_generation, entry[COMMIT_TS]]
    return event
