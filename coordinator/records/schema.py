"""A small declarative schema engine for Kafka's generated-message encoding.

Layouts are written once, abstractly (`Struct`, `Array`, `String`, ...), and compiled for either
the non-flexible or the flexible ("compact" + tagged fields) encoding. The compiled codecs read
straight into canonical dicts (snake_case names, bytes as hex, uuids as base64url) and write them
back byte for byte.

Tagged fields: a known tag is decoded with its declared type only if its payload parses to exactly
its declared size and writing the value back gives the same bytes; otherwise it is kept verbatim
with the unknown tags. This is what lets one
table serve several releases: a tag number that a later release gave a meaning to (e.g. tag 0 of
type 6 in 4.3) still round-trips when an older writer used it for something else.
"""
from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import Any

from coordinator.errors import DecodeError
from coordinator.records import wire
from coordinator.records.wire import read_uvarint, write_uvarint, need, truncated

UNKNOWN_TAGS = "unknown_tagged_fields"


class EncodeError(ValueError):
    """A canonical dict that does not describe a valid record."""


# ---------------------------------------------------------------------------------------------
# Abstract types (what the layout tables are written in)

@dataclass(frozen=True)
class Int:
    """Signed two's-complement integer of `bits` bits, or unsigned 16-bit with unsigned=True."""
    bits: int
    unsigned: bool = False


@dataclass(frozen=True)
class Bool:
    pass


@dataclass(frozen=True)
class Uuid:
    pass


@dataclass(frozen=True)
class String:
    nullable: bool = False


@dataclass(frozen=True)
class Bytes:
    nullable: bool = False


@dataclass(frozen=True)
class Array:
    elem: Any
    nullable: bool = False


@dataclass(frozen=True)
class Tag:
    tag: int
    name: str
    type: Any


@dataclass(frozen=True)
class Struct:
    fields: tuple[tuple[str, Any], ...]
    tags: tuple[Tag, ...] = ()
    # keys a caller may add to the decoded dict that encode must ignore (derived data)
    derived: tuple[str, ...] = ()


@dataclass(frozen=True)
class Nullable:
    """A nullable struct: int8 marker when untagged, uvarint marker inside a tagged field."""
    struct: Struct


def struct(*fields: tuple[str, Any], tags: tuple[Tag, ...] = (), derived: tuple[str, ...] = ()) -> Struct:
    return Struct(tuple(fields), tuple(tags), tuple(derived))


INT8, INT16, INT32, INT64, UINT16 = Int(8), Int(16), Int(32), Int(64), Int(16, unsigned=True)
BOOL, UUID = Bool(), Uuid()
STRING, NSTRING = String(), String(nullable=True)
BYTES, NBYTES = Bytes(), Bytes(nullable=True)


# ---------------------------------------------------------------------------------------------
# Compiled codecs

class _Fixed:
    __slots__ = ("s", "size", "lo", "hi")

    def __init__(self, t: Int) -> None:
        fmt = {(8, False): wire.INT8, (16, False): wire.INT16, (32, False): wire.INT32,
               (64, False): wire.INT64, (16, True): wire.UINT16}[(t.bits, t.unsigned)]
        self.s = fmt
        self.size = fmt.size
        self.lo, self.hi = (0, 0xFFFF) if t.unsigned else (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1)

    def read(self, buf: bytes, pos: int) -> tuple[int, int]:
        end = pos + self.size
        if end > len(buf):
            raise truncated("integer")
        return self.s.unpack_from(buf, pos)[0], end

    def write(self, out: bytearray, v: Any) -> None:
        if type(v) is not int or not self.lo <= v <= self.hi:
            raise EncodeError(f"expected an integer in [{self.lo}, {self.hi}], got {v!r}")
        out += self.s.pack(v)


class _Bool:
    __slots__ = ()

    def read(self, buf: bytes, pos: int) -> tuple[bool, int]:
        if pos >= len(buf):
            raise truncated("bool")
        return buf[pos] != 0, pos + 1

    def write(self, out: bytearray, v: Any) -> None:
        if type(v) is not bool:
            raise EncodeError(f"expected a bool, got {v!r}")
        out.append(1 if v else 0)


def uuid_to_str(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw)[:22].decode("ascii")


def uuid_from_str(v: Any) -> bytes:
    if not isinstance(v, str) or len(v) != 22:
        raise EncodeError(f"expected a 22-character base64url uuid, got {v!r}")
    try:
        raw = base64.urlsafe_b64decode(v + "==")
    except (binascii.Error, ValueError):
        raise EncodeError(f"invalid base64url uuid {v!r}") from None
    if len(raw) != 16 or uuid_to_str(raw) != v:
        raise EncodeError(f"invalid base64url uuid {v!r}")
    return raw


class _Uuid:
    __slots__ = ()

    def read(self, buf: bytes, pos: int) -> tuple[str, int]:
        end = need(buf, pos, 16, "uuid")
        return uuid_to_str(buf[pos:end]), end

    def write(self, out: bytearray, v: Any) -> None:
        out += uuid_from_str(v)


class _Length:
    """Length/count prefix: int16/int32 with -1 = null, or uvarint N+1 with 0 = null."""
    __slots__ = ("compact", "fixed", "nullable", "max")

    def __init__(self, compact: bool, fixed: Any, nullable: bool) -> None:
        self.compact, self.fixed, self.nullable = compact, fixed, nullable
        self.max = 0xFFFFFFFE if compact else (1 << (fixed.size * 8 - 1)) - 1

    def read(self, buf: bytes, pos: int, what: str) -> tuple[int | None, int]:
        if self.compact:
            n, pos = read_uvarint(buf, pos)
            n -= 1
        else:
            end = pos + self.fixed.size
            if end > len(buf):
                raise truncated(f"{what} length")
            n = self.fixed.unpack_from(buf, pos)[0]
            pos = end
        if n < 0:
            if n == -1 and self.nullable:
                return None, pos
            if n == -1:
                raise DecodeError(f"non-nullable {what} is null", reason="null_not_allowed")
            raise DecodeError(f"negative {what} length {n}", reason="negative_length")
        if n > len(buf) - pos:
            raise truncated(f"{what} (declared length {n})")
        return n, pos

    def write(self, out: bytearray, n: int | None, what: str) -> None:
        if n is None:
            if not self.nullable:
                raise EncodeError(f"non-nullable {what} is None")
            if self.compact:
                out.append(0)
            else:
                out += self.fixed.pack(-1)
            return
        if n > self.max:
            raise EncodeError(f"{what} too long ({n})")
        if self.compact:
            write_uvarint(out, n + 1)
        else:
            out += self.fixed.pack(n)


class _Sized:
    """A string or bytes field: a length prefix, then that many bytes in canonical form."""
    __slots__ = ("len", "what", "to_py", "from_py", "prefix", "prefix_size")

    def __init__(self, length: _Length, what: str, to_py: Any, from_py: Any) -> None:
        self.len, self.what, self.to_py, self.from_py = length, what, to_py, from_py
        self.prefix = None if length.compact else length.fixed.unpack_from
        self.prefix_size = 0 if length.compact else length.fixed.size

    def read(self, buf: bytes, pos: int) -> tuple[str | None, int]:
        if self.prefix is not None:
            # non-flexible strings (every classic group-metadata member field): the plain case
            # inline; null, negative and short buffers take the general path below
            start = pos + self.prefix_size
            if start <= len(buf):
                end = start + self.prefix(buf, pos)[0]
                if start <= end <= len(buf):
                    return self.to_py(buf[start:end]), end
        n, pos = self.len.read(buf, pos, self.what)
        if n is None:
            return None, pos
        end = pos + n
        return self.to_py(buf[pos:end]), end

    def write(self, out: bytearray, v: Any) -> None:
        if v is None:
            self.len.write(out, None, self.what)
            return
        raw = self.from_py(v)
        self.len.write(out, len(raw), self.what)
        out += raw


def _string(t: String, flexible: bool) -> _Sized:
    return _Sized(_Length(flexible, wire.INT16, t.nullable), "string", wire.utf8, _utf8_bytes)


def _bytes(t: Bytes, flexible: bool) -> _Sized:
    return _Sized(_Length(flexible, wire.INT32, t.nullable), "bytes", bytes.hex, hex_to_bytes)


def _utf8_bytes(v: Any) -> bytes:
    if not isinstance(v, str):
        raise EncodeError(f"expected a string, got {v!r}")
    try:
        return v.encode("utf-8")
    except UnicodeEncodeError:
        raise EncodeError(f"string is not encodable as UTF-8: {v!r}") from None


def hex_to_bytes(v: Any) -> bytes:
    if not isinstance(v, str):
        raise EncodeError(f"expected a hex string, got {v!r}")
    try:
        return bytes.fromhex(v)
    except ValueError:
        raise EncodeError(f"invalid hex string {v[:40]!r}") from None


class _Array:
    __slots__ = ("len", "elem")

    def __init__(self, t: Array, flexible: bool) -> None:
        self.len = _Length(flexible, wire.INT32, t.nullable)
        self.elem = compile_type(t.elem, flexible)

    def read(self, buf: bytes, pos: int) -> tuple[list | None, int]:
        # every element takes at least one byte, so the remaining-bytes check in _Length also
        # bounds the number of iterations
        n, pos = self.len.read(buf, pos, "array")
        if n is None:
            return None, pos
        read = self.elem.read
        items = []
        for _ in range(n):
            v, pos = read(buf, pos)
            items.append(v)
        return items, pos

    def write(self, out: bytearray, v: Any) -> None:
        if v is None:
            self.len.write(out, None, "array")
            return
        if not isinstance(v, list):
            raise EncodeError(f"expected a list, got {type(v).__name__}")
        self.len.write(out, len(v), "array")
        write = self.elem.write
        for item in v:
            write(out, item)


class _Struct:
    __slots__ = ("fields", "tags", "by_tag", "flexible", "allowed")

    def __init__(self, t: Struct, flexible: bool) -> None:
        self.fields = tuple((name, compile_type(ft, flexible)) for name, ft in t.fields)
        self.flexible = flexible
        self.tags = tuple((tg.tag, tg.name, compile_type(tg.type, True, tagged=True))
                          for tg in t.tags) if flexible else ()
        self.by_tag = {tag: (name, codec) for tag, name, codec in self.tags}
        self.allowed = frozenset([n for n, _ in self.fields] + [n for _, n, _ in self.tags]
                                 + list(t.derived) + ([UNKNOWN_TAGS] if flexible else []))

    def read(self, buf: bytes, pos: int) -> tuple[dict, int]:
        d: dict = {}
        return d, self.read_into(buf, pos, d)

    def read_into(self, buf: bytes, pos: int, d: dict) -> int:
        for name, codec in self.fields:
            d[name], pos = codec.read(buf, pos)
        if self.flexible:
            pos = self._read_tags(buf, pos, d)
        return pos

    def _read_tags(self, buf: bytes, pos: int, d: dict) -> int:
        count, pos = read_uvarint(buf, pos)
        if count > len(buf) - pos:
            raise truncated("tagged fields")
        unknown: list[dict] = []
        previous = -1
        for _ in range(count):
            tag, pos = read_uvarint(buf, pos)
            size, pos = read_uvarint(buf, pos)
            end = need(buf, pos, size, "tagged field")
            # Kafka writes tags in ascending order. Requiring it keeps encode(decode(b)) == b (the
            # dict cannot hold an order) and stops a 3.7-layout value that happens to look like
            # a tag section from being taken for the newer layout.
            if tag <= previous:
                raise DecodeError(f"tag {tag} after tag {previous}", reason="tags_out_of_order")
            previous = tag
            data = buf[pos:end]
            known = self.by_tag.get(tag)
            if known is not None and self._read_known_tag(known, data, d):
                pos = end
                continue
            unknown.append({"tag": tag, "data": data.hex()})
            pos = end
        if unknown:
            d[UNKNOWN_TAGS] = unknown
        return pos

    @staticmethod
    def _read_known_tag(known: tuple[str, Any], data: bytes, d: dict) -> bool:
        """Fill a known tag only if its payload is exactly what we would write for that value, so
        anything else (another release's meaning, non-canonical bytes) round-trips as unknown."""
        name, codec = known
        try:
            v, used = codec.read(data, 0)
        except DecodeError:
            return False
        if used != len(data):
            return False
        again = bytearray()
        try:
            codec.write(again, v)
        except ValueError:  # EncodeError included
            return False
        if again != data:
            return False
        d[name] = v
        return True

    def write(self, out: bytearray, d: Any) -> None:
        if not isinstance(d, dict):
            raise EncodeError(f"expected a dict, got {type(d).__name__}")
        self.write_fields(out, d)

    def write_fields(self, out: bytearray, d: dict, extra: frozenset = frozenset()) -> None:
        stray = d.keys() - self.allowed - extra
        if stray:
            raise EncodeError(f"unexpected field(s) {sorted(stray)}")
        for name, codec in self.fields:
            try:
                v = d[name]
            except KeyError:
                raise EncodeError(f"missing field {name!r}") from None
            codec.write(out, v)
        if self.flexible:
            self._write_tags(out, d)

    def _write_tags(self, out: bytearray, d: dict) -> None:
        items: list[tuple[int, bytes]] = []
        for tag, name, codec in self.tags:
            if name in d:
                payload = bytearray()
                codec.write(payload, d[name])
                items.append((tag, bytes(payload)))
        unknown = d.get(UNKNOWN_TAGS, [])
        if not isinstance(unknown, list):
            raise EncodeError(f"{UNKNOWN_TAGS} must be a list")
        for u in unknown:
            if not isinstance(u, dict) or type(u.get("tag")) is not int or not 0 <= u["tag"] <= 0xFFFFFFFF:
                raise EncodeError(f"invalid unknown tagged field {u!r}")
            items.append((u["tag"], hex_to_bytes(u.get("data"))))
        items.sort(key=lambda it: it[0])
        for a, b in zip(items, items[1:]):
            if a[0] == b[0]:
                raise EncodeError(f"tag {a[0]} given twice")
        write_uvarint(out, len(items))
        for tag, payload in items:
            write_uvarint(out, tag)
            write_uvarint(out, len(payload))
            out += payload


class _NullableStruct:
    __slots__ = ("struct", "uvarint_marker")

    def __init__(self, t: Nullable, flexible: bool, tagged: bool) -> None:
        self.struct = _Struct(t.struct, flexible)
        self.uvarint_marker = tagged

    def read(self, buf: bytes, pos: int) -> tuple[dict | None, int]:
        if self.uvarint_marker:
            marker, pos = read_uvarint(buf, pos)
            present = marker > 0
        else:
            if pos >= len(buf):
                raise truncated("nullable struct marker")
            present = buf[pos] < 0x80  # int8 marker: negative = null
            pos += 1
        if not present:
            return None, pos
        return self.struct.read(buf, pos)

    def write(self, out: bytearray, v: Any) -> None:
        if v is None:
            out.append(0 if self.uvarint_marker else 0xFF)
            return
        out.append(1)
        self.struct.write(out, v)


_FIXED_CACHE: dict[Int, _Fixed] = {}


def compile_type(t: Any, flexible: bool, tagged: bool = False) -> Any:
    if isinstance(t, Int):
        if t not in _FIXED_CACHE:
            _FIXED_CACHE[t] = _Fixed(t)
        return _FIXED_CACHE[t]
    if isinstance(t, Bool):
        return _Bool()
    if isinstance(t, Uuid):
        return _Uuid()
    if isinstance(t, String):
        return _string(t, flexible)
    if isinstance(t, Bytes):
        return _bytes(t, flexible)
    if isinstance(t, Array):
        return _Array(t, flexible)
    if isinstance(t, Struct):
        return _Struct(t, flexible)
    if isinstance(t, Nullable):
        return _NullableStruct(t, flexible, tagged)
    raise TypeError(f"not a schema type: {t!r}")


@dataclass(frozen=True)
class Layout:
    """One wire layout of a key or value body. `flexible` selects compact encodings + tags."""
    struct: Struct
    flexible: bool
    label: str = ""
    codec: Any = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "codec", _Struct(self.struct, self.flexible))

    @property
    def required(self) -> frozenset:
        return frozenset(name for name, _ in self.struct.fields)
