"""How a rate and the catch-up forecast were obtained (the `_catch_up_method` series' codes).

Apart from `coordinator.rates` because the metrics catalog names these codes and is imported
where numpy must not be yet: numpy's BLAS starts its threads on import, and the processes Spark
forks workers from must have none (streaming/localmode/spark_daemon.py sets them thread-free
before it imports numpy).
"""
from __future__ import annotations

from enum import IntEnum


class RateMethod(IntEnum):
    """How a rate (and the catch-up forecast made of rates) was obtained."""

    CAUGHT_UP = 0   # nothing to catch up: the forecast is 0
    WINDOW = 1      # over the whole window
    PARTIAL = 2     # over the samples' span, shorter than the window
    UNKNOWN = 3     # no span to measure over: no figure
