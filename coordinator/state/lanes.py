"""Offsets kept apart from groups: the group lane's join with the offsets lane.

Kafka keeps committed offsets apart from group metadata (the 4.x coordinator's
OffsetMetadataManager beside its GroupMetadataManager; the 3.x loader reads both and attaches the
offsets to the groups afterwards), and so does the job: offset commits and their tombstones, more
than 99% of `__consumer_offsets`, go to the offsets lane (streaming/offsets/) as columns, and the
group reducer's state (the group lane) holds no offsets between micro-batches.

The reducer still reads offsets where a group record needs them: a classic rebalance's start
from the members' last commits and a moved partition's downtime (estimator.py), a leaving
KIP-848 member's closing commit, the offsets a deleted group keeps for whatever record of it
comes next, the topic ids v4 commits name. So when a micro-batch holds records of a group other
than commits, the group lane first joins the group's offsets as the lane held them before the
batch (`joined`), then applies the batch's records of the group, its commits included, in log
order: the state the reducer would have reached had it seen every commit. What it stores back is
`stripped` of the offsets again. Groups a batch only commits for never reach the reducer.
"""
from __future__ import annotations

from typing import Iterable, NamedTuple

from coordinator.state.context import Context
from coordinator.state.group import TOPIC_ID, GroupState
from coordinator.state.reducer import after_death

_ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


class LaneEntry(NamedTuple):
    """One committed offset as the offsets lane holds it."""

    topic: str
    partition: int
    entry: tuple  # GroupState's offset entry: (offset, leader_epoch, metadata, commit_ts, topic_id)


class Activity(NamedTuple):
    """A group's offset records as the offsets lane saw them: where its last one sits in
    `__consumer_offsets` (commit or tombstone) and when it was appended, and where its last
    commit sits (-1: none), which decides whether a deleted group was revived by a commit."""

    partition: int
    last_offset: int
    last_ts: int
    last_commit: int


def offset_entry(offset: int, leader_epoch: int | None, metadata: str | None, commit_ts: int,
                 topic_id: str | None) -> tuple:
    """The reducer's offset entry of a commit's decoded fields (coordinator.state.offsets)."""
    return (offset, None if leader_epoch is None or leader_epoch == -1 else leader_epoch,
            metadata or "", commit_ts, None if topic_id == _ZERO_UUID else topic_id)


def joined(state: GroupState | None, group: str, entries: Iterable[LaneEntry],
           activity: Activity | None, ctx: Context) -> GroupState | None:
    """`state` (stripped, or None for a group the group lane never saw) with the offsets lane's
    entries and activity for the group, as a reducer fed every commit would hold it."""
    if activity is None:
        return state
    offsets = {(e.topic, e.partition): e.entry for e in entries}
    partition = activity.partition
    if state is None:
        if activity.last_commit < 0:
            return None  # tombstones only: of a group that never existed, they make none
        state = GroupState(group, ctx.num_partitions)  # made by its first commit
    elif state.dead:
        if activity.last_commit > state.positions.get(partition, -1):
            # A commit after the tombstone found the group again (reducer.after_death).
            state.graveyard = offsets
            state = after_death(state, None, ctx)
        else:
            state.graveyard = offsets
    if not state.dead:
        state.offsets = offsets
        names = state.topic_names
        for (topic, _), entry in offsets.items():
            topic_id = entry[TOPIC_ID]
            if topic_id is not None and topic_id not in names:
                names[topic_id] = topic
    if activity.last_offset > state.positions.get(partition, -1):
        state.positions[partition] = activity.last_offset
        state.coordinator_partition = partition
        state.updated_ms = activity.last_ts
    return state


def stripped(state: GroupState) -> GroupState:
    """`state` without what the offsets lane keeps, as the group lane stores it."""
    state.offsets = {}
    state.graveyard = None
    state.log_positions = {}
    return state


def offsets_only_view(group: str, coordinator_partition: int, updated_ms: int) -> dict:
    """The public view (`GroupState.to_dict()`) of a group known only by its offsets: an Empty
    classic group, as Kafka shows a group that only commits; its offsets left to the caller."""
    state = GroupState(group)
    state.coordinator_partition = coordinator_partition
    state.updated_ms = updated_ms
    view = state.to_dict()
    del view["offsets"]
    return view
