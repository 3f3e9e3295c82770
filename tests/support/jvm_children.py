"""The child processes of a process (Linux /proc): the Python processes a session's driver JVM
starts, or the zygote a driver starts."""
from __future__ import annotations

import os


def children_of(parent_pid: int, marker: str) -> dict[int, str]:
    """Process id -> command line of `parent_pid`'s children whose command contains `marker`."""
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
        if parent == parent_pid and marker in command:
            children[int(entry)] = command
    return children


def jvm_children(spark, marker: str) -> dict[int, str]:
    """Process id -> command line of the driver JVM's children whose command contains `marker`."""
    return children_of(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid(), marker)
