"""Rates over a window, from samples the view already keeps: how fast a group consumes (its
commit window, `coordinator.status.CommitWindow`) and how fast a partition is produced to (its
end-offset timeline, `coordinator.timelag.OffsetTimeline`), and the catch-up forecast they give.

No new history is kept for them: a rate is the offset now minus the offset the samples give
for `window_s` ago (interpolated between the two samples around it), over `window_s`. Where the
samples begin later than that, over the time they cover (PARTIAL); with nothing to measure over,
unknown (NaN). The method is served beside the figures, as the time-lag figures' is.

Array forms, a row a group-partition (or a topic partition); pure numpy.
"""
from __future__ import annotations

import numpy as np

from coordinator.lag_arrays import offsets_at
from coordinator.rate_methods import RateMethod

NEVER = np.inf  # a forecast that never comes (consumers slower than producers)


def window_start(times: np.ndarray, counts: np.ndarray, until: np.ndarray | float,
                 window_s: float) -> np.ndarray:
    """Per row: where its window begins, `window_s` before `until` or at its first sample if
    that is later (inf for a row without samples)."""
    first_t = np.where(counts > 0, times[:, 0], np.inf)
    return np.maximum(np.asarray(until, dtype=np.float64) - window_s, first_t)


def rates_between(offsets: np.ndarray, times: np.ndarray, counts: np.ndarray,
                  current: np.ndarray, since: np.ndarray, until: np.ndarray | float
                  ) -> np.ndarray:
    """Per row: records/s from `since` to `until` (NaN where the samples do not reach back to
    `since` or the span is empty). `offsets`/`times`/`counts`: each row's samples, oldest
    first; `current`: the offset at `until` (a consumer's committed offset now; a log's latest
    end offset at its sample's time). An offset that went back (a rewind, a re-created
    partition) counts as no progress."""
    span = np.asarray(until, dtype=np.float64) - since
    then, known = offsets_at(offsets, times, counts, np.where(np.isfinite(since), since, 0.0))
    measured = known & np.isfinite(since) & (span > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(measured, np.maximum(current - then, 0) / span, np.nan)


def window_rates(offsets: np.ndarray, times: np.ndarray, counts: np.ndarray,
                 current: np.ndarray, until: np.ndarray | float, window_s: float
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per row: (records/s over the window that ends at `until`, RateMethod as int8, where
    the window began): `rates_between` from `window_start`."""
    since = window_start(times, counts, until, window_s)
    rate = rates_between(offsets, times, counts, current, since, until)
    method = np.where(np.isnan(rate), RateMethod.UNKNOWN,
                      np.where(since > np.asarray(until) - window_s, RateMethod.PARTIAL,
                               RateMethod.WINDOW))
    return rate, method.astype(np.int8), since


def catch_up(lag: np.ndarray, consume: np.ndarray, produce: np.ndarray) -> np.ndarray:
    """Seconds until `lag` is consumed at these rates (records/s): lag / (consume - produce),
    NEVER where consumers are not faster than producers, 0 with no lag, NaN where a rate is
    unknown."""
    with np.errstate(divide="ignore", invalid="ignore"):
        gain = consume - produce
        out = np.where(gain > 0, lag / gain, NEVER)
    out = np.where(np.isnan(consume) | np.isnan(produce), np.nan, out)
    return np.where(lag <= 0, 0.0, out)


def forecast_methods(lag: np.ndarray, consume_method: np.ndarray,
                     produce_method: np.ndarray) -> np.ndarray:
    """The forecast's RateMethod: caught up with no lag, else the less certain of the two
    rates'."""
    return np.where(lag <= 0, RateMethod.CAUGHT_UP,
                    np.maximum(consume_method, produce_method)).astype(np.int8)
