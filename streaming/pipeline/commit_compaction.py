"""Dropping offset commits that a later commit in the same input batch makes invisible.

While the job catches up, a group commits each partition many times within one source batch;
the state stage would apply every commit only to overwrite it. With `offset_committed` events
off (the job's setting), what the reducer keeps of a commit is its entry in `offsets` (replaced
by the next commit of the same partition), the group's position in `__consumer_offsets` and its
`updated_ms` (both set by the group's last record). So among the commits of one group that no
other record of that group separates (a "run", in the order the state stage applies records:
by offsets-topic partition, then offset), only the last commit of each (partition of
`__consumer_offsets`, topic, partition, topic id) changes anything. Keeping exactly those gives
the same states and the same events (tests/unit/test_commit_compaction.py checks this against the
reducer), and shrinks the shuffle and the state stage's input by the number of commits per
partition in a batch.

What is never dropped: records of any other type, offset tombstones (they emit
`offset_deleted` only if the offset exists at that point) and undecodable rows (they are counted
before this runs). The topic id is part of the key because the first commit that names a topic id
names it for the group.

Assumes what groupscope's sources deliver: within one input batch, the records of each offsets-
topic partition are a gap-free stretch of that partition's part of the micro-batch (each Spark
task reads one contiguous range), so no record of another batch falls inside a run.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

OFFSET_COMMIT_TYPES = (0, 1)


def superseded_commits_dropped(batch: pa.RecordBatch) -> pa.RecordBatch:
    """`batch` (the decode stage's rows: group, o_partition, o_offset, type, is_tombstone,
    record_json, topic, partition, topic_id...) without the commits a later one overrides."""
    n = batch.num_rows
    if n < 2:
        return batch
    commit = pc.and_(pc.is_in(batch.column("type"), pa.array(OFFSET_COMMIT_TYPES, pa.int16())),
                     pc.and_(pc.invert(pc.fill_null(batch.column("is_tombstone"), True)),
                             pc.is_null(batch.column("record_json"))))
    commit_np = commit.to_numpy(zero_copy_only=False)
    if not commit_np.any():
        return batch
    # Runs: in the state stage's order, every non-commit row of a group starts a new run.
    table = pa.Table.from_batches([batch])
    order = pc.sort_indices(table, sort_keys=[("group", "ascending"), ("o_partition", "ascending"),
                                              ("o_offset", "ascending")]).to_numpy()
    run = np.empty(n, np.int64)
    run[order] = np.cumsum(~commit_np[order])
    rows = np.arange(n, dtype=np.int64)
    keys = pa.table({
        "group": batch.column("group"), "run": run, "o_partition": batch.column("o_partition"),
        "topic": batch.column("topic"), "partition": batch.column("partition"),
        "topic_id": batch.column("topic_id"), "row": rows,
    }).filter(commit)
    last = keys.group_by(["group", "run", "o_partition", "topic", "partition", "topic_id"],
                         use_threads=False).aggregate([("row", "max")])
    keep = ~commit_np
    keep[last.column("row_max").to_numpy()] = True
    if keep.all():
        return batch
    return batch.filter(pa.array(keep))
