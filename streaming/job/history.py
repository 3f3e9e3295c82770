"""The history sink: rebalance and membership events and periodic group snapshots, as Parquet
(or JSON lines) partitioned by date, so that "what did this group look like at 14:03 and what
changed" has an answer long after the fact.

Layout (history_layout.py): `<path>/events/date=YYYY-MM-DD/` and `<path>/snapshots/date=.../`
hold `batch-<id>` files, one per micro-batch and day, which the job compacts into `part-<a>-<b>`
files every hour and into one file a day once the day is over (history_compaction.py). A file is
named after the micro-batch that wrote it, so a micro-batch that Spark runs again after a crash
overwrites its own file instead of adding a second copy. Columns: group, ts_ms, kind (event name
or "snapshot"), payload (JSON), batch.

On start the job restores the exporter's counters and each group's last snapshot from the
running totals of the compacted days plus the rows written since (history_totals.py).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from streaming.job.history_files import SUFFIXES, read_files, rows_table, write_whole
from streaming.job.history_layout import (batch_name, day_files, day_folder, day_of, days,
                                          highest_batch, visible_files)

# Events worth keeping: offset commits are the bulk of the log and live in the snapshots instead.
HISTORY_EVENTS = frozenset({"rebalance", "rebalance_downtime", "member_joined", "member_left",
                            "group_emptied", "group_deleted", "offset_deleted"})

_ROW_COLUMNS = ("group", "ts_ms", "kind", "payload")


_LINEAGES_FILE = "lineages.json"


def batch_base(path: str, lineage: str) -> int:
    """What the history adds to the micro-batch ids of the checkpoint `lineage`
    (streaming.job.checkpoint_layout `checkpoint_lineage`). A checkpoint started anew numbers its
    batches from 0 again; written as they are, they would overwrite the old checkpoint's files of
    the same day, or fall inside a compacted part's range and never be read. The first checkpoint
    a history sees keeps its ids (a history written before lineages existed continues as it was);
    each later one starts above every id the history holds."""
    record = os.path.join(path, _LINEAGES_FILE)
    try:
        with open(record, encoding="utf-8") as fh:
            bases: dict[str, int] = json.load(fh)
    except FileNotFoundError:
        bases = {}
    if lineage in bases:
        return int(bases[lineage])
    highest = highest_batch(path) if bases else None
    bases[lineage] = 0 if highest is None else highest + 1
    os.makedirs(path, exist_ok=True)
    temp = record + ".tmp"
    with open(temp, "w", encoding="utf-8") as fh:
        json.dump(bases, fh)
    os.replace(temp, record)
    return bases[lineage]


@dataclass
class HistoryWriter:
    path: str
    format: str = "parquet"
    after_write: Callable[[int], None] | None = None  # e.g. HistoryMaintenance.after_batch
    batch_base: int = 0  # `batch_base` of the job's checkpoint

    def write(self, batch_id: int, kind: str, rows: Iterable[tuple[str, int, str, str]]) -> int:
        """Write rows (group, ts_ms, kind, payload JSON) of one micro-batch; returns the count."""
        batch_id += self.batch_base
        by_day: dict[str, list[tuple[str, int, str, str]]] = {}
        for row in rows:
            by_day.setdefault(day_of(row[1]), []).append(row)
        for day, day_rows in by_day.items():
            folder = day_folder(self.path, kind, day)
            os.makedirs(folder, exist_ok=True)
            # Whole files only: a crash leaves the old file or none.
            write_whole(rows_table(day_rows, batch_id),
                        os.path.join(folder, batch_name(batch_id, SUFFIXES[self.format])), self.format)
        if self.after_write is not None:
            self.after_write(batch_id)
        return sum(len(r) for r in by_day.values())


def read_history(path: str, kind: str, group: str | None = None, since_ms: int | None = None,
                 until_ms: int | None = None, first_day: str | None = None,
                 last_day: str | None = None) -> list[dict[str, Any]]:
    """Rows of `kind` ("events" or "snapshots"), oldest first, payload parsed. Only the date
    folders of the range are listed, and only the row groups that may hold `group` are read."""
    first = max(filter(None, (first_day, day_of(since_ms) if since_ms is not None else None)),
                default=None)
    last = min(filter(None, (last_day, day_of(until_ms) if until_ms is not None else None)),
               default=None)
    return _read(lambda: visible_files(path, kind, first, last), group, since_ms, until_ms)


def snapshot_at(path: str, group: str, at_ms: int | None = None) -> Mapping[str, Any] | None:
    """The group's last snapshot at or before `at_ms` (default: its last): days are read newest
    first, and the first day that has one answers."""
    last = day_of(at_ms) if at_ms is not None else None
    for day in reversed(days(path, "snapshots", last=last)):
        rows = _read(lambda: day_files(path, "snapshots", day).visible(), group, None, at_ms)
        if rows:
            return rows[-1]["payload"]
    return None


def _read(plan: Callable[[], list[str]], group, since_ms, until_ms) -> list[dict[str, Any]]:
    for attempt in range(3):
        try:
            table = read_files(plan(), group, since_ms, until_ms, columns=_ROW_COLUMNS)
            break
        except FileNotFoundError:
            # A compaction replaced files between the listing and the read: list again.
            if attempt == 2:
                raise
    rows = table.to_pylist()
    for row in rows:
        row["payload"] = json.loads(row["payload"])
    # The group breaks ties of time between groups, so that the order does not depend on how
    # the rows are spread over files (compacted parts are sorted by group); a group's own rows of
    # equal time keep the order their batches wrote them in.
    rows.sort(key=lambda r: (r["ts_ms"], _position(r["payload"]), r["group"]))
    return rows


def _position(payload: Mapping[str, Any]) -> tuple[int, int]:
    return (payload.get("partition", -1) if isinstance(payload.get("partition"), int) else -1,
            payload.get("offset", -1) if isinstance(payload.get("offset"), int) else -1)


# What tells apart the events of one record: a group-metadata record can say that several
# members joined or left, and a rebalance's completion can end the downtime of several partitions.
_SUBJECT_FIELDS = ("member_id", "topic", "partition_id")


def event_identity(payload: Mapping[str, Any]) -> tuple:
    """The event's identity: its name, group and record position, and what it is about (member,
    partition). The same records yield the same events whatever the micro-batches (see
    coordinator/state/events.py), so a batch written twice repeats identities and nothing else
    does."""
    return (payload.get("event"), payload.get("group"), payload.get("partition"),
            payload.get("offset"), *(payload.get(name) for name in _SUBJECT_FIELDS))


def unique_events(rows: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Events once each: an event can appear in two batch files when a batch was re-planned
    differently after a crash; distinct events of one record all stay."""
    seen: set[tuple] = set()
    out = []
    for row in rows:
        payload = row["payload"]
        key = event_identity(payload)
        if key in seen:
            continue
        seen.add(key)
        out.append(payload)
    return out


def latest_snapshots(rows: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    latest: dict[str, Mapping[str, Any]] = {}
    for row in rows:
        latest[row["group"]] = row["payload"]
    return latest
