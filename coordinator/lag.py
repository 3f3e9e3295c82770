"""Offset lag and the per-group roll-ups of it.

Lag is computed when it is exported, against the freshest log end offset, never when the commit
was read: a commit read long ago must not keep an old lag figure alive.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, NamedTuple


class PartitionLag(NamedTuple):
    lag: int
    negative: bool  # the commit was ahead of the end offset we know (stale end offset): lag shown as 0


def partition_lag(end_offset: int, committed: int) -> PartitionLag:
    """Log end offset minus committed offset, never negative."""
    difference = end_offset - committed
    if difference < 0:
        return PartitionLag(0, True)
    return PartitionLag(difference, False)


def messages_lost(log_start_offset: int | None, committed: int) -> int:
    """Records removed by retention before the group read them (committed offset below log start)."""
    if log_start_offset is None or committed >= log_start_offset:
        return 0
    return log_start_offset - committed


@dataclass(frozen=True)
class LagRollup:
    total: int
    by_topic: dict[str, int]
    max_lag: int
    max_lag_seconds: float
    max_by_topic: dict[str, int]
    # Per topic, the highest known time lag; a topic none of whose time lags is known is absent.
    max_seconds_by_topic: dict[str, float]


def roll_up(rows: Iterable[tuple[str, int, float]]) -> LagRollup:
    """Sums and maxima per topic and per group, from (topic, lag, lag_seconds) rows.
    Time lags that are NaN (unknown) do not take part in the maxima."""
    by_topic: dict[str, int] = {}
    max_by_topic: dict[str, int] = {}
    max_seconds_by_topic: dict[str, float] = {}
    total = 0
    max_lag = 0
    max_seconds = 0.0
    for topic, lag, seconds in rows:
        by_topic[topic] = by_topic.get(topic, 0) + lag
        if lag >= max_by_topic.get(topic, 0):
            max_by_topic[topic] = lag
        total += lag
        if lag > max_lag:
            max_lag = lag
        if seconds == seconds:  # not NaN
            if seconds >= max_seconds_by_topic.get(topic, seconds):
                max_seconds_by_topic[topic] = seconds
            if seconds > max_seconds:
                max_seconds = seconds
    return LagRollup(total, by_topic, max_lag, max_seconds, max_by_topic, max_seconds_by_topic)
