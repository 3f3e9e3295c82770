"""The one output shape of every source: Spark's Kafka source schema, built as Arrow batches.

Sources hand Spark `pyarrow.RecordBatch`es (not Python tuples) so that no per-row conversion
happens on the way to the JVM.
"""
from __future__ import annotations

from typing import Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSource
from pyspark.sql.types import (BinaryType, IntegerType, LongType, StringType, StructField,
                               StructType, TimestampType)

KAFKA_SCHEMA = StructType([
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestampType", IntegerType()),
])

# Must equal pyspark's to_arrow_schema(KAFKA_SCHEMA, timezone="UTC"): Spark rejects batches whose
# Arrow schema differs in any way.
ARROW_SCHEMA = pa.schema([
    ("key", pa.binary()),
    ("value", pa.binary()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("timestamp", pa.timestamp("us", tz="UTC")),
    ("timestampType", pa.int32()),
])

CREATE_TIME = 0
LOG_APPEND_TIME = 1


def _column(value: Sequence[int] | int, count: int) -> pa.Array:
    if isinstance(value, int):
        return pa.repeat(pa.scalar(value, pa.int32()), count)
    return as_arrow(value, pa.int32())


def as_arrow(values, kind: pa.DataType) -> pa.Array:
    """`values` (a list, a numpy array or already an Arrow array) as an Arrow array."""
    return values if isinstance(values, pa.Array) else pa.array(values, kind)


def record_batch(topic: str, partition: Sequence[int] | int, keys: Sequence[bytes | None],
                 values: Sequence[bytes | None], offsets: Sequence[int],
                 timestamps_ms: Sequence[int], timestamp_type: Sequence[int] | int = CREATE_TIME
                 ) -> pa.RecordBatch:
    """Records as a batch in the Kafka schema. `partition` and `timestamp_type` are one value for
    all rows or one per row; timestamps are epoch milliseconds."""
    import pyarrow.compute as pc  # not at import: Spark's planning processes import this module

    count = len(offsets)
    millis = as_arrow(timestamps_ms, pa.int64())
    return pa.RecordBatch.from_arrays([
        as_arrow(keys, pa.binary()),
        as_arrow(values, pa.binary()),
        # One value repeated: converting a list of a million equal strings costs 0.5 s.
        pa.repeat(pa.scalar(topic, pa.string()), count),
        _column(partition, count),
        as_arrow(offsets, pa.int64()),
        pc.multiply(millis, 1000).cast(pa.timestamp("us", tz="UTC")),
        _column(timestamp_type, count),
    ], schema=ARROW_SCHEMA)


class KafkaShapedSource(DataSource):
    """Base of groupscope's Spark data sources: all emit KAFKA_SCHEMA, under `format_name`."""

    format_name = ""

    @classmethod
    def name(cls) -> str:
        return cls.format_name

    def schema(self) -> StructType:
        return KAFKA_SCHEMA
