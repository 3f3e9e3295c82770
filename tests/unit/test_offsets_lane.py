"""The two lanes together equal one reducer fed every record.

Offset commits go through the state stage as columns to the offsets lane (OffsetsTable); the group
lane (GroupProcessor) keeps no offsets and joins the lane's, as they stood before the batch, for
the groups it applies records of. Whatever the mix of commits, offset tombstones, classic and
KIP-848 group records and group tombstones (conversions, deletions, revivals), the micro-batch
cuts and the replays, the lanes must give each group the state `GroupStore` reaches over the
same records, and the same events.
"""
from __future__ import annotations

import json

import pyarrow as pa
from hypothesis import example, given, settings, strategies as st

from coordinator.state import GroupStore
from coordinator.state.lanes import joined
from streaming.offsets.lane import OffsetsLane
from streaming.pipeline.decode_stage import decode_partition
from streaming.pipeline.state_stage import COMMIT_KIND, GroupProcessor
from tests.support.memory_state import MemoryHandle
from tests.support.state_timeline import (cg_current, cg_epoch, cg_member, cg_target,
                                          cg_target_epoch, group_metadata, group_tombstone,
                                          member, offset_commit, offset_tombstone, tombstone)
from tests.support.lanes import lanes_run, source_batch as _source_batch

GROUPS = ("alpha", "beta")
TOPICS = ("orders", "payments")
TOPIC_IDS = ("AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAg")

op = st.one_of(
    st.tuples(st.just("commit"), st.sampled_from(GROUPS), st.integers(0, 1), st.integers(0, 2),
              st.booleans()),
    st.tuples(st.just("delete"), st.sampled_from(GROUPS), st.integers(0, 1), st.integers(0, 2)),
    st.tuples(st.just("generation"), st.sampled_from(GROUPS), st.integers(0, 3)),
    st.tuples(st.just("group_deleted"), st.sampled_from(GROUPS)),
    st.tuples(st.just("kip848"), st.sampled_from(GROUPS), st.integers(0, 3)),
    st.tuples(st.just("kip848_leave"), st.sampled_from(GROUPS), st.sampled_from(("m1", "m2"))),
)


def _records(step, i: int, ts: int) -> list:
    kind, group = step[0], step[1]
    if kind == "commit":
        topic = TOPICS[step[2]]
        topic_id = TOPIC_IDS[step[2]] if step[4] else None
        return [offset_commit(group, topic, step[3], 100 + i, ts, version=4 if topic_id else 3,
                              topic_id=topic_id, leader_epoch=i % 3 - 1, metadata=f"m{i % 2}")]
    if kind == "delete":
        return [offset_tombstone(group, TOPICS[step[2]], step[3])]
    if kind == "generation":
        members = [member(f"c{m}", [TOPICS[0]], [(TOPICS[0], p) for p in range(3) if p % 2 == m])
                   for m in range(step[2] % 3)]
        return [group_metadata(group, i + 1, members, state_ts=ts - 5)]
    if kind == "kip848":  # a member joins or moves: epoch bump, target, reconciliation
        mid = "m1" if step[2] % 2 else "m2"
        assigned = [(TOPIC_IDS[0], p) for p in range(3) if p % 2 == step[2] % 2]
        epoch = i + 1
        return [cg_member(group, mid, [TOPICS[0]]), cg_epoch(group, epoch),
                cg_target(group, mid, assigned), cg_target_epoch(group, epoch, ts - 3),
                cg_current(group, mid, epoch, assigned)]
    if kind == "kip848_leave":
        return [tombstone(8, group, step[2]), tombstone(7, group, step[2]),
                tombstone(5, group, step[2]), cg_epoch(group, i + 1)]
    return [group_tombstone(group)]


def _event_key(event: dict) -> str:
    return json.dumps(event, sort_keys=True)


@settings(max_examples=300, deadline=None)
@given(steps=st.lists(op, min_size=1, max_size=30), cuts=st.lists(st.floats(0, 1), max_size=8),
       replay=st.integers(0, 4))
@example(steps=[("commit", "alpha", 0, 0, False), ("group_deleted", "alpha"),
                ("commit", "alpha", 0, 1, False)], cuts=[0.7], replay=0)  # revived by a commit
def test_the_lanes_equal_one_reducer(steps, cuts, replay):
    entries = []
    next_offset: dict[int, int] = {}
    ts = 1_763_000_000_000
    reference = GroupStore(emit_offset_events=False)
    expected_events = []
    for i, step in enumerate(steps):
        for rec in _records(step, i, ts):
            ts += 700 * (1 + i % 3)
            partition = GROUPS.index(step[1])
            offset = next_offset.get(partition, 0)
            next_offset[partition] = offset + 1
            entries.append((rec, partition, offset, ts))
            expected_events.extend(e.to_dict() for e in reference.apply(rec, partition, offset, ts))
    bounds = sorted({0, len(entries), *[int(c * len(entries)) for c in cuts]})
    micro = []
    for lo, hi in zip(bounds, bounds[1:]):
        chunk = entries[max(0, lo - replay):hi]
        micro.append([_source_batch(chunk)])
    table, states, events, _ = lanes_run(micro)
    ctx = reference.context
    for group in GROUPS:
        expected = reference.groups().get(group)
        entries_of, activity = table.lookup([group])
        state = joined(states.get(group), group, entries_of.get(group, ()), activity.get(group), ctx)
        if expected is None:
            assert state is None
            continue
        assert state is not None
        assert _comparable(state.to_dict()) == _comparable(expected.to_dict())
    assert sorted(map(_event_key, events)) == sorted(map(_event_key, expected_events))


def _comparable(view: dict) -> dict:
    return json.loads(json.dumps(view, sort_keys=True))


def test_a_batch_of_commits_touches_no_group_state():
    lane = OffsetsLane()
    processor = GroupProcessor(lane)
    handle = MemoryHandle()
    processor.init(handle)
    ts = 1_763_000_000_000
    batch = _source_batch([(offset_commit("alpha", "orders", p, 10 + p, ts), 3, p, ts)
                           for p in range(5)])
    frame = pa.Table.from_batches(list(decode_partition(iter([batch])))).to_pandas()
    handle.state.key = "alpha"
    data = frame[frame["group"] == "alpha"].reset_index(drop=True)
    out = list(processor.handleInputRows(("alpha",), iter([data]), None)) + list(processor.flush())
    assert handle.state.values == {}  # nothing read or written for the group
    rows = __import__("pandas").concat(out)
    assert list(rows["kind"]) == [COMMIT_KIND] * 5
    assert list(rows["c_offset"]) == [10, 11, 12, 13, 14]
