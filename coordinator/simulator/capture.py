"""Records the simulated coordinator appends to its `__consumer_offsets` partition.

Each record is kept both as the canonical dict the simulator built and as the bytes the codec
encodes it to; `to_capture()` gives the capture-format line (docs/capture-format.md).
"""
from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any, Callable, Iterable


@dataclass(frozen=True)
class CapturedRecord:
    partition: int
    offset: int
    timestamp: int
    key: bytes
    value: bytes | None
    record: dict[str, Any]

    def to_capture(self) -> dict[str, Any]:
        return {"partition": self.partition, "offset": self.offset, "timestamp": self.timestamp,
                "key": base64.b64encode(self.key).decode("ascii"),
                "value": None if self.value is None else base64.b64encode(self.value).decode("ascii")}


def from_capture(line: dict[str, Any]) -> tuple[int, int, int, bytes, bytes | None]:
    """(partition, offset, timestamp, key, value) from one capture-format line; ValueError if malformed."""
    try:
        partition, offset, timestamp = (int(line["partition"]), int(line["offset"]),
                                        int(line["timestamp"]))
        key = base64.b64decode(line["key"], validate=True)
        value = None if line["value"] is None else base64.b64decode(line["value"], validate=True)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"not a capture record ({exc.__class__.__name__}: {exc})") from None
    return partition, offset, timestamp, key, value


class OffsetsLog:
    """One partition of `__consumer_offsets`: appends encoded records at increasing offsets."""

    def __init__(self, partition: int, encode: Callable[[dict], tuple[bytes, bytes | None]],
                 base_offset: int = 0) -> None:
        self.partition = partition
        self._encode = encode
        self.next_offset = base_offset
        self.records: list[CapturedRecord] = []

    def append(self, timestamp_ms: int, records: Iterable[dict[str, Any]]) -> list[CapturedRecord]:
        """Appends one batch; every record of a batch carries the same broker timestamp."""
        out = []
        for rec in records:
            key, value = self._encode(rec)
            out.append(CapturedRecord(self.partition, self.next_offset, timestamp_ms, key, value, rec))
            self.next_offset += 1
        self.records.extend(out)
        return out
