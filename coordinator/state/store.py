"""`GroupStore`: every group's state in one map, fed record by record."""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from coordinator.state.context import Context
from coordinator.state.events import Event
from coordinator.state.group import GroupState
from coordinator.state.modern import refresh_topic_names
from coordinator.state.reducer import apply_control_to_group, apply_parts, record_parts

_CONTROL = {"commit": True, "abort": False, 1: True, 0: False, True: True, False: False}


class GroupStore:
    """All groups, keyed by group id. Dead groups stay (with their positions, so a replay of older
    records cannot resurrect them); callers that want to forget them remove them from `groups()`.

    Transactions: by default records are assumed to come from a read_committed consumer and apply
    in log order. A caller reading raw batches passes `producer_id`/`is_transactional` with every
    record and hands markers over as `apply(None, ..., producer_id=pid, control="commit"|"abort")`.
    """

    def __init__(self, topic_names: Mapping[str, str] | None = None,
                 partition_counts: Mapping[str, int] | None = None, num_partitions: int = 50,
                 emit_offset_events: bool = True) -> None:
        self._ctx = Context(dict(topic_names or {}), dict(partition_counts or {}), num_partitions,
                            emit_offset_events)
        self._groups: dict[str, GroupState] = {}
        self._open_txns: dict[int, set[str]] = {}   # producer id -> groups with pending commits

    @property
    def context(self) -> Context:
        return self._ctx

    def set_topic_names(self, topic_names: Mapping[str, str]) -> None:
        """Adds topic id -> name mappings (from cluster metadata) and names the ids already seen."""
        merged = dict(self._ctx.topic_names)
        merged.update(topic_names)
        self._ctx = dataclasses.replace(self._ctx, topic_names=merged)
        for state in self._groups.values():
            refresh_topic_names(state, self._ctx)

    def set_partition_counts(self, partition_counts: Mapping[str, int]) -> None:
        merged = dict(self._ctx.partition_counts)
        merged.update(partition_counts)
        self._ctx = dataclasses.replace(self._ctx, partition_counts=merged)

    def apply(self, record: Any, partition: int, offset: int, timestamp_ms: int, *,
              producer_id: int | None = None, is_transactional: bool = False,
              control: str | int | bool | None = None) -> list[Event]:
        if control is not None:
            if control not in _CONTROL or producer_id is None:
                raise ValueError(f"a control marker needs producer_id and control 'commit' or 'abort', "
                                 f"got producer_id={producer_id!r}, control={control!r}")
            return self._apply_control(producer_id, _CONTROL[control], partition, offset, timestamp_ms)
        rtype, key, value, group = record_parts(record)
        before = self._groups.get(group)
        state, events = apply_parts(before, rtype, key, value, group, partition, offset, timestamp_ms, self._ctx,
                                    producer_id, is_transactional)
        if state is not before and state is not None:
            self._groups[group] = state
        if is_transactional and state is not None and producer_id in state.pending_txn:
            self._open_txns.setdefault(producer_id, set()).add(group)
        return events

    def _apply_control(self, producer_id: int, commit: bool, partition: int, offset: int,
                       timestamp_ms: int) -> list[Event]:
        events: list[Event] = []
        for group in sorted(self._open_txns.pop(producer_id, ())):
            state = self._groups.get(group)
            if state is None:
                continue
            events.extend(apply_control_to_group(state, producer_id, commit, partition, offset,
                                                 timestamp_ms, self._ctx))
            if producer_id in state.pending_txn:   # commits in another partition still wait for their marker
                self._open_txns.setdefault(producer_id, set()).add(group)
        return events

    def groups(self) -> dict[str, GroupState]:
        return self._groups

    def group(self, group_id: str) -> GroupState | None:
        return self._groups.get(group_id)
