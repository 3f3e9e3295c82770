"""Time lag, partition status and commit windows for many partitions at once, on numpy arrays.

These are the array forms of `coordinator.timelag` and `coordinator.status`: same rules, same
floating-point operations in the same order, so every figure equals the scalar function's
(tests/unit/test_lag_arrays.py checks it on random inputs). The exporter holds a million
group-partitions; one Python call per partition per evaluation costs seconds, a pass over
columns costs tens of milliseconds.

Shapes:
- a set of *timelines* (log end offset samples of `OffsetTimeline`): `offsets` int64 and
  `times` float64 of shape (n, capacity), left-aligned, `counts` the samples each row holds;
- a set of *windows* (`CommitWindow`): `offsets` int64, `times` float64, `lags` int64 (-1:
  unknown) of shape (n, window_size), oldest first, left-aligned, `lengths` per row.
Rows passed to the evaluation functions are aligned with each other (row i of the timelines is
the log the partition of row i of the windows commits to), usually by fancy indexing.
"""
from __future__ import annotations

import numpy as np

from coordinator.status import GROUP_LEVEL, Status, StatusSettings
from coordinator.timelag import TimeLagMethod

NO_LAG = -1  # a window's lag when no end offset was known at commit time

_OK, _NOTFOUND, _STOP = int(Status.OK), int(Status.NOTFOUND), int(Status.STOP)


def _take(matrix: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """matrix[i, columns[i]] for every row i (columns clipped into range: callers mask)."""
    columns = np.clip(columns, 0, matrix.shape[1] - 1)
    return np.take_along_axis(matrix, columns[:, None], axis=1)[:, 0]


def _take_rows(matrix: np.ndarray, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """matrix[rows[i], columns[i]] (columns clipped into range: callers mask): `_take` of
    matrix[rows] without copying those rows whole first."""
    return matrix[rows, np.clip(columns, 0, matrix.shape[1] - 1)]


def _count_below(matrix: np.ndarray, counts: np.ndarray, value: np.ndarray) -> np.ndarray:
    """bisect_left over each row's valid part: how many of its first counts[i] entries are
    below value[i] (rows are sorted)."""
    valid = np.arange(matrix.shape[1])[None, :] < counts[:, None]
    return ((matrix < value[:, None]) & valid).sum(axis=1)


def offsets_at(offsets: np.ndarray, times: np.ndarray, counts: np.ndarray,
               when: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`OffsetTimeline.offset_at` per row: (the log end offset at when[i], whether it is known:
    False for an empty timeline or a time before its first sample)."""
    last = counts - 1
    known = (counts > 0) & (when >= times[:, 0])
    last_t = _take(times, last)
    last_o = _take(offsets, last)
    right = _count_below(times, counts, when)
    t_r, o_r = _take(times, right), _take(offsets, right)
    t_l, o_l = _take(times, right - 1), _take(offsets, right - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        between = o_l + np.trunc((o_r - o_l) * (when - t_l) / (t_r - t_l)).astype(np.int64)
    value = np.where(when >= last_t, last_o, np.where(t_r == when, o_r, between))
    return np.where(known, value, 0), known


def _interpolate(o_l, t_l, o_r, t_r, target):
    return t_r - (o_r - target) * (t_r - t_l) / (o_r - o_l)


def time_lags(offsets: np.ndarray, times: np.ndarray, counts: np.ndarray,
              committed: np.ndarray, now_s: float, oldest: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
    """`coordinator.timelag.time_lag` per row: (seconds, TimeLagMethod as int8). `oldest`:
    when each row's first record still in the log was written (NaN, or None for all: unknown)."""
    n = len(committed)
    last = counts - 1
    last_o, last_t = _take(offsets, last), _take(times, last)
    first_o, first_t = offsets[:, 0], times[:, 0]
    target = committed + 1
    right = _count_below(offsets, counts, target)
    o_r, t_r = _take(offsets, right), _take(times, right)
    o_l, t_l = _take(offsets, right - 1), _take(times, right - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        inside = _interpolate(o_l, t_l, o_r, t_r, target)
        beyond = _interpolate(first_o, first_t, last_o, last_t, target)
    extrapolate = (right == 0) & (last_o - first_o > 0)
    if oldest is not None:
        extrapolate &= ~(beyond < oldest)  # older than the log itself: only the lower bound
    produced = np.where(right > 0, inside, np.where(extrapolate, beyond, first_t))
    method = np.where(right > 0, int(TimeLagMethod.INTERPOLATED),
                      np.where(extrapolate, int(TimeLagMethod.EXTRAPOLATED),
                               int(TimeLagMethod.UNKNOWN)))
    short = counts < 2  # one sample: the record is at least as old as it
    produced = np.where(short, first_t, produced)
    method = np.where(short, int(TimeLagMethod.UNKNOWN), method)
    seconds = np.maximum(0.0, now_s - produced)
    caught_up = (counts > 0) & (committed >= last_o)
    seconds = np.where(caught_up, 0.0, seconds)
    method = np.where(caught_up, int(TimeLagMethod.CAUGHT_UP), method)
    empty = counts == 0
    seconds = np.where(empty, np.nan, seconds)
    method = np.where(empty, int(TimeLagMethod.UNKNOWN), method)
    return seconds.astype(np.float64, copy=False), method.astype(np.int8).reshape(n)


def history_statuses(offsets: np.ndarray, lags: np.ndarray, lengths: np.ndarray,
                     allowed_lag: int) -> np.ndarray:
    """Rules 5 and 6 of docs/status-rules.md per window (what the commits alone say), as the
    Status values of `coordinator.status` (int8)."""
    n, size = offsets.shape
    # Rule 5: a rewind not recovered from.
    highest = offsets[:, 0].copy()
    pending = np.zeros(n, dtype=np.int64)
    has_pending = np.zeros(n, dtype=bool)
    for j in range(1, size):
        active = j < lengths
        offset = offsets[:, j]
        has_pending &= ~(active & (offset >= pending))
        start = active & (offset < highest) & ~has_pending
        pending = np.where(start, highest, pending)
        has_pending |= start
        highest = np.where(active & (offset > highest), offset, highest)
    # Rule 6: over the commits whose lag is known, unless one of them was caught up.
    caught_up = np.zeros(n, dtype=bool)
    known = np.zeros(n, dtype=np.int64)
    first_offset = np.zeros(n, dtype=np.int64)
    previous = np.zeros(n, dtype=np.int64)
    moved = np.zeros(n, dtype=bool)
    decreased = np.zeros(n, dtype=bool)
    for j in range(size):
        lag, offset = lags[:, j], offsets[:, j]
        live = (j < lengths) & (lag != NO_LAG) & ~caught_up
        caught_up |= live & (lag <= allowed_lag)
        live &= ~caught_up
        seen = live & (known > 0)
        moved |= seen & (offset != first_offset)
        decreased |= seen & (lag < previous)
        first_offset = np.where(live & (known == 0), offset, first_offset)
        previous = np.where(live, lag, previous)
        known += live
    status = np.full(n, _OK, dtype=np.int8)
    judged = ~caught_up & (known >= 2)
    status[judged & ~decreased] = int(Status.WARN)
    status[judged & ~moved] = int(Status.STALL)
    status[has_pending & (lengths > 0)] = int(Status.REWIND)
    return status


def partition_statuses(lag: np.ndarray, lag_known: np.ndarray, window_times: np.ndarray,
                       lengths: np.ndarray, history: np.ndarray, caught_up_recently: np.ndarray,
                       now_s: float, settings: StatusSettings) -> np.ndarray:
    """`coordinator.status.evaluate_partition` per row (int8). `history` is
    `history_statuses` of the windows; `caught_up_recently` whether the log end was at or below
    the committed offset `recent_catch_up_s` ago (`recently_caught_up`)."""
    first_t = window_times[:, 0]
    last_t = _take(window_times, lengths - 1)
    stopped = ((now_s - last_t) > (last_t - first_t)) & ~caught_up_recently
    status = np.where(stopped, _STOP, history).astype(np.int8)
    incomplete = (lengths == 0) | (lengths / settings.window_size < settings.min_complete)
    status[incomplete | (lag <= settings.allowed_lag)] = _OK
    status[~lag_known] = _NOTFOUND
    return status


def rounds(rows: np.ndarray) -> list[np.ndarray]:
    """Positions of `rows` split into rounds in which no row repeats: round k holds each row's
    (k+1)-th occurrence, so applying the rounds in turn applies each row's items in order."""
    if not len(rows):
        return []
    order = np.argsort(rows, kind="stable")
    sorted_rows = rows[order]
    run_start = np.r_[0, np.flatnonzero(sorted_rows[1:] != sorted_rows[:-1]) + 1]
    starts = np.repeat(run_start, np.diff(np.r_[run_start, len(rows)]))
    rank = np.empty(len(rows), dtype=np.int64)
    rank[order] = np.arange(len(rows)) - starts
    if not rank.any():
        return [np.arange(len(rows))]
    return [np.flatnonzero(rank == k) for k in range(int(rank.max()) + 1)]


def add_commits(rows: np.ndarray, offsets: np.ndarray, times: np.ndarray, lags: np.ndarray,
                w_offsets: np.ndarray, w_times: np.ndarray, w_lags: np.ndarray,
                lengths: np.ndarray, min_distance_s: float) -> None:
    """`CommitWindow.add` for commits (rows[i] gets (offsets[i], times[i], lags[i])), in
    order, updating the window arrays in place. A row may appear several times: its commits
    are applied in the order given, one round per repetition."""
    size = w_offsets.shape[1]
    for pick in rounds(rows):
        r, o, t, lag = rows[pick], offsets[pick], times[pick], lags[pick]
        length = lengths[r]
        last_t = _take_rows(w_times, r, length - 1)
        has = length > 0
        keep = ~(has & (t < last_t))
        merge = keep & has & (t - last_t < min_distance_s)
        m = r[merge]
        w_offsets[m, lengths[m] - 1] = o[merge]
        w_lags[m, lengths[m] - 1] = lag[merge]
        append = keep & ~merge
        full = append & (length == size)
        f = r[full]
        w_offsets[f, :-1] = w_offsets[f, 1:]
        w_times[f, :-1] = w_times[f, 1:]
        w_lags[f, :-1] = w_lags[f, 1:]
        lengths[f] -= 1
        a = r[append]
        at = lengths[a]
        w_offsets[a, at] = o[append]
        w_times[a, at] = t[append]
        w_lags[a, at] = lag[append]
        lengths[a] += 1


def add_samples(rows: np.ndarray, ends: np.ndarray, observed_s: float, offsets: np.ndarray,
                times: np.ndarray, counts: np.ndarray, capacity: int) -> None:
    """`OffsetTimeline.add` of (ends[i], observed_s) to timeline rows[i] (distinct rows), in
    place; `offsets` and `times` have capacity + 1 columns (room to append before dropping).
    A log that went backwards (a topic re-created or truncated) starts its timeline again: its
    old samples would lie."""
    c = counts[rows]
    has = c > 0
    last_o = _take_rows(offsets, rows, c - 1)
    last_t = _take_rows(times, rows, c - 1)
    previous_o = _take_rows(offsets, rows, c - 2)
    backwards = has & (ends < last_o)
    reject = has & ~backwards & (observed_s <= last_t)
    flat = (has & ~backwards & ~reject & (c >= 2) & (ends == last_o)
            & (last_o == previous_o))
    f = rows[flat]
    times[f, counts[f] - 1] = observed_s
    counts[rows[backwards]] = 0
    append = ~reject & ~flat
    a = rows[append]
    at = counts[a]
    offsets[a, at] = ends[append]
    times[a, at] = observed_s
    counts[a] += 1
    over = a[counts[a] > capacity]
    if len(over):
        o, t = offsets[over], times[over]
        o_l, o_m, o_r = o[:, :-2], o[:, 1:-1], o[:, 2:]
        t_l, t_m, t_r = t[:, :-2], t[:, 1:-1], t[:, 2:]
        with np.errstate(divide="ignore", invalid="ignore"):
            error = np.where(o_r == o_l, 0.0,
                             np.abs(t_m - _interpolate(o_l, t_l, o_r, t_r, o_m)))
        drop = np.argmin(error, axis=1) + 1
        column = np.arange(capacity)[None, :]
        source = column + (column >= drop[:, None])
        offsets[over, :capacity] = np.take_along_axis(o, source, axis=1)
        times[over, :capacity] = np.take_along_axis(t, source, axis=1)
        counts[over] = capacity


# `coordinator.status.GROUP_LEVEL` as a table indexed by status value.
_AS_GROUP = np.array([int(GROUP_LEVEL.get(s, s)) for s in Status], dtype=np.int8)


def group_statuses(statuses: np.ndarray, starts: np.ndarray, groups: int,
                   positions: np.ndarray) -> np.ndarray:
    """`coordinator.status.group_status` per group: `statuses` sorted by group, each group's
    run beginning at `starts`, its group's index `positions[starts]`; NOTFOUND for a group
    with no partition."""
    worst = np.zeros(groups, dtype=np.int8)
    if len(starts):
        worst[positions[starts]] = np.maximum.reduceat(_AS_GROUP[statuses], starts)
    return worst
