"""The worker daemon's preloaded modules start no thread (a thread would not survive the fork
into each worker), and the daemon still serves Spark's workers (every Spark test runs on it)."""
from __future__ import annotations

import os
import subprocess
import sys

from streaming.spark_daemon import PRELOADED


def test_preloaded_modules_import_without_starting_threads():
    script = ("import os, sys\n"
              "from streaming.spark_daemon import preload\n"
              "preload()\n"
              "missing = [m for m in sys.argv[1:] if m not in sys.modules]\n"
              "heavy = [m for m in ('numpy', 'pandas', 'pyarrow') if m in sys.modules]\n"
              "print(len(os.listdir('/proc/self/task')), missing, heavy)\n")
    out = subprocess.run([sys.executable, "-c", script, *PRELOADED], capture_output=True,
                         text=True, check=True, cwd=os.path.dirname(os.path.dirname(__file__)))
    assert out.stdout.split("\n")[0] == "1 [] []"


def test_spark_forks_python_workers_from_this_daemon(spark):
    def parent_command(_rows):
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as fh:
            yield fh.read().replace(b"\0", b" ").decode()

    commands = spark.sparkContext.parallelize(range(2), 2).mapPartitions(parent_command).collect()
    assert commands and all("-m streaming.spark_daemon pyspark.worker" in c for c in commands)
