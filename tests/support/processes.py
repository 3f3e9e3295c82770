"""Ending a process the way its own stop path expects: a signal first, SIGKILL after a while."""
from __future__ import annotations

import signal
import subprocess


def stop_gracefully(process: subprocess.Popen, timeout_s: float,
                    sig: int = signal.SIGTERM) -> None:
    """`sig` to `process` (a clean stop), then SIGKILL if it is still running after `timeout_s`."""
    if process.poll() is not None:
        return
    process.send_signal(sig)
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
