"""What the decode stage (streaming.pipeline.decode_stage) hands on to the state stage, in a module of its
own: Spark's planning processes need the schema of the sources that decode in their read tasks,
and they should not import numpy, pyarrow.compute and the decoder to get it (a quarter of a
second in each such process, several per query start)."""
from __future__ import annotations

import pyarrow as pa

# What the stage hands on.
STAGE_SCHEMA = pa.schema([
    ("group", pa.string()),
    ("o_partition", pa.int32()), ("o_offset", pa.int64()), ("ts_ms", pa.int64()),
    ("key", pa.binary()), ("value", pa.binary()),
])

STAGE_DDL = ", ".join(f"`{f.name}` {ddl}" for f, ddl in zip(STAGE_SCHEMA, [
    "string", "int", "bigint", "bigint", "binary", "binary"]))
