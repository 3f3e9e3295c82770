"""How a shard keeps its groups (streaming.pipeline.shard_state GROUP_MAP and BUCKET_MAP): in its
value while it holds at most `map_after` of them, then in a map, read and written one group (or
one bucket of groups) at a time. Whatever the form, the state stage emits what the single-value
layout emits, and a group's state carries on across the move."""
from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

from coordinator.records import encode
from streaming.kafka.records import record_batch
from streaming.pipeline.decode_stage import MONITOR_KEY, decode_partition
from streaming.pipeline import shard_state
from streaming.pipeline.shard_state import (BUCKET_MAP, GROUP_MAP, SHARD_VALUE, bucket_of,
                                            unpack_entries)
from streaming.pipeline.state_stage import GroupProcessor
from tests.support.memory_state import MemoryHandle
from streaming.offsets.lane import OffsetsLane
from tests.support.state_timeline import group_metadata

SHARD = 3


def _batch(commits: list[tuple[str, int, int]], first_offset: int) -> pd.DataFrame:
    """The decode stage's rows for group records (group, its generation's parity, generation):
    commits alone would never reach a group's state (the offsets lane keeps them)."""
    records = [group_metadata(group, offset, [], protocol_type="consumer" if partition % 2 else "connect")
               for group, partition, offset in commits]
    keys, values = zip(*(encode(r) for r in records))
    offsets = list(range(first_offset, first_offset + len(records)))
    batch = record_batch("__consumer_offsets", 0, list(keys), list(values), offsets,
                         [1_000 + o for o, _ in enumerate(records)])
    frame = pa.Table.from_batches(list(decode_partition(iter([batch])))).to_pandas()
    return frame[frame["group"] != MONITOR_KEY].reset_index(drop=True)


def _run(layout: str, map_after: int, batches: list[pd.DataFrame]):
    """Every batch through one shard key; (rows out per batch, the handle)."""
    processor = GroupProcessor(OffsetsLane(), layout=layout)
    processor.map_after = map_after
    handle = MemoryHandle()
    processor.init(handle)
    handle.state.key = SHARD
    out = []
    for frame in batches:
        rows = [r for f in processor.handleInputRows((SHARD,), iter([frame]), None) for r in
                f.itertuples(index=False)]
        rows += [r for f in processor.flush() for r in f.itertuples(index=False)]
        out.append(sorted((r.group, r.kind, r.payload) for r in rows))
    return out, handle


def test_a_shard_moves_to_its_map_past_map_after_and_emits_what_a_value_would():
    # Each group record moves its group on: its snapshot shows what it had before.
    batches = [_batch([("a", 0, 5), ("b", 0, 7)], 0),            # two groups: still a value
               _batch([("c", 0, 1), ("a", 1, 6)], 2),            # three: the shard moves
               _batch([("b", 1, 9), ("d", 0, 4)], 4)]            # read from and added to the map
    values, value_handle = _run(SHARD_VALUE, 2, batches)
    maps, map_handle = _run(GROUP_MAP, 2, batches)
    assert maps == values
    assert set(unpack_entries(value_handle.state.values[SHARD][0])) == {"a", "b", "c", "d"}
    assert SHARD not in map_handle.state.values  # the value is gone once the groups moved
    stored = map_handle.map.maps[SHARD]
    assert set(stored) == {("a",), ("b",), ("c",), ("d",)}
    assert {key[0]: blob for key, (blob,) in stored.items()} == \
        unpack_entries(value_handle.state.values[SHARD][0])


@pytest.mark.parametrize("buckets", [2, 1024])
def test_a_bucketed_shard_keeps_each_group_in_its_bucket_and_emits_what_a_value_would(
        monkeypatch, buckets):
    """Two buckets: groups share them, and a batch rewrites a bucket whose other groups it
    did not touch without losing them. 1,024 (the layout's own): a bucket a group."""
    monkeypatch.setattr(shard_state, "BUCKETS_PER_SHARD", buckets)
    groups = [f"g{i}" for i in range(8)]
    batches = [_batch([(g, 0, 5 + i) for i, g in enumerate(groups[:2])], 0),
               _batch([(g, 0, 1) for g in groups[2:6]] + [("g0", 1, 6)], 2),
               _batch([("g1", 1, 9), ("g6", 0, 4)], 7),
               _batch([("g7", 2, 3), ("g2", 1, 2)], 9)]
    values, value_handle = _run(SHARD_VALUE, 2, batches)
    buckets_out, handle = _run(BUCKET_MAP, 2, batches)
    assert buckets_out == values
    assert SHARD not in handle.state.values
    stored = handle.map.maps[SHARD]
    assert set(stored) == {(bucket_of(g),) for g in groups}
    in_buckets = {}
    for (bucket,), (blob,) in stored.items():
        entries = unpack_entries(blob)
        assert {bucket_of(g) for g in entries} == {bucket}
        in_buckets.update(entries)
    assert in_buckets == unpack_entries(value_handle.state.values[SHARD][0])


@pytest.mark.parametrize("layout", [GROUP_MAP, BUCKET_MAP])
def test_a_small_shard_keeps_its_value(layout):
    batches = [_batch([("a", 0, 5), ("b", 0, 7)], 0), _batch([("a", 1, 8)], 2)]
    maps, handle = _run(layout, 2, batches)
    assert set(unpack_entries(handle.state.values[SHARD][0])) == {"a", "b"}
    assert not handle.map.maps.get(SHARD)
    assert maps == _run(SHARD_VALUE, 2, batches)[0]
