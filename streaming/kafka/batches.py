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
is set, are held back and parsed together, all those of a fetch response at once, into numpy and
Arrow columns (streaming/kafka/v2_record_columns.py), so no Python object is made per record.
Compressed and pre-0.11 (magic 0 and 1) batches go through kafka-python's own record iteration
and come out as the same columns.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from kafka.errors import CorruptRecordError

from streaming.kafka.records import CREATE_TIME, LOG_APPEND_TIME, as_arrow
from streaming.kafka.v2_record_columns import PlainBatch, parse

try:  # the per-partition iterator this module replaces; kafka-python 3.x keeps it here
    from kafka.consumer.fetcher import Fetcher, IsolationLevel
    _BASE = Fetcher.PartitionRecords
except (ImportError, AttributeError):  # another kafka-python: the stock path is used
    Fetcher = IsolationLevel = _BASE = None

_NO_COMPRESSION = 0


class RecordColumns:
    """Records from the fetch offset on, in chunks of columns (offsets, keys, values,
    timestamps_ms, timestamp_types) that `concat_columns` joins into one. `offset` is the first
    offset (kafka-python's iterator skips items whose `offset` is below the fetch offset)."""

    def __init__(self) -> None:
        self.chunks: list[tuple] = []
        self.offset = 0

    def __len__(self) -> int:
        return sum(len(chunk[0]) for chunk in self.chunks)

    def add(self, offsets: np.ndarray, keys: pa.Array, values: pa.Array, timestamps_ms,
            timestamp_types: np.ndarray) -> None:
        if len(offsets):
            self.chunks.append((offsets, keys, values, timestamps_ms, timestamp_types))

    def last_offset(self) -> int | None:
        return int(self.chunks[-1][0][-1]) if self.chunks else None


def concat_columns(chunks: list[tuple]) -> tuple[np.ndarray, pa.Array, pa.Array, pa.Array,
                                                 np.ndarray]:
    """Chunks of (offsets, keys, values, timestamps_ms, timestamp_types) as one."""
    if len(chunks) == 1:
        offsets, keys, values, stamps, kinds = chunks[0]
        return offsets, keys, values, as_arrow(stamps, pa.int64()), kinds
    if not chunks:
        return (np.zeros(0, np.int64), pa.array([], pa.binary()), pa.array([], pa.binary()),
                pa.array([], pa.int64()), np.zeros(0, np.int32))
    offsets, keys, values, stamps, kinds = zip(*chunks)
    return (np.concatenate(offsets), pa.concat_arrays(keys), pa.concat_arrays(values),
            pa.concat_arrays([as_arrow(s, pa.int64()) for s in stamps]), np.concatenate(kinds))


def _iterated(batch, fetch_offset: int, check_crcs: bool, out: RecordColumns) -> None:
    """The records of a compressed or pre-v2 batch, through kafka-python's record iteration."""
    kind = batch.timestamp_type if batch.magic >= 1 else CREATE_TIME
    kind = kind if kind is not None else CREATE_TIME
    offsets, keys, values, stamps = [], [], [], []
    for record in batch:
        if check_crcs and not record.validate_crc():
            raise CorruptRecordError(f"record at offset {record.offset} failed its crc check")
        if record.offset >= fetch_offset:
            offsets.append(record.offset)
            keys.append(record.key)
            values.append(record.value)
            stamps.append(record.timestamp)
    out.add(np.array(offsets, np.int64), pa.array(keys, pa.binary()),
            pa.array(values, pa.binary()), stamps, np.full(len(offsets), kind, np.int32))


def plain_batch(batch) -> PlainBatch | None:
    """An uncompressed v2 data batch as `PlainBatch`; None for other batches."""
    if batch.magic != 2 or batch.compression_type != _NO_COMPRESSION:
        return None
    # kafka-python keeps each batch's bytes in a buffer of its own, with the position of its
    # first record; reading them leaves the batch object untouched.
    stamped = batch.timestamp_type == LOG_APPEND_TIME
    return PlainBatch(bytes(batch._buffer), batch._pos, batch._num_records, batch.base_offset,
                      batch.first_timestamp, batch.max_timestamp if stamped else None)


if _BASE is not None:
    class ColumnarPartitionRecords(_BASE):
        """kafka-python's per-partition record iterator, yielding the records of a whole fetch
        response as one `RecordColumns` (records up to a corrupt batch first, then the error).

        The read_committed rules are Kafka's (KIP-98): a transactional batch is dropped when its
        producer has an aborted transaction that began at or before the batch's last offset and
        whose abort marker has not been passed yet; control batches (the markers) are never
        returned. The bookkeeping itself is kafka-python's (its aborted-transaction queue)."""

        def _unpack_records(self, tp, records, key_deserializer, value_deserializer):
            out = RecordColumns()
            try:
                self._add_batches(tp, records, out)
            except Exception as exc:  # what came before the bad batch is handed over first
                failure = exc
            else:
                failure = None
            count = len(out)
            if count:
                out.offset = int(out.chunks[0][0][0])
                self.records_read += count
                yield out
            if failure is not None:
                raise failure
            self.drain()

        def _add_batches(self, tp, records, out: RecordColumns) -> None:
            read_committed = self.isolation_level == IsolationLevel.READ_COMMITTED
            # Uncompressed v2 batches wait here to be parsed together; the next fetch offset
            # moves past each of them only once its records are in `out`.
            pending: list[tuple[PlainBatch, int, int]] = []
            batch = records.next_batch()
            while batch is not None:
                if self.check_crcs and not batch.validate_crc():
                    self._flush(pending, out)
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
                plain = None if skip else plain_batch(batch)
                if plain is not None:
                    pending.append((plain, batch.next_offset, batch.size_in_bytes))
                else:
                    self._flush(pending, out)
                    if not skip:
                        _iterated(batch, self.fetch_offset, self.check_crcs, out)
                        self.bytes_read += batch.size_in_bytes
                    # After a v2 batch the next fetch starts past its last offset, even when
                    # compaction removed its last records (pending batches: in `_flush`).
                    after = (batch.next_offset if batch.magic == 2
                             else (out.last_offset() + 1 if len(out) else 0))
                    self.next_fetch_offset = max(self.next_fetch_offset, after)
                batch = records.next_batch()
            self._flush(pending, out)

        def _flush(self, pending: list[tuple[PlainBatch, int, int]], out: RecordColumns) -> None:
            """Parse the pending batches into `out`; past a corrupt one, raise its error."""
            if not pending:
                return
            columns, error = parse([plain for plain, _, _ in pending], self.fetch_offset)
            out.add(columns.offsets, columns.keys, columns.values, columns.timestamps_ms,
                    columns.timestamp_types)
            kept = pending if error is None else pending[:error.index]
            for _plain, after, size in kept:
                self.next_fetch_offset = max(self.next_fetch_offset, after)
                self.bytes_read += size
            pending.clear()
            if error is not None:
                raise CorruptRecordError(str(error))
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
