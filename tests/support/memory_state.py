"""Spark's transformWithStateInPandas handle over a dict, to drive `GroupProcessor` without Spark."""
from __future__ import annotations


class MemoryState:
    """A ValueState for the grouping key in `key` (set by the caller before each key's rows)."""

    def __init__(self) -> None:
        self.values: dict = {}
        self.key = None

    def exists(self) -> bool:
        return self.key in self.values

    def get(self):
        return self.values.get(self.key)

    def update(self, value) -> None:
        self.values[self.key] = value

    def clear(self) -> None:
        self.values.pop(self.key, None)


class MemoryHandle:
    def __init__(self) -> None:
        self.state = MemoryState()

    def getValueState(self, name, schema, ttl=None):
        return self.state
