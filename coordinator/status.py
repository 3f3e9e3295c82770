"""Consumer health status without thresholds: Burrow's evaluation rules over a window of commits.

The rules, in plain words, are in docs/status-rules.md; this module is their implementation. A
partition's window holds its last `window_size` commits (commits closer together than
`min_distance_s` replace each other, so a fast committer does not flush the window in a second),
each with the lag it had when it was committed.
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass
from enum import IntEnum
from typing import Callable, Iterable, NamedTuple, Sequence


class Status(IntEnum):
    NOTFOUND = 0
    OK = 1
    WARN = 2
    ERR = 3
    STOP = 4
    STALL = 5
    REWIND = 6


@dataclass(frozen=True)
class StatusSettings:
    window_size: int = 10            # commits kept per partition
    min_complete: float = 0.5        # fraction of the window that must be filled before judging
    allowed_lag: int = 0             # a lag at or below this counts as caught up
    min_distance_s: float = 1.0      # a commit this close to the previous one replaces it
    recent_catch_up_s: float = 120.0  # "recently caught up" looks this far back in end offsets

    def __post_init__(self) -> None:
        if self.window_size < 1:
            raise ValueError("status.window_size must be at least 1")
        if not 0.0 <= self.min_complete <= 1.0:
            raise ValueError("status.min_complete must be between 0 and 1")
        if self.allowed_lag < 0 or self.min_distance_s < 0 or self.recent_catch_up_s < 0:
            raise ValueError("status.allowed_lag, min_distance_s and recent_catch_up_s must be >= 0")


class Commit(NamedTuple):
    offset: int
    timestamp_s: float
    lag: int | None  # lag when committed; None when no end offset was known at that time


_NO_LAG = -1


class CommitWindow:
    """The last commits of one partition, oldest first, in three parallel typed arrays (a
    cluster has 10^5 partitions, each with a full window)."""

    __slots__ = ("offsets", "times", "lags", "_size", "_min_distance_s", "_verdict")

    def __init__(self, settings: StatusSettings) -> None:
        self.offsets = array("q")
        self.times = array("d")
        self.lags = array("q")  # -1: unknown
        self._size = settings.window_size
        self._min_distance_s = settings.min_distance_s
        self._verdict: tuple[int, Status] | None = None  # (allowed lag, history_status) cache

    def add(self, commit: Commit) -> None:
        self._verdict = None
        offsets, times, lags = self.offsets, self.times, self.lags
        lag = _NO_LAG if commit.lag is None else commit.lag
        if times:
            if commit.timestamp_s < times[-1]:
                return  # replayed or reordered input: the window only moves forward
            if commit.timestamp_s - times[-1] < self._min_distance_s:
                # Keep the older timestamp so the window's span is not shortened by bursts.
                offsets[-1] = commit.offset
                lags[-1] = lag
                return
        offsets.append(commit.offset)
        times.append(commit.timestamp_s)
        lags.append(lag)
        if len(offsets) > self._size:
            del offsets[0], times[0], lags[0]

    @property
    def commits(self) -> tuple[Commit, ...]:
        return tuple(Commit(o, t, None if lag == _NO_LAG else lag)
                     for o, t, lag in zip(self.offsets, self.times, self.lags))

    def __len__(self) -> int:
        return len(self.offsets)

    def history_status(self, allowed_lag: int) -> Status:
        """Rules 5 and 6 depend on the commits only: computed once per new commit, not per
        evaluation."""
        cached = self._verdict
        if cached is None or cached[0] != allowed_lag:
            cached = self._verdict = (allowed_lag, _history_status(self, allowed_lag))
        return cached[1]


def evaluate_partition(window: CommitWindow, current_lag: int | None, now_s: float,
                       recently_caught_up: Callable[[], bool],
                       settings: StatusSettings) -> Status:
    """Status of one partition. `recently_caught_up()` tells whether the log end offset was at or
    below the last committed offset at some point in the last `recent_catch_up_s` seconds (asked
    only when the STOP rule needs it)."""
    if current_lag is None:
        return Status.NOTFOUND  # no end offset known: nothing to judge against
    offsets = window.offsets
    n = len(offsets)
    if not n or n / settings.window_size < settings.min_complete:
        return Status.OK
    allowed = settings.allowed_lag
    if current_lag <= allowed:
        return Status.OK
    times = window.times
    last_s = times[-1]
    if (now_s - last_s) > (last_s - times[0]) and not recently_caught_up():
        return Status.STOP
    return window.history_status(allowed)


def _history_status(window: CommitWindow, allowed: int) -> Status:
    """Rules 5 and 6: what the commits alone say (REWIND, STALL, WARN or OK)."""
    offsets = window.offsets
    if _unrecovered_rewind(offsets):
        return Status.REWIND
    # Rule 6 looks only at commits whose lag is known, and only if none was caught up.
    known = 0
    first_offset = previous_lag = 0
    moved = decreased = False
    for offset, lag in zip(offsets, window.lags):
        if lag == _NO_LAG:
            continue
        if lag <= allowed:
            return Status.OK
        if known:
            moved = moved or offset != first_offset
            decreased = decreased or lag < previous_lag
        else:
            first_offset = offset
        previous_lag = lag
        known += 1
    if known >= 2:
        if not moved:
            return Status.STALL
        if not decreased:
            return Status.WARN
    return Status.OK


def _unrecovered_rewind(offsets: Sequence[int]) -> bool:
    """True if some commit went below its predecessor and no later commit got back to the
    offset the partition had before going back (a rebalance hand-over often rewinds briefly)."""
    highest_before = offsets[0]
    pending: int | None = None  # the offset to get back to
    for offset in offsets[1:]:
        if pending is not None and offset >= pending:
            pending = None
        if offset < highest_before and pending is None:
            pending = highest_before
        if offset > highest_before:
            highest_before = offset
    return pending is not None


# How a partition's status shows at group level (the others show as themselves).
GROUP_LEVEL = {Status.STOP: Status.ERR, Status.STALL: Status.ERR, Status.REWIND: Status.ERR}


def group_status(partition_statuses: Iterable[Status]) -> Status:
    """Worst partition status; STOP, STALL and REWIND are shown as ERR for the group."""
    worst = Status.NOTFOUND
    for status in partition_statuses:
        status = GROUP_LEVEL.get(status, status)
        if status > worst:
            worst = status
    return worst
