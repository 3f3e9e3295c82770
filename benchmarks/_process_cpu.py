"""CPU seconds of a process tree, read from Linux /proc, so that benchmark figures can be given
per CPU-second when other work shares the machine. (A leading underscore: a helper, not a
benchmark; `make bench` runs the others.)"""
from __future__ import annotations

import os


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
