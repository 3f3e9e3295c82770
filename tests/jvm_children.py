"""The child processes of a session's driver JVM (Linux /proc): the Python processes Spark starts."""
from __future__ import annotations

import os


def jvm_children(spark, marker: str) -> dict[int, str]:
    """Process id -> command line of the driver JVM's children whose command contains `marker`."""
    jvm = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                parent = int(fh.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                command = fh.read().replace(b"\0", b" ").decode()
        except (OSError, ValueError, IndexError):
            continue
        if parent == jvm and marker in command:
            children[int(entry)] = command
    return children
