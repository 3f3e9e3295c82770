"""kafka-python's fetched record batches turned into columns in bulk.

kafka-python parses every record into a record object, then wraps it in a `ConsumerRecord` of 13
fields, computing header sizes and calling deserializers on the way. Reading 200,000 records into
the source's columns took 3.2 s of CPU that way on the 2-core reference machine, the slowest part
of a catch-up with the default client. The source needs five columns and nothing else, so its
consumers swap kafka-python's per-partition record iterator for `ColumnarPartitionRecords`, which
hands over the records of a whole fetch response as one `RecordColumns`: 1.0 s for the same
read. Everything around it stays kafka-python's: fetch sessions, leaders, errors,
positions and the aborted-transaction bookkeeping of read_committed.

Uncompressed v2 batches, what `__consumer_offsets` holds unless `offsets.topic.compression.codec`
is set, are parsed here field by field, with the one- and two-byte varints that make up nearly
every record read inline. Compressed and pre-0.11 (magic 0 and 1) batches go through
kafka-python's own record iteration and come out as the same columns.
"""
from __future__ import annotations

from dataclasses import dataclass

from kafka.errors import CorruptRecordError
from kafka.record.util import decode_varint

from streaming.sources.records import CREATE_TIME, LOG_APPEND_TIME

try:  # the per-partition iterator this module replaces; kafka-python 3.x keeps it here
    from kafka.consumer.fetcher import Fetcher, IsolationLevel
    _BASE = Fetcher.PartitionRecords
except (ImportError, AttributeError):  # another kafka-python: the stock path is used
    Fetcher = IsolationLevel = _BASE = None

_NO_COMPRESSION = 0


@dataclass
class RecordColumns:
    """Records from the fetch offset on, as columns. `offset` is the first of them (kafka-
    python's iterator skips items whose `offset` is below the fetch offset)."""

    offset: int
    offsets: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    timestamps_ms: list[int | None]
    timestamp_types: list[int]

    def truncate(self, count: int) -> None:
        """Keep the first `count` records."""
        for column in (self.offsets, self.keys, self.values, self.timestamps_ms,
                       self.timestamp_types):
            del column[count:]


def _varint_at(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint and the position after it, corruption reported as kafka-python does."""
    try:
        return decode_varint(buf, pos)
    except (ValueError, IndexError) as exc:
        raise CorruptRecordError(f"invalid varint at byte {pos} of a record batch: {exc!r}")


def parse_v2_records(buf: bytes, pos: int, count: int, base_offset: int, base_timestamp: int,
                     append_time: int | None, fetch_offset: int, out: RecordColumns) -> int:
    """Append the `count` records of an uncompressed v2 batch starting at `pos` to `out`,
    skipping those below `fetch_offset`. Returns the position after the last record.

    `append_time` is the batch's max timestamp when the broker stamped it (LogAppendTime), else
    None and each record's time is `base_timestamp` plus its delta. Headers are skipped by the
    record's length: the monitor does not use them."""
    add_offset, add_key = out.offsets.append, out.keys.append
    add_value, add_time = out.values.append, out.timestamps_ms.append
    try:
        for _ in range(count):
            # Record: length, attributes (int8), timestamp delta, offset delta, key, value,
            # headers; every integer but the attributes a zigzag varint. The varint reads are
            # written out one by one on purpose: a loop over the fields, or a call per field,
            # made the parse 50% slower (3.2 against 2.1 µs a record).
            b = buf[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            elif buf[pos + 1] < 0x80:
                z = (b & 0x7F) | (buf[pos + 1] << 7)
                length = (z >> 1) ^ -(z & 1)
                pos += 2
            else:
                length, pos = _varint_at(buf, pos)
            end = pos + length
            b = buf[pos + 1]
            if b < 0x80:
                delta_ts = (b >> 1) ^ -(b & 1)
                pos += 2
            elif buf[pos + 2] < 0x80:
                z = (b & 0x7F) | (buf[pos + 2] << 7)
                delta_ts = (z >> 1) ^ -(z & 1)
                pos += 3
            else:
                delta_ts, pos = _varint_at(buf, pos + 1)
            b = buf[pos]
            if b < 0x80:
                delta_offset = (b >> 1) ^ -(b & 1)
                pos += 1
            elif buf[pos + 1] < 0x80:
                z = (b & 0x7F) | (buf[pos + 1] << 7)
                delta_offset = (z >> 1) ^ -(z & 1)
                pos += 2
            else:
                delta_offset, pos = _varint_at(buf, pos)
            b = buf[pos]
            if b < 0x80:
                size = (b >> 1) ^ -(b & 1)
                pos += 1
            elif buf[pos + 1] < 0x80:
                z = (b & 0x7F) | (buf[pos + 1] << 7)
                size = (z >> 1) ^ -(z & 1)
                pos += 2
            else:
                size, pos = _varint_at(buf, pos)
            if size >= 0:
                key = buf[pos:pos + size]
                pos += size
            else:
                key = None
            b = buf[pos]
            if b < 0x80:
                size = (b >> 1) ^ -(b & 1)
                pos += 1
            elif buf[pos + 1] < 0x80:
                z = (b & 0x7F) | (buf[pos + 1] << 7)
                size = (z >> 1) ^ -(z & 1)
                pos += 2
            else:
                size, pos = _varint_at(buf, pos)
            if size >= 0:
                value = buf[pos:pos + size]
                pos += size
            else:
                value = None
            if length < 0 or pos > end:
                raise CorruptRecordError(
                    f"record of {length} bytes at offset {base_offset + delta_offset} overruns "
                    "its length")
            pos = end
            if base_offset + delta_offset >= fetch_offset:
                add_offset(base_offset + delta_offset)
                add_key(key)
                add_value(value)
                add_time(append_time if append_time is not None else base_timestamp + delta_ts)
    except IndexError as exc:
        raise CorruptRecordError(f"record batch at offset {base_offset} ends inside a record "
                                 f"({exc})") from None
    if pos != len(buf):
        raise CorruptRecordError(f"record batch at offset {base_offset}: {len(buf) - pos} bytes "
                                 "left after its last record")
    return pos


def _iterated(batch, fetch_offset: int, check_crcs: bool, out: RecordColumns) -> None:
    """The records of a compressed or pre-v2 batch, through kafka-python's record iteration."""
    for record in batch:
        if check_crcs and not record.validate_crc():
            raise CorruptRecordError(f"record at offset {record.offset} failed its crc check")
        if record.offset >= fetch_offset:
            out.offsets.append(record.offset)
            out.keys.append(record.key)
            out.values.append(record.value)
            out.timestamps_ms.append(record.timestamp)


def add_batch(batch, fetch_offset: int, check_crcs: bool, out: RecordColumns) -> None:
    """Append the records of one data batch at or after `fetch_offset` to `out`."""
    kind = batch.timestamp_type if batch.magic >= 1 else CREATE_TIME
    kind = kind if kind is not None else CREATE_TIME
    before = len(out.offsets)
    try:
        if batch.magic == 2 and batch.compression_type == _NO_COMPRESSION:
            # kafka-python keeps the batch's bytes and the position of its first record;
            # reading them leaves the batch object untouched.
            parse_v2_records(bytes(batch._buffer), batch._pos, batch._num_records,
                             batch.base_offset, batch.first_timestamp,
                             batch.max_timestamp if kind == LOG_APPEND_TIME else None,
                             fetch_offset, out)
        else:
            _iterated(batch, fetch_offset, check_crcs, out)
    except Exception:
        # None of a corrupt batch: the next fetch offset stays before it, and records handed
        # over past that offset would be read again on the retry.
        out.truncate(before)
        raise
    out.timestamp_types += [kind] * (len(out.offsets) - before)


if _BASE is not None:
    class ColumnarPartitionRecords(_BASE):
        """kafka-python's per-partition record iterator, yielding the records of a whole fetch
        response as one `RecordColumns` (records up to a corrupt batch first, then the error).

        The read_committed rules are Kafka's (KIP-98): a transactional batch is dropped when its
        producer has an aborted transaction that began at or before the batch's last offset and
        whose abort marker has not been passed yet; control batches (the markers) are never
        returned. The bookkeeping itself is kafka-python's (its aborted-transaction queue)."""

        def _unpack_records(self, tp, records, key_deserializer, value_deserializer):
            out = RecordColumns(0, [], [], [], [], [])
            try:
                self._add_batches(tp, records, out)
            except Exception as exc:  # what came before the bad batch is handed over first
                failure = exc
            else:
                failure = None
            if out.offsets:
                out.offset = out.offsets[0]
                self.records_read += len(out.offsets)
                yield out
            if failure is not None:
                raise failure
            self.drain()

        def _add_batches(self, tp, records, out: RecordColumns) -> None:
            read_committed = self.isolation_level == IsolationLevel.READ_COMMITTED
            batch = records.next_batch()
            while batch is not None:
                if self.check_crcs and not batch.validate_crc():
                    raise CorruptRecordError(f"record batch of {tp} at offset "
                                             f"{batch.base_offset} failed its crc check")
                skip = False
                if batch.magic == 2:
                    self.leader_epoch = batch.leader_epoch
                    skip = batch.is_control_batch
                    if read_committed and batch.has_producer_id():
                        self._consume_aborted_transactions_up_to(batch.last_offset)
                        if self._contains_abort_marker(batch):
                            self.aborted_producer_ids.discard(batch.producer_id)
                        elif self._is_batch_aborted(batch):
                            skip = True
                if not skip:
                    add_batch(batch, self.fetch_offset, self.check_crcs, out)
                    self.bytes_read += batch.size_in_bytes
                # After a v2 batch the next fetch starts past its last offset, even when
                # compaction removed its last records.
                after = (batch.next_offset if batch.magic == 2
                         else (out.offsets[-1] + 1 if out.offsets else 0))
                self.next_fetch_offset = max(self.next_fetch_offset, after)
                batch = records.next_batch()
else:
    ColumnarPartitionRecords = None


def use_columnar_records(consumer) -> bool:
    """Make `consumer` (a KafkaConsumer) return `RecordColumns` from `poll` instead of records.
    False when this kafka-python has no such hook (its records then come as usual)."""
    fetcher = getattr(consumer, "_fetcher", None)
    if ColumnarPartitionRecords is None or not isinstance(getattr(fetcher, "PartitionRecords",
                                                                  None), type):
        return False
    fetcher.PartitionRecords = ColumnarPartitionRecords
    return True
