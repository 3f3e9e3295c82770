"""A cumulative-bucket histogram kept by the monitor view and rendered as a Prometheus histogram."""
from __future__ import annotations

from bisect import bisect_left
from typing import Sequence

# Rebalances and downtimes range from sub-second (cooperative, static members) to many minutes.
DURATION_BUCKETS: tuple[float, ...] = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
                                       300.0, 600.0, 1800.0)
# Spark micro-batches and end-offset polls.
FAST_BUCKETS: tuple[float, ...] = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
                                   30.0)


class Histogram:
    __slots__ = ("bounds", "counts", "sum", "count")

    def __init__(self, bounds: Sequence[float] = DURATION_BUCKETS) -> None:
        if list(bounds) != sorted(set(bounds)):
            raise ValueError("histogram bounds must be strictly increasing")
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)  # last slot: above every bound (+Inf only)
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        # Prometheus buckets are "less than or equal": a value equal to a bound falls in it.
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value
        self.count += 1

    def cumulative(self) -> list[tuple[str, int]]:
        """[(le, cumulative count)] ending with ("+Inf", count)."""
        out = []
        running = 0
        for bound, n in zip(self.bounds, self.counts):
            running += n
            out.append((_format_bound(bound), running))
        out.append(("+Inf", self.count))
        return out


class EmptyHistogram(Histogram):
    """A histogram nothing is observed into: shared by everything that has observed nothing."""

    __slots__ = ()

    def observe(self, value: float) -> None:
        raise TypeError("an EmptyHistogram is shared and read-only: observe into one of its own")


def _format_bound(bound: float) -> str:
    return repr(float(bound))
