"""Each share-partition's last start offsets, for the share groups' consume rate, catch-up
forecast and paced retention risk (`streaming.exporter.share_risk`).

A share-partition's start offset moves as its records are acknowledged: it is to a share group
what the committed offset is to a consumer group, and its window is kept the same way, a
`coordinator.status.CommitWindow` of `status.window_size` samples at least `status.min_distance`
apart, taken as `__share_group_state` records change it (at the record's own time, so a backlog
read at start-up gives the history it describes). A few hundred bytes a share-partition; nothing
is kept for share-partitions that are gone. Callers hold the view's lock.
"""
from __future__ import annotations

from typing import Iterable

import numpy as np

from coordinator.state.share_partition import UNKNOWN, SharePartition
from coordinator.status import Commit, CommitWindow, StatusSettings

Key = tuple[str, str, int]  # (group, topic id, partition)


class ShareStartWindows:
    def __init__(self, settings: StatusSettings) -> None:
        self._settings = settings
        self.windows: dict[Key, CommitWindow] = {}

    def update(self, key: Key, state: SharePartition | None, now_s: float) -> None:
        """Take a share-partition's new state (None: it is gone)."""
        if state is None:
            self.windows.pop(key, None)
            return
        if state.start_offset == UNKNOWN:
            return
        at = state.updated_ms / 1000.0 if state.updated_ms > 0 else now_s
        window = self.windows.get(key)
        if window is None:
            window = self.windows[key] = CommitWindow(self._settings)
        window.add(Commit(state.start_offset, at, None))

    def samples(self, keys: Iterable[Key]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(offsets, times, counts) of `keys`' windows, a row each, oldest first (the form of
        `coordinator.rates`); a key without a window has no samples."""
        keys = list(keys)
        width = max(self._settings.window_size, 1)
        offsets = np.zeros((len(keys), width), np.int64)
        times = np.zeros((len(keys), width))
        counts = np.zeros(len(keys), np.int64)
        for row, key in enumerate(keys):
            window = self.windows.get(key)
            if window is not None and len(window):
                n = len(window)
                offsets[row, :n], times[row, :n], counts[row] = window.offsets, window.times, n
        return offsets, times, counts
