"""The view finds each group-partition's row through a sorted array of packed keys
(streaming/exporter/row_index.py) instead of a dict per group. After any sequence of batches it
must hold exactly what a dict per group would: the same partitions per group, each with its last
commit, across deletions, revivals and ids given out again within one batch."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streaming.exporter.row_index import GROUP_SHIFT, RowIndex, compose
from streaming.exporter.view import MonitorView, ViewSettings
from tests.unit.test_exporter import Clock, snapshot

GROUPS = ("a", "b", "c")
PARTITIONS = (("orders", 0), ("orders", 1), ("audit", 0), ("audit", 7))

operation = st.one_of(
    # a snapshot listing some partitions (the rest are deleted offsets)
    st.tuples(st.just("snapshot"), st.sampled_from(GROUPS),
              st.lists(st.sampled_from(PARTITIONS), unique=True), st.integers(0, 1000)),
    st.tuples(st.just("dead"), st.sampled_from(GROUPS)),
    st.tuples(st.just("commit"), st.sampled_from(GROUPS), st.sampled_from(PARTITIONS),
              st.integers(0, 1000)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(operation, max_size=6), max_size=8))
def test_the_view_holds_what_a_dict_per_group_would(batches) -> None:
    clock = Clock()
    view = MonitorView(ViewSettings(include_unsubscribed=True), clock=clock)
    expected: dict[str, dict[tuple[str, int], int]] = {}
    for n, batch in enumerate(batches):
        clock.now += 1
        snapshots, events = [], []
        for op in batch:
            if op[0] == "snapshot":
                _, group, held, offset = op
                snapshots.append(snapshot(group, [], [(t, p, offset, clock.now) for t, p in held],
                                          state="Empty", updated_s=clock.now))
            elif op[0] == "dead":
                snapshots.append(snapshot(op[1], [], [], state="Dead", updated_s=clock.now))
            else:
                _, group, (topic, partition), offset = op
                events.append({"event": "offset_committed", "group": group, "topic": topic,
                               "partition_id": partition, "committed_offset": offset,
                               "commit_timestamp_ms": int(clock.now * 1000),
                               "timestamp_ms": int(clock.now * 1000), "partition": 0, "offset": n})
        # The reference: snapshots in order (each replaces the group's partitions, Dead clears
        # them), then the events' commits (which add a partition the snapshot did not list).
        for snap in snapshots:
            expected[snap["group"]] = {(o["topic"], o["partition"]): o["offset"]
                                       for o in snap["offsets"]}
        for event in events:
            expected.setdefault(event["group"], {})[(event["topic"], event["partition_id"])] = \
                event["committed_offset"]
        view.update_groups(snapshots)
        view.apply_events(events)
        for group in GROUPS:
            assert view.committed(group) == expected.get(group, {})
        assert len(view.table) == sum(len(held) for held in expected.values())
        assert len(view.index) == len(view.table)


def test_a_dropped_groups_id_given_to_another_group_in_the_same_batch() -> None:
    clock = Clock()
    view = MonitorView(ViewSettings(include_unsubscribed=True), clock=clock)
    view.update_groups([snapshot("old", [], [("orders", 0, 5, clock.now)], state="Empty")])
    view.seeded.add("old")  # served from a look, then dropped when the log brings it
    old_id = view.groups["old"].id
    with view.lock:
        view._unseed("old")
        view.update_groups([snapshot("new", [], [("orders", 1, 9, clock.now)], state="Empty")])
    assert view.groups["new"].id == old_id
    assert view.committed("new") == {("orders", 1): 9} and view.committed("old") == {}
    assert len(view.table) == 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 40), st.integers(0, 3)), max_size=200))
def test_the_index_finds_what_a_dict_holds(steps) -> None:
    index, reference, next_row = RowIndex(), {}, 0
    for add, group, topic in steps:
        if add:
            key = int(compose(np.array([group]), np.array([topic]), np.array([group % 5]))[0])
            if key not in reference:
                index.add(np.array([key]), np.array([next_row]))
                reference[key], next_row = next_row, next_row + 1
        else:
            removed = sorted(index.remove_group(group).tolist())
            assert removed == sorted(row for key, row in reference.items()
                                     if key >> GROUP_SHIFT == group)
            reference = {k: r for k, r in reference.items() if k >> GROUP_SHIFT != group}
        keys = np.array(sorted(reference), dtype=np.int64)
        assert index.lookup(keys).tolist() == [reference[k] for k in keys.tolist()]
        assert len(index) == len(reference)


def test_keys_past_their_bits_are_refused() -> None:
    with pytest.raises(ValueError, match="partitions numbered below"):
        compose(np.array([0]), np.array([0]), np.array([1 << 20]))
