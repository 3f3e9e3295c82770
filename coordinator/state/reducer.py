"""The per-group reducer: one record in, the group's new state and its events out.

`apply_to_group` is the unit the Spark job runs per state key (one group); `GroupStore` is a thin
map of group id -> `GroupState` over it. Records are applied in log order with their position in
`__consumer_offsets`. A record at or below the last position applied for its offsets-topic
partition is ignored, so at-least-once delivery and replays after a restart change nothing, and
cutting the stream into any micro-batches gives the same states and the same events. A group's
coordinator partition is the partition its records come from: Kafka writes every record of a group
to `partitionFor(group)` of however many partitions the topic has.

Records are `coordinator.records.Record` objects or canonical dicts; only `type`, `key` and
`value` are read.
"""
from __future__ import annotations

from typing import Any

from coordinator.state.classic import apply_group_metadata
from coordinator.state.context import Context
from coordinator.state.events import GROUP_DELETED, Event, Position
from coordinator.state.group import CLASSIC, TOPIC_ID, GroupState
from coordinator.state.modern import GROUP_TOMBSTONE_TYPES, GROUP_TYPE_OF, apply_modern
from coordinator.state.offsets import apply_offset_record, end_transaction, settled_by

DEFAULT_CONTEXT = Context()


class InvalidRecord(ValueError):
    """The reducer was handed something that is not a decoded record."""


def record_parts(record: Any) -> tuple[int, dict[str, Any], dict[str, Any] | None, str]:
    """(type, key, value, group id) of a Record or canonical dict."""
    try:
        if isinstance(record, dict):
            rtype, key, value = record["type"], record["key"], record["value"]
        else:
            rtype, key, value = record.type, record.key, record.value
        group = key["group"] if "group" in key else key["group_id"]
    except (KeyError, AttributeError, TypeError) as exc:
        raise InvalidRecord(f"not a decoded __consumer_offsets record: {record!r:.200}") from exc
    return rtype, key, value, group


def _family(rtype: int) -> str | None:
    return CLASSIC if rtype == 2 else GROUP_TYPE_OF.get(rtype)


def _delete_group(state: GroupState, pos: Position, events: list[Event]) -> None:
    """A group tombstone removes the group, not its committed offsets: Kafka keeps those apart
    from the group (the 4.x coordinator's OffsetMetadataManager; the 3.x loader attaches them to
    groups after loading both) and drops one only with its own tombstone. They wait in a graveyard,
    hidden as Kafka hides them while the group does not exist, for whatever record of the group
    comes next (a real deletion tombstones every offset first, so its graveyard is empty)."""
    generation = state.generation if state.group_type == CLASSIC else state.group_epoch
    state.dead = True
    state.graveyard = state.offsets
    state.offsets = {}
    state.released = {}
    state.in_progress = None
    events.append(pos.event(GROUP_DELETED, state.group, group_type=state.group_type, generation=generation))


def after_death(state: GroupState, family: str | None, ctx: Context) -> GroupState:
    """The first non-tombstone record for a Dead group finds the group's offsets again, whatever it
    is: the other kind's records of a conversion, new metadata of the same kind, or an offset
    commit; in a compacted `__consumer_offsets` any of them can follow the tombstone. A conversion
    revives the group in place (its rebalance is measured against the old members); anything else
    starts a new group of the same name."""
    offsets = state.graveyard or {}
    state.graveyard = None
    if family is not None and family != state.group_type:
        state.dead = False
        state.offsets = offsets
        return state
    fresh = GroupState(state.group, ctx.num_partitions)
    fresh.positions = state.positions
    fresh.offsets = offsets
    fresh.log_positions = {tp: at for tp, at in state.log_positions.items() if tp in offsets}
    fresh.topic_names = {entry[TOPIC_ID]: tp[0] for tp, entry in offsets.items() if entry[TOPIC_ID] is not None}
    return fresh


def _switch_type(state: GroupState, family: str) -> None:
    """A group becomes KIP-848/share/streams (classic groups and offsets-only groups convert)."""
    if state.group_type == CLASSIC and state.generation_ts is not None:
        state.baseline = {"epoch": state.generation, "owners": state.owners_snapshot()}
    state.members = {}
    state.released = {}   # classic entries are by topic name, KIP-848 ones by topic id
    state.group_type = family


def apply_to_group(state: GroupState | None, record: Any, partition: int, offset: int, timestamp_ms: int,
                   ctx: Context = DEFAULT_CONTEXT, producer_id: int | None = None,
                   is_transactional: bool = False) -> tuple[GroupState | None, list[Event]]:
    """Applies one record to its group's state. `state` is None for a group not seen before; the
    result is None only when a tombstone names a group that does not exist."""
    rtype, key, value, group = record_parts(record)
    return apply_parts(state, rtype, key, value, group, partition, offset, timestamp_ms, ctx, producer_id,
                       is_transactional)


def apply_parts(state: GroupState | None, rtype: int, key: dict[str, Any], value: dict[str, Any] | None,
                group: str, partition: int, offset: int, timestamp_ms: int, ctx: Context,
                producer_id: int | None, is_transactional: bool) -> tuple[GroupState | None, list[Event]]:
    """`apply_to_group` on a record already split by `record_parts`."""
    if rtype == 1 or rtype == 0:
        return _apply_offset(state, key, value, group, partition, offset, timestamp_ms, ctx, producer_id,
                             is_transactional)
    if state is not None:
        last = state.positions.get(partition)
        if last is not None and offset <= last:
            return state, []
    family = _family(rtype)
    if family is None:
        return state, []   # unknown record type: skipped, as Kafka's loader does
    if state is None:
        if value is None:
            return None, []   # tombstone for a key we never saw (compacted away, or never written)
        state = GroupState(group, ctx.num_partitions)
    elif state.dead and value is not None:
        state = after_death(state, family, ctx)
    pos = Position(partition, offset, timestamp_ms)
    events: list[Event] = []
    state.positions[partition] = offset
    state.coordinator_partition = partition
    state.updated_ms = timestamp_ms
    if value is None and (rtype == 2 or rtype in GROUP_TOMBSTONE_TYPES):
        if not state.dead:
            _delete_group(state, pos, events)
    elif rtype == 2:
        apply_group_metadata(state, value, pos, ctx, events)
    elif state.dead or (value is None and family != state.group_type):
        pass   # tombstones of a dead group, or of records of a kind this group does not have
    else:
        if family != state.group_type:
            _switch_type(state, family)
        apply_modern(state, rtype, key, value, pos, ctx, events)
    return state, events


def _apply_offset(state: GroupState | None, key: dict[str, Any], value: dict[str, Any] | None, group: str,
                  partition: int, offset: int, timestamp_ms: int, ctx: Context, producer_id: int | None,
                  is_transactional: bool) -> tuple[GroupState | None, list[Event]]:
    """Offset commits and their tombstones: the hot path, kept flat."""
    if state is None:
        if value is None:
            return None, []
        state = GroupState(group, ctx.num_partitions)
    else:
        last = state.positions.get(partition)
        if last is not None and offset <= last:
            return state, []
        if state.dead and value is not None:
            state = after_death(state, None, ctx)
    state.positions[partition] = offset
    state.coordinator_partition = partition
    state.updated_ms = timestamp_ms
    events: list[Event] = []
    apply_offset_record(state, key, value, Position(partition, offset, timestamp_ms), ctx, events, producer_id,
                        is_transactional)
    return state, events


def apply_control_to_group(state: GroupState, producer_id: int, commit: bool, partition: int, offset: int,
                           timestamp_ms: int, ctx: Context = DEFAULT_CONTEXT) -> list[Event]:
    """A transaction marker (raw delivery only) for a group with pending commits of `producer_id`."""
    last = state.positions.get(partition)
    pos = Position(partition, offset, timestamp_ms)
    if (last is not None and offset <= last) or not settled_by(state.pending_txn.get(producer_id, {}), pos):
        return []
    state.positions[partition] = offset
    state.updated_ms = timestamp_ms
    events: list[Event] = []
    end_transaction(state, producer_id, commit, pos, ctx, events)
    return events
