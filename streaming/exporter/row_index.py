"""RowIndex: which PartitionTable row holds a (group, topic, partition), for a whole batch at once.

The view used to keep a dict per group from (topic, partition) to row: about 130 bytes and a few
microseconds of Python per group-partition, a million times over at 10^5 groups of 10 partitions
(docs/performance.md). Here every group-partition is one int64 key (group id, topic id and
partition packed in its bits) in a sorted array beside its row: 16 bytes each, and a batch's
look-ups, insertions and a group's removal are numpy operations. A group's keys are contiguous
(its id is the key's high bits), so removing a group marks a slice; the holes are squeezed out
when they reach a quarter of the array.
"""
from __future__ import annotations

import numpy as np

PARTITION_BITS = 20   # partitions of a topic: Kafka's own practical limits are far below 2^20
TOPIC_BITS = 19       # topic ids are dense (streaming.exporter.partition_table.Names)
GROUP_BITS = 63 - PARTITION_BITS - TOPIC_BITS
GROUP_SHIFT = PARTITION_BITS + TOPIC_BITS


def compose(groups: np.ndarray, topics: np.ndarray, partitions: np.ndarray) -> np.ndarray:
    """The key of each (group id, topic id, partition); ValueError past what the bits hold."""
    groups = np.asarray(groups, dtype=np.int64)
    topics = np.asarray(topics, dtype=np.int64)
    partitions = np.asarray(partitions, dtype=np.int64)
    if len(groups) and (groups.max() >> GROUP_BITS or topics.max() >> TOPIC_BITS
                        or partitions.max() >> PARTITION_BITS or partitions.min() < 0):
        raise ValueError(f"the view holds at most 2^{GROUP_BITS} groups, 2^{TOPIC_BITS} topics "
                         f"and partitions numbered below 2^{PARTITION_BITS}")
    return (groups << GROUP_SHIFT) | (topics << PARTITION_BITS) | partitions


class RowIndex:
    def __init__(self) -> None:
        self.keys = np.empty(0, dtype=np.int64)  # sorted, unique
        self.rows = np.empty(0, dtype=np.int64)  # -1: a hole (removed, not yet squeezed out)
        self.holes = 0

    def __len__(self) -> int:
        return len(self.keys) - self.holes

    def positions(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where each key is or would go, and whether it is there (holes included)."""
        at = np.searchsorted(self.keys, keys)
        if not len(self.keys):
            return at, np.zeros(len(keys), dtype=np.bool_)
        return at, self.keys[np.minimum(at, len(self.keys) - 1)] == keys

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        """The row of each key; -1 where none."""
        at, found = self.positions(keys)
        out = np.full(len(keys), -1, dtype=np.int64)
        out[found] = self.rows[at[found]]
        return out

    def add(self, keys: np.ndarray, rows: np.ndarray) -> None:
        """Index new `rows` under `keys` (unique, none of them held)."""
        order = np.argsort(keys, kind="stable")
        keys, rows = keys[order], rows[order]
        at, found = self.positions(keys)
        self.rows[at[found]] = rows[found]  # keys whose group-partition was removed earlier
        self.holes -= int(found.sum())
        fresh = ~found
        self.keys = np.insert(self.keys, at[fresh], keys[fresh])
        self.rows = np.insert(self.rows, at[fresh], rows[fresh])

    def group_ranges(self, groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where each group id's keys start and end (holes included)."""
        groups = np.asarray(groups, dtype=np.int64)
        return (np.searchsorted(self.keys, groups << GROUP_SHIFT),
                np.searchsorted(self.keys, (groups + 1) << GROUP_SHIFT))

    def group_positions(self, groups: np.ndarray) -> np.ndarray:
        """The positions of every key of the given group ids, holes included."""
        low, high = self.group_ranges(groups)
        counts = high - low
        total = int(counts.sum())
        if not total:
            return np.empty(0, dtype=np.int64)
        # Each range low..high-1, all at once: a running count, restarted at each range's start.
        starts = np.repeat(low - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
        return starts + np.arange(total)

    def _range(self, group: int) -> tuple[int, int]:
        low, high = self.group_ranges(np.array([group]))
        return int(low[0]), int(high[0])

    def group_rows(self, group: int) -> np.ndarray:
        """The rows held for one group id."""
        low, high = self._range(group)
        rows = self.rows[low:high]
        return rows[rows >= 0]

    def remove_group(self, group: int) -> np.ndarray:
        """Forget a group id's keys; returns the rows they held."""
        return self.remove_positions(np.arange(*self._range(group)))

    def remove_positions(self, positions: np.ndarray) -> np.ndarray:
        rows = self.rows[positions]
        rows = rows[rows >= 0]
        self.rows[positions] = -1
        self.holes += len(rows)
        if self.holes > max(1024, len(self.keys) // 4):
            kept = self.rows >= 0
            self.keys, self.rows, self.holes = self.keys[kept], self.rows[kept], 0
        return rows


__all__ = ["RowIndex", "compose"]
