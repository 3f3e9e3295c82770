"""The state stage's two lanes driven without Spark: the group lane (GroupProcessor over an
in-memory state handle) and the offsets lane (OffsetsLane), fed the decode stage's rows."""
from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa

from coordinator.records import encode
from coordinator.state import GroupState
from streaming.kafka.records import record_batch
from streaming.offsets.lane import OffsetsLane, split_commits
from streaming.pipeline.decode_stage import MONITOR_KEY, decode_arrow_batch, decode_partition
from streaming.pipeline.shard_state import unpack_entries
from streaming.pipeline.state_stage import GroupProcessor
from tests.support.memory_state import MemoryHandle


def source_batch(entries) -> pa.RecordBatch:
    """(record, partition, offset, timestamp) entries as a source batch of `__consumer_offsets`."""
    keys, values = zip(*(encode(rec) for rec, _, _, _ in entries))
    return record_batch("__consumer_offsets", [p for _, p, _, _ in entries], list(keys),
                        list(values), [o for _, _, o, _ in entries],
                        [t for _, _, _, t in entries])


def lanes_run(micro, compact: bool = True):
    """Micro-batches (each a list of source batches, one Spark task each) through both lanes;
    (the offsets table, each group's stored state, every event, the last snapshot of each
    group). Without `compact` the decode stage drops no superseded commit (the reference)."""
    lane = OffsetsLane()
    processor = GroupProcessor(lane)
    handle = MemoryHandle()
    processor.init(handle)
    events, snapshots = [], {}
    for source_batches in micro:
        decoded = []
        for batch in source_batches:
            decoded.extend(decode_partition(iter([batch])) if compact
                           else [decode_arrow_batch(batch)])
        frame = pa.Table.from_batches(decoded).to_pandas()
        out = []
        for name, part in frame.groupby("group", sort=True):
            handle.state.key = name  # a shard per group: the layout does not matter here
            out.extend(processor.handleInputRows((name,), iter([part.reset_index(drop=True)]),
                                                 None))
        out.extend(processor.flush())
        rows = pa.Table.from_pandas(pd.concat([f for f in out if len(f)], ignore_index=True),
                                    preserve_index=False) if any(len(f) for f in out) else None
        batch_snapshots, batch_events = [], []
        commits = None
        if rows is not None:
            commits, rest = split_commits(rows)
            for kind, payload in zip(rest.column("kind").to_pylist(),
                                     rest.column("payload").to_pylist()):
                if kind == "snapshot":
                    batch_snapshots.append(json.loads(payload))
                elif kind == "event":
                    batch_events.append(json.loads(payload))
        applied = lane.apply_batch(commits, batch_snapshots, batch_events).applied
        events.extend(batch_events + applied.events)
        for snapshot in batch_snapshots:
            snapshots[snapshot["group"]] = snapshot
    states = {group: GroupState.from_bytes(blob)
              for value in handle.state.values.values()
              for group, blob in unpack_entries(value[0]).items() if group != MONITOR_KEY}
    return lane.table, states, events, snapshots
