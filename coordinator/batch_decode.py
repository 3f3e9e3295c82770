"""Vectorised decoding of `__consumer_offsets` records held in Arrow arrays (Spark `mapInArrow`).

Offset commits (types 0/1) are almost all of the topic's traffic, so they are decoded column-wise
with numpy: fixed windows of bytes are gathered at computed positions and read as big-endian
structs, and strings are cut out of the original data buffers with one Arrow `take`. A record
takes that fast path only when its bytes have exactly the plain shape (key with nothing after the
partition; value v0-v4 with no trailing bytes; v4 with a 1-2 byte metadata length and either no
tagged fields or only `topicId`; valid UTF-8). Everything else (other record types, unknown tags,
trailing bytes, malformed records) goes through `coordinator.records.decode`, one record at a
time, so both paths give the same result by construction. Bad records never raise: they get an
`error` string.

Columns (see `BATCH_SCHEMA`): offset-commit rows fill the typed columns; rows the typed columns
do not describe completely (other record types, offset commits carrying unknown tagged fields)
carry the canonical dict as JSON in `record_json`. `group` is filled for every record that
decodes, whatever its type (the key's `group` or `group_id`), since it is what the job keys on.
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from coordinator.records import DecodeError, decode

OFFSET_COMMIT_NAME = "offset_commit"

BATCH_SCHEMA = pa.schema([
    ("type", pa.int16()), ("type_name", pa.string()),
    ("group", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
    ("value_version", pa.int16()), ("offset", pa.int64()), ("leader_epoch", pa.int32()),
    ("metadata", pa.string()), ("commit_timestamp", pa.int64()), ("expire_timestamp", pa.int64()),
    ("topic_id", pa.string()), ("is_tombstone", pa.bool_()),
    ("record_json", pa.string()), ("error", pa.string()),
])

# Value fields the typed columns hold; an offset-commit value with any other key (unknown tags)
# also gets `record_json`.
_TYPED_VALUE_FIELDS = frozenset({"version", "offset", "leader_epoch", "metadata", "commit_timestamp",
                                 "expire_timestamp", "topic_id"})
_NUMERIC = {"partition": np.int32, "value_version": np.int16, "offset": np.int64,
            "leader_epoch": np.int32, "commit_timestamp": np.int64, "expire_timestamp": np.int64}
_PAD = 64  # zero bytes appended to the data so fixed-width windows never run past the end

_KEY_HEAD = np.dtype([("type", ">i2"), ("group_len", ">i2")])
# Bytes 10-13 are v3/v4's leader epoch or (top half) v0-v2's metadata length; bytes 14-15 are
# v3's metadata length or v4's metadata uvarint.
_VALUE_HEAD = np.dtype([("version", ">i2"), ("offset", ">i8"), ("word", ">i4"), ("b14", "u1"), ("b15", "u1")])
# The bytes after the metadata: commit timestamp, then v1's expire timestamp or v4's tag section.
_VALUE_TAIL = np.dtype([("ts", ">i8"), ("expire", ">i8")])
# The same 16 bytes seen from v4's side: timestamp, tag count, first tag number and size.
_VALUE_TAIL_V4 = np.dtype([("ts", ">i8"), ("tag_count", "u1"), ("tag_head", ">u2"), ("rest", "V5")])
_B64URL = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", np.uint8)


class _Binary:
    """Offsets, validity and zero-padded data of a binary Arrow array, as numpy arrays."""

    def __init__(self, array: pa.Array) -> None:
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
            array = array.cast(pa.large_binary() if pa.types.is_large_string(array.type) else pa.binary())
        if not (pa.types.is_binary(array.type) or pa.types.is_large_binary(array.type)):
            raise TypeError(f"expected a binary array, got {array.type}")
        self.array = array
        n = len(array)
        bufs = array.buffers()
        offset_type = np.int64 if pa.types.is_large_binary(array.type) else np.int32
        raw_offsets = np.frombuffer(bufs[1], offset_type) if bufs[1] is not None else np.zeros(1, offset_type)
        self.offsets = raw_offsets[array.offset:array.offset + n + 1].astype(np.int64)
        self.start = self.offsets[:-1]
        self.length = np.diff(self.offsets)
        self.valid = (np.ones(n, bool) if array.null_count == 0
                      else pc.is_valid(array).to_numpy(zero_copy_only=False))
        data = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None and bufs[2].size else np.empty(0, np.uint8)
        self.data_buffer = bufs[2] if bufs[2] is not None else pa.py_buffer(b"")
        self.data_len = data.size
        self.padded = np.concatenate([data, np.zeros(_PAD, np.uint8)])

    def window(self, pos: np.ndarray, dtype: np.dtype) -> np.ndarray:
        """Reads one `dtype` struct per row at byte positions `pos` (clipped into the buffer)."""
        # A view with a one-byte stride has an (unaligned) item starting at every byte, so one
        # fancy index gathers all the windows at once. Raw void items copy much faster than
        # structured ones; the result is then reinterpreted in place.
        raw = np.dtype(f"V{dtype.itemsize}")
        every_byte = np.ndarray((self.data_len + 1,), dtype=raw, buffer=self.padded, strides=(1,))
        return every_byte[np.clip(pos, 0, self.data_len)].view(dtype)

    def int16_at(self, pos: np.ndarray) -> np.ndarray:
        return self.window(pos, np.dtype(">i2")).astype(np.int64)

    def strings(self, pieces: list[tuple[np.ndarray, np.ndarray]], valid: np.ndarray) -> list[pa.Array]:
        """Cuts one string per row out of the data for each (start, length) pair in `pieces`.

        The pieces of a row must be in order and inside the row; rows where `valid` is False give
        empty strings. Returns binary arrays (UTF-8 is checked by the caller).
        """
        n = len(valid)
        per_row = 2 * len(pieces) + 1
        big = self.offsets[-1] >= 2**31 if n else False
        flat = np.empty(n * per_row + 1, np.int64 if big else np.int32)
        bounds = flat[:-1].reshape(n, per_row)
        flat[-1] = self.offsets[-1] if n else 0
        bounds[:, 0] = self.start
        for i, (start, length) in enumerate(pieces):
            bounds[:, 2 * i + 1] = start
            bounds[:, 2 * i + 2] = start + length
        invalid = ~valid
        if invalid.any():
            bounds[invalid, 1:] = self.start[invalid, None]
        # The row's bytes are split into consecutive slices (gap, piece, gap, piece, ..., rest),
        # so the pieces are plain elements of one big array and a `take` extracts them.
        big_type = pa.large_binary() if big else pa.binary()
        split = pa.Array.from_buffers(big_type, n * per_row, [None, pa.py_buffer(flat), self.data_buffer])
        first = np.arange(n, dtype=np.int64) * per_row
        return [pc.take(split, pa.array(first + 2 * i + 1)).cast(pa.binary()) for i in range(len(pieces))]


def _as_utf8(binary: pa.Array, rows: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """Binary -> string without copying; returns the rows whose bytes are not valid UTF-8."""
    data = binary.buffers()[2]
    as_string = pa.Array.from_buffers(pa.string(), len(binary), [None, binary.buffers()[1], data])
    if data is None or not data.size or np.frombuffer(data, np.uint8).max() < 0x80:
        return as_string, np.zeros(len(binary), bool)
    try:
        as_string.validate(full=True)
        return as_string, np.zeros(len(binary), bool)
    except pa.ArrowInvalid:
        bad = np.zeros(len(binary), bool)
        for i in np.flatnonzero(rows):
            try:
                binary[int(i)].as_py().decode("utf-8")
            except UnicodeDecodeError:
                bad[i] = True
        return as_string, bad


def _with_validity(array: pa.Array, valid: np.ndarray) -> pa.Array:
    if valid.all():
        return array
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    bufs = array.buffers()
    return pa.Array.from_buffers(array.type, len(array), [bitmap, *bufs[1:]], offset=array.offset)


def _base64url(raw: np.ndarray) -> np.ndarray:
    """(k, 16) uint8 UUIDs -> (k, 22) uint8 characters of Kafka's unpadded base64url form."""
    padded = np.zeros((raw.shape[0], 18), np.uint32)
    padded[:, :16] = raw
    groups = padded.reshape(-1, 6, 3)
    word = (groups[:, :, 0] << 16) | (groups[:, :, 1] << 8) | groups[:, :, 2]
    sextets = np.stack([(word >> s) & 63 for s in (18, 12, 6, 0)], axis=2).reshape(-1, 24)
    return _B64URL[sextets[:, :22]]


def _fixed_strings(chars: np.ndarray, present: np.ndarray) -> pa.Array:
    """Rows with `present` get the next row of `chars` ((k, w) uint8); the others are null."""
    width = chars.shape[1] if chars.ndim == 2 else 0
    offsets = np.zeros(len(present) + 1, np.int32)
    np.cumsum(present * width, out=offsets[1:])
    array = pa.Array.from_buffers(pa.string(), len(present),
                                  [None, pa.py_buffer(offsets), pa.py_buffer(chars.tobytes())])
    return _with_validity(array, present)


class _Fast:
    """Column-wise parse of the rows that look like plain offset commits."""

    def __init__(self, keys: _Binary, values: _Binary) -> None:
        klen, kstart = keys.length, keys.start
        head = keys.window(kstart, _KEY_HEAD)
        self.type = head["type"].astype(np.int16)
        group_len = head["group_len"].astype(np.int64)
        topic_len_pos = kstart + 4 + group_len
        topic_len = keys.int16_at(topic_len_pos)
        key_ok = (keys.valid & ((self.type == 0) | (self.type == 1)) & (group_len >= 0) & (topic_len >= 0)
                  & (klen >= 10) & (klen == 4 + group_len + 2 + topic_len + 4))
        self.partition = keys.window(kstart + klen - 4, np.dtype(">i4")).astype(np.int32)
        self.tombstone = ~values.valid

        vstart, vlen = values.start, values.length
        vhead = values.window(vstart, _VALUE_HEAD)
        version = vhead["version"].astype(np.int64)
        is_v3, is_v4 = version == 3, version == 4
        is_v02, is_v1 = (version == 0) | (version == 2), version == 1
        # v4 metadata length is a compact-string uvarint (length + 1) of one or two bytes.
        b14, b15 = vhead["b14"].astype(np.int64), vhead["b15"].astype(np.int64)
        varint_len = np.where(b14 < 0x80, 1, 2)
        compact = np.where(b14 < 0x80, b14, (b14 & 0x7F) | (b15 << 7))
        v4_ok = (b14 < 0x80) | (b15 < 0x80)
        len16 = ((b14 << 8) | b15) - ((b14 >> 7) << 16)  # signed int16 from two bytes
        meta_len = np.select([is_v3, is_v4], [len16, compact - 1],
                             (vhead["word"].astype(np.int64) >> 16))
        meta_start = vstart + np.select([is_v3, is_v4], [16, 14 + varint_len], 12)
        tail_pos = meta_start + meta_len
        tail = values.window(tail_pos, _VALUE_TAIL)
        tags = tail.view(_VALUE_TAIL_V4)
        fixed_end = tail_pos - vstart + 8  # value length up to the commit timestamp
        tag_count, tag_head = tags["tag_count"], tags["tag_head"]  # tag 0 with size 16 = topicId
        has_topic_id = is_v4 & (tag_count == 1) & (tag_head == 0x0010) & (vlen == fixed_end + 19)
        exact = np.select([is_v1, is_v4], [vlen == fixed_end + 8, ((tag_count == 0) & (vlen == fixed_end + 1))
                                           | has_topic_id], vlen == fixed_end)
        value_ok = ((vlen >= 12) & (is_v02 | is_v1 | is_v3 | (is_v4 & v4_ok)) & (meta_len >= 0)
                    & exact)
        self.ok = key_ok & (self.tombstone | value_ok)
        with_value = self.ok & ~self.tombstone

        self.value_version = version.astype(np.int16)
        self.offset = vhead["offset"]
        self.leader_epoch = vhead["word"].astype(np.int32)
        self.commit_timestamp = tail["ts"]
        self.expire_timestamp = tail["expire"]
        self.has_epoch = with_value & (is_v3 | is_v4)
        self.has_expire = with_value & is_v1
        self.has_topic_id = with_value & has_topic_id
        self.with_value = with_value

        group, topic = keys.strings([(kstart + 4, group_len), (topic_len_pos + 2, topic_len)], key_ok)
        (metadata,) = values.strings([(meta_start, meta_len)], with_value)
        self.group, bad_group = _as_utf8(group, key_ok)
        self.topic, bad_topic = _as_utf8(topic, key_ok)
        self.metadata, bad_meta = _as_utf8(metadata, with_value)
        bad = bad_group | bad_topic | bad_meta
        if bad.any():  # left to the general decoder, which reports the exact problem
            for mask in (self.ok, self.with_value, self.has_epoch, self.has_expire, self.has_topic_id):
                mask &= ~bad

        uuids = values.window(tail_pos[self.has_topic_id] + 11, np.dtype((np.uint8, 16)))
        self.topic_id = _fixed_strings(_base64url(uuids), self.has_topic_id)


def _slow_rows(keys: _Binary, values: _Binary, rows: np.ndarray) -> dict[str, list[Any]]:
    """Decodes `rows` one by one with the general decoder; returns per-row column values."""
    out: dict[str, list[Any]] = {name: [] for name in BATCH_SCHEMA.names}
    key_array, value_array = keys.array, values.array
    for i in rows.tolist():
        key = key_array[i].as_py()
        value = value_array[i].as_py()
        row = dict.fromkeys(BATCH_SCHEMA.names)
        row["is_tombstone"] = value is None
        try:
            if key is None:
                raise DecodeError("record key is null", reason="null_key")
            rec = decode(key, value)
        except DecodeError as exc:
            if key is not None and len(key) >= 2:
                row["type"] = int.from_bytes(key[:2], "big", signed=True)
            row["error"] = f"{exc.reason}: {exc}"
        else:
            row["type"], row["type_name"] = rec.type, rec.type_name
            row["group"] = rec.key.get("group", rec.key.get("group_id"))
            extra = True
            if rec.type in (0, 1):
                row.update(rec.key)
                if rec.value is not None:
                    row["value_version"] = rec.value["version"]
                    row.update((k, v) for k, v in rec.value.items() if k in _TYPED_VALUE_FIELDS)
                    extra = not rec.value.keys() <= _TYPED_VALUE_FIELDS
                else:
                    extra = False
            if extra:
                row["record_json"] = json.dumps(rec.to_dict(), separators=(",", ":"), ensure_ascii=False)
        for name in BATCH_SCHEMA.names:
            out[name].append(row[name])
    return out


def _merge_strings(fast: pa.Array, fast_valid: np.ndarray, slow_rows: np.ndarray, slow: list[Any]) -> pa.Array:
    array = _with_validity(fast, fast_valid)
    if len(slow_rows) == 0:
        return array
    mask = np.zeros(len(fast_valid), bool)
    mask[slow_rows] = True
    return pc.replace_with_mask(array, pa.array(mask), pa.array(slow, pa.string()))


def _merge_numbers(fast: np.ndarray, fast_valid: np.ndarray, slow_rows: np.ndarray, slow: list[Any],
                   dtype: Any) -> pa.Array:
    values = fast.astype(dtype, copy=True)
    valid = fast_valid.copy()
    if len(slow_rows):
        present = np.array([v is not None for v in slow], bool)
        valid[slow_rows] = present
        values[slow_rows[present]] = np.array([v for v in slow if v is not None], dtype=np.int64)
    return pa.array(values, mask=~valid)


def decode_batch(keys: pa.Array, values: pa.Array) -> pa.Table:
    """Decodes `__consumer_offsets` records given as binary Arrow arrays (null value = tombstone).

    Returns a table with `BATCH_SCHEMA`, one row per input record, in input order. Never raises
    for bad records: they get a null `type_name` and an `error` string ("reason: message").
    """
    kb, vb = _Binary(keys), _Binary(values)
    if len(kb.length) != len(vb.length):
        raise ValueError(f"{len(kb.length)} keys but {len(vb.length)} values")
    n = len(kb.length)
    fast = _Fast(kb, vb)
    slow_rows = np.flatnonzero(~fast.ok)
    slow = _slow_rows(kb, vb, slow_rows)

    ok, with_value = fast.ok, fast.with_value
    columns: dict[str, pa.Array] = {}
    columns["type"] = _merge_numbers(fast.type, ok, slow_rows, slow["type"], np.int16)
    type_name = pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([OFFSET_COMMIT_NAME]))
    columns["type_name"] = _merge_strings(type_name.cast(pa.string()), ok, slow_rows, slow["type_name"])
    columns["group"] = _merge_strings(fast.group, ok, slow_rows, slow["group"])
    columns["topic"] = _merge_strings(fast.topic, ok, slow_rows, slow["topic"])
    columns["partition"] = _merge_numbers(fast.partition, ok, slow_rows, slow["partition"], np.int32)
    for name, valid in (("value_version", with_value), ("offset", with_value),
                        ("leader_epoch", fast.has_epoch), ("commit_timestamp", with_value),
                        ("expire_timestamp", fast.has_expire)):
        columns[name] = _merge_numbers(getattr(fast, name), valid, slow_rows, slow[name], _NUMERIC[name])
    columns["metadata"] = _merge_strings(fast.metadata, with_value, slow_rows, slow["metadata"])
    columns["topic_id"] = _merge_strings(fast.topic_id, fast.has_topic_id, slow_rows, slow["topic_id"])
    columns["is_tombstone"] = pa.array(fast.tombstone)
    none = np.zeros(n, bool)
    empty = pa.nulls(n, pa.string())
    columns["record_json"] = _merge_strings(empty, none, slow_rows, slow["record_json"])
    columns["error"] = _merge_strings(empty, none, slow_rows, slow["error"])
    return pa.Table.from_arrays([columns[name] for name in BATCH_SCHEMA.names], schema=BATCH_SCHEMA)


def row_to_record_dict(row: dict[str, Any]) -> dict[str, Any] | None:
    """Rebuilds the canonical record dict from one output row (None for an error row).

    Offset-commit values hold exactly the fields of their version, so a column that is null was
    not in the bytes.
    """
    if row["error"] is not None:
        return None
    if row["record_json"] is not None:
        return json.loads(row["record_json"])
    value = None
    if not row["is_tombstone"]:
        value = {"version": row["value_version"], "offset": row["offset"]}
        if row["leader_epoch"] is not None:
            value["leader_epoch"] = row["leader_epoch"]
        value["metadata"] = row["metadata"]
        value["commit_timestamp"] = row["commit_timestamp"]
        if row["expire_timestamp"] is not None:
            value["expire_timestamp"] = row["expire_timestamp"]
        if row["topic_id"] is not None:
            value["topic_id"] = row["topic_id"]
    return {"type": row["type"], "type_name": row["type_name"],
            "key": {"group": row["group"], "topic": row["topic"], "partition": row["partition"]},
            "value": value}
