"""Committed offsets: commits, tombstones and transactional commits.

Two ways to feed transactional commits:

* read_committed delivery (what groupscope's source does): the consumer of `__consumer_offsets`
  reads with isolation.level=read_committed, so aborted transactional records never arrive and
  committed ones arrive in log order. Applying every record as it comes gives the broker's result
  (a later non-transactional commit overrides an earlier transactional one, and vice versa).
* raw delivery: the caller passes `producer_id` / `is_transactional` with each record and hands
  control markers to `apply_control`. Transactional commits then wait, per producer, for their
  COMMIT marker and take effect only if no committed entry exists or the pending entry sits later
  in the log than the committed one; an ABORT drops them; a tombstone deletes the committed entry
  and the partition's pending entries of every open transaction (the 4.x rules).
"""
from __future__ import annotations

import sys
from typing import Any

from coordinator.state.context import Context
from coordinator.state.events import OFFSET_COMMITTED, OFFSET_DELETED, Event, Position
from coordinator.state.group import TOPIC_ID, GroupState

_ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


def offset_entry(value: dict[str, Any]) -> tuple:
    """(offset, leader_epoch, metadata, commit_timestamp_ms, topic_id) from an OffsetCommitValue dict."""
    epoch = value.get("leader_epoch", -1)
    topic_id = value.get("topic_id")
    return (value["offset"], None if epoch == -1 else epoch, value.get("metadata") or "",
            value["commit_timestamp"], None if topic_id == _ZERO_UUID else topic_id)


def make_visible(state: GroupState, tp: tuple[str, int], entry: tuple, pos: Position, ctx: Context,
                 events: list[Event], log_offset: int | None) -> None:
    """An offset commit takes effect: the hot path (no allocation beyond the entry and the event)."""
    state.offsets[tp] = entry
    if log_offset is not None:
        state.log_positions[tp] = log_offset
    topic_id = entry[TOPIC_ID]
    if topic_id is not None and topic_id not in state.topic_names:
        # v4 commits (KIP-848 groups) carry the topic's name in the key and its id in the value:
        # that names the ids the group's assignment records use.
        state.topic_names[topic_id] = tp[0]
    if ctx.emit_offset_events:
        events.append(Event(OFFSET_COMMITTED, state.group, pos.timestamp_ms, pos.partition, pos.offset, {
            "topic": tp[0], "partition_id": tp[1], "committed_offset": entry[0], "leader_epoch": entry[1],
            "metadata": entry[2], "commit_timestamp_ms": entry[3], "topic_id": topic_id}))


def apply_offset_record(state: GroupState, key: dict[str, Any], value: dict[str, Any] | None, pos: Position,
                        ctx: Context, events: list[Event], producer_id: int | None,
                        is_transactional: bool) -> None:
    # Interned: every decoded record brings its own copy of the topic name, and the offsets map of
    # a large cluster would otherwise keep one per partition.
    tp = (sys.intern(key["topic"]), key["partition"])
    if value is None:
        delete_offset(state, tp, pos, events)
        return
    entry = offset_entry(value)
    if is_transactional and producer_id is not None and producer_id >= 0:
        state.pending_txn.setdefault(producer_id, {})[tp] = [list(entry), pos.offset, pos.partition]
        return
    make_visible(state, tp, entry, pos, ctx, events, pos.offset if producer_id is not None else None)


def delete_offset(state: GroupState, tp: tuple[str, int], pos: Position, events: list[Event]) -> None:
    for pid in list(state.pending_txn):
        pending = state.pending_txn[pid]
        pending.pop(tp, None)
        if not pending:
            del state.pending_txn[pid]
    state.log_positions.pop(tp, None)
    if state.graveyard:
        state.graveyard.pop(tp, None)
    if state.offsets.pop(tp, None) is not None:
        events.append(pos.event(OFFSET_DELETED, state.group, topic=tp[0], partition_id=tp[1]))


def settled_by(pending: dict[tuple[str, int], list], marker: Position) -> list[tuple[str, int]]:
    """The pending commits a marker settles: written to its partition, before it."""
    return sorted(tp for tp, (_, log_offset, partition) in pending.items()
                  if partition == marker.partition and log_offset < marker.offset)


def end_transaction(state: GroupState, producer_id: int, commit: bool, pos: Position, ctx: Context,
                    events: list[Event]) -> None:
    """A COMMIT (commit=True) or ABORT marker of `producer_id` in offsets-topic partition `pos.partition`:
    it settles that producer's pending commits written to the same partition."""
    pending = state.pending_txn.get(producer_id, {})
    settled = settled_by(pending, pos)
    entries = [(tp, pending.pop(tp)) for tp in settled]
    if not pending:
        state.pending_txn.pop(producer_id, None)
    if not commit:
        return
    for tp, (entry, log_offset, _) in entries:
        committed_at = state.log_positions.get(tp)
        if tp not in state.offsets or committed_at is None or log_offset > committed_at:
            make_visible(state, tp, tuple(entry), pos, ctx, events, log_offset)
