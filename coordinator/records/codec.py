"""decode(key, value) -> Record and its exact inverse encode(record) -> (key, value)."""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from coordinator.errors import DecodeError, UnknownRecordType, UnsupportedVersion
from coordinator.records.embedded import add_consumer_protocol
from coordinator.records.layouts import (KEYS, SHARE_STATE_KEYS, SHARE_STATE_TYPE_NAMES,
                                         SHARE_STATE_VALUES, TYPE_NAMES, VALUES)
from coordinator.records.offsets_fast import offset_key, offset_value
from coordinator.records.record import Record, make_record
from coordinator.records.schema import EncodeError, Layout

_I16 = struct.Struct(">h")
_VERSION_KEY = frozenset({"version"})
_OFFSET_COMMIT = TYPE_NAMES[1]


@dataclass(frozen=True)
class _Tables:
    """One topic's record types: key layouts, value layouts by version, type names."""
    keys: dict[int, Layout]
    values: dict[int, dict[int, tuple[Layout, ...]]]
    names: dict[int, str]


_OFFSETS = _Tables(KEYS, VALUES, TYPE_NAMES)
# `__share_group_state`, written by the share coordinator: its own key types 0 and 1
_SHARE_STATE = _Tables(SHARE_STATE_KEYS, SHARE_STATE_VALUES, SHARE_STATE_TYPE_NAMES)


def decode(key: bytes, value: bytes | None) -> Record:
    """Decode one `__consumer_offsets` record. Raises only DecodeError (or its subclasses)."""
    try:
        if type(key) is not bytes:
            key = _as_bytes(key, "key")
        if value is not None and type(value) is not bytes:
            value = _as_bytes(value, "value")
        if len(key) > 4 and key[0] == 0 and key[1] < 2:
            # offset commits: nearly all of the traffic, so try the unrolled decoder first
            kd = offset_key(key)
            if kd is not None:
                if value is None:
                    return make_record(key[1], _OFFSET_COMMIT, kd, None)
                vd = offset_value(value)
                if vd is not None:
                    return make_record(key[1], _OFFSET_COMMIT, kd, vd)
        return _decode(key, value, _OFFSETS)
    except DecodeError:
        raise
    except Exception as exc:  # noqa: BLE001 - the contract: nothing but DecodeError escapes
        raise _internal(exc) from exc


def decode_share_state(key: bytes, value: bytes | None) -> Record:
    """Decode one `__share_group_state` record (ShareSnapshot, ShareUpdate, or a tombstone).
    Raises only DecodeError (or its subclasses)."""
    try:
        return _decode(_as_bytes(key, "key"), None if value is None else _as_bytes(value, "value"),
                       _SHARE_STATE)
    except DecodeError:
        raise
    except Exception as exc:  # noqa: BLE001 - as decode
        raise _internal(exc) from exc


def _internal(exc: Exception) -> DecodeError:
    return DecodeError(f"unexpected decoder failure: {type(exc).__name__}: {exc}",
                       reason="internal_error")


def _as_bytes(b: Any, what: str) -> bytes:
    if type(b) is bytes:
        return b
    if isinstance(b, (bytearray, memoryview)):
        return bytes(b)
    raise DecodeError(f"record {what} must be bytes, got {type(b).__name__}", reason="not_bytes")


def _decode(key: bytes, value: bytes | None, tables: _Tables) -> Record:
    if len(key) < 2:
        raise DecodeError("key is shorter than its int16 record type", reason="truncated")
    t = _I16.unpack_from(key)[0]
    if len(key) == 4 and (t == 1 or t == 0):
        # a transaction marker leaked by a read_uncommitted client (a control record's key is
        # int16 version + int16 type, 0 ABORT / 1 COMMIT): 4 bytes can never be an offset-commit
        # key (that needs at least 2+2+2+4)
        raise DecodeError("control record key (transaction marker), not an offset commit",
                          reason="control_record", record_type=t)
    layout = tables.keys.get(t)
    if layout is None:
        raise UnknownRecordType(t)
    kd = {}
    try:
        pos = layout.codec.read_into(key, 2, kd)
        if pos != len(key):
            raise DecodeError(f"{len(key) - pos} trailing byte(s) after the key", reason="trailing_bytes")
    except DecodeError as exc:
        exc.record_type = t
        raise
    if value is None:
        return make_record(t, tables.names[t], kd, None)
    vd, trailing = _decode_value(t, value, tables)
    if t == 2 and tables is _OFFSETS:
        add_consumer_protocol(vd)
    return make_record(t, tables.names[t], kd, vd, trailing)


def _decode_value(t: int, value: bytes, tables: _Tables) -> tuple[dict, bytes]:
    if len(value) < 2:
        raise DecodeError("value is shorter than its int16 version", reason="truncated", record_type=t)
    version = _I16.unpack_from(value)[0]
    layouts = tables.values[t].get(version)
    if layouts is None:
        raise UnsupportedVersion(t, version)
    first_error: DecodeError | None = None
    for layout in layouts:
        d: dict = {"version": version}
        try:
            pos = layout.codec.read_into(value, 2, d)
        except DecodeError as exc:
            first_error = first_error or exc
            continue
        if pos == len(value):
            return d, b""
        if not layout.flexible:
            # Choice: extra bytes after a non-flexible value are a warning, not an error, as a
            # forward-compatible reader treats them (older and non-Java encoders add some). The
            # vectors' notes do not contradict it: the values they mark malformed (Burrow's "v4"
            # without a tag section, Franz's cut-off v1) are truncations and still raise. The
            # bytes ride along in Record.trailing (and Record.warnings) so that encode(record)
            # reproduces the input.
            return d, value[pos:]
        first_error = first_error or DecodeError(
            f"{len(value) - pos} trailing byte(s) after the value", reason="trailing_bytes")
    assert first_error is not None
    first_error.record_type, first_error.value_version = t, version
    raise first_error


def encode(rec: Record | dict) -> tuple[bytes, bytes | None]:
    """Encode a Record (or its canonical dict) back to `(key_bytes, value_bytes_or_None)`."""
    if isinstance(rec, Record):
        t, key, value, trailing = rec.type, rec.key, rec.value, rec.trailing
    elif isinstance(rec, dict):
        t, key, value, trailing = rec.get("type"), rec.get("key"), rec.get("value"), b""
        name = rec.get("type_name")
        if name is not None and name != TYPE_NAMES.get(t, name):
            raise EncodeError(f"type_name {name!r} does not match type {t}")
    else:
        raise EncodeError(f"cannot encode a {type(rec).__name__}")
    try:
        return _encode(t, key, value, trailing, _OFFSETS)
    except EncodeError:
        raise
    except (ValueError, TypeError, OverflowError, struct.error) as exc:
        raise EncodeError(str(exc)) from exc


def encode_share_state(rec: Record) -> tuple[bytes, bytes | None]:
    """Encode a `__share_group_state` Record back to `(key_bytes, value_bytes_or_None)`."""
    try:
        return _encode(rec.type, rec.key, rec.value, rec.trailing, _SHARE_STATE)
    except EncodeError:
        raise
    except (ValueError, TypeError, OverflowError, struct.error) as exc:
        raise EncodeError(str(exc)) from exc


def _encode(t: Any, key: Any, value: Any, trailing: bytes,
            tables: _Tables) -> tuple[bytes, bytes | None]:
    if type(t) is not int or t not in tables.keys:
        raise EncodeError(f"unknown record type {t!r}")
    if not isinstance(key, dict):
        raise EncodeError("record key must be a dict")
    kb = bytearray(_I16.pack(t))
    tables.keys[t].codec.write_fields(kb, key)
    if value is None:
        return bytes(kb), None
    if not isinstance(value, dict):
        raise EncodeError("record value must be a dict or None")
    version = value.get("version")
    layouts = tables.values[t].get(version) if type(version) is int else None
    if layouts is None:
        raise EncodeError(f"unsupported value version {version!r} for record type {t}")
    layout = _pick_layout(layouts, value)
    vb = bytearray(_I16.pack(version))
    layout.codec.write_fields(vb, value, _VERSION_KEY)
    return bytes(kb), bytes(vb) + trailing


def _pick_layout(layouts: tuple[Layout, ...], value: dict) -> Layout:
    """Same version, several layouts: the one whose fields the dict carries (e.g. `epoch` for
    the 3.7 type-4 layout, `initializing_topics` for 4.1+ type 15)."""
    if len(layouts) == 1:
        return layouts[0]
    keys = value.keys() - _VERSION_KEY
    for layout in layouts:
        if layout.required <= keys and keys <= layout.codec.allowed:
            return layout
    return layouts[0]  # reports the missing/unexpected fields against the newest layout
