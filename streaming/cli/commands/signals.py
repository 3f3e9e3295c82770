"""Ctrl-C and SIGTERM as a request to stop, for the commands that run until stopped.

The driver owns the stop: it stops the query between or inside a micro-batch, and only then
Spark. A stop signal sent to the command's whole process group (Ctrl-C in a terminal, `timeout`,
`kill -- -PGID`) would otherwise reach the driver JVM and, through it, Spark's Python processes
as well; they would die under the query while the driver was still stopping it. So Spark's JVM
is started in a session of its own (`spark_outside_the_process_group`). It still ends with
the driver: it exits when its standard input, a pipe from the driver, closes.
"""
from __future__ import annotations

import contextlib
import functools
import signal
import subprocess
import threading
from typing import Iterator


def stop_on_signals(stop: threading.Event) -> threading.Event:
    """SIGINT and SIGTERM set `stop` from now on (main thread only: Python's rule). Call it
    again once Spark has started: creating a SparkContext installs a SIGINT handler of its own,
    which cancels every job and raises KeyboardInterrupt wherever the main thread is."""
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
    return stop


@contextlib.contextmanager
def spark_outside_the_process_group() -> Iterator[None]:
    """A SparkSession created inside this block runs its driver JVM (and so the Python
    processes the JVM starts) in a new POSIX session (setsid), hence a process group out of reach
    of signals sent to ours; having no terminal, the terminal's job control cannot stop it either.

    PySpark launches the JVM with `subprocess.Popen` (pyspark/java_gateway.py) and takes extra
    Popen arguments only from callers of `launch_gateway`, which SparkSession.builder does not
    expose; the name is swapped here for the duration of the start. Under spark-submit the JVM
    already runs and nothing changes.
    """
    from pyspark import java_gateway

    launcher = java_gateway.Popen
    java_gateway.Popen = functools.partial(subprocess.Popen, start_new_session=True)
    try:
        yield
    finally:
        java_gateway.Popen = launcher
