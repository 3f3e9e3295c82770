"""The columnar record iterator of the kafka-python client against kafka-python's own: the same
records (offset, key, value, timestamp, timestamp type) and the same next fetch offset, for every
batch kind a fetch can return. The batches are built with kafka-python's record builders; control
batches, LogAppendTime and corruption are made by editing the built bytes (CRC recomputed)."""
from __future__ import annotations

import struct
from collections import namedtuple

import pytest
from crc32c import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka import KafkaConsumer, TopicPartition
from kafka.consumer.fetcher import Fetcher, IsolationLevel
from kafka.errors import CorruptRecordError
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from tests.support.parse_paths import PATHS, path
from streaming.kafka.batches import (ColumnarPartitionRecords, RecordColumns,
                                                    concat_columns, use_columnar_records)

TP = TopicPartition("__consumer_offsets", 7)
T0 = 1_763_000_000_000
Aborted = namedtuple("Aborted", "producer_id first_offset")
GZIP = 1


@pytest.fixture(autouse=True, params=list(PATHS))
def parse_path(request):
    """Every test here on each way through the batch parser (small inputs would take one)."""
    with path(request.param):
        yield


def v2_batch(base_offset, records, *, compression=0, producer_id=-1, transactional=False,
             control=False, log_append_time=False, gaps=()):
    """A v2 batch: records are (timestamp, key, value, headers); offsets in `gaps` are left out
    (as compaction does), the offset deltas keep counting."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=compression,
                                        is_transactional=transactional, producer_id=producer_id,
                                        producer_epoch=0 if producer_id >= 0 else -1,
                                        base_sequence=0 if producer_id >= 0 else -1,
                                        batch_size=1 << 30)
    delta = 0
    for timestamp, key, value, headers in records:
        while delta in gaps:
            delta += 1
        assert builder.append(delta, timestamp=timestamp, key=key, value=value,
                              headers=headers) is not None
        delta += 1
    raw = bytearray(builder.build())
    struct.pack_into(">q", raw, 0, base_offset)
    attributes = struct.unpack_from(">h", raw, 21)[0]
    if control:
        attributes |= 0x20
    if log_append_time:
        attributes |= 0x08
    struct.pack_into(">h", raw, 21, attributes)
    return _with_crc(raw)


def _with_crc(raw: bytearray) -> bytes:
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    return bytes(raw)


def marker(offset, producer_id, commit):
    """A transaction marker: a control batch with one record (key: version, type)."""
    return v2_batch(offset, [(T0, struct.pack(">hh", 0, 1 if commit else 0),
                              struct.pack(">hi", 0, 5), [])],
                    producer_id=producer_id, transactional=True, control=True)


def legacy_batch(magic, base_offset, records, compression=0):
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=compression,
                                       batch_size=1 << 30)
    for i, (timestamp, key, value, _headers) in enumerate(records):
        builder.append(base_offset + i if not compression else i,
                       timestamp=timestamp if magic else None, key=key, value=value)
    raw = bytearray(builder.build())
    if compression:  # the wrapper message carries the last inner offset
        struct.pack_into(">q", raw, 0, base_offset + len(records) - 1)
    return bytes(raw)


def _iterator(cls, raw, fetch_offset, committed=False, aborted=()):
    return cls(fetch_offset, TP, MemoryRecords(raw), check_crcs=True,
               isolation_level=(IsolationLevel.READ_COMMITTED if committed
                                else IsolationLevel.READ_UNCOMMITTED),
               aborted_transactions=list(aborted))


def stock(raw, fetch_offset=0, **kw):
    it = _iterator(Fetcher.PartitionRecords, raw, fetch_offset, **kw)
    rows = []
    while it:  # as kafka-python's fetcher takes from it: until drained, or an error is raised
        rows += [(r.offset, r.key, r.value, r.timestamp,
                  r.timestamp_type if r.timestamp_type is not None else 0) for r in it.take()]
    return rows, it.next_fetch_offset


def columnar(raw, fetch_offset=0, **kw):
    it = _iterator(ColumnarPartitionRecords, raw, fetch_offset, **kw)
    rows = []
    while it:  # as kafka-python's fetcher takes from it: until drained, or an error is raised
        taken = it.take()
        assert len(taken) <= 1  # the whole fetch response at once
        for cols in taken:
            offsets, keys, values, stamps, kinds = concat_columns(cols.chunks)
            assert isinstance(cols, RecordColumns) and cols.offset == offsets[0]
            rows += list(zip(offsets.tolist(), keys.to_pylist(), values.to_pylist(),
                             stamps.to_pylist(), kinds.tolist()))
    return rows, it.next_fetch_offset


def same_as_stock(raw, **kw):
    mine, theirs = columnar(raw, **kw), stock(raw, **kw)
    assert mine == theirs
    return mine


def commits(n, start_ts=T0, step_ms=3):
    return [(start_ts + i * step_ms, b"key-%d" % i, b"value-%d" % i, []) for i in range(n)]


def test_uncompressed_batches_give_kafka_pythons_records():
    raw = v2_batch(100, commits(25)) + v2_batch(125, commits(3, step_ms=400_000))
    rows, next_offset = same_as_stock(raw)
    assert [r[0] for r in rows] == list(range(100, 128))
    assert rows[0] == (100, b"key-0", b"value-0", T0, 0)
    assert rows[-1][3] == T0 + 2 * 400_000  # a two-byte timestamp delta
    assert next_offset == 128


def test_fetch_offset_inside_a_batch_skips_the_records_before_it():
    raw = v2_batch(100, commits(25)) + v2_batch(125, commits(5))
    rows, next_offset = same_as_stock(raw, fetch_offset=110)
    assert [r[0] for r in rows] == list(range(110, 130)) and next_offset == 130


def test_compacted_batches_keep_their_offsets_and_move_past_their_last_offset():
    raw = v2_batch(0, commits(4), gaps={1, 5})  # offsets 0, 2, 3, 4
    rows, next_offset = same_as_stock(raw)
    assert [r[0] for r in rows] == [0, 2, 3, 4] and next_offset == 5


def test_null_keys_values_headers_and_long_fields():
    records = [(T0, None, b"v", []), (T0 + 1, b"k", None, [("h", b"x" * 300)]),
               (T0 - 5, b"k" * 200, b"v" * 70_000, [("a", None), ("b", b"")])]
    rows, _ = same_as_stock(v2_batch(42, records))
    assert [(r[1], r[2]) for r in rows] == [(None, b"v"), (b"k", None),
                                           (b"k" * 200, b"v" * 70_000)]
    assert rows[2][3] == T0 - 5  # a negative timestamp delta


def test_log_append_time_gives_every_record_the_brokers_time():
    rows, _ = same_as_stock(v2_batch(0, commits(3), log_append_time=True))
    assert {(r[3], r[4]) for r in rows} == {(T0 + 6, 1)}


def test_compressed_and_pre_v2_batches_go_through_kafka_pythons_iteration():
    raw = (legacy_batch(0, 0, commits(2)) + legacy_batch(1, 2, commits(2))
           + legacy_batch(1, 4, commits(3), compression=GZIP)
           + v2_batch(7, commits(4), compression=GZIP))
    rows, next_offset = same_as_stock(raw)
    assert [r[0] for r in rows] == list(range(11)) and next_offset == 11
    assert rows[0][3] is None and rows[2][3] == T0  # magic 0 has no timestamps


def test_read_committed_drops_aborted_transactions_and_all_markers():
    raw = (v2_batch(0, commits(2), producer_id=7, transactional=True)     # aborted
           + v2_batch(2, commits(2), producer_id=8, transactional=True)   # committed
           + marker(4, 7, commit=False) + marker(5, 8, commit=True)
           + v2_batch(6, commits(1), producer_id=7, transactional=True)   # committed later
           + marker(7, 7, commit=True) + v2_batch(8, commits(2)))
    aborted = [Aborted(7, 0)]
    rows, next_offset = same_as_stock(raw, committed=True, aborted=aborted)
    assert [r[0] for r in rows] == [2, 3, 6, 8, 9] and next_offset == 10
    # read_uncommitted keeps the aborted records; markers are never records.
    rows, _ = same_as_stock(raw, aborted=aborted)
    assert [r[0] for r in rows] == [0, 1, 2, 3, 6, 8, 9]


DAMAGE = ["bad_crc", "record_overruns", "last_record_cut"]


def damaged(base_offset: int, how: str) -> bytes:
    """A batch of three records with a wrong CRC, with its first record claiming more bytes than
    it has, or with its last record cut short (the batch's length and CRC made to match)."""
    raw = bytearray(v2_batch(base_offset, commits(3)))
    if how == "bad_crc":
        raw[-1] ^= 0xFF
        return bytes(raw)
    if how == "record_overruns":
        raw[61] = 0x7E  # the first record claims 63 bytes: it runs into the next one
    else:
        raw = raw[:-2]
        struct.pack_into(">i", raw, 8, len(raw) - 12)
    return _with_crc(raw)


@pytest.mark.parametrize("how", DAMAGE)
def test_corrupt_batches_raise_as_kafka_python_does(how):
    for read in (stock, columnar):
        with pytest.raises(CorruptRecordError):
            read(damaged(0, how))


@pytest.mark.parametrize("how", DAMAGE)
def test_records_before_a_corrupt_batch_come_first_then_the_error(how):
    raw = v2_batch(0, commits(3)) + damaged(3, how)
    it = _iterator(ColumnarPartitionRecords, raw, 0)
    first = it.take()
    # Nothing of the bad batch, not even its readable first records: the position stays before
    # it, so they would be read twice.
    assert [concat_columns(c.chunks)[0].tolist() for c in first] == [[0, 1, 2]]
    assert it.next_fetch_offset == 3
    with pytest.raises(CorruptRecordError):
        it.take()


def record_strategy(max_key: int, max_value: int):
    """Records as `v2_batch` takes them: (timestamp delta, key, value, headers), with null keys
    and values, headers, and deltas of any sign and size."""
    return st.tuples(st.integers(-(1 << 40), 1 << 40),
                     st.none() | st.binary(max_size=max_key),
                     st.none() | st.binary(max_size=max_value),
                     st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=20)),
                              max_size=2))


record = record_strategy(300, 20_000)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # the same path for all
@given(batches=st.lists(st.lists(record, min_size=1, max_size=40), min_size=1, max_size=4),
       skip=st.integers(0, 50), spread=st.sampled_from([1, 100, 20_000]))
def test_any_uncompressed_batches_read_the_same(batches, skip, spread):
    raw, base = b"", 10
    for records in batches:
        # Offset deltas grow past one varint byte when records are spread out.
        gaps = {d for d in range(spread * len(records)) if d % spread} if spread > 1 else ()
        raw += v2_batch(base, [(T0 + ts, k, v, h) for ts, k, v, h in records], gaps=gaps)
        last = base + spread * (len(records) - 1)
        base = last + 6
    # A broker answers a fetch with the batch holding the fetch offset and those after it.
    rows, _ = same_as_stock(raw, fetch_offset=min(10 + skip, last))
    assert rows


def test_consumers_of_this_kafka_python_use_the_columnar_iterator():
    consumer = KafkaConsumer(bootstrap_servers="127.0.0.1:9", api_version=(2, 5))
    try:
        assert use_columnar_records(consumer)
        assert consumer._fetcher.PartitionRecords is ColumnarPartitionRecords
    finally:
        consumer.close()
