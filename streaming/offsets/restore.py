"""The offsets lane as the checkpoint's last committed micro-batch left it, at a job's start."""
from __future__ import annotations

import dataclasses
import logging
import os

import pyarrow as pa

from streaming.job.checkpoint_layout import OFFSETS_IN_GROUPS, OFFSETS_LANE, StateLayout, record_layout
from streaming.job.state_restore import CommittedState, last_committed_batch
from streaming.offsets.lane import OffsetsLane
from streaming.offsets.store import OffsetsStore
from streaming.offsets.table import COMMIT_INPUT, OffsetsTable

log = logging.getLogger("groupscope.job")


class MissingLane(ValueError):
    """A checkpoint that keeps its offsets in the lane has lost the lane's files."""


def restored_lane(spark, checkpoint: str, state: CommittedState | None,
                  layout: StateLayout) -> OffsetsLane:
    """The lane kept under `<checkpoint>/offsets`, up to the query's last committed batch; for a
    checkpoint written before the offsets had a lane of their own (its groups' states hold their
    offsets: OFFSETS_IN_GROUPS), the lane is made once from those states, and the checkpoint's
    layout record says so from then on."""
    where = os.path.join(checkpoint, "offsets")
    committed = last_committed_batch(spark, os.path.join(checkpoint, "query"))
    existed = OffsetsStore.exists(where)
    if layout.offsets == OFFSETS_LANE and committed is not None and not existed:
        raise MissingLane(f"{where} is missing, so the committed offsets of this checkpoint are "
                          f"lost: restore that folder, or start with a new checkpoint.path")
    store = OffsetsStore(where)
    if layout.offsets == OFFSETS_IN_GROUPS:
        held = [] if state is None else [s for s in state.groups if s.get("offsets")]
        table = OffsetsTable()
        if committed is not None and held:
            table.apply(_commits_of(held))
            # The group lane looks a group up by its activity: without one, the next record of
            # a moved group would find none of its offsets and drop them.
            for s in held:
                table.note_position(s["group"], s["coordinator_partition"],
                                    state.positions.get(s["group"], -1), s["updated_ms"] or 0)
            store.write_base(committed, table)
            log.info("the offsets of the checkpoint's %d groups moved to the offsets lane",
                     len(held))
        record_layout(spark, checkpoint, dataclasses.replace(layout, offsets=OFFSETS_LANE))
    else:
        table = store.load(committed)
    if state is not None:
        for group, offset in state.dead_at.items():
            g = table.groups.ids.get(group)
            if g is None or g >= len(table.a_commit) or table.a_commit[g] <= offset:
                table.note_deleted(group, offset)
    return OffsetsLane(table, store)


def _commits_of(snapshots: list[dict]) -> pa.Table:
    """Groups' offsets (`GroupState.to_dict()`) as commits of unknown position (-1: any record
    the log brings later wins)."""
    rows = [(s["group"], e["commit_timestamp_ms"], s["coordinator_partition"], -1, e["topic"],
             e["partition"], e["offset"], e["leader_epoch"], e["metadata"],
             e["commit_timestamp_ms"], e["topic_id"]) for s in snapshots for e in s["offsets"]]
    types = [pa.string(), pa.int64(), pa.int32(), pa.int64(), pa.string(), pa.int32(), pa.int64(),
             pa.int32(), pa.string(), pa.int64(), pa.string()]
    columns = list(zip(*rows))
    return pa.table({name: pa.array(column, t) for name, column, t in zip(COMMIT_INPUT, columns, types)})
