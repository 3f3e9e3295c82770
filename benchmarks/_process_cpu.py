"""CPU seconds of a process tree, read from Linux /proc, so that benchmark figures can be given
per CPU-second when other work shares the machine. (A leading underscore: a helper, not a
benchmark; `make bench` runs the others.)"""
from __future__ import annotations

import os
from pathlib import Path


def _stats() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, CPU ticks with reaped children) of every process."""
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry)] = (int(fields[1]), sum(int(f) for f in fields[11:15]))
    return stats


def tree_pids(root: int, stats: dict[int, tuple[int, int]] | None = None) -> set[int]:
    """`root` and its live descendants."""
    stats = _stats() if stats is None else stats
    wanted, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, _) in stats.items():
            if ppid == parent and pid not in wanted:
                wanted.add(pid)
                frontier.append(pid)
    return wanted


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds used so far by `root` and its live descendants (user and system, children
    reaped by them included)."""
    stats = _stats()
    return sum(stats.get(pid, (0, 0))[1] for pid in tree_pids(root, stats)) / os.sysconf("SC_CLK_TCK")


# Spark's Python workers are forked for a task and gone when it ends, reaped where their CPU is
# not added to any parent's: a walk of the live tree missed about 40% of the job's CPU under load
# on 2026-12-02 (13.7 CPU-s a minute read, 27-33 used). A cgroup counts every process started in
# it, alive or gone.
_CPUACCT_V1 = Path("/sys/fs/cgroup/cpuacct")


def _remove_stale() -> None:
    """The cgroups of benchmarks that have ended, once empty (a process still in one keeps it)."""
    try:
        for path in _CPUACCT_V1.glob("bench-*"):
            if not os.path.exists(f"/proc/{path.name.split('-')[1]}"):
                try:
                    path.rmdir()
                except OSError:
                    pass
    except OSError:
        pass


class CpuAccount:
    """The CPU of a process and of everything it starts: from a cgroup of its own (cgroup v1
    cpuacct, which this machine mounts writable) when one can be made, else from the live
    process tree (`exact` says which)."""

    def __init__(self, name: str) -> None:
        _remove_stale()
        self.path: Path | None = _CPUACCT_V1 / f"bench-{os.getpid()}-{name}-{id(self):x}"
        try:
            self.path.mkdir()
        except OSError:
            self.path = None
        self.exact = self.path is not None

    def join(self) -> None:
        """In the child between fork and exec (`subprocess.Popen(preexec_fn=...)`)."""
        if self.path is not None:
            (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def adopt(self, roots: list[int]) -> None:
        """Moves running process trees into the cgroup: what they fork from now on is counted
        too (CPU they used before is not: read the account's seconds as differences)."""
        if self.path is None:
            return
        for pid in {p for root in roots for p in tree_pids(root)}:
            try:
                (self.path / "cgroup.procs").write_text(str(pid))
            except OSError:  # gone meanwhile
                pass

    def seconds(self, root: int) -> float:
        if self.path is not None:
            return int((self.path / "cpuacct.usage").read_text()) / 1e9
        return tree_cpu_seconds(root)

    def close(self) -> None:
        """Removes the cgroup once its processes are gone (an empty cgroup: its usage is lost)."""
        if self.path is not None:
            try:
                self.path.rmdir()
            except OSError:
                pass
