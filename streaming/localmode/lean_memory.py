"""Less memory held between micro-batches by a local-mode job, which runs as a long-lived service.

Three pieces, each kept unless the user's `spark.conf` or environment already decides it:

* Python workers are not reused (`spark.python.worker.reuse=false`). They fork from a daemon that
  has everything imported (spark_daemon.py, the zygote), so a worker per task costs a fork, and
  between micro-batches no idle worker keeps the memory its last task used: the state stage's two
  workers alone held 180-190 MB RSS each after a catch-up.
* The driver JVM gives unused heap back (`G1PeriodicGCInterval`, `MaxHeapFreeRatio`): after a
  catch-up G1 kept 330 MB of heap committed for 149 MB in use.
* glibc keeps at most two malloc arenas per process (`MALLOC_ARENA_MAX`), set for the processes
  started from here (the zygote, the JVM and Spark's Python) and, through `mallopt`, for this one:
  each thread that allocates otherwise gets an arena of its own, and freed memory stays in them.
* glibc's mmap threshold stays at its default, 128 KiB (`MALLOC_MMAP_THRESHOLD_`, set the same
  way). Left to itself, glibc raises it to the size of each large block freed, up to 32 MiB, and
  blocks under it then come from the heap, which keeps what is freed. The driver evaluates lag
  over numpy columns of every group-partition, whose temporaries are megabytes each: with the
  threshold raised they came from the heap, and 20 s after a catch-up of 20,000 groups x 25
  partitions the driver's heap held 449 MB free of 595 MB (146 MB in use); with it fixed, 102 MB
  free of 153 MB, and the job's PSS was 2,080 MB against 2,495 MB (benchmarks/memory.py).

Measured on 2026-11-26 with 2,000 groups x 25 partitions (200,000 commits on a Kafka 3.9 broker,
`groupscope run` with its defaults, PSS summed over the job's processes 20 s after the catch-up;
CPU probe 0.43 s). One at a time: 1,161 MB in 16 processes without these, 978 MB in 11 with
workers not reused, 924 MB with the heap given back too, 872 MB with all three. Two interleaved
A/B pairs: 861 / 871 MB in 11 processes against 1,135 / 1,197 MB in 16; the catch-up took
16.2 / 16.7 s against 15.3 / 15.7 s (a worker forked per task), for 12.4 / 13.3 CPU-s against
13.2 / 13.6.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from typing import Mapping

WORKER_REUSE = "spark.python.worker.reuse"
HEAP_OPTIONS = "-XX:G1PeriodicGCInterval=5000 -XX:MaxHeapFreeRatio=20 -XX:MinHeapFreeRatio=5"
# Options with which the user has already chosen how the heap is sized or collected.
_USER_HEAP_FLAGS = ("HeapFreeRatio", "G1PeriodicGCInterval", "UseSerialGC", "UseParallelGC", "UseZGC",
                    "UseShenandoahGC", "UseEpsilonGC")
ARENAS = "2"
MMAP_THRESHOLD = "131072"
# glibc's environment variables, and their mallopt parameter numbers (malloc.h)
_MALLOC_SETTINGS = (("MALLOC_ARENA_MAX", ARENAS, -8), ("MALLOC_MMAP_THRESHOLD_", MMAP_THRESHOLD, -3))


def with_lean_memory(spark_conf: Mapping[str, str]) -> dict[str, str]:
    """`spark_conf` with Python workers not reused and the driver's heap given back, unless the
    user's settings already decide either."""
    conf = dict(spark_conf)
    conf.setdefault(WORKER_REUSE, "false")
    user = conf.get("spark.driver.extraJavaOptions", "")
    if not any(flag in user for flag in _USER_HEAP_FLAGS):
        conf["spark.driver.extraJavaOptions"] = f"{HEAP_OPTIONS} {user}".strip()
    return conf


def lean_malloc() -> None:
    """At most two malloc arenas and a fixed mmap threshold here and in every process started
    from now on (each unless the environment already sets it)."""
    chosen = [(key, value, parameter) for key, value, parameter in _MALLOC_SETTINGS
              if key not in os.environ]
    for key, value, _ in chosen:
        os.environ[key] = value
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        if libc is not None and hasattr(libc, "mallopt"):
            for _, value, parameter in chosen:
                libc.mallopt(parameter, int(value))
    except OSError:
        pass  # not glibc: the environment variables are all there is
