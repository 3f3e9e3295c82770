"""CPU seconds of a process tree, read from Linux /proc, so that benchmark figures can be given
per CPU-second when other work shares the machine. (A leading underscore: a helper, not a
benchmark; `make bench` runs the others.)"""
from __future__ import annotations

import os
from pathlib import Path


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds used so far by `root` and its descendants (user and system, children reaped
    by them included)."""
    ticks = os.sysconf("SC_CLK_TCK")
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry)] = (int(fields[1]), sum(int(f) for f in fields[11:15]))
    wanted, total, frontier = {root}, 0, [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, _) in stats.items():
            if ppid == parent and pid not in wanted:
                wanted.add(pid)
                frontier.append(pid)
    for pid in wanted:
        total += stats.get(pid, (0, 0))[1]
    return total / ticks


# Spark's Python workers are forked for a task and gone when it ends, reaped where their CPU is
# not added to any parent's: a walk of the live tree missed about 40% of the job's CPU under load
# on 2026-12-02 (13.7 CPU-s a minute read, 27-33 used). A cgroup counts every process started in
# it, alive or gone.
_CPUACCT_V1 = Path("/sys/fs/cgroup/cpuacct")


class CpuAccount:
    """The CPU of a process and of everything it starts: from a cgroup of its own (cgroup v1
    cpuacct, which this machine mounts writable) when one can be made, else from the live
    process tree (`exact` says which)."""

    def __init__(self, name: str) -> None:
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
