"""Ctrl-C and SIGTERM as a request to stop, for the commands that run until stopped."""
from __future__ import annotations

import signal
import threading


def stop_on_signals(stop: threading.Event) -> threading.Event:
    """SIGINT and SIGTERM set `stop` from now on (main thread only: Python's rule). Call it
    again once Spark has started: creating a SparkContext installs a SIGINT handler of its own,
    which cancels every job and raises KeyboardInterrupt wherever the main thread is."""
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
    return stop
