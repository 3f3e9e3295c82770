"""The capture file format: one JSON object per line, one `__consumer_offsets` record each.

    {"partition": 7, "offset": 1234, "timestamp": 1700000000000, "key": "<base64>", "value": "<base64>"|null}

`timestamp` is epoch milliseconds; `value` null is a tombstone. An optional `timestamp_type`
(0 CreateTime, 1 LogAppendTime) defaults to 0. Described for users in docs/capture-format.md.
Written by `groupscope capture` and the coordinator simulator; read by the replay source.
"""
from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

CAPTURE_TOPIC = "__consumer_offsets"


@dataclass(frozen=True)
class CapturedRecord:
    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    timestamp_type: int = 0


def encode_line(record: CapturedRecord) -> str:
    """One line of the capture file, without the trailing newline."""
    line = {"partition": record.partition, "offset": record.offset,
            "timestamp": record.timestamp_ms, "key": _b64(record.key), "value": _b64(record.value)}
    if record.timestamp_type:
        line["timestamp_type"] = record.timestamp_type
    return json.dumps(line, separators=(",", ":"))


def decode_line(text: str | bytes, where: str = "capture line") -> CapturedRecord:
    """Parse one line; ValueError names `where` and the problem."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a JSON object")
    for name in ("partition", "offset", "timestamp"):
        if not isinstance(data.get(name), int) or isinstance(data.get(name), bool):
            raise ValueError(f"{where}: field {name} must be an integer")
    return CapturedRecord(data["partition"], data["offset"], data["timestamp"],
                          _unb64(data.get("key"), where, "key"),
                          _unb64(data.get("value"), where, "value"),
                          int(data.get("timestamp_type", 0)))


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _unb64(text, where: str, name: str) -> bytes | None:
    if text is None:
        return None
    if not isinstance(text, str):
        raise ValueError(f"{where}: field {name} must be base64 text or null")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{where}: field {name} is not valid base64") from None
