"""RiskFrame: each row of a LagFrame's consumption rate, catch-up forecast and retention risk,
evaluated as columns from what the view already keeps (commit windows, end-offset timelines,
the first unconsumed records' times) and the topics' retention settings
(`streaming.exporter.topic_configs_poller`). The maths are `coordinator.rates` and
`coordinator.retention`; callers hold the view's lock.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from coordinator.rates import catch_up, forecast_methods, rates_between, window_rates
from coordinator.retention import (BY_SIZE, RetentionConfig, age_growth, risk_seconds,
                                   size_risk_seconds)
from coordinator.timelag import TimeLagMethod
from streaming.exporter.lag_frame import LagFrame

_CHUNK = 65536  # rows evaluated at a time: bounds the (rows x window) temporaries
DEFAULT_RATE_WINDOW_S = 300.0  # lag.rate_window


class TopicRetention:
    """The polled topics' retention settings as the last read gave them
    (`streaming.exporter.topic_configs_poller`) and the rates' window: held by the view, read
    and written under its lock."""

    def __init__(self, rate_window_s: float = DEFAULT_RATE_WINDOW_S) -> None:
        self.configs: dict[str, RetentionConfig] = {}
        self.refused = 0  # topics whose settings this principal may not describe
        self.rate_window_s = rate_window_s
        # size-limited partitions' average record size (tp key -> bytes), from their size on
        # disk over the records they hold at the last read; what size-based risk needs
        self.record_bytes: dict[int, float] = {}
        self.sizes_refused = False  # DescribeLogDirs denied: no size-based risk

    def update_sizes(self, record_bytes: Mapping[int, float], refused: bool) -> bool:
        """Take a size read's averages; whether anything changed."""
        changed = dict(record_bytes) != self.record_bytes or refused != self.sizes_refused
        self.record_bytes, self.sizes_refused = dict(record_bytes), refused
        return changed

    def update(self, configs: Mapping[str, RetentionConfig], refused: int) -> bool:
        """Take a read's answer; whether anything changed."""
        changed = dict(configs) != self.configs or refused != self.refused
        self.configs, self.refused = dict(configs), refused
        return changed


@dataclass(frozen=True)
class RiskFrame:
    consume: np.ndarray         # records/s, NaN: unknown
    catch_up: np.ndarray        # seconds, inf: never, NaN: unknown or end offset unknown
    catch_up_method: np.ndarray  # RateMethod values
    risk: np.ndarray            # seconds, inf: not at this pace, NaN: no figure
    risk_method: np.ndarray     # TimeLagMethod of the first unconsumed record's time, or
                                # BY_SIZE where retention.bytes comes first


def topic_retention_s(view) -> np.ndarray:
    """Per topic id: its retention.ms in seconds where records are deleted by age, NaN where
    not (compacted only, no limit) or not known (not read, refused)."""
    ids = view.topics.ids
    out = np.full(max(len(view.topics.names), 1), np.nan)
    for name, config in view.retention.configs.items():
        at = ids.get(name)
        if at is not None and config.time_limited:
            out[at] = config.retention_ms / 1000.0
    return out


def topic_retention_bytes(view) -> np.ndarray:
    """Per topic id: its retention.bytes where records are deleted by size, NaN where not."""
    ids = view.topics.ids
    out = np.full(max(len(view.topics.names), 1), np.nan)
    for name, config in view.retention.configs.items():
        at = ids.get(name)
        if at is not None and config.size_limited:
            out[at] = float(config.retention_bytes)
    return out


def size_first(by_age: np.ndarray, by_size: np.ndarray) -> np.ndarray:
    """Where retention by size deletes before retention by time (NaN: that one never does):
    the earlier of the two is the risk."""
    return ~np.isnan(by_size) & (np.isnan(by_age) | (by_size < by_age))


def partition_record_bytes(view, keys: np.ndarray) -> np.ndarray:
    """Per tp key: the partition's average record size, NaN where not read."""
    known = view.retention.record_bytes
    out = np.full(len(keys), np.nan)
    if not known:
        return out
    held = np.fromiter(known, dtype=np.int64, count=len(known))
    values = np.fromiter(known.values(), dtype=np.float64, count=len(known))
    order = np.argsort(held)
    held, values = held[order], values[order]
    at = np.minimum(np.searchsorted(held, keys), len(held) - 1)
    found = held[at] == keys
    out[found] = values[at[found]]
    return out


def _rates(view, frame: LagFrame, end_rows: np.ndarray, now: float, window_s: float):
    """(consume rate, its method, produce rate over the same span, its method) per row."""
    table, ends = view.table, view.ends
    n = len(frame)
    consume, produce = np.full(n, np.nan), np.full(n, np.nan)
    c_method, p_method = np.zeros(n, np.int8), np.zeros(n, np.int8)
    # A partition's own rate over the window is the same for every group that reads it: taken
    # once a partition (at 10^5 groups of 10 on 1,000 partitions, once for a thousand rows).
    polled, of_row = np.unique(end_rows, return_inverse=True)
    at = np.maximum(polled, 0)
    o, t = ends.offsets[at], ends.times[at]
    c = np.where(polled >= 0, ends.counts[at], 0)
    last = np.maximum(c - 1, 0)[:, None]
    latest = np.take_along_axis(o, last, axis=1)[:, 0]
    latest_t = np.take_along_axis(t, last, axis=1)[:, 0]
    own, own_method, _ = window_rates(o, t, c, latest, latest_t, window_s)
    for first in range(0, n, _CHUNK):
        part, rows = slice(first, first + _CHUNK), frame.rows[first:first + _CHUNK]
        consume[part], c_method[part], since = window_rates(
            table.w_offsets[rows], table.w_times[rows], table.lengths[rows], frame.offset[part],
            now, window_s)
        mine = of_row[part]
        # the producers over the consumer's own span: the two rates compare the same period
        same = rates_between(o[mine], t[mine], c[mine], frame.end[part], since, latest_t[mine])
        produce[part] = np.where(np.isnan(same), own[mine], same)
        p_method[part] = np.where(np.isnan(same), own_method[mine], c_method[part])
    return consume, c_method, produce, p_method


def _first_unconsumed_age(view, frame: LagFrame, end_rows: np.ndarray, now: float):
    """(age of each row's first unconsumed record still in the log, TimeLagMethod)."""
    ends = view.ends
    at = np.maximum(end_rows, 0)
    start = np.where(end_rows >= 0, ends.starts[at], -1)
    log_first = np.where(end_rows >= 0, ends.firsts[at], np.nan)
    age, method = frame.seconds.copy(), frame.method.astype(np.int8, copy=True)
    # at or below the log start, that record is the log's first: its time was asked for
    at_start = (start >= 0) & (frame.offset <= start) & ~np.isnan(log_first)
    age[at_start] = now - log_first[at_start]
    method[at_start] = int(TimeLagMethod.EXACT)
    # an unknown age is a lower bound; the log's first record bounds it from above, and the
    # forecast takes that bound, so that it errs early
    bound = ~at_start & (method == int(TimeLagMethod.UNKNOWN)) & ~np.isnan(log_first)
    age[bound] = now - log_first[bound]
    return age, method


def evaluate_risk(view, frame: LagFrame, now: float) -> RiskFrame:
    """The frame's rows' rates, forecasts and risks at `now`."""
    window_s = view.retention.rate_window_s
    end_rows = view.ends.rows_of(view.table.tp[frame.rows])
    consume, c_method, produce, p_method = _rates(view, frame, end_rows, now, window_s)
    lag = np.where(frame.known, frame.lag, 0)
    forecast = np.where(frame.known, catch_up(lag, consume, produce), np.nan)
    age, age_method = _first_unconsumed_age(view, frame, end_rows, now)
    retention = topic_retention_s(view)[frame.topic]
    risk = risk_seconds(age, retention, age_growth(consume, produce))
    behind = frame.known & (frame.lag > 0)
    risk = np.where(behind & ~np.isnan(retention) & ~np.isnan(age), risk, np.nan)
    by_bytes = topic_retention_bytes(view)[frame.topic]
    size = np.where(behind & ~np.isnan(by_bytes), size_risk_seconds(
        lag, partition_record_bytes(view, view.table.tp[frame.rows]), by_bytes, consume,
        produce), np.nan)
    by_size = size_first(risk, size)
    return RiskFrame(consume=consume, catch_up=forecast,
                     catch_up_method=forecast_methods(lag, c_method, p_method),
                     risk=np.where(by_size, size, risk),
                     risk_method=np.where(by_size, BY_SIZE, age_method).astype(np.int8))
