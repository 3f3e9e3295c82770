"""A benchmark leaves nothing running and no temporary folder behind, however it ends: normally,
by an error, or on SIGTERM or SIGINT. A benchmark's `__main__` calls `stop_everything_at_exit()`
first; then

- SIGTERM and SIGINT raise `Stopped` (a SystemExit, which `except Exception` does not catch) in
  the main thread, so that the benchmark's own `finally` blocks stop its brokers and monitors as
  on any other end, and the process exits with 128 + the signal's number;
- at exit, every process it started, directly or not, that is still there is stopped: SIGTERM
  to its children (each stops what it started), then to every descendant left, then SIGKILL.
  The benchmark is a child subreaper (Linux prctl), so that a process whose parent died before
  it (a driver JVM under a job killed on a timeout) is re-parented to the benchmark, not to init,
  and still found;
- its children make their temporary folders (Python's tempfile, mktemp, Go's os.TempDir follow
  TMPDIR) in a folder of the benchmark's own, removed at exit: what a child killed before its own
  cleanup leaves goes with it. The benchmark's own temporary folders stay where they were; its
  `finally` blocks remove its work folders, and keep what it means to keep (soak's output).
"""
from __future__ import annotations

import atexit
import ctypes
import os
import shutil
import signal
import tempfile
import time

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
# A child's own stop: the groupscope job finishing a micro-batch, a broker's controlled shutdown.
CHILD_GRACE_S = 60.0
LEFT_GRACE_S = 10.0
PR_SET_CHILD_SUBREAPER = 36


class Stopped(SystemExit):
    """SIGTERM or SIGINT arrived: unwind, running every `finally` block on the way out."""

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum


def stop_everything_at_exit(child_grace_s: float = CHILD_GRACE_S,
                            left_grace_s: float = LEFT_GRACE_S) -> None:
    """Make this process a benchmark that stops what it started at exit (see the module's
    docstring): its children get `child_grace_s` to stop after SIGTERM, what is left
    `left_grace_s` before SIGKILL."""
    owner = os.getpid()
    _become_subreaper()
    tempfile.gettempdir()   # this process's own default is kept: tempfile reads TMPDIR once
    scratch = tempfile.mkdtemp(prefix="groupscope-bench-")
    os.environ["TMPDIR"] = scratch

    def on_signal(signum: int, _frame: object) -> None:
        if os.getpid() != owner:   # a forked helper (a multiprocessing load) ends as by default
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        _ignore_stop_signals()     # one stop at a time: a second signal must not cut it short
        # not print(): the signal may have interrupted a write to the same stream
        os.write(2, f"{signal.Signals(signum).name}: stopping what the benchmark started\n".encode())
        raise Stopped(signum)

    def at_exit() -> None:
        if os.getpid() != owner:
            return
        _ignore_stop_signals()
        stop_descendants(owner, child_grace_s, left_grace_s)
        shutil.rmtree(scratch, ignore_errors=True)

    atexit.register(at_exit)
    for sig in STOP_SIGNALS:
        signal.signal(sig, on_signal)


def _ignore_stop_signals() -> None:
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)


def _become_subreaper() -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):   # not Linux: orphans go to init, the sweep misses them
        pass


def _parents() -> dict[int, int]:
    """pid -> parent pid of every live process (zombies left out: they are gone but for their
    exit status)."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            out[int(entry)] = int(fields[1])
    return out


def descendants(root: int) -> list[int]:
    """`root`'s live children, their children, and so on (Linux /proc), parents first."""
    parents = _parents()
    found, frontier = [], [root]
    while frontier:
        parent = frontier.pop(0)
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        found += children
        frontier += children
    return found


def _reap() -> None:
    """Collect the exit status of this process's ended children (re-parented orphans among
    them), so that they leave the process table."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _signal_and_wait(root: int, pids: list[int], sig: int, wait_s: float) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + wait_s
    while True:
        _reap()
        left = set(pids) & set(descendants(root))
        if not left or time.monotonic() > deadline:
            return
        time.sleep(0.1)


def stop_descendants(root: int, child_grace_s: float = CHILD_GRACE_S,
                     left_grace_s: float = LEFT_GRACE_S) -> None:
    """Stop every process below `root`: SIGTERM to its children, waiting up to `child_grace_s`
    for them to stop their own; SIGTERM to any descendant left, then SIGKILL, `left_grace_s`
    apart."""
    children = [pid for pid, ppid in _parents().items() if ppid == root]
    if children:
        _signal_and_wait(root, children, signal.SIGTERM, child_grace_s)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        left = descendants(root)
        if not left:
            return
        _signal_and_wait(root, left, sig, left_grace_s)
    _reap()
