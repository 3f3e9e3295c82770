"""Packing the source's offset ranges into Spark tasks."""
from __future__ import annotations

from streaming.kafka.offset_ranges import OffsetRange, pack_ranges, plan_ranges


def test_small_ranges_share_a_task_and_large_ones_stand_alone():
    ranges = plan_ranges({0: 0, 1: 0, 2: 0, 3: 0}, {0: 3, 1: 4, 2: 25, 3: 2}, 10)
    tasks = pack_ranges(ranges, 10)
    assert tasks == [
        [OffsetRange(0, 0, 3), OffsetRange(1, 0, 4)],
        [OffsetRange(2, 0, 9)], [OffsetRange(2, 9, 18)],
        [OffsetRange(2, 18, 25), OffsetRange(3, 0, 2)],
    ]
    # Nothing lost, nothing doubled, order kept.
    assert [rng for task in tasks for rng in task] == ranges
    assert all(sum(r.size for r in task) <= 10 for task in tasks)


def test_a_small_trigger_still_uses_both_cores():
    ranges = plan_ranges({p: 0 for p in range(50)}, {p: 50 for p in range(50)}, 100_000)
    tasks = pack_ranges(ranges, 100_000, min_tasks=2)
    assert [sum(r.size for r in task) for task in tasks] == [1250, 1250]
    assert pack_ranges([OffsetRange(0, 4, 5), OffsetRange(1, 4, 5)], 2) == [
        [OffsetRange(0, 4, 5)], [OffsetRange(1, 4, 5)]]


def test_a_small_trigger_of_uneven_ranges_is_cut_into_exactly_two_even_tasks():
    sizes = [300 + (p * 37) % 200 for p in range(50)]
    ranges = plan_ranges({p: 0 for p in range(50)}, dict(enumerate(sizes)), 100_000)
    tasks = pack_ranges(ranges, 100_000, min_tasks=2)
    assert len(tasks) == 2
    assert [rng for task in tasks for rng in task] == ranges
    first, second = (sum(r.size for r in task) for task in tasks)
    assert abs(first - second) <= max(sizes)


def test_no_ranges_no_tasks():
    assert pack_ranges([], 100) == []
