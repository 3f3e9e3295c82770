"""The worker daemon preloads what the job's workers import, starts no thread doing so (a thread
would not survive the fork into each worker), and still serves Spark's workers (every Spark test
runs on it)."""
from __future__ import annotations

import gc
import os
import subprocess
import sys

import pytest

from streaming.localmode.spark_daemon import PRELOADED, THREAD_FREE_ENV
from tests.support import paths

ROOT = str(paths.ROOT)
PROBE = ("import os, sys\n"
         "from streaming.localmode.spark_daemon import native_threads, preload\n"
         "preload()\n"
         "missing = [m for m in sys.argv[1:] if m not in sys.modules]\n"
         "print(native_threads(), missing)\n"
         "import gc, pandas\n"
         "print(gc.get_freeze_count() > 0, any(o is pandas.DataFrame for o in gc.get_objects()))\n")


def _probe_lines(env: dict[str, str]) -> list[str]:
    return subprocess.run([sys.executable, "-c", PROBE, *PRELOADED], capture_output=True,
                          text=True, check=True, cwd=ROOT, env=env).stdout.split("\n")


def _probe(env: dict[str, str]) -> str:
    return _probe_lines(env)[0]


def _env_without_thread_settings() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in THREAD_FREE_ENV}


def test_preloaded_modules_import_without_starting_threads():
    assert _probe(_env_without_thread_settings()) == "1 []"


def test_without_the_settings_the_same_imports_start_threads():
    # The settings are what keeps the daemon thread-free: pyarrow's jemalloc starts a background
    # thread on import otherwise.
    env = _env_without_thread_settings()
    env["JE_ARROW_MALLOC_CONF"] = "background_thread:true"
    threads, missing = _probe(env).split(" ", 1)
    assert int(threads) > 1 and missing == "[]"


def test_spark_forks_python_workers_from_this_daemon(spark):
    def parent_command(_rows):
        with open(f"/proc/{os.getppid()}/cmdline", "rb") as fh:
            yield fh.read().replace(b"\0", b" ").decode()

    commands = spark.sparkContext.parallelize(range(2), 2).mapPartitions(parent_command).collect()
    assert commands and all("-m streaming.localmode.spark_daemon pyspark.worker" in c for c in commands)


def test_workers_start_with_the_job_modules_already_imported(spark):
    def preloaded_at_start(_rows):
        yield all(name in sys.modules for name in ("pandas", "pyarrow", "streaming.pipeline.decode_stage"))

    assert spark.sparkContext.parallelize(range(2), 2).mapPartitions(preloaded_at_start).collect() \
        == [True, True]


def test_preloaded_objects_are_out_of_the_collectors_reach():
    # The garbage collector neither scans them (PySpark collects after every task) nor writes to
    # their pages.
    assert _probe_lines(_env_without_thread_settings())[1] == "True False"


def test_workers_inherit_the_frozen_objects(spark):
    def frozen(_rows):
        import pandas
        yield gc.get_freeze_count() > 0 and not any(o is pandas.DataFrame for o in gc.get_objects())

    assert spark.sparkContext.parallelize(range(2), 2).mapPartitions(frozen).collect() == [True, True]


def test_a_connection_the_jvm_reset_ends_the_worker_without_a_traceback(capsys):
    from streaming.localmode.spark_daemon import quiet_on_reset

    def reset(sock, authenticated):
        raise ConnectionResetError(104, "Connection reset by peer")

    def broken(sock, authenticated):
        raise BrokenPipeError(32, "Broken pipe")

    def failing(sock, authenticated):
        raise ValueError("a real failure")

    assert quiet_on_reset(reset)(None, True) == 1
    assert quiet_on_reset(broken)(None, False) == 1
    assert quiet_on_reset(lambda sock, authenticated: 0)(None, True) == 0
    with pytest.raises(ValueError):
        quiet_on_reset(failing)(None, True)
    assert capsys.readouterr() == ("", "")


def test_the_daemon_manager_runs_the_quiet_worker():
    """`pyspark.daemon.manager` looks its worker function up by name when it forks one."""
    import inspect

    import pyspark.daemon

    assert "worker(sock, authenticated)" in inspect.getsource(pyspark.daemon.manager)
