"""The array forms of time lag, status and commit windows (coordinator.lag_arrays) give exactly
what the scalar ones (coordinator.timelag, coordinator.status) give, on random inputs."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator import lag_arrays as la
from coordinator.status import (Commit, CommitWindow, Status, StatusSettings, _history_status,
                                evaluate_partition)
from coordinator.timelag import OffsetTimeline, time_lag

CAPACITY = 5

# A poll: (how far the end offset moves, seconds since the previous poll); a negative move is a
# log that went backwards, a zero gap a poll at the same instant (rejected).
polls = st.lists(st.tuples(st.integers(-3, 40), st.sampled_from([0.0, 0.5, 1.0, 7.25, 30.0])),
                 max_size=14)


def scalar_timeline(steps) -> OffsetTimeline:
    """What MonitorView did per poll before the end offsets were held as columns."""
    timeline, end, when = OffsetTimeline(CAPACITY), 100, 1000.0
    for move, gap in steps:
        end, when = max(0, end + move), when + gap
        if not timeline.add(end, when):
            latest = timeline.latest
            if latest is not None and end < latest[0]:
                timeline.reset()
                timeline.add(end, when)
    return timeline


def array_timelines(histories):
    n = len(histories)
    offsets = np.zeros((n, CAPACITY + 1), dtype=np.int64)
    times = np.zeros((n, CAPACITY + 1))
    counts = np.zeros(n, dtype=np.int64)
    state = [(100, 1000.0)] * n
    for step in range(max((len(h) for h in histories), default=0)):
        # A poll covers the partitions that have a step here; all share its time in the real
        # poller, so rows are grouped by their time.
        by_time: dict[float, list[tuple[int, int]]] = {}
        for i, history in enumerate(histories):
            if step < len(history):
                move, gap = history[step]
                end, when = max(0, state[i][0] + move), state[i][1] + gap
                state[i] = (end, when)
                by_time.setdefault(when, []).append((i, end))
        for when, pairs in by_time.items():
            rows = np.array([i for i, _ in pairs])
            ends = np.array([e for _, e in pairs], dtype=np.int64)
            la.add_samples(rows, ends, when, offsets, times, counts, CAPACITY)
    return offsets, times, counts


@settings(max_examples=150, deadline=None)
@given(st.lists(polls, min_size=1, max_size=6))
def test_timelines_keep_the_samples_the_scalar_table_keeps(histories):
    offsets, times, counts = array_timelines(histories)
    for i, history in enumerate(histories):
        expected = scalar_timeline(history)
        assert counts[i] == len(expected)
        assert list(offsets[i, :counts[i]]) == list(expected.offsets)
        assert list(times[i, :counts[i]]) == list(expected.times)


@settings(max_examples=150, deadline=None)
@given(st.lists(polls, min_size=1, max_size=6), st.data())
def test_time_lag_and_offset_at_equal_the_scalar_ones(histories, data):
    offsets, times, counts = array_timelines(histories)
    tables = [scalar_timeline(h) for h in histories]
    committed = np.array([data.draw(st.integers(0, 400)) for _ in histories], dtype=np.int64)
    now = 1000.0 + data.draw(st.floats(0, 600))
    when = np.array([data.draw(st.floats(990, 1500)) for _ in histories])
    # when each log's first record was written: unknown, or anywhere around the samples
    oldest = np.array([data.draw(st.one_of(st.just(math.nan), st.floats(-2000, 1500)))
                       for _ in histories])
    seconds, method = la.time_lags(offsets, times, counts, committed, now, oldest)
    at, known = la.offsets_at(offsets, times, counts, when)
    for i, table in enumerate(tables):
        expected = time_lag(table, int(committed[i]), now, float(oldest[i]))
        if math.isnan(expected.seconds):
            assert math.isnan(seconds[i])
        else:
            assert seconds[i] == expected.seconds
        assert method[i] == expected.method
        expected_at = table.offset_at(float(when[i]))
        assert (bool(known[i]), int(at[i]) if known[i] else None) == (
            expected_at is not None, expected_at)


commits = st.lists(st.tuples(st.sampled_from([0, 0, 1, 5, -4, 30]), st.sampled_from([0.0, 0.3, 1.0, 2.5, 40.0]),
                             st.one_of(st.none(), st.integers(0, 30))), max_size=16)


@settings(max_examples=150, deadline=None)
@given(st.lists(commits, min_size=1, max_size=6), st.integers(0, 5), st.data())
def test_windows_and_statuses_equal_the_scalar_ones(histories, allowed, data):
    status_settings = StatusSettings(window_size=4, allowed_lag=allowed,
                                     min_distance_s=1.0, min_complete=0.5)
    n, size = len(histories), status_settings.window_size
    w_offsets = np.zeros((n, size), dtype=np.int64)
    w_times = np.zeros((n, size))
    w_lags = np.zeros((n, size), dtype=np.int64)
    lengths = np.zeros(n, dtype=np.int64)
    windows = [CommitWindow(status_settings) for _ in histories]
    # Interleave the rows' commits into batches of one random size, as the job delivers them.
    stream = []
    for i, history in enumerate(histories):
        offset, when = 50, 2000.0
        for move, gap, lag in history:
            offset, when = max(0, offset + move), when + gap
            stream.append((i, offset, when, lag))
    stream.sort(key=lambda c: c[2])
    batch = data.draw(st.integers(1, 8))
    for first in range(0, len(stream), batch):
        chunk = stream[first:first + batch]
        for i, offset, when, lag in chunk:
            windows[i].add(Commit(offset, when, lag))
        la.add_commits(np.array([c[0] for c in chunk]), np.array([c[1] for c in chunk]),
                       np.array([c[2] for c in chunk]),
                       np.array([la.NO_LAG if c[3] is None else c[3] for c in chunk]),
                       w_offsets, w_times, w_lags, lengths, status_settings.min_distance_s)
    for i, window in enumerate(windows):
        assert lengths[i] == len(window)
        assert list(w_offsets[i, :lengths[i]]) == list(window.offsets)
        assert list(w_times[i, :lengths[i]]) == list(window.times)
        assert list(w_lags[i, :lengths[i]]) == list(window.lags)
    history = la.history_statuses(w_offsets, w_lags, lengths, allowed)
    for i, window in enumerate(windows):
        if len(window):
            assert history[i] == _history_status(window, allowed)
    lag = np.array([data.draw(st.integers(0, 10)) for _ in histories], dtype=np.int64)
    lag_known = np.array([data.draw(st.booleans()) for _ in histories])
    recent = np.array([data.draw(st.booleans()) for _ in histories])
    now = 2000.0 + data.draw(st.floats(0, 400))
    statuses = la.partition_statuses(lag, lag_known, w_times, lengths, history, recent, now,
                                     status_settings)
    for i, window in enumerate(windows):
        expected = evaluate_partition(window, int(lag[i]) if lag_known[i] else None, now,
                                      lambda i=i: bool(recent[i]), status_settings)
        assert Status(int(statuses[i])) is expected
