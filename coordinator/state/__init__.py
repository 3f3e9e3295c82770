"""Reconstructing every group's state and every rebalance from `__consumer_offsets` (no Spark).

    from coordinator.state import GroupStore
    store = GroupStore()
    events = store.apply(record, partition=p, offset=o, timestamp_ms=t)
    store.groups()   # {group_id: GroupState}

Per group (what the Spark job keeps per state key): `apply_to_group(state, record, ...)` and
`GroupState.to_bytes()` / `GroupState.from_bytes()`. Shapes: docs/contracts.md.
"""
from coordinator.state.context import Context
from coordinator.state.estimator import estimate_start
from coordinator.state.events import Event
from coordinator.state.group import GroupState
from coordinator.state.rebalance import assignment_quality, diff_assignments
from coordinator.state.reducer import InvalidRecord, apply_control_to_group, apply_to_group
from coordinator.state.store import GroupStore

__all__ = ["Context", "Event", "GroupState", "GroupStore", "InvalidRecord", "apply_control_to_group",
           "apply_to_group", "assignment_quality", "diff_assignments", "estimate_start"]
