"""Offset-commit record bytes, as the group coordinator writes them to `__consumer_offsets`, for
the benchmarks that feed the pipeline's stages without a broker."""
from __future__ import annotations

from coordinator.records import encode
from coordinator.records.layouts import TYPE_NAMES

T0 = 1_700_000_000_000  # ms: the commit timestamps' origin


def commit_key(group: str, topic: str, partition: int) -> bytes:
    key, _ = encode({"type": 1, "type_name": TYPE_NAMES[1],
                     "key": {"group": group, "topic": topic, "partition": partition},
                     "value": None})
    return key


def commit_value(offset: int, timestamp_ms: int) -> bytes:
    _, value = encode({"type": 1, "type_name": TYPE_NAMES[1],
                       "key": {"group": "", "topic": "", "partition": 0},
                       "value": {"version": 3, "offset": offset, "leader_epoch": 0,
                                 "metadata": "", "commit_timestamp": timestamp_ms}})
    return value
