"""Non-flexible (classic) Kafka primitives used by the embedded group protocols.

The consumer, Connect and StickyAssignor blobs are written with Kafka's old fixed-width encoding
(int16 string lengths, int32 array counts, no tagged fields), so one small reader/writer pair
serves them all. Every read checks the remaining length first, so malformed input can only
raise `DecodeError`, never `struct.error` or `IndexError`.
"""
from __future__ import annotations

import struct
from typing import Callable, TypeVar

from coordinator.errors import DecodeError

T = TypeVar("T")

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class Reader:
    """A cursor over one blob. `what` names the blob in error messages."""

    __slots__ = ("data", "pos", "what")

    def __init__(self, data: bytes, what: str) -> None:
        self.data = bytes(data)
        self.pos = 0
        self.what = what

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def at_end(self) -> bool:
        return self.pos >= len(self.data)

    def fail(self, message: str) -> DecodeError:
        return DecodeError(f"{self.what}: {message} at byte {self.pos}", reason="malformed")

    def _need(self, size: int, field: str) -> None:
        if size > len(self.data) - self.pos:
            raise self.fail(f"truncated {field} (needs {size} bytes, {self.remaining()} left)")

    def _fixed(self, codec: struct.Struct, field: str) -> int:
        # Relies on struct raising on a short buffer instead of checking the length first:
        # this runs for every field of every member of every group snapshot.
        try:
            (value,) = codec.unpack_from(self.data, self.pos)
        except struct.error:
            raise self.fail(f"truncated {field}") from None
        self.pos += codec.size
        return value

    def int16(self, field: str) -> int:
        return self._fixed(_I16, field)

    def int32(self, field: str) -> int:
        return self._fixed(_I32, field)

    def int64(self, field: str) -> int:
        return self._fixed(_I64, field)

    def raw(self, size: int, field: str) -> bytes:
        self._need(size, field)
        chunk = self.data[self.pos:self.pos + size]
        self.pos += size
        return chunk

    def string(self, field: str) -> str:
        size = self.int16(field)
        if size < 0:
            raise self.fail(f"null or negative length {size} for non-nullable string {field}")
        start = self.pos
        end = start + size
        if end > len(self.data):
            raise self.fail(f"truncated {field} (needs {size} bytes, {self.remaining()} left)")
        self.pos = end
        try:
            return self.data[start:end].decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"invalid UTF-8 in {field}") from None

    def nullable_string(self, field: str) -> str | None:
        size = self.int16(field)
        # Kafka's readers treat every negative length as null, not only -1.
        if size < 0:
            return None
        self.pos -= 2
        return self.string(field)

    def nullable_bytes(self, field: str) -> bytes | None:
        size = self.int32(field)
        if size < 0:
            return None
        return self.raw(size, field)

    def count(self, field: str, min_item_size: int, nullable: bool = False) -> int:
        """Reads an array count; -1 when null. Rejects counts the remaining bytes cannot hold."""
        count = self.int32(field)
        if count < 0:
            if nullable:
                return -1
            raise self.fail(f"null or negative count {count} for non-nullable array {field}")
        self._need(count * min_item_size, field)
        return count

    def array(self, field: str, read_item: Callable[[], T], min_item_size: int) -> list[T]:
        return [read_item() for _ in range(self.count(field, min_item_size))]

    def nullable_array(self, field: str, read_item: Callable[[], T],
                       min_item_size: int) -> list[T] | None:
        count = self.count(field, min_item_size, nullable=True)
        return None if count < 0 else [read_item() for _ in range(count)]

    def string_array(self, field: str) -> list[str]:
        return [self.string(field) for _ in range(self.count(field, 2))]

    def int32_array(self, field: str) -> tuple[int, ...]:
        count = self.count(field, 4)
        values = struct.unpack_from(f">{count}i", self.data, self.pos)
        self.pos += 4 * count
        return values


class Writer:
    """Accumulates the big-endian encoding of one blob."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def int16(self, value: int) -> "Writer":
        self.parts.append(_I16.pack(value))
        return self

    def int32(self, value: int) -> "Writer":
        self.parts.append(_I32.pack(value))
        return self

    def int64(self, value: int) -> "Writer":
        self.parts.append(_I64.pack(value))
        return self

    def raw(self, data: bytes) -> "Writer":
        self.parts.append(bytes(data))
        return self

    def string(self, value: str) -> "Writer":
        encoded = value.encode("utf-8")
        if len(encoded) > 0x7FFF:
            raise ValueError(f"string of {len(encoded)} bytes does not fit an int16 length")
        self.parts.append(_I16.pack(len(encoded)))
        self.parts.append(encoded)
        return self

    def nullable_string(self, value: str | None) -> "Writer":
        if value is None:
            return self.int16(-1)
        return self.string(value)

    def nullable_bytes(self, value: bytes | None) -> "Writer":
        if value is None:
            return self.int32(-1)
        self.parts.append(_I32.pack(len(value)))
        self.parts.append(bytes(value))
        return self

    def array(self, items: "list[T] | tuple[T, ...] | None", write_item: Callable[[T], object]) -> "Writer":
        """Writes a (nullable) array: `None` becomes count -1."""
        if items is None:
            return self.int32(-1)
        self.int32(len(items))
        for item in items:
            write_item(item)
        return self

    def int32_array(self, values: "list[int] | tuple[int, ...]") -> "Writer":
        self.parts.append(_I32.pack(len(values)))
        self.parts.append(struct.pack(f">{len(values)}i", *values))
        return self

    def getvalue(self) -> bytes:
        return b"".join(self.parts)


def hex_or_none(data: bytes | None) -> str | None:
    return None if data is None else data.hex()


def bytes_from_hex(value: str | bytes | None, field: str) -> bytes | None:
    """Accepts the canonical hex form (or raw bytes) when re-encoding from a dict."""
    if value is None or isinstance(value, (bytes, bytearray)):
        return None if value is None else bytes(value)
    try:
        return bytes.fromhex(value)
    except ValueError:
        raise ValueError(f"{field} is not a hex string: {value!r}") from None
