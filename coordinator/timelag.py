"""Time lag: how old is the oldest record a group has not consumed yet?

Kafka does not tell us when a given offset was produced without reading the record, so every
partition keeps a small table of (log end offset, observed time) samples taken by the end-offset
poller. The produce time of the record at offset C is the moment the log end first passed C, i.e.
reached C + 1; we find it in the table by interpolating between the two samples around it, or by
extrapolating along the widest trend when C is older than the table. An extrapolation is a
guess about a time nobody watched: where it puts the record before the partition's first record
still in the log was written (the log's age, when known), it is wrong, and all that is known is
the lower bound: the record existed at the first sample (UNKNOWN).

The table is bounded. Two rules keep the samples that carry information:
- flat-segment compression: while the end offset does not move, only the first and the newest
  sample of the flat stretch are kept, so an idle topic does not push real samples out;
- when the table is full, the interior sample whose removal changes the time estimate least
  (the one lying closest to the straight line through its neighbours) is dropped, so the table
  keeps covering a long period at decreasing resolution instead of forgetting the past.
"""
from __future__ import annotations

from array import array
from bisect import bisect_left
from enum import IntEnum
from typing import NamedTuple


class TimeLagMethod(IntEnum):
    """How a time-lag figure was obtained (exported beside the value as a trust level)."""

    CAUGHT_UP = 0
    INTERPOLATED = 1
    EXTRAPOLATED = 2
    UNKNOWN = 3
    EXACT = 4  # the timestamp of the first unconsumed record itself (lag.time_method)


# lag.time_method: where time lag comes from (EXACT figures: "exact", and "auto" within a budget)
TIME_METHODS = ("estimate", "exact", "auto")


class TimeLag(NamedTuple):
    seconds: float
    method: TimeLagMethod


DEFAULT_TABLE_SIZE = 30
NO_OLDEST = float("nan")  # the time of a partition's first record, where it is not known


class OffsetTimeline:
    """Samples of one partition's log end offset over time (offsets non-decreasing, times rising).

    Stored in two typed arrays (8 bytes per number) because a cluster has 10^5 partitions.
    """

    __slots__ = ("offsets", "times", "capacity")

    def __init__(self, capacity: int = DEFAULT_TABLE_SIZE) -> None:
        if capacity < 3:
            raise ValueError("a time-lag table needs room for at least 3 samples")
        self.offsets = array("q")
        self.times = array("d")
        self.capacity = capacity

    def __len__(self) -> int:
        return len(self.offsets)

    def samples(self) -> list[tuple[int, float]]:
        return list(zip(self.offsets, self.times))

    @property
    def latest(self) -> tuple[int, float] | None:
        if not self.offsets:
            return None
        return self.offsets[-1], self.times[-1]

    def add(self, offset: int, observed_s: float) -> bool:
        """Record that the log end was `offset` at `observed_s`. Returns False if the sample was
        rejected: out of order in time, or an end offset lower than the last one (a truncated or
        re-created partition: call `reset` for those)."""
        offsets, times = self.offsets, self.times
        n = len(offsets)
        if n:
            if observed_s <= times[-1] or offset < offsets[-1]:
                return False
            if n >= 2 and offset == offsets[-1] == offsets[-2]:
                times[-1] = observed_s  # extend the flat stretch instead of adding a sample
                return True
        offsets.append(offset)
        times.append(observed_s)
        if len(offsets) > self.capacity:
            self._drop_least_informative()
        return True

    def reset(self) -> None:
        del self.offsets[:]
        del self.times[:]

    def _drop_least_informative(self) -> None:
        offsets, times = self.offsets, self.times
        best_index, best_error = 1, float("inf")
        for i in range(1, len(offsets) - 1):
            error = _removal_error(offsets[i - 1], times[i - 1], offsets[i], times[i],
                                   offsets[i + 1], times[i + 1])
            if error < best_error:
                best_index, best_error = i, error
        del offsets[best_index]
        del times[best_index]

    def offset_at(self, when_s: float) -> int | None:
        """The log end offset at time `when_s` (linear between samples, floored), or None when
        `when_s` is before the first sample. After the newest sample, the newest value."""
        times = self.times
        if not times or when_s < times[0]:
            return None
        if when_s >= times[-1]:
            return self.offsets[-1]
        right = bisect_left(times, when_s)
        if times[right] == when_s:
            return self.offsets[right]
        left = right - 1
        o_l, o_r, t_l, t_r = self.offsets[left], self.offsets[right], times[left], times[right]
        return o_l + int((o_r - o_l) * (when_s - t_l) / (t_r - t_l))

    def produce_time(self, committed: int, oldest_s: float = NO_OLDEST
                     ) -> tuple[float, TimeLagMethod] | None:
        """Estimated time at which the record at offset `committed` was written, or None when the
        group has consumed everything the table has seen. `oldest_s`: when the partition's first
        record still in the log was written (NaN: unknown); no record is older."""
        offsets, times = self.offsets, self.times
        if not offsets or committed >= offsets[-1]:
            return None
        target = committed + 1  # the record at C exists once the log end reaches C + 1
        if len(offsets) < 2:
            return times[0], TimeLagMethod.UNKNOWN
        right = bisect_left(offsets, target)
        if right > 0:
            left = right - 1  # offsets[left] < target <= offsets[right]
            return (_interpolate(offsets[left], times[left], offsets[right], times[right], target),
                    TimeLagMethod.INTERPOLATED)
        span = offsets[-1] - offsets[0]
        if span <= 0:
            # Nothing moved while we watched: all we know is the record is older than the table.
            return times[0], TimeLagMethod.UNKNOWN
        produced = _interpolate(offsets[0], times[0], offsets[-1], times[-1], target)
        if produced < oldest_s:
            return times[0], TimeLagMethod.UNKNOWN  # older than the log itself: not so
        return produced, TimeLagMethod.EXTRAPOLATED


def _interpolate(o_l: int, t_l: float, o_r: int, t_r: float, target: int) -> float:
    """Time at which the line through (o_l, t_l) and (o_r, t_r) reaches offset `target`."""
    return t_r - (o_r - target) * (t_r - t_l) / (o_r - o_l)


def _removal_error(o_l: int, t_l: float, o_m: int, t_m: float, o_r: int, t_r: float) -> float:
    """How far the produce-time estimate at the middle sample moves if the sample is dropped."""
    if o_r == o_l:
        return 0.0  # inside a flat stretch (cannot happen after compression, but harmless)
    return abs(t_m - _interpolate(o_l, t_l, o_r, t_r, o_m))


def time_lag(timeline: OffsetTimeline | None, committed: int, now_s: float,
             oldest_s: float = NO_OLDEST) -> TimeLag:
    """Seconds between now and the produce time of the oldest unconsumed record, never more
    than the age of the log's first record (`oldest_s`, when known).

    With fewer than two samples (or a table that never moved, or an extrapolation past the
    log's first record) the value is a lower bound: the record existed at the first
    observation, so it is at least that old."""
    if timeline is None or not len(timeline):
        return TimeLag(float("nan"), TimeLagMethod.UNKNOWN)
    estimate = timeline.produce_time(committed, oldest_s)
    if estimate is None:
        return TimeLag(0.0, TimeLagMethod.CAUGHT_UP)
    produced_s, method = estimate
    return TimeLag(max(0.0, now_s - produced_s), method)
