"""Spark's Python worker daemon (`spark.python.daemon.module`) with PySpark's worker code
imported once, before the daemon forks workers.

Every Python worker Spark starts for a task is forked from such a daemon and then imports the
worker code. Spark puts `pyspark.zip` first on the workers' path, and Python
keeps no compiled code for modules imported from a zip, so each new worker compiled PySpark's
modules again: 1.5 s of CPU here against 0.25 s from compiled files, paid by every worker a query
starts. Imported in the daemon, they come with the fork. (In local mode the workers do not see
the zip at all, streaming/worker_python.py; this daemon is what helps on a cluster. Spark's
query-planning runners fork from PySpark's own daemon whatever this setting says.)

Only modules that start no thread when imported are loaded here: a thread does not survive a
fork (pyarrow, pandas and numpy start threads, so they are left to the workers, as PySpark's own
daemon warns).
"""
from __future__ import annotations

import importlib

# Modules that import without starting a thread (checked in tests/test_spark_daemon.py). Only
# task workers fork from this daemon, so the planning runners' modules are not among them.
PRELOADED = (
    "pyspark.worker",
    "coordinator.records",
    "coordinator.state",
)


def preload() -> None:
    for name in PRELOADED:
        try:
            importlib.import_module(name)
        except ImportError:  # another PySpark version: the worker imports what it needs itself
            pass


def main() -> None:
    preload()
    from pyspark.daemon import manager

    manager()


if __name__ == "__main__":
    main()
