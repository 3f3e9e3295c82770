"""Where history rows live, and which files a reader must open.

`<path>/<kind>/date=YYYY-MM-DD/` holds, per day (UTC, of the row's time):

- `batch-<id>.<ext>`: what micro-batch `<id>` wrote for that day;
- `part-<first>-<last>.<ext>`: a compacted file holding every row of batches `first`..`last`
  that were in the folder when it was written.

A part covers its batch-id range: a batch file inside the range of a part is already in that
part (a crash left it behind between the part's rename and the deletes, see
history_compaction.py), and a part inside the range of a larger part was merged into it. Readers
open the parts no other part covers and the batch files no part covers, so each row is read once
whatever the moment a compaction was interrupted.
"""
from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import dataclass, field

KINDS = ("events", "snapshots")
_BATCH = re.compile(r"^batch-(\d+)\.(parquet|jsonl)$")
_PART = re.compile(r"^part-(\d+)-(\d+)\.(parquet|jsonl)$")
_DAY = re.compile(r"^date=(\d{4}-\d{2}-\d{2})$")


def day_of(ts_ms: int) -> str:
    return dt.datetime.fromtimestamp(ts_ms / 1000.0, dt.timezone.utc).strftime("%Y-%m-%d")


def day_folder(path: str, kind: str, day: str) -> str:
    return os.path.join(path, kind, f"date={day}")


def batch_name(batch_id: int, suffix: str) -> str:
    return f"batch-{batch_id:010d}.{suffix}"


def part_name(first: int, last: int, suffix: str) -> str:
    return f"part-{first:010d}-{last:010d}.{suffix}"


def days(path: str, kind: str, first: str | None = None, last: str | None = None) -> list[str]:
    """The kind's days from `first` to `last` (inclusive, either open), oldest first: date
    folders outside the range are not opened."""
    try:
        names = os.listdir(os.path.join(path, kind))
    except FileNotFoundError:
        return []
    found = sorted(m.group(1) for m in map(_DAY.match, names) if m)
    return [d for d in found if (first is None or d >= first) and (last is None or d <= last)]


@dataclass
class DayFiles:
    folder: str
    parts: list[tuple[int, int, str]] = field(default_factory=list)  # the covering parts
    batches: list[tuple[int, str]] = field(default_factory=list)     # batch files no part covers
    stale: list[str] = field(default_factory=list)  # covered parts and batch files: leftovers

    def visible(self) -> list[str]:
        """The files holding the day's rows once each, in batch order."""
        ordered = [(first, name) for first, _, name in self.parts] + list(self.batches)
        return [os.path.join(self.folder, name) for _, name in sorted(ordered)]

    def refreshed(self) -> "DayFiles":
        kind_folder, day = os.path.split(self.folder)
        path, kind = os.path.split(kind_folder)
        return day_files(path, kind, day[len("date="):])

    def covered(self, batch_id: int) -> bool:
        return any(first <= batch_id <= last for first, last, _ in self.parts)


def day_files(path: str, kind: str, day: str) -> DayFiles:
    folder = day_folder(path, kind, day)
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return DayFiles(folder)
    parts = sorted(((int(m.group(1)), int(m.group(2)), name)
                    for name in names if (m := _PART.match(name))),
                   key=lambda p: (p[0], -p[1]))
    files = DayFiles(folder)
    for first, last, name in parts:
        if any(f <= first and last <= l for f, l, _ in files.parts):
            files.stale.append(name)
        else:
            files.parts.append((first, last, name))
    for name in names:
        m = _BATCH.match(name)
        if m is None:
            continue
        batch_id = int(m.group(1))
        if files.covered(batch_id):
            files.stale.append(name)
        else:
            files.batches.append((batch_id, name))
    files.batches.sort()
    return files


def visible_files(path: str, kind: str, first: str | None = None,
                  last: str | None = None) -> list[str]:
    return [f for day in days(path, kind, first, last) for f in day_files(path, kind, day).visible()]


def highest_batch(path: str) -> int | None:
    """The highest micro-batch id any file of the history holds (a part counts its last)."""
    highest = None
    for kind in KINDS:
        for day in days(path, kind):
            try:
                names = os.listdir(day_folder(path, kind, day))
            except FileNotFoundError:
                continue  # expired meanwhile
            for name in names:
                batch, part = _BATCH.match(name), _PART.match(name)
                last = int(batch.group(1)) if batch else int(part.group(2)) if part else None
                if last is not None and (highest is None or last > highest):
                    highest = last
    return highest
