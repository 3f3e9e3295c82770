"""Hand-unrolled decoding of offset-commit keys and values (types 0/1), which are nearly all of
the traffic on `__consumer_offsets`.

Each function returns None whenever the bytes are anything but the plain expected shape
(truncated, trailing bytes, tags present, bad UTF-8...): the caller then runs the generic schema
decoder, which produces the same dict or the precise DecodeError.
"""
from __future__ import annotations

import struct

from coordinator.records.schema import uuid_to_str

_I16 = struct.Struct(">h").unpack_from
_I32 = struct.Struct(">i").unpack_from
_I64 = struct.Struct(">q").unpack_from
_V3_HEAD = struct.Struct(">qih").unpack_from      # offset, leader_epoch, metadata length
_V4_HEAD = struct.Struct(">qiB").unpack_from      # offset, leader_epoch, first varint byte
_V0_HEAD = struct.Struct(">qh").unpack_from       # offset, metadata length
_TS2 = struct.Struct(">qq").unpack_from
_TOPIC_ID_TAG = b"\x01\x00\x10"


def offset_key(key: bytes) -> dict | None:
    try:
        gl = _I16(key, 2)[0]
        p = 4 + gl
        tl = _I16(key, p)[0]
        q = p + 2 + tl
        if gl < 0 or tl < 0 or q + 4 != len(key):
            return None
        return {"group": key[4:p].decode(), "topic": key[p + 2:q].decode(),
                "partition": _I32(key, q)[0]}
    except (struct.error, UnicodeDecodeError):
        return None


def offset_value(value: bytes) -> dict | None:
    n = len(value)
    try:
        version = _I16(value, 0)[0]
        if version == 3:
            off, epoch, ml = _V3_HEAD(value, 2)
            p = 16 + ml
            if ml < 0 or p + 8 != n:
                return None
            return {"version": 3, "offset": off, "leader_epoch": epoch,
                    "metadata": value[16:p].decode(), "commit_timestamp": _I64(value, p)[0]}
        if version == 4:
            off, epoch, ml = _V4_HEAD(value, 2)
            # the two shapes 4.1+ brokers write: one-byte metadata length, then either an empty
            # tag section or exactly the topicId tag (count 1, tag 0, size 16)
            p = 15 + ml - 1
            if ml == 0 or ml >= 0x80:
                return None
            d = {"version": 4, "offset": off, "leader_epoch": epoch,
                 "metadata": value[15:p].decode(), "commit_timestamp": _I64(value, p)[0]}
            if p + 9 == n and value[-1] == 0:
                return d
            if p + 27 == n and value[p + 8:p + 11] == _TOPIC_ID_TAG:
                d["topic_id"] = uuid_to_str(value[p + 11:])
                return d
            return None
        if version in (0, 1, 2):
            off, ml = _V0_HEAD(value, 2)
            p = 12 + ml
            if ml < 0:
                return None
            if version == 1:
                if p + 16 != n:
                    return None
                ts, exp = _TS2(value, p)
                return {"version": 1, "offset": off, "metadata": value[12:p].decode(),
                        "commit_timestamp": ts, "expire_timestamp": exp}
            if p + 8 != n:
                return None
            return {"version": version, "offset": off, "metadata": value[12:p].decode(),
                    "commit_timestamp": _I64(value, p)[0]}
    except (struct.error, UnicodeDecodeError):
        return None
    return None
