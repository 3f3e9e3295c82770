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


def roll_up(rows: Iterable[tuple[str, int, float]]) -> LagRollup:
    """Sums per topic and per group, maxima per group, from (topic, lag, lag_seconds) rows.
    Time lags that are NaN (unknown) do not take part in the maximum."""
    by_topic: dict[str, int] = {}
    total = 0
    max_lag = 0
    max_seconds = 0.0
    for topic, lag, seconds in rows:
        by_topic[topic] = by_topic.get(topic, 0) + lag
        total += lag
        if lag > max_lag:
            max_lag = lag
        if seconds > max_seconds:  # NaN compares False
            max_seconds = seconds
    return LagRollup(total, by_topic, max_lag, max_seconds)
