"""What a checkpoint says about how its group state is laid out.

Group state is kept in shards (streaming.pipeline.shard_state). The number of shards is the checkpoint's own: a group's shard is a hash of its id modulo that
number, so reading a checkpoint with another number would lose every group that moves. A new
checkpoint records the number it starts with (STATE_LAYOUT_FILE, next to the query's own
directory); one with group state but no record was written with LEGACY_STATE_SHARDS, the only
number before the record existed. How a shard keeps its groups (streaming.pipeline.shard_state
STATE_LAYOUTS) is the checkpoint's own too: a new one records BUCKET_MAP; one whose record does
not say was written in SHARD_VALUE layout, the only one before, and keeps it; one that recorded
GROUP_MAP keeps that. Where committed offsets are kept is recorded as well: a new checkpoint
keeps them in the offsets lane (OFFSETS_LANE, streaming/offsets/), one whose record does not say
kept them inside each group's state (OFFSETS_IN_GROUPS) until its first start with the lane,
which moves them there and records it.

Everything is read and written through Hadoop's file system, so any checkpoint location works.
"""
from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass

from streaming.pipeline.shard_state import BUCKET_MAP, SHARD_VALUE, STATE_LAYOUTS

log = logging.getLogger("groupscope.job")

# Where Spark keeps that operator's state.
_STATE_DIR = "state/0"
STATE_LAYOUT_FILE = "state-layout.json"
LINEAGE_FILE = "lineage.json"
LEGACY_STATE_SHARDS = 64
OFFSETS_LANE, OFFSETS_IN_GROUPS = "lane", "groups"


def hadoop_fs_path(spark, path: str):
    jvm = spark._jvm
    hadoop_path = jvm.org.apache.hadoop.fs.Path(path)
    return hadoop_path.getFileSystem(spark._jsc.hadoopConfiguration()), hadoop_path


def _read(spark, fs, path) -> bytes:
    stream = fs.open(path)
    try:
        return bytes(spark._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
    finally:
        stream.close()


def _write(fs, path, record: dict) -> None:
    stream = fs.create(path, True)
    try:
        stream.write(json.dumps(record).encode())
    finally:
        stream.close()


@dataclass(frozen=True)
class StateLayout:
    shards: int
    groups: str  # one of STATE_LAYOUTS
    offsets: str = OFFSETS_LANE  # OFFSETS_LANE or OFFSETS_IN_GROUPS


def state_layout(spark, checkpoint_path: str, default_shards: int) -> StateLayout:
    """How the checkpoint at `checkpoint_path` (the job's `checkpoint.path`) lays out its group
    state: as it recorded; for one that holds state but no record, LEGACY_STATE_SHARDS shards
    in SHARD_VALUE layout; else `default_shards` in BUCKET_MAP layout, recorded now. Raises
    ValueError for a record it cannot read."""
    root = checkpoint_path.rstrip("/")
    fs, path = hadoop_fs_path(spark, f"{root}/{STATE_LAYOUT_FILE}")
    if fs.exists(path):
        text = _read(spark, fs, path).decode("utf-8", "replace")
        try:
            record = json.loads(text)
            shards, groups = record["state_shards"], record.get("groups", SHARD_VALUE)
            offsets = record.get("offsets", OFFSETS_IN_GROUPS)
        except (ValueError, KeyError, TypeError, AttributeError):
            shards = groups = offsets = None
        if not isinstance(shards, int) or isinstance(shards, bool) or shards < 1:
            raise ValueError(f"{root}/{STATE_LAYOUT_FILE} does not say how many state shards "
                             f"the checkpoint has: {text[:80]!r}")
        if groups not in STATE_LAYOUTS:
            raise ValueError(f"{root}/{STATE_LAYOUT_FILE} names no known group state layout: "
                             f"{text[:80]!r}")
        if offsets not in (OFFSETS_LANE, OFFSETS_IN_GROUPS):
            raise ValueError(f"{root}/{STATE_LAYOUT_FILE} names no known place for offsets: "
                             f"{text[:80]!r}")
        return StateLayout(shards, groups, offsets)
    state_fs, state = hadoop_fs_path(spark, f"{root}/query/{_STATE_DIR}")
    if state_fs.exists(state):
        layout = StateLayout(LEGACY_STATE_SHARDS, SHARD_VALUE, OFFSETS_IN_GROUPS)
    else:
        layout = StateLayout(default_shards, BUCKET_MAP, OFFSETS_LANE)
    record_layout(spark, checkpoint_path, layout)
    return layout


def record_layout(spark, checkpoint_path: str, layout: StateLayout) -> None:
    fs, path = hadoop_fs_path(spark, f"{checkpoint_path.rstrip('/')}/{STATE_LAYOUT_FILE}")
    _write(fs, path, {"state_shards": layout.shards, "groups": layout.groups,
                      "offsets": layout.offsets})


def checkpoint_lineage(spark, checkpoint_path: str) -> str:
    """An id of this checkpoint, made when it is first used and gone with it: a deleted
    checkpoint starts its micro-batch ids from 0 again, and the history must tell its batches
    from the old checkpoint's (streaming.job.history `batch_base`)."""
    root = checkpoint_path.rstrip("/")
    fs, path = hadoop_fs_path(spark, f"{root}/{LINEAGE_FILE}")
    if fs.exists(path):
        text = _read(spark, fs, path).decode("utf-8", "replace")
        try:
            return str(json.loads(text)["id"])
        except (ValueError, KeyError, TypeError):
            raise ValueError(f"{root}/{LINEAGE_FILE} is not groupscope's: {text[:80]!r}") from None
    lineage = uuid.uuid4().hex
    _write(fs, path, {"id": lineage})
    return lineage
