"""The history sink fed by polls (`source.type: admin`), as the log path feeds it from
micro-batches (streaming/job/lifecycle.py `BatchSink`): the same files, so `groupscope history`
and a restart's counters read both alike.

Each poll is a batch. Its number names the events it found (their `offset`, as a log event is
named by its record's position, streaming/job/history.py `event_identity`) and the files it
writes; a restart numbers on from the highest batch the history holds, so it never overwrites
a file nor repeats an event's identity.
"""
from __future__ import annotations

import os
import time
from typing import Any, Iterable, Mapping

from coordinator import compact_json
from coordinator.admin_groups import Seen, resumed
from streaming.config import HistoryConfig
from streaming.exporter.view import MonitorView
from streaming.job.history import HISTORY_EVENTS, HistoryWriter, batch_base
from streaming.job.history_layout import highest_batch
from streaming.job.history_maintenance import HistoryMaintenance

LINEAGE = "admin"  # what batch_base keys the admin source's numbering by


class PollHistory:
    def __init__(self, settings: HistoryConfig) -> None:
        self.writer = HistoryWriter(settings.path, settings.format,
                                    HistoryMaintenance(settings.path, settings.format,
                                                       settings.retention).after_batch,
                                    batch_base(settings.path, LINEAGE))
        written = highest_batch(settings.path)
        # the first poll's number: above every batch written before
        self.first = 0 if written is None else max(0, written + 1 - self.writer.batch_base)
        self.path = settings.path
        self._interval_s = settings.snapshot_interval
        self._written: dict[str, tuple[float, int]] = {}  # group -> (when, what) last written

    def restore(self, view: MonitorView) -> dict[str, Seen]:
        """The view's counters and groups as the history left them (streaming/job/
        history_totals.py), and what the next poll continues from for each live group."""
        from streaming.job.history_totals import restore

        if not os.path.isdir(self.path):
            return {}
        with view.lock:
            restore(view, self.path)
            return {name: resumed(group.snapshot) for name, group in view.groups.items()
                    if group.snapshot is not None and group.dead_since_s is None}

    def write(self, batch: int, snapshots: Iterable[Mapping[str, Any]],
              events: Iterable[Mapping[str, Any]]) -> None:
        """One poll's events worth keeping, the snapshots of the groups they changed, and of
        each other group, once every `snapshot_interval`, if it differs from the last one
        looked at."""
        event_rows = [(e["group"], int(e["timestamp_ms"]), e["event"], compact_json.dumps(e))
                      for e in events if e["event"] in HISTORY_EVENTS]
        changed = {row[0] for row in event_rows}
        now = time.monotonic()
        snapshot_rows = []
        for snapshot in snapshots:
            name = snapshot["group"]
            last = self._written.get(name)
            if name not in changed and last is not None and now - last[0] < self._interval_s:
                continue
            # as of when does not make it another state: every poll dates every group
            what = hash(compact_json.dumps({**snapshot, "updated_ms": None}))
            self._written[name] = (now, what)  # looked at: not again for an interval
            if name in changed or last is None or what != last[1]:
                snapshot_rows.append((name, int(snapshot["updated_ms"]), "snapshot",
                                      compact_json.dumps(snapshot)))
        if event_rows:
            self.writer.write(batch, "events", event_rows)
        if snapshot_rows:
            self.writer.write(batch, "snapshots", snapshot_rows)
