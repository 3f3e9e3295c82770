"""What benchmarks/soak.py makes of its samples: the CSV and JSON files, the slope of each series
with its verdict, and the plot. (A leading underscore: a helper, not a benchmark.)"""
from __future__ import annotations

import csv
import json
from pathlib import Path

Row = dict[str, float | None]

FLAT_TARGET_PCT_PER_H = 1.0
# The first minutes are warm-up (JIT, Python workers, the state growing to every group): slopes
# start after them, or after half of a shorter run.
WARMUP_MIN = 10.0
NOT_SERIES = {"t_min", "jvm_pid"}
BOUNDED = ("checkpoint_files", "checkpoint_mb", "history_files", "history_mb")
INFORMATIVE = ("latency_s", "read_per_s", "scrape_s")


def save(rows: list[Row], out: Path) -> None:
    """samples.csv and samples.json in `out`."""
    if not rows:
        return
    (out / "samples.json").write_text(json.dumps(rows, indent=1))
    with open(out / "samples.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def slope_per_hour(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of (minutes, value) points, per hour; None under 3 points."""
    if len(points) < 3:
        return None
    n = len(points)
    mean_t = sum(t for t, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    spread = sum((t - mean_t) ** 2 for t, _ in points)
    if not spread:
        return None
    return 60 * sum((t - mean_t) * (y - mean_y) for t, y in points) / spread


def _target(name: str) -> str:
    if name in BOUNDED:
        return "bounded"
    if name in INFORMATIVE or name.startswith("n_"):
        return "info"
    return "flat"


def _verdict(name: str, pct: float | None, per_hour: float) -> str:
    target = _target(name)
    if target == "bounded":
        return ("grows: bounded by retention cannot be judged within the run" if per_hour > 0
                else "no growth")
    if target == "info" or pct is None:
        return ""
    return "flat: OK" if pct < FLAT_TARGET_PCT_PER_H else f"GROWS (target < {FLAT_TARGET_PCT_PER_H:g} %/h)"


def slopes(rows: list[Row]) -> tuple[float, dict[str, tuple[float, float, float | None]]]:
    """(warm-up skipped in minutes, series -> (mean, slope per hour, slope in % of the mean per
    hour)) over the samples after the warm-up."""
    last = max((r["t_min"] or 0.0 for r in rows), default=0.0)
    skip = min(WARMUP_MIN, last / 2)
    out = {}
    for name in (rows[0] if rows else {}):
        if name in NOT_SERIES:
            continue
        points = [(r["t_min"], r[name]) for r in rows if r["t_min"] >= skip and r[name] is not None]
        slope = slope_per_hour(points)
        if slope is None:
            continue
        mean = sum(y for _, y in points) / len(points)
        out[name] = (mean, slope, 100 * slope / mean if mean else None)
    return skip, out


def print_slopes(rows: list[Row]) -> None:
    skip, found = slopes(rows)
    print(f"\nslopes after the first {skip:.1f} min (least squares; % of the mean per hour):")
    print(f"{'series':<18} {'mean':>12} {'per hour':>12} {'%/h':>8}  verdict")
    for name, (mean, slope, pct) in found.items():
        pct_text = "-" if pct is None else f"{pct:+.1f}"
        print(f"{name:<18} {mean:>12,.2f} {slope:>+12,.2f} {pct_text:>8}  {_verdict(name, pct, slope)}")


# Panels of the plot: title -> the series prefixes or names it draws.
PANELS = (("PSS MB by process role", ("pss_mb_",)), ("JVM heap after GC, MB", ("jvm_heap_mb",)),
          ("open descriptors", ("fds_",)), ("threads", ("threads_",)),
          ("micro-batch duration, s", ("batch_s",)), ("commit-to-served latency, s", ("latency_s",)),
          ("checkpoint / history MB", ("checkpoint_mb", "history_mb")),
          ("checkpoint / history files", ("checkpoint_files", "history_files")))


def plot(rows: list[Row], out: Path) -> Path | None:
    """soak.png in `out`, a panel per family of series; None without matplotlib (the test extra)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no plot: matplotlib is missing (pip install -e '.[test]')")
        return None
    if not rows:
        return None
    figure, axes = plt.subplots(4, 2, figsize=(13, 14), sharex=True)
    for ax, (title, prefixes) in zip(axes.flat, PANELS):
        for name in rows[0]:
            if name in NOT_SERIES or not name.startswith(prefixes):
                continue
            points = [(r["t_min"], r[name]) for r in rows if r[name] is not None]
            if points:
                ax.plot(*zip(*points), marker=".", label=name)
        ax.set_title(title)
        ax.grid(alpha=.3)
        ax.legend(fontsize=7)
    for ax in axes[-1]:
        ax.set_xlabel("minutes")
    figure.tight_layout()
    path = out / "soak.png"
    figure.savefig(path, dpi=90)
    plt.close(figure)
    return path
