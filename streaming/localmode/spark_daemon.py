"""Spark's Python worker daemon (`spark.python.daemon.module`) with the workers' code imported
once, before the daemon forks workers.

Every Python worker Spark starts for a task is forked from such a daemon and then imports what
its task runs: PySpark's worker, pyarrow, pandas and numpy, and the job's own stages. That is
about 1.2 s of CPU per worker, and a query starts several workers (six for the first catch-up of
the benchmark). Imported in the daemon, it all comes with the fork.

A thread does not survive a fork, so the daemon first turns off the two threads these libraries
start on import: OpenBLAS's thread pool (numpy; the job does no linear algebra) and the
background thread of pyarrow's bundled jemalloc (pyarrow allocates through mimalloc here; with
the thread off jemalloc purges inline). A setting the user made in the environment wins; if a
thread is running after the imports anyway, the daemon says so in its log line on stderr.

The imported objects are then frozen out of the garbage collector's reach (`gc.freeze`). PySpark
runs a full `gc.collect()` in a reused worker after every task; over the 100,000 objects these
imports leave, that took 73 ms each, half the Python workers' CPU at 5,000 commits/s. Frozen
objects are also never written by a collection, so the pages they share with the daemon stay
shared.
"""
from __future__ import annotations

import gc
import importlib
import os
import sys
from typing import Callable

# Settings that keep the imports below thread-free (checked in tests/spark/test_spark_daemon.py).
THREAD_FREE_ENV = {
    "OPENBLAS_NUM_THREADS": "1",
    "JE_ARROW_MALLOC_CONF": "background_thread:false",
}

# What the job's task workers import: the source reader with the decode stage it runs (or the
# decode stage as a mapInArrow) and the state stage (transformWithStateInPandas). Spark's planning runners never fork from this daemon.
PRELOADED = (
    "pyspark.worker",
    "numpy",
    "pyarrow",
    "pyarrow.compute",
    "pandas",
    "pyspark.sql.pandas.serializers",
    "pyspark.sql.streaming.stateful_processor_api_client",
    # Imported on first use inside every task otherwise (py-spy on the workers at 10,000
    # commits/s: about 50 ms of each read task, 30 ms of each state task): the compaction's
    # group_by (pyarrow.acero, with pyarrow.dataset), the state server's messages, the module
    # PySpark's state client imports to serialize a key, and the one pandas' null check loads.
    "pyarrow.acero",
    "pyspark.sql.streaming.proto.StateMessage_pb2",
    "pyspark.testing",
    "numpy.rec",
    "coordinator.records",
    "coordinator.state",
    "streaming.pipeline.decode_stage",
    "streaming.pipeline.state_stage",
    "streaming.sources.kafka_stream",
    "streaming.sources.in_task_decode",
    "streaming.kafka.confluent_client",
    "streaming.kafka.client",
)


def preload(extra: tuple[str, ...] = ()) -> None:
    """Imports PRELOADED and `extra` thread-free, then freezes them out of the collector."""
    for key, value in THREAD_FREE_ENV.items():
        os.environ.setdefault(key, value)
    for name in (*PRELOADED, *extra):
        try:
            importlib.import_module(name)
        except ImportError:  # another PySpark version: the worker imports what it needs itself
            pass
    gc.freeze()


def native_threads() -> int:
    """Threads of this process (Linux), 1 where /proc is not there to tell."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def quiet_on_reset(worker: Callable[..., int]) -> Callable[..., int]:
    """PySpark's worker loop (`pyspark.daemon.worker`), except that a connection the JVM reset
    ends the worker without a traceback on stderr. The JVM resets a task's connection when it
    kills the task (a query stopped mid-batch, a cancelled job) and reports the task itself;
    PySpark printed the worker's failed final flush as a traceback for every such task."""

    def run(sock, authenticated):
        try:
            return worker(sock, authenticated)
        except (BrokenPipeError, ConnectionResetError):
            return 1  # not reused: the forked worker exits

    return run


def main() -> None:
    preload()
    if native_threads() > 1:
        print(f"groupscope worker daemon: {native_threads()} threads after preloading; workers "
              "forked from it do not inherit the others", file=sys.stderr)
    import pyspark.daemon

    pyspark.daemon.worker = quiet_on_reset(pyspark.daemon.worker)  # the manager calls it by name
    pyspark.daemon.manager()


if __name__ == "__main__":
    main()
