"""EndsTable: what the end-offset poller knows about each partition's log, held as columns.

One row per polled topic partition: its time-lag table (the log end offset samples of
`coordinator.timelag.OffsetTimeline`, as a row of two 2-D arrays), its log start offset, when
its first record still in the log was written (which bounds every time lag on it) and when it
was last observed. A poll updates every row it covers in one pass
(`coordinator.lag_arrays.add_samples`), and the evaluation reads the rows of the partitions it
needs by fancy indexing: no Python object per partition.

Partitions are named by a 64-bit key, `topic id << 32 | partition`, with topic ids from the
view's `Names` of topics, so that a column of keys finds its rows by one `searchsorted`.
"""
from __future__ import annotations

from typing import Iterable, Mapping

import numpy as np

from coordinator.lag_arrays import add_samples
from coordinator.timelag import NO_OLDEST

NO_START = -1


def tp_key(topic_id, partition):
    """The key of (topic id, partition): ints, or numpy arrays of them."""
    return (topic_id << 32) | partition


def tp_parts(keys):
    """(topic ids, partitions) of keys: the inverse of tp_key."""
    return keys >> 32, keys & 0xFFFFFFFF


class EndsTable:
    def __init__(self, capacity: int, rows: int = 1024) -> None:
        self.capacity = capacity
        self.index: dict[int, int] = {}  # tp key -> row
        self._released: list[int] = []  # rows given back, reused first
        self._used = 0  # rows at and above this were never given out
        self.offsets = np.zeros((rows, capacity + 1), dtype=np.int64)
        self.times = np.zeros((rows, capacity + 1), dtype=np.float64)
        self.counts = np.zeros(rows, dtype=np.int64)
        self.starts = np.full(rows, NO_START, dtype=np.int64)
        self.firsts = np.full(rows, NO_OLDEST)  # seconds; NaN: not known
        self.version = 0  # bumped when rows are added or removed (cached key lookups go stale)
        self._sorted: tuple[int, np.ndarray, np.ndarray] | None = None

    def __len__(self) -> int:
        return len(self.index)

    def __contains__(self, key: int) -> bool:
        return key in self.index

    def _grow(self) -> None:
        size = len(self.counts)
        new = size + max(size // 2, 1024)  # by half: the slack is memory every row pays for
        for name, fill in (("offsets", 0), ("times", 0.0), ("counts", 0), ("starts", NO_START),
                           ("firsts", NO_OLDEST)):
            old = getattr(self, name)
            grown = np.full((new,) + old.shape[1:], fill, dtype=old.dtype)
            grown[:size] = old
            setattr(self, name, grown)

    def _rows(self, keys: Iterable[int]) -> np.ndarray:
        index, released = self.index, self._released
        rows = []
        for key in keys:
            row = index.get(key)
            if row is None:
                if released:
                    row = released.pop()
                else:
                    if self._used == len(self.counts):
                        self._grow()
                    row = self._used
                    self._used += 1
                index[key] = row
                self.counts[row] = 0
                self.starts[row] = NO_START
                self.firsts[row] = NO_OLDEST
                self.version += 1
            rows.append(row)
        return np.array(rows, dtype=np.int64)

    def update(self, ends: Mapping[int, int], starts: Mapping[int, int],
               observed_s: float) -> None:
        """Add a poll's end offsets (all observed at `observed_s`) and log start offsets, by tp
        key."""
        rows = self._rows(ends)
        values = np.fromiter(ends.values(), dtype=np.int64, count=len(ends))
        add_samples(rows, values, observed_s, self.offsets, self.times, self.counts,
                    self.capacity)
        index = self.index
        for key, start in starts.items():
            row = index.get(key)
            if row is not None:
                self.starts[row] = start

    def set_first_times(self, times: Mapping[int, float]) -> bool:
        """When the first record still in each partition's log was written (seconds), by tp
        key; keys the table does not hold are left out. Returns whether any row changed."""
        index = self.index
        changed = False
        for key, first_s in times.items():
            row = index.get(key)
            if row is not None and self.firsts[row] != first_s:
                self.firsts[row] = first_s
                changed = True
        return changed

    def forget(self, keys: Iterable[int]) -> None:
        for key in keys:
            row = self.index.pop(key, None)
            if row is not None:
                self.counts[row] = 0
                self._released.append(row)
                self.version += 1

    def keys(self) -> list[int]:
        return list(self.index)

    def rows_of(self, keys: np.ndarray) -> np.ndarray:
        """The row of each tp key, -1 for keys the table does not hold."""
        if self._sorted is None or self._sorted[0] != self.version:
            held = np.fromiter(self.index.keys(), dtype=np.int64, count=len(self.index))
            rows = np.fromiter(self.index.values(), dtype=np.int64, count=len(self.index))
            order = np.argsort(held)
            self._sorted = (self.version, held[order], rows[order])
        _, held, rows = self._sorted
        if not len(held):
            return np.full(len(keys), -1, dtype=np.int64)
        at = np.clip(np.searchsorted(held, keys), 0, len(held) - 1)
        return np.where(held[at] == keys, rows[at], -1)

    # ---- one partition at a time (tools, tests, the poller's bookkeeping) ---------------------

    def samples(self, key: int) -> list[tuple[int, float]]:
        row = self.index.get(key)
        if row is None:
            return []
        n = int(self.counts[row])
        return list(zip(self.offsets[row, :n].tolist(), self.times[row, :n].tolist()))

    def latest(self, key: int) -> tuple[int, float] | None:
        row = self.index.get(key)
        if row is None or not self.counts[row]:
            return None
        n = int(self.counts[row]) - 1
        return int(self.offsets[row, n]), float(self.times[row, n])

    def start(self, key: int) -> int | None:
        row = self.index.get(key)
        if row is None or self.starts[row] == NO_START:
            return None
        return int(self.starts[row])

    def first_time(self, key: int) -> float | None:
        row = self.index.get(key)
        if row is None or np.isnan(self.firsts[row]):
            return None
        return float(self.firsts[row])
