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


class MemoryMapState:
    """A MapState for the grouping key the value state's `key` names."""

    def __init__(self, value_state: MemoryState) -> None:
        self.maps: dict = {}
        self.value_state = value_state

    def _map(self) -> dict:
        return self.maps.setdefault(self.value_state.key, {})

    def exists(self) -> bool:
        return bool(self.maps.get(self.value_state.key))

    def getValue(self, key):
        return self._map().get(key)

    def updateValue(self, key, value) -> None:
        self._map()[key] = value


class MemoryHandle:
    def __init__(self) -> None:
        self.state = MemoryState()
        self.map = MemoryMapState(self.state)

    def getValueState(self, name, schema, ttl=None):
        return self.state

    def getMapState(self, name, key_schema, value_schema, ttl=None):
        return self.map
