"""Uncompressed v2 record batches parsed into columns many batches at a time, with numpy.

A fetch of `__consumer_offsets` returns thousands of small batches (one per commit request,
25 records in the benchmark's), and parsing their records one by one in Python cost about 2 µs
a record, half of a catch-up's read CPU. Here the records of all the batches of a fetch response
are parsed together: the batches' bytes are joined, each step of the record layout (length,
attributes, timestamp delta, offset delta, key, value) is read for every record at once, and
the keys and values are gathered into Arrow binary arrays without a Python object per record.
Record starts depend on the previous record's length, so they are found one record position at
a time across all batches (a batch of 25 records takes 25 vectorised steps, whatever the number
of batches); the few batches that hold many more records than the rest are walked in Python.

A fetch of fewer records than numpy's fixed cost is worth (the steady state: a few commits per
partition) is parsed record by record instead.

Corruption is checked per batch, as kafka-python does: a record whose fields run past its
length, a varint that does not end, or bytes left after the last record. The records of the
batches before the first bad one are returned together with the error.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pyarrow as pa

# Records below which a fetch is parsed record by record in Python (`_parse_each`): numpy's
# fixed cost, about 0.3 ms a parse, is more than that path costs there (2-3 µs a record), and a
# steady-state fetch holds a few commits per partition.
_VECTORISED_FROM = 400
# Batches still being walked below which the remaining records are found in Python: a numpy
# step over the batches costs about as much as walking 100 records one by one.
_PYTHON_WALK_BELOW = 100
_PAD = 16  # zero bytes after the joined buffer, so reads just past a bad batch stay in bounds


@dataclass(frozen=True)
class PlainBatch:
    """An uncompressed v2 batch: its bytes, where its first record starts, and the header
    fields its records need. `append_time` is the batch's max timestamp when the broker stamped
    it (LogAppendTime), else None."""

    data: bytes
    first_record: int
    count: int
    base_offset: int
    base_timestamp: int
    append_time: int | None


@dataclass
class Columns:
    """Records as columns: offsets and timestamps (epoch ms) as numpy int64, keys and values as
    Arrow binary arrays (null where the record has none)."""

    offsets: np.ndarray
    keys: pa.Array
    values: pa.Array
    timestamps_ms: np.ndarray
    timestamp_types: np.ndarray  # int32: 1 where the broker stamped the batch (LogAppendTime)


class CorruptBatch(ValueError):
    """A batch whose records do not follow the v2 layout; `index` is its place in the list."""

    def __init__(self, message: str, index: int) -> None:
        super().__init__(message)
        self.index = index


def _varints(buf: np.ndarray, pos: np.ndarray, max_bytes: int) -> tuple[np.ndarray, np.ndarray]:
    """Zigzag varints at `pos`: their values (int64) and sizes in bytes (0 where one runs past
    `max_bytes`, which the caller treats as corruption)."""
    b = buf[pos]
    value = (b & 0x7F).astype(np.uint64)
    size = np.ones(len(pos), np.int64)
    more = np.flatnonzero(b & 0x80)
    shift = 7
    while len(more):
        if shift >= 7 * max_bytes:
            size[more] = 0
            break
        b = buf[pos[more] + size[more]]
        value[more] |= (b & 0x7F).astype(np.uint64) << np.uint64(shift)
        size[more] += 1
        more = more[(b & 0x80) != 0]
        shift += 7
    signed = (value >> np.uint64(1)).astype(np.int64) ^ -(value & np.uint64(1)).astype(np.int64)
    return signed, size


def _walk(buf: bytes, pos: int, end: int, count: int) -> tuple[list[int], list[int]]:
    """Start (after the length varint) and length of the next `count` records from `pos`, one
    by one, stopping at `end`; a record whose length varint does not end, or is negative, gets
    length -1 and ends the walk."""
    starts: list[int] = []
    lengths: list[int] = []
    add_start, add_length = starts.append, lengths.append
    for _ in range(count):
        if pos >= end:
            break
        b = buf[pos]
        if b < 0x80:  # records under 64 bytes
            pos += 1
            length = (b >> 1) ^ -(b & 1)
        elif pos + 1 < end and buf[pos + 1] < 0x80:  # under 8 KiB: most of __consumer_offsets
            z = (b & 0x7F) | (buf[pos + 1] << 7)
            pos += 2
            length = (z >> 1) ^ -(z & 1)
        else:
            try:
                length, pos = _long_varint(buf, pos, end)
            except (ValueError, IndexError):
                length = -1
        if length < 0:
            add_start(pos)
            add_length(-1)
            break
        add_start(pos)
        add_length(length)
        pos += length
    return starts, lengths


def _gather(buf: pa.Buffer, starts: np.ndarray, sizes: np.ndarray) -> pa.Array:
    """The byte strings buf[start:start+size] as an Arrow binary array; size -1 is null.

    The strings lie in order in `buf` with other bytes between them, so `buf` is read as an
    array of strings alternating between them and the gaps between them (new offsets, no copy
    of the bytes), and Arrow's `take` copies out every other one."""
    count = len(starts)
    present = sizes >= 0
    large = buf.size >= 1 << 31
    bounds = np.empty(2 * count + 1, np.int64 if large else np.int32)
    bounds[0:-1:2] = starts
    bounds[1::2] = starts + np.where(present, sizes, 0)
    bounds[-1] = bounds[-2] if count else 0
    kind = pa.large_binary() if large else pa.binary()
    pieces = pa.Array.from_buffers(kind, 2 * count, [None, pa.py_buffer(bounds), buf])
    taken = pieces.take(pa.array(np.arange(0, 2 * count, 2)))
    if not present.all():
        taken = pa.Array.from_buffers(kind, count, [pa.array(present).buffers()[1],
                                                    *taken.buffers()[1:]],
                                      null_count=int(count - present.sum()))
    return taken.cast(pa.binary()) if large else taken


def _empty() -> Columns:
    none = np.zeros(0, np.int64)
    return Columns(none, pa.array([], pa.binary()), pa.array([], pa.binary()), none,
                   np.zeros(0, np.int32))


def _corrupt(batches: Sequence[PlainBatch], index: int) -> CorruptBatch:
    return CorruptBatch(f"record batch at offset {batches[index].base_offset}: its records do "
                        "not follow the v2 layout (a record overruns its length, a varint does "
                        "not end, or bytes are left after the last record)", index)


def _append_records(batch: PlainBatch, fetch_offset: int, offsets: list[int],
                    keys: list[bytes | None], values: list[bytes | None],
                    stamps: list[int]) -> None:
    """Append the records of `batch` at or after `fetch_offset`, one by one; ValueError (or
    IndexError) where they do not follow the layout, with some of them appended."""
    buf, pos, base_offset = batch.data, batch.first_record, batch.base_offset
    size_of_buf, append_time, base_ts = len(buf), batch.append_time, batch.base_timestamp
    add_offset, add_key, add_value, add_stamp = (offsets.append, keys.append, values.append,
                                                 stamps.append)
    for _ in range(batch.count):
        # Every integer but the attributes is a zigzag varint. The reads of the one- and
        # two-byte ones that make up nearly all of them are written out field by field: a loop
        # over the fields, or a call per field, made this path 50% slower.
        b = buf[pos]
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            pos += 1
        elif buf[pos + 1] < 0x80:
            z = (b & 0x7F) | (buf[pos + 1] << 7)
            length = (z >> 1) ^ -(z & 1)
            pos += 2
        else:
            length, pos = _long_varint(buf, pos, size_of_buf)
        end = pos + length
        b = buf[pos + 1]  # after the attributes
        if b < 0x80:
            delta_ts = (b >> 1) ^ -(b & 1)
            pos += 2
        elif buf[pos + 2] < 0x80:
            z = (b & 0x7F) | (buf[pos + 2] << 7)
            delta_ts = (z >> 1) ^ -(z & 1)
            pos += 3
        else:
            delta_ts, pos = _long_varint(buf, pos + 1, size_of_buf, 10)
        b = buf[pos]
        if b < 0x80:
            delta_offset = (b >> 1) ^ -(b & 1)
            pos += 1
        elif buf[pos + 1] < 0x80:
            z = (b & 0x7F) | (buf[pos + 1] << 7)
            delta_offset = (z >> 1) ^ -(z & 1)
            pos += 2
        else:
            delta_offset, pos = _long_varint(buf, pos, size_of_buf)
        b = buf[pos]
        if b < 0x80:
            size = (b >> 1) ^ -(b & 1)
            pos += 1
        elif buf[pos + 1] < 0x80:
            z = (b & 0x7F) | (buf[pos + 1] << 7)
            size = (z >> 1) ^ -(z & 1)
            pos += 2
        else:
            size, pos = _long_varint(buf, pos, size_of_buf)
        if size >= 0:
            key = buf[pos:pos + size]
            pos += size
        else:
            key = None
        key_size = size
        b = buf[pos]
        if b < 0x80:
            size = (b >> 1) ^ -(b & 1)
            pos += 1
        elif buf[pos + 1] < 0x80:
            z = (b & 0x7F) | (buf[pos + 1] << 7)
            size = (z >> 1) ^ -(z & 1)
            pos += 2
        else:
            size, pos = _long_varint(buf, pos, size_of_buf)
        if size >= 0:
            value = buf[pos:pos + size]
            pos += size
        else:
            value = None
        if length < 0 or pos > end or end > size_of_buf or key_size < -1 or size < -1:
            raise ValueError(f"record of {length} bytes at byte {end - length}")
        pos = end
        if base_offset + delta_offset >= fetch_offset:
            add_offset(base_offset + delta_offset)
            add_key(key)
            add_value(value)
            add_stamp(append_time if append_time is not None else base_ts + delta_ts)
    if pos != size_of_buf:
        raise ValueError(f"{size_of_buf - pos} bytes after the last record")


def _long_varint(buf: bytes, pos: int, end: int, max_bytes: int = 5) -> tuple[int, int]:
    """A zigzag varint of any length at `pos` and the position after it; ValueError if it
    does not end within `max_bytes` and before `end`."""
    value = shift = 0
    for at in range(pos, min(pos + max_bytes, end)):
        b = buf[at]
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return (value >> 1) ^ -(value & 1), at + 1
        shift += 7
    raise ValueError(f"varint at byte {pos} does not end")


def _parse_each(batches: Sequence[PlainBatch], fetch_offset: int
                ) -> tuple[Columns, CorruptBatch | None]:
    """`parse` record by record, in Python: for fetches of few records."""
    offsets: list[int] = []
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    stamps: list[int] = []
    kinds: list[int] = []
    error = None
    for index, batch in enumerate(batches):
        before = len(offsets)
        try:
            _append_records(batch, fetch_offset, offsets, keys, values, stamps)
        except (ValueError, IndexError):
            del offsets[before:], keys[before:], values[before:], stamps[before:]
            error = _corrupt(batches, index)
            break
        kinds += [int(batch.append_time is not None)] * (len(offsets) - before)
    return Columns(np.array(offsets, np.int64), pa.array(keys, pa.binary()),
                   pa.array(values, pa.binary()), np.array(stamps, np.int64),
                   np.array(kinds, np.int32)), error


def parse(batches: Sequence[PlainBatch], fetch_offset: int) -> tuple[Columns, CorruptBatch | None]:
    """The records of `batches` (in order) at or after `fetch_offset`, up to the first corrupt
    batch, and that batch's error (None when all are sound)."""
    if not batches:
        return _empty(), None
    if sum(batch.count for batch in batches) < _VECTORISED_FROM:
        return _parse_each(batches, fetch_offset)
    joined = b"".join(batch.data for batch in batches) + bytes(_PAD)
    buf = np.frombuffer(joined, np.uint8)
    arrow_buf = pa.py_buffer(joined)
    sizes = np.fromiter((len(b.data) for b in batches), np.int64, len(batches))
    batch_start = np.zeros(len(batches), np.int64)
    np.cumsum(sizes[:-1], out=batch_start[1:])
    batch_end = batch_start + sizes
    counts = np.fromiter((b.count for b in batches), np.int64, len(batches))

    # 1. Where each record starts (after its length varint) and its length, batch by batch.
    total = int(counts.sum())
    starts = np.zeros(total, np.int64)
    lengths = np.full(total, -1, np.int64)
    first_slot = np.zeros(len(batches), np.int64)
    np.cumsum(counts[:-1], out=first_slot[1:])
    first_record = batch_start + np.fromiter((b.first_record for b in batches), np.int64,
                                             len(batches))
    cursor = first_record.copy()
    active = np.flatnonzero(counts > 0)
    step = 0
    limit = len(joined) - _PAD  # reads start at or before it, so stay inside the padding
    while len(active) and len(active) >= _PYTHON_WALK_BELOW:
        at = cursor[active]
        length, size = _varints(buf, np.minimum(at, limit), 5)
        bad = (size == 0) | (length < 0) | (at >= batch_end[active])
        slot = first_slot[active] + step
        good = ~bad
        starts[slot[good]] = at[good] + size[good]
        lengths[slot[good]] = length[good]
        cursor[active] = at + size + np.where(good, length, 0)
        step += 1
        active = active[good & (counts[active] > step)]
    for i in active.tolist():  # the few long batches left
        found_starts, found_lengths = _walk(joined, int(cursor[i]), int(batch_end[i]),
                                            int(counts[i] - step))
        slot = int(first_slot[i]) + step
        starts[slot:slot + len(found_starts)] = found_starts
        lengths[slot:slot + len(found_lengths)] = found_lengths

    if total == 0:
        bad = [i for i, b in enumerate(batches) if b.first_record != len(b.data)]
        return _empty(), _corrupt(batches, bad[0]) if bad else None

    # 2. The fields of every record at once.
    batch_of = np.repeat(np.arange(len(batches)), counts)
    record_end = starts + lengths
    broken = (lengths < 0) | (record_end > batch_end[batch_of])
    pos = np.where(broken, batch_start[batch_of], starts)  # keep reads of bad records in bounds
    pos = pos + 1  # attributes
    delta_ts, n1 = _varints(buf, np.minimum(pos, limit), 10)
    pos = pos + n1
    delta_offset, n2 = _varints(buf, np.minimum(pos, limit), 5)
    pos = pos + n2
    key_size, n3 = _varints(buf, np.minimum(pos, limit), 5)
    pos = pos + n3
    key_at = pos
    pos = pos + np.maximum(key_size, 0)
    value_size, n4 = _varints(buf, np.minimum(pos, limit), 5)
    pos = pos + n4
    value_at = pos
    pos = pos + np.maximum(value_size, 0)
    broken |= (n1 == 0) | (n2 == 0) | (n3 == 0) | (n4 == 0) | (pos > record_end)
    broken |= (key_size < -1) | (value_size < -1)

    # 3. The first bad batch: broken records, or bytes left after the last record.
    last = first_slot + counts - 1
    has_records = counts > 0
    tail = np.where(has_records, record_end[np.maximum(last, 0)], first_record)
    bad_batch = np.zeros(len(batches), bool)
    bad_batch[batch_of[broken]] = True
    bad_batch |= tail != batch_end
    error = None
    keep_batches = len(batches)
    if bad_batch.any():
        keep_batches = int(np.argmax(bad_batch))
        error = _corrupt(batches, keep_batches)
    kept = int(first_slot[keep_batches]) if keep_batches < len(batches) else total

    base_offset = np.fromiter((b.base_offset for b in batches), np.int64, len(batches))
    base_ts = np.fromiter((b.base_timestamp for b in batches), np.int64, len(batches))
    append = np.fromiter((-1 if b.append_time is None else b.append_time for b in batches),
                         np.int64, len(batches))
    stamped = np.fromiter((b.append_time is not None for b in batches), bool, len(batches))
    which = batch_of[:kept]
    offsets = base_offset[which] + delta_offset[:kept]
    timestamps = np.where(stamped[which], append[which], base_ts[which] + delta_ts[:kept])
    wanted = np.flatnonzero(offsets >= fetch_offset)
    if len(wanted) == kept:
        wanted = slice(None)
    keys = _gather(arrow_buf, key_at[:kept][wanted], key_size[:kept][wanted])
    values = _gather(arrow_buf, value_at[:kept][wanted], value_size[:kept][wanted])
    return Columns(offsets[wanted], keys, values, timestamps[wanted],
                   stamped[which][wanted].astype(np.int32)), error
