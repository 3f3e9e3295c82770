"""Offset lag and time lag: interpolation, extrapolation, flat stretches, bounded tables."""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.lag import messages_lost, partition_lag, roll_up
from coordinator.timelag import OffsetTimeline, TimeLagMethod, time_lag


def timeline(*samples: tuple[int, float], capacity: int = 30) -> OffsetTimeline:
    table = OffsetTimeline(capacity)
    for offset, when in samples:
        assert table.add(offset, when)
    return table


# ---- offset lag -------------------------------------------------------------------------------

def test_lag_is_end_minus_committed():
    assert partition_lag(120, 100) == (20, False)
    assert partition_lag(100, 100) == (0, False)


def test_negative_lag_is_clamped_and_flagged():
    assert partition_lag(100, 130) == (0, True)


def test_messages_lost_below_log_start():
    assert messages_lost(500, 420) == 80
    assert messages_lost(500, 500) == 0
    assert messages_lost(None, 3) == 0


def test_roll_up_sums_and_maxima_ignore_unknown_time_lag():
    rollup = roll_up([("a", 5, 2.0), ("a", 7, float("nan")), ("b", 1, 9.5)])
    assert rollup.total == 13
    assert rollup.by_topic == {"a": 12, "b": 1}
    assert rollup.max_lag == 7
    assert rollup.max_lag_seconds == 9.5
    assert rollup.max_by_topic == {"a": 7, "b": 1}
    assert rollup.max_seconds_by_topic == {"a": 2.0, "b": 9.5}


def test_a_topic_without_a_known_time_lag_has_no_time_lag_maximum():
    rollup = roll_up([("a", 3, float("nan")), ("b", 0, 0.0)])
    assert rollup.max_seconds_by_topic == {"b": 0.0}
    assert rollup.max_by_topic == {"a": 3, "b": 0}


# ---- time lag ---------------------------------------------------------------------------------

def test_caught_up_is_zero():
    table = timeline((100, 10.0), (200, 20.0))
    assert time_lag(table, 200, now_s=50.0) == (0.0, TimeLagMethod.CAUGHT_UP)
    assert time_lag(table, 250, now_s=50.0) == (0.0, TimeLagMethod.CAUGHT_UP)


def test_interpolates_produce_time_of_first_unconsumed_record():
    # End went 100 -> 200 between t=10 and t=20: record 149 was written when the end reached 150.
    table = timeline((100, 10.0), (200, 20.0))
    seconds, method = time_lag(table, 149, now_s=30.0)
    assert method is TimeLagMethod.INTERPOLATED
    assert seconds == pytest.approx(30.0 - 15.0)


def test_interpolation_uses_the_segment_after_a_flat_stretch():
    # Idle from t=0 to t=1000 at end 100, then one record at ~t=1005. Record 100 (the first
    # unconsumed one for committed=100) was produced between 1000 and 1005, not at t=0.
    table = timeline((100, 0.0), (100, 500.0), (100, 1000.0), (101, 1005.0))
    assert table.samples() == [(100, 0.0), (100, 1000.0), (101, 1005.0)]
    seconds, method = time_lag(table, 100, now_s=1010.0)
    assert method is TimeLagMethod.INTERPOLATED
    assert seconds == pytest.approx(5.0)


def test_extrapolates_along_the_widest_trend_when_older_than_the_table():
    table = timeline((1000, 100.0), (1500, 110.0), (2000, 200.0))
    # Widest trend: 1000 offsets in 100 s. Offset 500 -> end reached 501 at 100 - 499 * 0.1.
    seconds, method = time_lag(table, 500, now_s=200.0)
    assert method is TimeLagMethod.EXTRAPOLATED
    assert seconds == pytest.approx(200.0 - (100.0 - 49.9))


def test_an_extrapolation_older_than_the_log_gives_the_lower_bound():
    """The issue's case: records written fast before the table began, slowly after: the slow
    trend puts the record long before the log's first record was written. Not so: all that is
    known is that it existed at the first sample."""
    table = timeline((1000, 100.0), (1100, 200.0))
    # extrapolated: offset 201 reached at 100 - 799 * 1.0 = -699, 899 s before now
    assert time_lag(table, 200, now_s=200.0) == pytest.approx((899.0, TimeLagMethod.EXTRAPOLATED))
    # the log's first record was written at t=10: no record is older than 190 s
    assert time_lag(table, 200, now_s=200.0, oldest_s=10.0) == (100.0, TimeLagMethod.UNKNOWN)
    # an extrapolation within the log's age stands
    assert time_lag(table, 949, now_s=200.0, oldest_s=10.0) == pytest.approx(
        (150.0, TimeLagMethod.EXTRAPOLATED))
    # interpolations are between two observations: the bound never changes them
    assert time_lag(table, 1049, now_s=200.0, oldest_s=150.0) == pytest.approx(
        (50.0, TimeLagMethod.INTERPOLATED))


def test_too_few_samples_gives_a_lower_bound_flagged_unknown():
    table = timeline((1000, 100.0))
    assert time_lag(table, 10, now_s=130.0) == (30.0, TimeLagMethod.UNKNOWN)


def test_never_moving_table_gives_a_lower_bound_flagged_unknown():
    table = timeline((1000, 100.0), (1000, 200.0))
    assert time_lag(table, 10, now_s=260.0) == (160.0, TimeLagMethod.UNKNOWN)


def test_no_samples_is_unknown_nan():
    seconds, method = time_lag(OffsetTimeline(), 10, now_s=1.0)
    assert math.isnan(seconds) and method is TimeLagMethod.UNKNOWN
    seconds, method = time_lag(None, 10, now_s=1.0)
    assert math.isnan(seconds) and method is TimeLagMethod.UNKNOWN


def test_rejects_out_of_order_and_decreasing_samples():
    table = timeline((100, 10.0))
    assert not table.add(120, 10.0)
    assert not table.add(90, 20.0)
    assert table.samples() == [(100, 10.0)]


def test_flat_stretch_keeps_first_and_latest_sample_only():
    table = timeline((5, 0.0), (10, 1.0))
    for second in range(2, 500):
        table.add(10, float(second))
    assert table.samples() == [(5, 0.0), (10, 1.0), (10, 499.0)]


def test_idle_periods_do_not_push_real_samples_out():
    table = OffsetTimeline(capacity=5)
    for step in range(3):
        table.add(step * 100, float(step))
    for second in range(3, 10_000):  # a very long idle period
        table.add(200, float(second))
    assert table.samples() == [(0, 0.0), (100, 1.0), (200, 2.0), (200, 9999.0)]


def test_full_table_drops_the_sample_that_changes_estimates_least():
    table = OffsetTimeline(capacity=4)
    # Constant rate except a burst: (300, 2.5) is off the line and must survive.
    for offset, when in [(0, 0.0), (100, 1.0), (300, 2.5), (400, 3.5), (500, 4.5)]:
        table.add(offset, when)
    assert len(table) == 4
    assert (300, 2.5) in table.samples()
    assert table.samples()[0] == (0, 0.0) and table.samples()[-1] == (500, 4.5)


def test_offset_at_interpolates_and_bounds():
    table = timeline((100, 10.0), (200, 20.0))
    assert table.offset_at(5.0) is None
    assert table.offset_at(10.0) == 100
    assert table.offset_at(15.0) == 150
    assert table.offset_at(99.0) == 200


def _walk(steps, capacity):
    full = []
    table = OffsetTimeline(capacity)
    offset, now = 0, 0.0
    for increment, dt in steps:
        offset += increment
        now += dt
        full.append((offset, now))
        table.add(offset, now)
    return full, table


STEPS = st.lists(st.tuples(st.integers(0, 50), st.floats(0.01, 10.0)), min_size=2, max_size=80)


@settings(max_examples=150, deadline=None)
@given(STEPS, st.data())
def test_unevicted_table_estimate_lies_between_the_samples_around_the_record(steps, data):
    """Flat compression loses nothing: the estimated produce time of the record at the committed
    offset lies between the last sample without it and the first sample with it."""
    full, table = _walk(steps, capacity=len(steps) + 3)
    end = full[-1][0]
    if end <= full[0][0]:
        return
    committed = data.draw(st.integers(full[0][0], end - 1))
    seconds, method = time_lag(table, committed, now_s=full[-1][1])
    assert method is TimeLagMethod.INTERPOLATED
    produced = full[-1][1] - seconds
    reached = min(t for o, t in full if o > committed)
    before = max(t for o, t in full if o <= committed)
    assert before - 1e-6 <= produced <= reached + 1e-6


@settings(max_examples=150, deadline=None)
@given(STEPS, st.integers(3, 10))
def test_bounded_table_stays_bounded_and_monotonic(steps, capacity):
    """With eviction, the table keeps its size, its first and newest samples, and time lag never
    grows when the committed offset moves forward."""
    full, table = _walk(steps, capacity)
    assert len(table) <= capacity
    assert table.samples()[0] == full[0]
    assert table.offsets[-1] == full[-1][0]
    now = full[-1][1] + 1.0
    lags = [time_lag(table, committed, now).seconds for committed in range(0, full[-1][0] + 1)]
    assert all(a >= b - 1e-9 for a, b in zip(lags, lags[1:]))
