"""What the decode stage (streaming.pipeline.decode_stage) hands on to the state stage, in a module of its
own: Spark's planning processes need the schema of the sources that decode in their read tasks,
and they should not import numpy, pyarrow.compute and the decoder to get it (a quarter of a
second in each such process, several per query start).

Two kinds of rows share it. An offset commit or its tombstone (the offsets lane) leaves the decode
stage as typed columns, `c_topic` set, `key` and `value` null (`c_offset` null: a tombstone). Any
other record (the group lane) keeps its raw key and value, and the `c_` columns are null.
"""
from __future__ import annotations

import pyarrow as pa

from streaming.pipeline.commit_columns import COMMIT_FIELDS

_ARROW = {"string": pa.string(), "int": pa.int32(), "bigint": pa.int64()}

# What the stage hands on.
STAGE_SCHEMA = pa.schema([
    ("group", pa.string()),
    ("o_partition", pa.int32()), ("o_offset", pa.int64()), ("ts_ms", pa.int64()),
    ("key", pa.binary()), ("value", pa.binary()),
    *[(name, _ARROW[ddl]) for name, ddl in COMMIT_FIELDS],
])

STAGE_DDL = ", ".join(f"`{f.name}` {ddl}" for f, ddl in zip(STAGE_SCHEMA, [
    "string", "int", "bigint", "bigint", "binary", "binary", *[ddl for _, ddl in COMMIT_FIELDS]]))
