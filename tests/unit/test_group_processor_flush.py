"""The state stage holds its output rows back and hands them on in large frames: every row
leaves exactly once, in order, either when FLUSH_ROWS pile up or at the task's final flush."""
from __future__ import annotations

import pyarrow as pa

import streaming.pipeline.state_stage as group_processor
from coordinator.records import encode
from tests.support.memory_state import MemoryHandle
from streaming.offsets.lane import OffsetsLane
from tests.support.state_timeline import group_metadata
from streaming.pipeline.decode_stage import MONITOR_KEY, decode_partition
from streaming.pipeline.state_stage import GroupProcessor
from streaming.kafka.records import record_batch


def _stage_rows(groups: int) -> dict[str, object]:
    """The decode stage's output for one group record by each of `groups` groups, per group."""
    records = [group_metadata(f"g{g:03d}", 1, []) for g in range(groups)]
    keys, values = zip(*(encode(r) for r in records))
    batch = record_batch("__consumer_offsets", 0, list(keys), list(values),
                         list(range(groups)), [1_000 + g for g in range(groups)])
    frame = pa.Table.from_batches(list(decode_partition(iter([batch])))).to_pandas()
    return {name: part.reset_index(drop=True) for name, part in frame.groupby("group", sort=True)
            if name != MONITOR_KEY}


def test_rows_leave_in_frames_of_flush_rows_and_the_rest_at_the_final_flush(monkeypatch):
    monkeypatch.setattr(group_processor, "FLUSH_ROWS", 4)
    processor = GroupProcessor(OffsetsLane())
    handle = MemoryHandle()
    processor.init(handle)
    frames_after_key = []
    for name, part in _stage_rows(10).items():
        handle.state.key = name
        frames_after_key.append(list(processor.handleInputRows((name,), iter([part]), None)))
    final = list(processor.flush())

    # One snapshot row per group: frames of 4 leave after the 4th and 8th group, 2 rows at the end.
    assert [len(frames) for frames in frames_after_key] == [0, 0, 0, 1, 0, 0, 0, 1, 0, 0]
    assert [len(f) for fs in frames_after_key for f in fs] == [4, 4]
    assert [len(f) for f in final] == [2]
    rows = [row for fs in frames_after_key for f in fs for row in f.itertuples(index=False)]
    rows += [row for f in final for row in f.itertuples(index=False)]
    assert [(r.group, r.kind) for r in rows] == [(f"g{g:03d}", "snapshot") for g in range(10)]
    assert list(processor.flush()) == []  # nothing is handed on twice
