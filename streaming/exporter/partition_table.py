"""PartitionTable: every group's committed partitions, held as columns.

A row per (group, topic, partition) the view holds: the group and topic (as ids from `Names`),
the partition, its tp key in the `EndsTable`, the committed offset and commit time, whether its
series are exported (subscribed topics only, by default), the offset at which a negative lag was
last counted, and its status window (`coordinator.status.CommitWindow` as rows of three 2-D
arrays). At a million group-partitions an object per partition cost about 1.6 KB and an
evaluation pass several seconds; as columns a row costs about 300 bytes and a pass is a few numpy
operations (`streaming.exporter.lag_frame`).
"""
from __future__ import annotations

import numpy as np

from coordinator.lag_arrays import add_commits, rounds

STALE = -1  # history column: the window changed since its rules 5-6 verdict was computed


class Names:
    """Small integer ids for names (topics, groups); a released id is given out again."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.names: list[str | None] = []
        self._free: list[int] = []

    def id(self, name: str) -> int:
        found = self.ids.get(name)
        if found is not None:
            return found
        if self._free:
            found = self._free.pop()
            self.names[found] = name
        else:
            found = len(self.names)
            self.names.append(name)
        self.ids[name] = found
        return found

    def release(self, name: str) -> None:
        found = self.ids.pop(name, None)
        if found is not None:
            self.names[found] = None
            self._free.append(found)


class PartitionTable:
    _COLUMNS = (("group", np.int32, -1), ("topic", np.int32, -1), ("partition", np.int32, 0),
                ("tp", np.int64, -1), ("offset", np.int64, -1), ("commit_s", np.float64, 0.0),
                ("live", np.bool_, False), ("exported", np.bool_, False),
                ("negative_seen_at", np.int64, -1), ("lengths", np.int64, 0),
                ("history", np.int8, STALE),
                # lag.time_method: the timestamp of the first record at or after offset
                # `first_at` (the committed offset when it was read; -1: none read)
                ("first_at", np.int64, -1), ("first_s", np.float64, np.nan))
    _WINDOWS = (("w_offsets", np.int64), ("w_times", np.float64), ("w_lags", np.int64))

    def __init__(self, window_size: int, rows: int = 1024) -> None:
        self.window_size = window_size
        for name, dtype, fill in self._COLUMNS:
            setattr(self, name, np.full(rows, fill, dtype=dtype))
        for name, dtype in self._WINDOWS:
            setattr(self, name, np.zeros((rows, window_size), dtype=dtype))
        self._released: list[int] = []  # rows given back, reused first
        self._used = 0  # rows at and above this were never given out
        self.count = 0
        # Bumped when rows are added, removed or change group, topic or export: whatever is
        # derived from the table's shape (sort orders, label texts) must be derived again.
        self.version = 0

    def __len__(self) -> int:
        return self.count

    def _grow(self, needed: int) -> None:
        size = len(self.live)
        # By half: the slack is memory a million rows pay for.
        new = max(size + max(size // 2, 1024), needed)
        for name, dtype, fill in self._COLUMNS:
            grown = np.full(new, fill, dtype=dtype)
            grown[:size] = getattr(self, name)
            setattr(self, name, grown)
        for name, dtype in self._WINDOWS:
            grown = np.zeros((new, self.window_size), dtype=dtype)
            grown[:size] = getattr(self, name)
            setattr(self, name, grown)

    def reserve(self, count: int) -> np.ndarray:
        """`count` free rows for new group-partitions, rows given back first; `fill` gives them
        their columns."""
        take = min(count, len(self._released))
        reused = self._released[len(self._released) - take:] if take else []
        del self._released[len(self._released) - take:]
        fresh = count - take
        if self._used + fresh > len(self.live):
            self._grow(self._used + fresh)
        rows = np.concatenate((np.array(reused, dtype=np.int64),
                               np.arange(self._used, self._used + fresh, dtype=np.int64)))
        self._used += fresh
        return rows

    def fill(self, rows: np.ndarray, groups: np.ndarray, topics: np.ndarray,
             partitions: np.ndarray, tps: np.ndarray, exported: np.ndarray) -> None:
        """Start reserved rows: who they are, nothing committed yet."""
        if not len(rows):
            return
        self.group[rows], self.topic[rows], self.partition[rows] = groups, topics, partitions
        self.tp[rows], self.exported[rows], self.live[rows] = tps, exported, True
        self.offset[rows], self.commit_s[rows] = -1, 0.0
        self.negative_seen_at[rows], self.lengths[rows], self.history[rows] = -1, 0, STALE
        self.first_at[rows], self.first_s[rows] = -1, np.nan
        self.count += len(rows)
        self.version += 1

    def release(self, rows: list[int]) -> None:
        if not rows:
            return
        at = np.array(rows, dtype=np.int64)
        self.live[at] = False
        self.exported[at] = False
        self._released.extend(rows)
        self.count -= len(rows)
        self.version += 1

    def set_exported(self, rows: list[int], flags: list[bool]) -> None:
        at = np.array(rows, dtype=np.int64)
        flags_array = np.array(flags, dtype=np.bool_)
        if (self.exported[at] != flags_array).any():
            self.exported[at] = flags_array
            self.version += 1

    def commit(self, rows: np.ndarray, offsets: np.ndarray, times: np.ndarray,
               lags: np.ndarray, min_distance_s: float) -> None:
        """Apply commits in the order given (rows may repeat). A commit older than the one a row
        holds is a replay and changes nothing; otherwise it becomes the row's committed offset
        and enters its window. `lags` is each commit's lag when made (NO_LAG: unknown)."""
        for pick in rounds(rows):
            r, t = rows[pick], times[pick]
            newer = t >= self.commit_s[r]
            if not newer.all():
                pick, r, t = pick[newer], r[newer], t[newer]
            self.offset[r] = offsets[pick]
            self.commit_s[r] = t
            self.history[r] = STALE
            add_commits(r, offsets[pick], t, lags[pick], self.w_offsets, self.w_times,
                        self.w_lags, self.lengths, min_distance_s)


__all__ = ["Names", "PartitionTable", "STALE"]
