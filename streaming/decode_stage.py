"""Stage 1 of the job: raw `__consumer_offsets` rows -> decoded rows keyed by group (mapInArrow).

Offset commits are decoded column-wise by `coordinator.batch_decode`; every other record type
travels as its canonical dict in JSON. Records that do not decode never reach the state stage:
they are only counted. Counters travel as extra rows under `MONITOR_KEY`, so the state stage
keeps them in Spark's state store next to the groups, where a replayed micro-batch cannot count
them twice.
"""
from __future__ import annotations

import json
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from coordinator.batch_decode import decode_batch

# Never a Kafka group id: group ids are Java strings written as UTF-8 and a NUL-led id is not
# something any client produces.
MONITOR_KEY = "\u0000groupscope-monitor"

# Monitor rows use `type_name` for what is counted and `offset` for the count.
COUNT_RECORDS = "records:"      # + type_name: records decoded
COUNT_SKIPPED = "skipped:"      # + reason: records skipped
PROGRESS = "progress"           # o_partition / o_offset: highest offset read per partition

STAGE_SCHEMA = pa.schema([
    ("group", pa.string()),
    ("o_partition", pa.int32()), ("o_offset", pa.int64()), ("ts_ms", pa.int64()),
    ("type", pa.int16()), ("type_name", pa.string()),
    ("topic", pa.string()), ("partition", pa.int32()), ("value_version", pa.int16()),
    ("offset", pa.int64()), ("leader_epoch", pa.int32()), ("metadata", pa.string()),
    ("commit_timestamp", pa.int64()), ("expire_timestamp", pa.int64()), ("topic_id", pa.string()),
    ("is_tombstone", pa.bool_()), ("record_json", pa.string()),
])

STAGE_DDL = ", ".join(f"`{f.name}` {ddl}" for f, ddl in zip(STAGE_SCHEMA, [
    "string", "int", "bigint", "bigint", "smallint", "string", "string", "int", "smallint",
    "bigint", "int", "string", "bigint", "bigint", "string", "boolean", "string"]))


def _timestamp_ms(column: pa.Array) -> pa.Array:
    if pa.types.is_timestamp(column.type):
        return pc.cast(pc.cast(column, pa.timestamp("ms", tz=column.type.tz)), pa.int64())
    return pc.cast(column, pa.int64())


def decode_arrow_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """One source batch (Spark's Kafka schema) -> decoded rows plus monitor rows."""
    decoded = decode_batch(batch.column("key"), batch.column("value"))
    n = batch.num_rows
    positions = {
        "o_partition": pc.cast(batch.column("partition"), pa.int32()),
        "o_offset": pc.cast(batch.column("offset"), pa.int64()),
        "ts_ms": _timestamp_ms(batch.column("timestamp")),
    }
    errors = decoded.column("error").combine_chunks()
    good = pc.is_null(errors)
    columns = {}
    for field in STAGE_SCHEMA:
        if field.name in positions:
            columns[field.name] = positions[field.name]
        else:
            column = decoded.column(field.name)
            columns[field.name] = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    columns["group"] = _group_ids(columns["group"], columns["record_json"])
    data = pa.RecordBatch.from_pydict(columns, schema=STAGE_SCHEMA).filter(good) if n else None
    monitor = _monitor_rows(decoded.column("type_name").combine_chunks(), errors, good,
                            positions["o_partition"], positions["o_offset"])
    if data is None or data.num_rows == 0:
        return monitor
    return pa.Table.from_batches([data, monitor]).combine_chunks().to_batches()[0]


# The reasons `groupscope_records_skipped_total` is broken down by; every other decode failure
# (truncated, bad lengths, bad UTF-8, trailing bytes...) counts as malformed.
SKIP_REASONS = frozenset({"unknown_type", "unsupported_version", "control_record"})


def skip_reason(error: str) -> str:
    """The counter label of a decode error string ("reason: message")."""
    reason = error.split(":", 1)[0].strip()
    return reason if reason in SKIP_REASONS else "malformed"


def _group_ids(groups: pa.Array, record_json: pa.Array) -> pa.Array:
    """The group id of every row: offset commits have it in a column, the other (rare) record
    types in the key of their canonical dict (`group` or `group_id`)."""
    missing = pc.and_(pc.is_null(groups), pc.is_valid(record_json))
    if not pc.any(missing).as_py():
        return groups
    filled = groups.to_pylist()
    for i in np.flatnonzero(missing.to_numpy(zero_copy_only=False)):
        key = json.loads(record_json[int(i)].as_py())["key"]
        filled[i] = key.get("group", key.get("group_id"))
    return pa.array(filled, pa.string())


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
    columns["type_name"] = pa.array(labels, pa.string())
    columns["offset"] = pa.array(counts, pa.int64())
    columns["o_partition"] = pa.array([None] * pad + parts, pa.int32())
    columns["o_offset"] = pa.array([None] * pad + offs, pa.int64())
    return pa.RecordBatch.from_pydict(columns, schema=STAGE_SCHEMA)


def _value_counts(values: pa.Array) -> list[tuple[str, int]]:
    if len(values) == 0:
        return []
    counted = pc.value_counts(values)
    return [(str(v), int(c)) for v, c in zip(counted.field("values").to_pylist(),
                                            counted.field("counts").to_pylist()) if v is not None]


def decode_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The mapInArrow function."""
    for batch in batches:
        yield decode_arrow_batch(batch)
