"""Starts Spark's Python worker daemon while a new session's first query is being planned.

Spark starts the daemon (streaming.localmode.spark_daemon) when the first Python task asks for a worker,
and the daemon imports what the workers run (about 1.2 s of CPU) before it forks any, so a new
session's first read tasks wait for it. Planning that query keeps only the driver's planner
thread busy, for several seconds in a new JVM; a one-task job started alongside has the daemon
up, with a worker forked and idle, by the time the read tasks come.

That job shares the read tasks' daemon only because its workers' environment is theirs: Spark
keeps one daemon per distinct worker environment. The same holds for the state stage, which is
why `tuning.DAEMON_SETTINGS` turns off PySpark's simplified tracebacks (the setting adds a variable to
the environment of some stages' workers and not of others').

Local mode only: on a cluster one task would start the daemon of one executor.
"""
from __future__ import annotations

import logging
import os
import threading

log = logging.getLogger("groupscope.job")

_started: set[str] = set()  # applications whose daemon has been asked for
_lock = threading.Lock()


def _daemon_pid(_rows):
    yield os.getppid()  # the worker was forked by the daemon


def run_python_task(spark) -> int:
    """Runs one Python task and returns the process id of the daemon its worker came from."""
    sc = spark.sparkContext
    sc.setLocalProperty("spark.job.description", "groupscope: start the Python worker daemon")
    try:
        return sc.parallelize([0], 1).mapPartitions(_daemon_pid).collect()[0]
    finally:
        sc.setLocalProperty("spark.job.description", None)


def start_worker_daemon(spark) -> threading.Thread | None:
    """Starts the daemon in the background once per local-mode application; None when there is
    nothing to do."""
    sc = spark.sparkContext
    if not sc.master.startswith("local"):
        return None
    with _lock:
        if sc.applicationId in _started:
            return None
        _started.add(sc.applicationId)

    def run() -> None:
        try:
            log.debug("Python worker daemon %d is up", run_python_task(spark))
        except Exception:  # only an early start is lost; the query starts the daemon itself
            log.debug("could not start the Python worker daemon early", exc_info=True)

    thread = threading.Thread(target=run, name="groupscope-worker-daemon", daemon=True)
    thread.start()
    return thread
