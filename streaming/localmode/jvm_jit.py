"""The quick JIT compiler only (C1) for the driver JVM the job launches in local mode.

HotSpot compiles hot code twice: quickly (C1), then again with its optimizing compiler (C2). On a
2-core machine C2 competes with the job itself for most of a new session's first minutes; in
the first catch-up of the 1M-commit benchmark it was about half the JVM's CPU. What the JVM runs
for this job is Spark's planning and bookkeeping around Python stages, code that C1 compiles
well enough. Measured on the 2-core reference machine (A/B pairs, the same hour):

* session start-up 3.7-4.1 s against 5.2-5.6 s;
* the first catch-up query 14.0 / 14.6 / 16.4 s against 16.98 / 17.9 / 18.3 s, its JVM CPU
  6.7-7.3 s against 14.4-15.1 s;
* a warm catch-up query 6.8-7.1 s against 7.4-9.4 s, JVM CPU 2.3-2.5 s against 4.5-6.1 s;
* at 5,000 commits/s, after a minute of load, the same latency (p50 1.34 / 1.40 s against
  1.32 / 1.43 s) for 72 instead of 82 CPU-seconds a minute.

A user who sets `TieredStopAtLevel` or `TieredCompilation` in `spark.driver.extraJavaOptions`
keeps their own choice (`-XX:TieredStopAtLevel=4` restores the JVM's default). Under
spark-submit the driver JVM is already running and its options are the user's.
"""
from __future__ import annotations

from typing import Mapping

QUICK_JIT = "-XX:TieredStopAtLevel=1"
# Options with which the user has already chosen the JIT's tiers.
_USER_JIT_FLAGS = ("TieredStopAtLevel", "TieredCompilation")


def with_quick_jit(spark_conf: Mapping[str, str]) -> dict[str, str]:
    """`spark_conf` with C1-only compilation added to the driver's JVM options, unless those
    options already decide the JIT's tiers."""
    user = spark_conf.get("spark.driver.extraJavaOptions", "")
    if any(flag in user for flag in _USER_JIT_FLAGS):
        return dict(spark_conf)
    return {**spark_conf, "spark.driver.extraJavaOptions": f"{QUICK_JIT} {user}".strip()}
