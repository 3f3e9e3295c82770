"""The parser of uncompressed v2 batches against kafka-python's own record iteration: the same
offsets, keys, values and timestamps for any records, on each of its three paths (numpy, numpy
with record starts walked in Python, record by record in Python); corrupt batches end the
records at the batch before them."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch

from streaming.kafka.batches import plain_batch
from streaming.kafka.v2_record_columns import CorruptBatch, PlainBatch, parse
from tests.support.parse_paths import PATHS, path
from tests.unit.test_kafka_python_batches import T0, _with_crc, commits, record_strategy, v2_batch


@pytest.fixture(params=list(PATHS))
def walk(request):
    """Each path through the parser, whatever the input's size."""
    with path(request.param):
        yield


def plain(raw: bytes) -> PlainBatch:
    found = plain_batch(DefaultRecordBatch(raw))
    assert found is not None
    return found


def kafka_pythons(raws: list[bytes], fetch_offset: int) -> list[tuple]:
    return [(r.offset, r.key, r.value, r.timestamp, r.timestamp_type)
            for raw in raws for r in DefaultRecordBatch(raw) if r.offset >= fetch_offset]


def rows(columns) -> list[tuple]:
    return list(zip(columns.offsets.tolist(), columns.keys.to_pylist(),
                    columns.values.to_pylist(), columns.timestamps_ms.tolist(),
                    columns.timestamp_types.tolist()))


record = record_strategy(200, 3_000)


@settings(max_examples=40, deadline=None)
@given(batches=st.lists(st.lists(record, min_size=0, max_size=30), min_size=1, max_size=40),
       skip=st.integers(0, 60), way=st.sampled_from(list(PATHS)),
       stamped=st.lists(st.booleans(), min_size=40, max_size=40))
def test_any_batches_parse_as_kafka_python_reads_them(batches, skip, way, stamped):
    raws, base = [], 10
    for records, append_time in zip(batches, stamped):
        if not records:
            continue
        raws.append(v2_batch(base, [(T0 + ts, k, v, h) for ts, k, v, h in records],
                             log_append_time=append_time))
        base += len(records) + 3
    if not raws:
        return
    with path(way):
        columns, error = parse([plain(raw) for raw in raws], 10 + skip)
    assert error is None
    assert rows(columns) == kafka_pythons(raws, 10 + skip)


def test_long_batches_among_short_ones(walk):
    raws = [v2_batch(i * 1000, commits(500 if i % 7 == 0 else 3)) for i in range(30)]
    # Lengths of three varint bytes, in a short batch and in a long one.
    raws[3] = v2_batch(3000, [(T0, b"k", b"v" * 70_000, []), (T0, None, b"w", [])])
    raws[7] = v2_batch(7000, commits(499) + [(T0, b"k" * 9_000, b"v" * 70_000, [])])
    columns, error = parse([plain(raw) for raw in raws], 0)
    assert error is None and rows(columns) == kafka_pythons(raws, 0)
    assert len(columns.offsets) == 4 * 500 + 24 * 3 + 2 + 500


def endless_varint(base_offset: int) -> bytes:
    """Three records, the second of which has a length varint that never ends."""
    raw = bytearray(v2_batch(base_offset, commits(3)))
    first_length = raw[61] >> 1
    second = 61 + 1 + first_length
    raw[second:second + 6] = b"\xff" * 6
    return _with_crc(raw)


def left_over(base_offset: int) -> bytes:
    """A batch with two bytes after its last record (its length made to match)."""
    raw = bytearray(v2_batch(base_offset, commits(3))) + b"\x00\x00"
    struct.pack_into(">i", raw, 8, len(raw) - 12)
    return _with_crc(raw)


def overrun(base_offset: int) -> bytes:
    """A batch whose first record claims fewer bytes than its fields take."""
    raw = bytearray(v2_batch(base_offset, commits(3)))
    raw[61] -= 4  # two bytes fewer (zigzag)
    return _with_crc(raw)


@pytest.mark.parametrize("damage", [endless_varint, left_over, overrun])
def test_a_corrupt_batch_ends_the_records_before_it(walk, damage):
    good = [v2_batch(i * 3, commits(3)) for i in range(30)]
    raws = good + [damage(90)] + [v2_batch(93, commits(3))]
    columns, error = parse([plain(raw) for raw in raws], 0)
    assert isinstance(error, CorruptBatch) and error.index == 30
    assert "offset 90" in str(error)
    assert rows(columns) == kafka_pythons(good, 0)


def test_a_fetch_offset_past_every_record_gives_none(walk):
    raws = [v2_batch(i * 3, commits(3)) for i in range(30)]
    columns, error = parse([plain(raw) for raw in raws], 10_000)
    assert error is None and len(columns.offsets) == 0 and len(columns.keys) == 0


@settings(max_examples=300, deadline=None)
@given(patches=st.lists(st.tuples(st.integers(0, 10_000), st.binary(min_size=1, max_size=6)),
                        min_size=1, max_size=3),
       victim=st.sampled_from([3, 5]))
def test_damaged_bytes_read_the_same_every_way_or_are_reported(patches, victim):
    """Any bytes of a batch's record area overwritten (the last batch's too, where a length
    read as huge points past everything): never a crash; the batches before the damaged one
    come out as kafka-python reads them; the damaged one reads, or is reported, the same way on
    every path."""
    raws = [v2_batch(i * 3, commits(3)) for i in range(6)]
    batches = [plain(raw) for raw in raws]
    data = bytearray(batches[victim].data)
    first = batches[victim].first_record
    for at, patch in patches:
        at = first + at % (len(data) - first)
        data[at:at + len(patch)] = patch[:len(data) - at]
    batches[victim] = PlainBatch(bytes(data), first, 3, victim * 3, T0, None)
    outcomes = []
    for way in PATHS:
        with path(way):
            columns, error = parse(batches, 0)
        outcomes.append((rows(columns), None if error is None else error.index))
    assert outcomes[0] == outcomes[1] == outcomes[2]
    found, error_at = outcomes[0]
    before = kafka_pythons(raws[:victim], 0)
    assert found[:len(before)] == before
    assert error_at in (None, victim)
    if error_at is not None:
        assert len(found) == len(before)
