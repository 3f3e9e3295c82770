"""The many-groups targets (100,000 groups x 10 partitions) as one table: each figure, Burrow's
where it has one, the target and whether it is met. The figures that need no broker (a render of
every group from scratch, the state stage's cost as the groups held grow, memory growth per
group-partition) come from their own benchmarks, run as subprocesses once the side-by-side
phase has stopped, so that none of them shares the two cores with the other; their output is
read back here.

Used by benchmarks/burrow.py.
"""
from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    what: str
    groupscope: float | None
    burrow: float | None
    target: str
    met: bool | None  # None: not measured


def at_most(what: str, got: float | None, limit: float | None, target: str,
            burrow: float | None = None) -> Target:
    met = None if got is None or limit is None else got <= limit
    return Target(what, got, burrow, target, met)


def table(targets: list[Target], shape: str = "100,000 groups x 10") -> str:
    def cell(v: float | None) -> str:
        return "-" if v is None else f"{v:,.2f}"
    heading = f"target ({shape})"
    lines = [f"{heading:<58s} {'groupscope':>11s} {'Burrow':>9s}  "
             f"{'target':<26s} verdict"]
    for t in targets:
        verdict = "not measured" if t.met is None else "met" if t.met else "missed"
        lines.append(f"{t.what:<58s} {cell(t.groupscope):>11s} {cell(t.burrow):>9s}  "
                     f"{t.target:<26s} {verdict}")
    return "\n".join(lines)


def full_render_seconds(out: str) -> float | None:
    """benchmarks.exporter: the wall time of its render of every group from scratch."""
    found = re.search(r"^refresh \(full:[^)]*\): ([\d.]+) s wall", out, re.M)
    return float(found.group(1)) if found else None


def gzip_scrape_seconds(out: str) -> float | None:
    """benchmarks.exporter: the wall time of its gzip scrape of the rendered exposition."""
    found = re.search(r"^HTTP scrape \(gzip\): ([\d.]+) s wall", out, re.M)
    return float(found.group(1)) if found else None


def state_stage_medians(out: str) -> dict[int, float]:
    """benchmarks.state_stage: groups held -> median seconds of a touched batch."""
    return {int(held): float(median) for held, median in re.findall(
        r"^\s*(\d+) groups held: .*?median ([\d.]+) s", out, re.M)}


def total_pss_mb(out: str) -> float | None:
    """benchmarks.memory: the job's settled PSS, all its processes."""
    found = re.search(r"^total: RSS [\d,]+ MB, PSS ([\d,]+) MB", out, re.M)
    return float(found.group(1).replace(",", "")) if found else None


def run_module(module: str, *args: str, timeout: float = 1800.0) -> str:
    """A benchmark's output ('' and a line saying so when it fails)."""
    command = [sys.executable, "-m", module, *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"  {' '.join(command[2:])}: no result within {timeout:.0f}s")
        return ""
    if done.returncode != 0:
        print(f"  {' '.join(command[2:])} failed ({done.returncode}): {done.stderr[-300:]}")
    return done.stdout


def offline_targets(groups: int, partitions: int, growth_from: int) -> list[Target]:
    """The targets measured without the broker, each by its own benchmark."""
    out = run_module("benchmarks.exporter", "--granularity", "partition",
                     "--topics", str(groups * partitions // 100))
    render, scrape = full_render_seconds(out), gzip_scrape_seconds(out)
    print(f"  rendering every group from scratch: {render} s; then a gzip scrape of what it "
          f"rendered: {scrape} s (benchmarks.exporter)")
    out = run_module("benchmarks.state_stage", "--held", f"2000,{groups}", "--touched", "1000")
    medians = state_stage_medians(out)
    small, large = medians.get(2000), medians.get(groups)
    ratio = large / small if small and large else None
    print(f"  state stage, a batch of 1,000 touched groups: {small} s with 2,000 held, {large} s "
          f"with {groups:,} (benchmarks.state_stage)")
    # benchmarks.exporter's shape: the same group-partitions in groups of 50 (fewer groups)
    targets = [at_most("a full gzip scrape of a rendered exposition, s", scrape, 2.0,
                       "under 2 s"),
               at_most(f"rendering {groups * partitions:,} group-partitions from scratch, s",
                       render, 1.0, "under 1 s"),
               at_most(f"state stage: 1,000 touched at {groups:,} held / at 2,000", ratio, 1.5,
                       "within 1.5x")]
    if growth_from:
        pss = {}
        for count in (growth_from, groups):
            pss[count] = total_pss_mb(run_module(
                "benchmarks.memory", "--groups", str(count), "--partitions", str(partitions),
                "--rounds", "1"))
            print(f"  settled PSS at {count:,} groups x {partitions}: {pss[count]} MB "
                  f"(benchmarks.memory)")
        growth = None
        if pss[growth_from] is not None and pss[groups] is not None:
            growth = ((pss[groups] - pss[growth_from]) * 1024 * 1024
                      / ((groups - growth_from) * partitions))
        targets.append(at_most(f"memory growth per group-partition {growth_from:,} to "
                               f"{groups:,} groups, B", growth, 1024.0, "at most 1 KB"))
    return targets
