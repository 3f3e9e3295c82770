"""The history's upkeep, run by the job in the driver: retention, compaction, running totals.

Once an hour (the first micro-batch of each hour starts it, on a thread of its own so that no
batch waits for it): days older than `history.retention` are deleted, the batch files written
since the last run are compacted into a part per day, every day that is over ends as one part,
and the running totals are extended to the last day that is over.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from streaming.job.history_compaction import compact_day, expire, retention_cut
from streaming.job.history_layout import KINDS, day_of, days
from streaming.job.history_totals import (fold_day, newest_valid, totals_days, totals_file,
                                          write_totals)

log = logging.getLogger("groupscope.history")


@dataclass
class MaintenanceReport:
    expired: list[str] = field(default_factory=list)
    compacted: int = 0
    folded: list[str] = field(default_factory=list)


def maintain(path: str, fmt: str, bound: int, now_s: float, retention_s: float) -> MaintenanceReport:
    """One pass; `bound`: the lowest batch id that may not be committed yet (none at or above
    it is compacted)."""
    cut = retention_cut(path, retention_s, now_s)
    report = MaintenanceReport(expired=expire(path, retention_s, now_s))
    today = day_of(int(now_s * 1000))
    for kind in KINDS:
        for day in days(path, kind):
            report.compacted += compact_day(path, kind, day, fmt, bound, closed=day < today)
    report.folded = fold_closed_days(path, today)
    _prune_totals(path, cut)
    return report


def fold_closed_days(path: str, today: str) -> list[str]:
    closed = sorted({d for kind in KINDS for d in days(path, kind) if d < today})
    if not closed:
        return []
    base = newest_valid(path, through_max=closed[-1])
    folded = []
    for day in closed:
        if base is None or day > base.through:
            base = fold_day(path, base, day)
            write_totals(path, base)
            folded.append(day)
    return folded


def _prune_totals(path: str, cut: str | None) -> None:
    """Totals of expired days go, but the newest of them stays: it is what a late write to the
    oldest kept day falls back to."""
    if cut is None:
        return
    old = [d for d in totals_days(path) if d < cut]
    for day in old[:-1]:
        os.remove(totals_file(path, day))


class HistoryMaintenance:
    """Starts `maintain` from the sink, at most once per `interval_s` and one run at a time."""

    def __init__(self, path: str, fmt: str, retention_s: float, interval_s: float = 3600.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.path, self.fmt, self.retention_s = path, fmt, retention_s
        self.interval_s = interval_s
        self.clock = clock
        self._slot: int | None = None
        self._thread: threading.Thread | None = None

    def after_batch(self, batch_id: int) -> None:
        slot = int(self.clock() // self.interval_s)
        if slot == self._slot or (self._thread is not None and self._thread.is_alive()):
            return
        self._slot = slot
        self._thread = threading.Thread(target=self._run, args=(batch_id,), daemon=True,
                                        name="groupscope-history-maintenance")
        self._thread.start()

    def join(self, timeout_s: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _run(self, bound: int) -> None:
        started = time.monotonic()
        try:
            report = maintain(self.path, self.fmt, bound, self.clock(), self.retention_s)
        except Exception:  # the next hour tries again; the stream goes on
            log.warning("history maintenance failed", exc_info=True)
            return
        log.info("history maintenance in %.1f s: %d parts written, days expired %s, totals "
                 "through %s", time.monotonic() - started, report.compacted,
                 report.expired or "none", report.folded[-1] if report.folded else "unchanged")
