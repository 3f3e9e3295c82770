"""Every group as the checkpoint's state store last committed it, read when a job restarts.

The exporter must serve each group from the first scrape after a restart as the job left it. The
history's snapshots cannot promise that: a group's snapshot is written at most every
`history.snapshot_interval` unless its membership changed, so a group that only committed offsets
since would come back with an older offset, and stay there until it commits again. The state
store holds every group's latest state; Spark's state data source (`format("statestore")`) reads
the query's last committed batch: each shard's value and, for a shard that outgrew its value, its
map's entries (a group each in GROUP_MAP layout, a bucket of groups in BUCKET_MAP), decoded
here. The monitor's counters come back with them: how far the log was read decides at once
whether the restarted job is caught up, since a restart with nothing new to read runs no batch
that could decide it.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Any

from coordinator import compact_json
from coordinator.state import GroupState
from streaming.job.checkpoint_layout import hadoop_fs_path
from streaming.pipeline.monitor_rows import MONITOR_KEY
from streaming.pipeline.shard_state import BUCKET_MAP, GROUP_MAP, unpack_entries

log = logging.getLogger("groupscope.job")


def checkpoint_is_new(checkpoint: str) -> bool:
    """Whether the job's `checkpoint.path` has no committed micro-batch, known without Spark
    (a local path); False when only Spark can tell (a Hadoop file system's URI)."""
    if "://" in checkpoint and not checkpoint.startswith("file:"):
        return False
    commits = os.path.join(checkpoint.removeprefix("file:"), "query", "commits")
    return not (os.path.isdir(commits) and any(name.isdigit() for name in os.listdir(commits)))


def has_committed_batch(spark, query_checkpoint: str) -> bool:
    """True once the query at `query_checkpoint` has committed a micro-batch."""
    fs, commits = hadoop_fs_path(spark, f"{query_checkpoint}/commits")
    if not fs.exists(commits):
        return False
    return any(status.getPath().getName().isdigit() for status in fs.listStatus(commits))


@dataclass(frozen=True)
class CommittedState:
    """What the last committed batch left in the state store: each group's snapshot
    (`GroupState.to_dict()`), and the monitor's counters (records and skips counted, the highest
    offset read per partition of the log), None when no batch has counted anything."""

    groups: list[dict[str, Any]]
    monitor: dict[str, Any] | None
    # Deleted groups -> the offset of their tombstone (the offsets lane hides their offsets).
    dead_at: dict[str, int] = field(default_factory=dict)
    # Every group -> where its last record sits in its __consumer_offsets partition (-1: none).
    positions: dict[str, int] = field(default_factory=dict)


def committed_state(spark, query_checkpoint: str, layout: str = BUCKET_MAP) -> CommittedState | None:
    """The state the last committed batch left in the state `layout`; None when the query has
    committed no batch yet, or when its state cannot be read (then the history's snapshots are
    all there is, and the job says so)."""
    if not has_committed_batch(spark, query_checkpoint):
        return None
    try:
        _ = spark.streams.active  # the state store's coordinator starts with the query manager
        reader = spark.read.format("statestore").option("path", query_checkpoint)
        rows = reader.option("stateVarName", "shard").load().select("value.blob").collect()
        blobs = [entry for row in rows if row.blob is not None
                 for entry in unpack_entries(bytes(row.blob)).items()]
        if layout == GROUP_MAP:
            rows = (reader.option("stateVarName", "groups").load()
                    .select("user_map_key.group", "user_map_value.blob").collect())
            blobs += [(row.group, row.blob) for row in rows]
        elif layout == BUCKET_MAP:
            rows = (reader.option("stateVarName", "buckets").load()
                    .select("user_map_value.blob").collect())
            blobs += [entry for row in rows if row.blob is not None
                      for entry in unpack_entries(bytes(row.blob)).items()]
    except Exception as exc:  # a py4j error from Spark, whatever its kind
        log.warning("cannot read the group state from the checkpoint (%s); serving the history's "
                    "snapshots until each group's next change", str(exc).splitlines()[0][:200])
        return None
    monitor = next((compact_json.loads(bytes(blob)) for group, blob in blobs
                    if group == MONITOR_KEY and blob is not None), None)
    states = [GroupState.from_bytes(bytes(blob)) for group, blob in blobs
              if group != MONITOR_KEY and blob is not None]
    positions = {state.group: state.positions.get(state.coordinator_partition, -1)
                 for state in states}
    return CommittedState([state.to_dict() for state in states], monitor,
                          {state.group: positions[state.group] for state in states if state.dead},
                          positions)


def last_committed_batch(spark, query_checkpoint: str) -> int | None:
    """The id of the last micro-batch the query at `query_checkpoint` committed; None: none."""
    fs, commits = hadoop_fs_path(spark, f"{query_checkpoint}/commits")
    if not fs.exists(commits):
        return None
    ids = [int(name) for name in (status.getPath().getName() for status in fs.listStatus(commits))
           if name.isdigit()]
    return max(ids, default=None)
