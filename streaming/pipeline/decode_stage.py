"""Stage 1 of the job: raw `__consumer_offsets` rows -> rows keyed by group (in our sources' read
tasks, or a mapInArrow after Spark's Kafka source).

Records are decoded column-wise by `coordinator.batch_decode` (offset commits fully, the other
types through their canonical dict): that finds each record's group, drops the records that do
not decode (they are only counted) and the offset commits a later one overrides
(streaming.pipeline.commit_compaction). What goes on to the state stage (STAGE_SCHEMA) is the
group and the record's position, then for an offset commit or its tombstone its decoded fields as
typed columns (the offsets lane: they are never decoded again nor made Python objects), and for
any other record its raw key and value, which the state stage's reducer decodes (the group lane:
a few records per rebalance).

Counters travel as extra rows under `MONITOR_KEY` (streaming.pipeline.monitor_rows), so the state stage
keeps them in Spark's state store next to the groups, where a replayed micro-batch cannot count
them twice.
"""
from __future__ import annotations

from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from coordinator.batch_decode import decode_batch
from streaming.pipeline.commit_compaction import OFFSET_COMMIT_TYPES, superseded_commits_dropped
from streaming.pipeline.monitor_rows import COUNT_RECORDS, COUNT_SKIPPED, MONITOR_KEY, PROGRESS
from streaming.pipeline.commit_columns import COMMIT_COLUMNS
from streaming.pipeline.stage_schema import STAGE_DDL, STAGE_SCHEMA


# The source columns the stage reads (of Spark's Kafka schema).
DECODE_INPUT_COLUMNS = ("key", "value", "partition", "offset", "timestamp")

# The decoded rows inside the stage: what finding groups and compaction need.
DECODED_SCHEMA = pa.schema([
    *[f for f in STAGE_SCHEMA if f.name not in COMMIT_COLUMNS],
    ("type", pa.int16()), ("type_name", pa.string()),
    ("topic", pa.string()), ("partition", pa.int32()), ("topic_id", pa.string()),
    ("is_tombstone", pa.bool_()), ("record_json", pa.string()),
    ("offset", pa.int64()), ("leader_epoch", pa.int32()), ("metadata", pa.string()),
    ("commit_timestamp", pa.int64()),
])
# The offsets lane's typed columns, from the decoded ones.
_COMMIT_SOURCES = dict(zip(COMMIT_COLUMNS, ("topic", "partition", "offset", "leader_epoch", "metadata",
                                            "commit_timestamp", "topic_id")))


def _timestamp_ms(column: pa.Array) -> pa.Array:
    if pa.types.is_timestamp(column.type):
        return pc.cast(pc.cast(column, pa.timestamp("ms", tz=column.type.tz)), pa.int64())
    return pc.cast(column, pa.int64())


def decode_arrow_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """One source batch (Spark's Kafka schema) -> the stage's rows plus monitor rows."""
    data, monitor = decoded_rows(batch)
    return _concat([_narrow(data), monitor], STAGE_SCHEMA)


def decoded_rows(batch: pa.RecordBatch) -> tuple[pa.RecordBatch, pa.RecordBatch]:
    """The records that decode (DECODED_SCHEMA), and the monitor rows counting them all."""
    if batch.num_rows == 0:
        return _EMPTY_DECODED, _EMPTY
    decoded = decode_batch(batch.column("key"), batch.column("value"))
    positions = {
        "o_partition": pc.cast(batch.column("partition"), pa.int32()),
        "o_offset": pc.cast(batch.column("offset"), pa.int64()),
        "ts_ms": _timestamp_ms(batch.column("timestamp")),
        "key": batch.column("key"), "value": batch.column("value"),
    }
    errors = decoded.column("error").combine_chunks()
    good = pc.is_null(errors)
    columns = {}
    for field in DECODED_SCHEMA:
        if field.name in positions:
            columns[field.name] = positions[field.name]
        else:
            column = decoded.column(field.name)
            columns[field.name] = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    data = pa.RecordBatch.from_pydict(columns, schema=DECODED_SCHEMA).filter(good)
    monitor = _monitor_rows(decoded.column("type_name").combine_chunks(), errors, good,
                            positions["o_partition"], positions["o_offset"])
    return data, monitor


def _empty(schema: pa.Schema) -> pa.RecordBatch:
    # Not from_pylist or pa.array: they import pandas (0.3 s), and the Python processes Spark
    # starts to plan a query import this module without needing pandas.
    return pa.RecordBatch.from_arrays([pa.nulls(0, field.type) for field in schema], schema=schema)


_EMPTY = _empty(STAGE_SCHEMA)
_EMPTY_DECODED = _empty(DECODED_SCHEMA)


def _concat(batches: list[pa.RecordBatch], schema: pa.Schema) -> pa.RecordBatch:
    batches = [b for b in batches if b.num_rows]
    if len(batches) <= 1:
        return batches[0] if batches else _empty(schema)
    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]


def _narrow(decoded: pa.RecordBatch) -> pa.RecordBatch:
    """The stage's rows: an offset commit's typed columns, any other record's raw bytes."""
    commit = pc.is_in(decoded.column("type"), pa.array(OFFSET_COMMIT_TYPES, pa.int16()))
    other = pc.invert(commit)
    columns = []
    for field in STAGE_SCHEMA:
        name = field.name
        if name in ("key", "value"):
            columns.append(pc.if_else(other, decoded.column(name), pa.scalar(None, field.type)))
        elif name in _COMMIT_SOURCES:
            columns.append(pc.if_else(commit, decoded.column(_COMMIT_SOURCES[name]).cast(field.type),
                                      pa.scalar(None, field.type)))
        else:
            columns.append(decoded.column(name))
    return pa.RecordBatch.from_arrays(columns, schema=STAGE_SCHEMA)


# The reasons `groupscope_records_skipped_total` is broken down by; every other decode failure
# (truncated, bad lengths, bad UTF-8, trailing bytes...) counts as malformed.
SKIP_REASONS = frozenset({"unknown_type", "unsupported_version", "control_record"})
SKIP_LABELS = tuple(sorted(SKIP_REASONS | {"malformed"}))


def skip_reason(error: str) -> str:
    """The counter label of a decode error string ("reason: message")."""
    reason = error.split(":", 1)[0].strip()
    return reason if reason in SKIP_REASONS else "malformed"


def _monitor_rows(type_names: pa.Array, errors: pa.Array, good: pa.Array,
                  partitions: pa.Array, offsets: pa.Array) -> pa.RecordBatch:
    labels: list[str] = []
    counts: list[int] = []
    parts: list[int | None] = []
    offs: list[int | None] = []
    if len(type_names):
        for name, count in _value_counts(type_names.filter(good)):
            labels.append(COUNT_RECORDS + name)
            counts.append(count)
        skipped: dict[str, int] = {}
        for error, count in _value_counts(errors.filter(pc.invert(good))):
            reason = skip_reason(error)
            skipped[reason] = skipped.get(reason, 0) + count
        for reason, count in sorted(skipped.items()):
            labels.append(COUNT_SKIPPED + reason)
            counts.append(count)
        parts_np = partitions.to_numpy(zero_copy_only=False)
        offs_np = offsets.to_numpy(zero_copy_only=False)
        for p in np.unique(parts_np):
            labels.append(PROGRESS)
            counts.append(0)
            parts.append(int(p))
            offs.append(int(offs_np[parts_np == p].max()))
    m = len(labels)
    pad = m - len(parts)
    columns = {name: pa.nulls(m, STAGE_SCHEMA.field(name).type) for name in STAGE_SCHEMA.names}
    columns["group"] = pa.array([MONITOR_KEY] * m, pa.string())
    columns["key"] = pa.array([label.encode() for label in labels], pa.binary())
    columns["value"] = pa.array([str(count).encode() for count in counts], pa.binary())
    columns["o_partition"] = pa.array([None] * pad + parts, pa.int32())
    columns["o_offset"] = pa.array([None] * pad + offs, pa.int64())
    return pa.RecordBatch.from_pydict(columns, schema=STAGE_SCHEMA)


def _value_counts(values: pa.Array) -> list[tuple[str, int]]:
    if len(values) == 0:
        return []
    counted = pc.value_counts(values)
    return [(str(v), int(c)) for v, c in zip(counted.field("values").to_pylist(),
                                            counted.field("counts").to_pylist()) if v is not None]


# Rows of one task held back for compaction before they go on: bounds the task's memory when a
# source hands it a whole partition's backlog.
CARRY_ROWS = 200_000


def decode_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The mapInArrow function: decodes a task's batches and, over all of them, drops the offset
    commits a later commit overrides (streaming.pipeline.commit_compaction). Only for a state stage that
    does not emit `offset_committed` events (the job's setting)."""
    carry: list[pa.RecordBatch] = []
    carried = 0
    monitors: list[pa.RecordBatch] = []
    for batch in batches:
        data, monitor = decoded_rows(batch)
        monitors.append(monitor)
        carry.append(data)
        carried += data.num_rows
        if carried >= CARRY_ROWS:
            kept = superseded_commits_dropped(_concat(carry, DECODED_SCHEMA))
            carry, carried = [kept], kept.num_rows
            if carried >= CARRY_ROWS // 2:
                yield _concat([_narrow(kept), *monitors], STAGE_SCHEMA)
                carry, carried, monitors = [], 0, []
    if carry or monitors:
        kept = superseded_commits_dropped(_concat(carry, DECODED_SCHEMA))
        yield _concat([_narrow(kept), *monitors], STAGE_SCHEMA)


def decoded_stream(source_df):
    """This stage as a mapInArrow after `source_df` (Spark's Kafka schema): rows in STAGE_DDL,
    superseded commits dropped before the shuffle. groupscope's own sources run
    `decode_partition` in their read tasks instead (streaming.sources.in_task_decode)."""
    decode = decode_partition
    # Only the columns decoding reads cross into the decode stage's Python worker.
    return source_df.select(*DECODE_INPUT_COLUMNS).mapInArrow(decode, STAGE_DDL)
