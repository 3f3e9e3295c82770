"""Dropping superseded offset commits in the decode stage changes nothing downstream: the group
lane emits the same events and snapshots and stores equal group states, and the offsets lane
ends with the same offsets, whatever the mix of record types, replays and micro-batch cuts."""
from __future__ import annotations

import json

from hypothesis import given, settings, strategies as st

from tests.support.lanes import lanes_run, source_batch as _source_batch
from tests.support.state_timeline import (group_metadata, group_tombstone, member, offset_commit,
                            offset_tombstone)
from streaming.pipeline.commit_compaction import superseded_commits_dropped
from streaming.pipeline.decode_stage import MONITOR_KEY, decoded_rows

GROUPS = ("alpha", "beta")
TOPICS = ("orders", "payments")
TOPIC_IDS = ("AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAg")


op = st.one_of(
    st.tuples(st.just("commit"), st.sampled_from(GROUPS), st.sampled_from(TOPICS),
              st.integers(0, 2), st.booleans()),
    st.tuples(st.just("delete"), st.sampled_from(GROUPS), st.sampled_from(TOPICS),
              st.integers(0, 2)),
    st.tuples(st.just("generation"), st.sampled_from(GROUPS), st.integers(0, 2)),
    st.tuples(st.just("group_deleted"), st.sampled_from(GROUPS)),
)


def _record(step, i: int, ts: int):
    kind, group = step[0], step[1]
    if kind == "commit":
        # A topic id names one topic (a recreated topic gets a new id), so ids follow topics.
        topic_id = TOPIC_IDS[TOPICS.index(step[2])] if step[4] else None
        return offset_commit(group, step[2], step[3], 100 + i, ts, version=4 if topic_id else 3,
                             topic_id=topic_id)
    if kind == "delete":
        return offset_tombstone(group, step[2], step[3])
    if kind == "generation":
        assigned = [(TOPICS[0], p) for p in range(3) if p % 2 == step[2] % 2]
        return group_metadata(group, i + 1, [member("m1", [TOPICS[0]], assigned)],
                              state_ts=ts - 5)
    return group_tombstone(group)


def _run(batches, compact: bool):
    """Both lanes over the decode stage's output; their group-lane rows, final group states and
    offsets."""
    table, states, events, snapshots = lanes_run(batches, compact)
    entries, activity = table.to_arrow()
    offsets = sorted(zip(*(entries.column(n).to_pylist() for n in (
        "group", "topic", "partition", "offset", "leader_epoch", "metadata", "commit_ts",
        "topic_id"))))
    return ((sorted(map(_normal_event, events)), snapshots, offsets),
            {group: _normal(state.to_state()) for group, state in states.items()})


def _normal(state: dict) -> str:
    """to_state() with its map-like lists in a fixed order (dict insertion order is not state)."""
    return json.dumps({k: sorted(v, key=json.dumps) if isinstance(v, list) else v
                       for k, v in state.items()}, sort_keys=True)


def _normal_event(event: dict) -> str:
    return json.dumps(event, sort_keys=True)


@settings(max_examples=150, deadline=None)
@given(steps=st.lists(op, min_size=1, max_size=40), spread=st.booleans(),
       cuts=st.lists(st.integers(0, 40), max_size=3), replay=st.integers(0, 5),
       splits=st.integers(1, 3))
def test_compaction_changes_no_state_and_no_event(steps, spread, cuts, replay, splits):
    # Positions: one offsets-topic partition per group as Kafka does, or (spread) records of one
    # group over two partitions, which the state stage orders by partition, then offset.
    next_offset: dict[int, int] = {}
    entries = []
    ts = 1_763_000_000_000
    for i, step in enumerate(steps):
        ts += 250 * (i % 3)
        partition = (i % 2) if spread else GROUPS.index(step[1])
        offset = next_offset.get(partition, 0)
        next_offset[partition] = offset + 1
        entries.append((_record(step, i, ts), partition, offset, ts))
    # Micro-batches at `cuts`, each starting up to `replay` records early (a replay after a
    # restart); each micro-batch arrives as `splits` source batches holding whole partitions.
    bounds = sorted({0, len(entries), *[c for c in cuts if c < len(entries)]})
    micro = []
    for lo, hi in zip(bounds, bounds[1:]):
        chunk = entries[max(0, lo - replay):hi]
        by_partition = [[e for e in chunk if e[1] % splits == s] for s in range(splits)]
        micro.append([_source_batch(part) for part in by_partition if part])
    plain_rows, plain_states = _run(micro, compact=False)
    compact_rows, compact_states = _run(micro, compact=True)
    assert compact_rows == plain_rows
    assert compact_states == plain_states


def test_only_superseded_commits_are_dropped():
    ts = 1_763_000_000_000
    entries = [
        (offset_commit("alpha", "orders", 0, 10, ts), 7, 0, ts),
        (offset_commit("alpha", "orders", 1, 20, ts), 7, 1, ts),
        (offset_commit("alpha", "orders", 0, 11, ts + 1), 7, 2, ts + 1),     # supersedes offset 0
        (offset_tombstone("alpha", "orders", 1), 7, 3, ts + 2),               # ends the run
        (offset_commit("alpha", "orders", 1, 21, ts + 3), 7, 4, ts + 3),
        (offset_commit("beta", "orders", 0, 30, ts + 3), 7, 5, ts + 3),       # not alpha's run
        (offset_commit("alpha", "orders", 0, 12, ts + 4), 7, 6, ts + 4),
        (offset_commit("alpha", "orders", 1, 22, ts + 5), 7, 7, ts + 5),      # supersedes offset 4
    ]
    rows, _ = decoded_rows(_source_batch(entries))
    rows = superseded_commits_dropped(rows)
    kept = [(g, o) for g, o in zip(rows.column("group").to_pylist(),
                                   rows.column("o_offset").to_pylist()) if g != MONITOR_KEY]
    assert kept == [("alpha", 1), ("alpha", 2), ("alpha", 3), ("beta", 5), ("alpha", 6),
                    ("alpha", 7)]
