"""Low-level readers and writers for Kafka's primitive encodings (big-endian, uvarint).

Every reader takes `(buf, pos)` and returns `(value, new_pos)`; every writer appends to a
bytearray. Bounds are checked before any slice so a hostile length can never make us allocate
more than the bytes actually left in the buffer.
"""
from __future__ import annotations

import struct

from coordinator.errors import DecodeError

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
UINT16 = struct.Struct(">H")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
UUID = struct.Struct(">16s")


def truncated(what: str) -> DecodeError:
    return DecodeError(f"buffer ended while reading {what}", reason="truncated")


def need(buf: bytes, pos: int, n: int, what: str) -> int:
    end = pos + n
    if end > len(buf):
        raise truncated(what)
    return end


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    # Kafka reads at most 5 bytes (an unsigned int32); a sixth continuation byte is an error,
    # which also stops a run of 0xff bytes from building an arbitrarily large integer.
    value = 0
    shift = 0
    n = len(buf)
    while True:
        if pos >= n:
            raise truncated("unsigned varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            if value > 0xFFFFFFFF:
                raise DecodeError("unsigned varint exceeds 32 bits", reason="varint_overflow")
            return value, pos
        shift += 7
        if shift >= 35:
            raise DecodeError("unsigned varint longer than 5 bytes", reason="varint_overflow")


def write_uvarint(out: bytearray, value: int) -> None:
    if value < 0 or value > 0xFFFFFFFF:
        raise ValueError(f"unsigned varint out of range: {value}")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def utf8(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DecodeError(f"invalid UTF-8 in string: {exc.reason}", reason="invalid_utf8") from None
