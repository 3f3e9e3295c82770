"""LagFrame: every exported group-partition's lag figures at one instant, evaluated as columns.

`evaluate(view, now)` reads the view's `PartitionTable` and `EndsTable` and gives, for each
exported partition of each live group (in exposition order: group name, topic name, partition),
its committed offset and commit time, whether its log end offset is known, its lag, time lag and
method, records lost to retention and status, plus each group's and each group-topic's position,
for the roll-ups. The maths are `coordinator.lag_arrays` (equal to the scalar rules of
`coordinator.lag`, `coordinator.timelag`, `coordinator.status`); callers hold the view's lock.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from coordinator import lag_arrays
from coordinator.lag_arrays import (history_statuses, offsets_at, partition_statuses,
                                    time_lags)
from coordinator.timelag import TimeLagMethod
from streaming.exporter.partition_table import STALE

_CHUNK = 65536  # rows evaluated at a time: bounds the (rows x table size) temporaries


@dataclass(frozen=True)
class LagFrame:
    groups: list[str]          # live groups, sorted by name (those with no partition included)
    rows: np.ndarray           # table rows in exposition order
    group_pos: np.ndarray      # per row: index into `groups`
    topic: np.ndarray          # per row: topic id
    partition: np.ndarray
    offset: np.ndarray
    commit_s: np.ndarray
    known: np.ndarray          # the log end offset is known (else: status NOTFOUND, no lag)
    end: np.ndarray
    lag: np.ndarray
    seconds: np.ndarray
    method: np.ndarray
    lost: np.ndarray
    status: np.ndarray         # Status values (int8)
    order_key: tuple = ()      # changes when the rows or their order do

    def __len__(self) -> int:
        return len(self.rows)


def _refresh_history(table, rows: np.ndarray, allowed_lag: int) -> None:
    stale = rows[table.history[rows] == STALE]
    for first in range(0, len(stale), _CHUNK):
        part = stale[first:first + _CHUNK]
        table.history[part] = history_statuses(table.w_offsets[part], table.w_lags[part],
                                               table.lengths[part], allowed_lag)


def evaluate(view, now: float) -> LagFrame:
    """The view's lag figures at `now`; counts negative lags into the view as the scalar
    evaluation did (once per partition and end offset)."""
    table, ends = view.table, view.ends
    settings = view.settings.status
    order_key, groups, group_pos_of, rows = view.exposition_order()
    n = len(rows)
    offset = table.offset[rows]
    end_rows = ends.rows_of(table.tp[rows])
    counts = np.where(end_rows >= 0, ends.counts[np.maximum(end_rows, 0)], 0)
    known = counts > 0
    end = np.zeros(n, dtype=np.int64)
    seconds = np.full(n, np.nan)
    method = np.zeros(n, dtype=np.int8)
    recent = np.zeros(n, dtype=bool)
    for first in range(0, n, _CHUNK):
        part = slice(first, first + _CHUNK)
        at = np.maximum(end_rows[part], 0)
        o, t, c = ends.offsets[at], ends.times[at], counts[part]
        end[part] = np.take_along_axis(o, np.maximum(c - 1, 0)[:, None], axis=1)[:, 0]
        seconds[part], method[part] = time_lags(o, t, c, offset[part], now, ends.firsts[at])
        then, then_known = offsets_at(o, t, c, np.maximum(now - settings.recent_catch_up_s,
                                                          t[:, 0]))
        recent[part] = then_known & (then <= offset[part])
    lag = np.where(known, np.maximum(end - offset, 0), 0)
    # lag.time_method: where the first unconsumed record was read, its own age.
    read = known & (lag > 0) & (table.first_at[rows] == offset)
    if read.any():
        seconds[read] = np.maximum(0.0, now - table.first_s[rows[read]])
        method[read] = int(TimeLagMethod.EXACT)
    negative = known & (end < offset) & (table.negative_seen_at[rows] != end)
    if negative.any():
        table.negative_seen_at[rows[negative]] = end[negative]
        view.negative_lag_total += int(negative.sum())
    start = np.where(end_rows >= 0, ends.starts[np.maximum(end_rows, 0)], -1)
    lost = np.where(known & (start >= 0) & (offset < start), start - offset, 0)
    _refresh_history(table, rows, settings.allowed_lag)
    status = np.empty(n, dtype=np.int8)
    for first in range(0, n, _CHUNK):
        part, at = slice(first, first + _CHUNK), rows[first:first + _CHUNK]
        status[part] = partition_statuses(lag[part], known[part], table.w_times[at],
                                          table.lengths[at], table.history[at], recent[part],
                                          now, settings)
    return LagFrame(groups=groups, rows=rows, group_pos=group_pos_of, topic=table.topic[rows],
                    partition=table.partition[rows], offset=offset,
                    commit_s=table.commit_s[rows], known=known, end=end, lag=lag,
                    seconds=seconds, method=method, lost=lost, status=status,
                    order_key=order_key)


def segment_starts(*keys: np.ndarray) -> np.ndarray:
    """Where each run of equal (keys...) begins, for arrays sorted by them."""
    if not len(keys[0]):
        return np.zeros(0, dtype=np.int64)
    change = np.zeros(len(keys[0]), dtype=bool)
    change[0] = True
    for key in keys:
        change[1:] |= key[1:] != key[:-1]
    return np.flatnonzero(change)


def group_statuses(frame: LagFrame) -> np.ndarray:
    """`coordinator.status.group_status` per group of the frame (NOTFOUND for a group without
    partitions)."""
    return lag_arrays.group_statuses(frame.status, segment_starts(frame.group_pos),
                                     len(frame.groups), frame.group_pos)
