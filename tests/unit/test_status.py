"""Burrow-style status rules on hand-built commit windows, including the false alarms Burrow's
users reported (slow topics, idle topics, recovered rewinds)."""
from __future__ import annotations

import pytest

from coordinator.status import (Commit, CommitWindow, Status, StatusSettings, evaluate_partition,
                                group_status)

SETTINGS = StatusSettings(window_size=5, min_complete=0.6, allowed_lag=0, min_distance_s=1.0)


def window(*commits: tuple[int, float, int | None], settings: StatusSettings = SETTINGS):
    w = CommitWindow(settings)
    for offset, when, lag in commits:
        w.add(Commit(offset, when, lag))
    return w


def status(w, current_lag, now, caught_up=False, settings=SETTINGS):
    return evaluate_partition(w, current_lag, now, lambda: caught_up, settings)


STEADY = [(100, 10.0, 5), (200, 20.0, 5), (300, 30.0, 4), (400, 40.0, 6), (500, 50.0, 3)]


def test_unknown_end_offset_is_notfound():
    assert status(window(*STEADY), None, 55.0) is Status.NOTFOUND


def test_incomplete_window_is_ok():
    assert status(window((100, 10.0, 50), (100, 20.0, 60)), 70, 1000.0) is Status.OK


def test_caught_up_now_is_ok_whatever_the_history():
    stalled = [(100, t, 50) for t in (10.0, 20.0, 30.0, 40.0, 50.0)]
    assert status(window(*stalled), 0, 1000.0) is Status.OK


def test_allowed_lag_counts_as_caught_up():
    settings = StatusSettings(window_size=5, min_complete=0.6, allowed_lag=10)
    w = window(*[(100, t, 50) for t in (10.0, 20.0, 30.0)], settings=settings)
    assert status(w, 10, 35.0, settings=settings) is Status.OK
    assert status(w, 11, 35.0, settings=settings) is Status.STALL


def test_steady_consumer_with_lag_that_sometimes_decreases_is_ok():
    assert status(window(*STEADY), 4, 55.0) is Status.OK


def test_stop_when_silent_longer_than_the_window_span():
    # Window spans 40 s; last commit at 50 s; now 91 s is 41 s later.
    assert status(window(*STEADY), 4, 91.0) is Status.STOP
    assert status(window(*STEADY), 4, 89.0) is Status.OK


def test_slow_topic_recently_caught_up_is_not_stop():
    # A consumer of a slow topic commits only when data arrives: hours of silence, then one new
    # record makes the lag 1. The end offset was at the committed offset moments ago: not STOP.
    slow = [(10, 0.0, 0), (11, 3600.0, 0), (12, 7200.0, 0), (13, 10800.0, 0), (14, 14400.0, 0)]
    assert status(window(*slow), 1, 40000.0, caught_up=True) is Status.OK
    assert status(window(*slow), 1, 40000.0, caught_up=False) is Status.STOP


def test_idle_topic_with_repeated_commits_at_the_end_is_ok():
    idle = [(500, t, 0) for t in (10.0, 20.0, 30.0, 40.0, 50.0)]
    assert status(window(*idle), 0, 55.0) is Status.OK
    # Long after the last commit, still caught up: a stopped consumer with nothing to read is OK.
    assert status(window(*idle), 0, 10_000.0) is Status.OK


def test_stall_when_committing_the_same_offset_with_lag():
    stalled = [(100, t, lag) for t, lag in ((10.0, 5), (20.0, 8), (30.0, 12), (40.0, 20))]
    assert status(window(*stalled), 25, 45.0) is Status.STALL


def test_warn_when_lag_never_decreases():
    growing = [(100, 10.0, 5), (150, 20.0, 8), (180, 30.0, 8), (200, 40.0, 20)]
    assert status(window(*growing), 25, 45.0) is Status.WARN


def test_a_single_caught_up_commit_in_the_window_clears_warn_and_stall():
    growing = [(100, 10.0, 0), (150, 20.0, 8), (180, 30.0, 9), (200, 40.0, 20)]
    assert status(window(*growing), 25, 45.0) is Status.OK


def test_rewind_that_has_not_recovered():
    rewound = [(100, 10.0, 5), (200, 20.0, 5), (150, 30.0, 60), (170, 40.0, 40)]
    assert status(window(*rewound), 30, 45.0) is Status.REWIND


def test_recovered_rewind_is_forgiven():
    # A rebalance hand-over re-commits an older offset, then the new owner moves past it.
    recovered = [(100, 10.0, 5), (200, 20.0, 5), (150, 30.0, 60), (210, 40.0, 4), (300, 50.0, 3)]
    assert status(window(*recovered), 3, 55.0) is Status.OK


def test_commits_with_unknown_lag_do_not_decide_warn_or_stall():
    replayed = [(100, 10.0, None), (100, 20.0, None), (100, 30.0, 7)]
    assert status(window(*replayed), 9, 35.0) is Status.OK


def test_close_commits_replace_each_other_and_keep_the_older_time():
    w = window((100, 10.0, 5), (110, 10.4, 4), (120, 10.9, 3))
    assert w.commits == (Commit(120, 10.0, 3),)


def test_window_keeps_only_the_last_commits_and_ignores_older_ones():
    w = window(*[(i * 10, float(i), i) for i in range(1, 9)])
    assert [c.offset for c in w.commits] == [40, 50, 60, 70, 80]
    w.add(Commit(999, 2.0, 0))  # older than the window's last commit: replayed input
    assert [c.offset for c in w.commits] == [40, 50, 60, 70, 80]


def test_group_status_is_worst_with_partition_errors_as_err():
    assert group_status([Status.OK, Status.WARN]) is Status.WARN
    assert group_status([Status.OK, Status.STOP]) is Status.ERR
    assert group_status([Status.STALL, Status.WARN]) is Status.ERR
    assert group_status([Status.REWIND]) is Status.ERR
    assert group_status([Status.NOTFOUND, Status.OK]) is Status.OK
    assert group_status([]) is Status.NOTFOUND


@pytest.mark.parametrize("kwargs", [dict(window_size=0), dict(min_complete=1.5),
                                    dict(allowed_lag=-1)])
def test_bad_settings_are_rejected(kwargs):
    with pytest.raises(ValueError):
        StatusSettings(**kwargs)
