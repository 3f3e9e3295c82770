"""Refusing a checkpoint whose group state this version cannot read.

Before state shards (streaming.shard_state) the job kept one state key per group, in a state
variable named `group_state`. Spark accepts the new layout over such a checkpoint without
complaint, so every group would silently start from empty; the job stops with a clear line
instead. The state schema files Spark writes name the state variables, and are read through
Hadoop's file system so that any checkpoint location works.
"""
from __future__ import annotations

import logging

log = logging.getLogger("groupscope.job")

LEGACY_STATE_VARIABLE = b"group_state"
# Where Spark keeps the state schemas of the query's (only) stateful operator.
_SCHEMA_DIR = "state/0/_stateSchema/default"


def has_legacy_group_state(spark, query_checkpoint: str) -> bool:
    """True when the checkpoint's state was written one key per group."""
    try:
        jvm = spark._jvm
        directory = jvm.org.apache.hadoop.fs.Path(f"{query_checkpoint.rstrip('/')}/{_SCHEMA_DIR}")
        fs = directory.getFileSystem(spark._jsc.hadoopConfiguration())
        if not fs.exists(directory):
            return False
        for status in fs.listStatus(directory):
            stream = fs.open(status.getPath())
            try:
                content = bytes(jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
            finally:
                stream.close()
            if LEGACY_STATE_VARIABLE in content:
                return True
    except Exception:  # an unreadable schema is Spark's to report when the query starts
        log.debug("could not inspect the checkpoint's state schema", exc_info=True)
    return False
