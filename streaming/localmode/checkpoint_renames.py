"""Plain renames for a checkpoint on the local file system.

Spark writes every checkpoint file (offsets, commits, state changelogs and snapshots, schemas)
to a temporary name and renames it into place. Its default file manager renames through Hadoop's
FileContext, which first asks for the link status of both names; without Hadoop's native library
(PySpark ships none) the local file system answers that by running `readlink` in a new process,
for each file and for its `.crc` companion. On the 1M-commit benchmark that was 72 processes for
one micro-batch, and a steady micro-batch writes four files, each costing several.

For a local checkpoint the job uses Spark's FileSystem-based manager instead: the same temporary
file and rename, with `File.renameTo`, which is atomic on a local disk, and no process. On any
other file system (HDFS, object stores) Spark's choice stands, as does a manager the user set.
"""
from __future__ import annotations

from streaming.job.checkpoint_layout import hadoop_fs_path

MANAGER_KEY = "spark.sql.streaming.checkpointFileManagerClass"
PLAIN_RENAMES = ("org.apache.spark.sql.execution.streaming.checkpointing."
                 "FileSystemBasedCheckpointFileManager")


def use_plain_renames(spark, checkpoint_path: str) -> bool:
    """Sets the session's checkpoint file manager to plain renames when `checkpoint_path` is on
    the local file system and the user has not chosen one. True when it did."""
    if spark.conf.get(MANAGER_KEY, None):
        return False
    fs, _ = hadoop_fs_path(spark, checkpoint_path)
    if fs.getUri().getScheme() != "file":
        return False
    spark.conf.set(MANAGER_KEY, PLAIN_RENAMES)
    return True
