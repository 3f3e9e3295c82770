"""Running totals of the history, so that a restart reads the compacted days' totals and only
the rows written since, not months of events.

`<path>/totals/through-YYYY-MM-DD.parquet`, one per closed day, holds everything a restart
rebuilds from the days up to and including that one: the exporter's counters per group (as the
view's own `apply_events` left them after every unique event of those days, in the order
`read_history` gives them), and each group's latest snapshot. Its metadata also lists the files
each day was folded from: when a day's files change later (a late write, a compaction after
it), that totals file no longer answers for the day, and an older one is used and the days
after it replayed. Counters of days that retention has deleted stay in the totals, so a counter
never goes backwards because its events expired.
"""
from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import dataclass
from typing import Any, Mapping

import pyarrow as pa
import pyarrow.parquet as pq

from streaming.exporter.view import REBALANCE_HISTOGRAMS, GroupRecord, MonitorView
from streaming.job.history import latest_snapshots, read_history, unique_events
from streaming.job.history_files import SCHEMA, read_files, scan_batches, write_whole
from streaming.job.history_layout import KINDS, day_files, days, visible_files

_META_KEY = b"groupscope.totals"


@dataclass
class Totals:
    through: str
    events: int                                  # unique events folded in
    groups: dict[str, dict[str, Any]]            # counters per group
    folded: dict[str, dict[str, list[str]]]      # kind -> day -> file names folded
    file: str | None = None
    latest: pa.Table | None = None               # latest snapshot rows, loaded when asked

    def snapshot_table(self) -> pa.Table:
        if self.latest is None:
            self.latest = read_files([self.file]) if self.file else SCHEMA.empty_table()
        return self.latest


def totals_folder(path: str) -> str:
    return os.path.join(path, "totals")


def totals_days(path: str) -> list[str]:
    try:
        names = os.listdir(totals_folder(path))
    except FileNotFoundError:
        return []
    return sorted(n[len("through-"):-len(".parquet")] for n in names
                  if n.startswith("through-") and n.endswith(".parquet"))


def totals_file(path: str, day: str) -> str:
    return os.path.join(totals_folder(path), f"through-{day}.parquet")


def read_totals(path: str, day: str) -> Totals:
    file = totals_file(path, day)
    meta = json.loads(pq.read_schema(file).metadata[_META_KEY])
    return Totals(meta["through"], meta["events"], meta["groups"], meta["folded"], file)


def write_totals(path: str, totals: Totals) -> None:
    os.makedirs(totals_folder(path), exist_ok=True)
    meta = {"through": totals.through, "events": totals.events, "groups": totals.groups,
            "folded": totals.folded}
    table = totals.snapshot_table().replace_schema_metadata({_META_KEY: json.dumps(meta)})
    write_whole(table, totals_file(path, totals.through), "parquet")


def folded_names(path: str, kind: str, day: str) -> list[str]:
    return [os.path.basename(f) for f in day_files(path, kind, day).visible()]


def still_valid(path: str, totals: Totals) -> bool:
    """True when every day up to `through` still holds exactly the files it was folded from
    (days deleted by retention aside)."""
    for kind in KINDS:
        folded = totals.folded.get(kind, {})
        for day in days(path, kind, last=totals.through):
            if folded.get(day) != folded_names(path, kind, day):
                return False
    return True


def newest_valid(path: str, through_max: str | None = None) -> Totals | None:
    for day in reversed(totals_days(path)):
        if through_max is not None and day > through_max:
            continue
        totals = read_totals(path, day)
        if still_valid(path, totals):
            return totals
    return None


def next_day(day: str) -> str:
    return (dt.date.fromisoformat(day) + dt.timedelta(days=1)).isoformat()


# -- counters in and out of a view -------------------------------------------------------------

def counters_of(record: GroupRecord, deleted_ms: int | None) -> dict[str, Any]:
    """`deleted_ms`: the time of the group's last deletion event, which the view weighs against
    the group's snapshot when it replays the event."""
    out: dict[str, Any] = {"rebalances": record.rebalances,
                           "partitions_moved": record.partitions_moved,
                           "last_rebalance_s": record.last_rebalance_s,
                           "deleted_ms": deleted_ms}
    for name in REBALANCE_HISTOGRAMS:
        hist = record.histogram(name)
        out[name] = [list(hist.counts), hist.sum, hist.count]
    return out


def load_counters(view: MonitorView, groups: Mapping[str, Mapping[str, Any]]) -> None:
    """Add folded counters to the view's groups, as if their events had been applied: counts
    add, a histogram's sum is added to a fresh one's 0.0 (exact), the last rebalance is a max,
    and the last deletion is replayed (of a group's deletions, the view acts on any its snapshot
    predates, and the last is predated whenever an earlier one is)."""
    with view.lock:
        for name, counters in groups.items():
            if not view.tracks(name):
                continue
            record = view._group(name)  # the view's own way to start a group it tracks
            record.rebalances += counters["rebalances"]
            record.partitions_moved += counters["partitions_moved"]
            last = counters["last_rebalance_s"]
            if last is not None and (record.last_rebalance_s is None or last > record.last_rebalance_s):
                record.last_rebalance_s = last
            for hist_name in REBALANCE_HISTOGRAMS:
                counts, total, count = counters[hist_name]
                if not count:
                    continue  # nothing observed: the group keeps sharing the empty one
                hist = record.own_histogram(hist_name)
                hist.counts = [a + b for a, b in zip(hist.counts, counts)]
                hist.sum += total
                hist.count += count
    view.apply_events([{"event": "group_deleted", "group": name,
                        "timestamp_ms": counters["deleted_ms"]}
                       for name, counters in groups.items() if counters["deleted_ms"] is not None])


# -- folding a day ------------------------------------------------------------------------------

def fold_day(path: str, base: Totals | None, day: str) -> Totals:
    """`base` plus the rows of `day` (the next day with rows after base.through)."""
    view = MonitorView(clock=lambda: 0.0)
    if base is not None:
        load_counters(view, base.groups)
    events = unique_events(read_history(path, "events", first_day=day, last_day=day))
    view.apply_events(events)
    folded = {kind: {d: names for d, names in (base.folded.get(kind, {}) if base else {}).items()
                     if os.path.isdir(os.path.join(path, kind, f"date={d}"))}
              for kind in KINDS}
    for kind in KINDS:
        if day in days(path, kind, first=day, last=day):
            folded[kind][day] = folded_names(path, kind, day)
    latest = _latest_rows(base.snapshot_table() if base else SCHEMA.empty_table(),
                          day_files(path, "snapshots", day).visible())
    deleted = {name: c["deleted_ms"] for name, c in (base.groups if base else {}).items()}
    for event in events:
        if event.get("event") == "group_deleted":
            name = event["group"]
            deleted[name] = max(deleted.get(name) or 0, event.get("timestamp_ms") or 0)
    return Totals(day, (base.events if base else 0) + len(events),
                  {name: counters_of(record, deleted.get(name))
                   for name, record in view.groups.items()},
                  folded, latest=latest)


def _latest_rows(previous: pa.Table, files: list[str]) -> pa.Table:
    """Each group's last snapshot: the latest of `files` (by time, then file and row order, as
    `read_history` orders them; files of later days than `previous`) replaces the previous one.
    Two passes over the files: the small columns find the winners, then only the winners'
    payloads are kept."""
    best: dict[str, tuple[int, int]] = {}  # group -> (ts_ms, row number in the day)
    row = 0
    for batch in scan_batches(files, ["group", "ts_ms"]):
        for group, ts in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()):
            held = best.get(group)
            if held is None or ts >= held[0]:
                best[group] = (ts, row)
            row += 1
    wanted = sorted(r for _, r in best.values())
    picked, start, i = [], 0, 0
    for batch in scan_batches(files, SCHEMA.names):
        local = []
        while i < len(wanted) and wanted[i] < start + batch.num_rows:
            local.append(wanted[i] - start)
            i += 1
        if local:
            picked.append(pa.Table.from_batches([batch.take(pa.array(local))]))
        start += batch.num_rows
    today = pa.concat_tables(picked).cast(SCHEMA) if picked else SCHEMA.empty_table()
    kept = previous.filter(pa.compute.invert(pa.compute.is_in(previous.column("group"),
                                                               today.column("group"))))
    return pa.concat_tables([kept.cast(SCHEMA), today])


# -- restoring a view ---------------------------------------------------------------------------

@dataclass(frozen=True)
class StoredHistory:
    """What a restore applies to a view, read before the view is touched."""
    snapshots: list[Mapping[str, Any]] | None  # each group's latest, when asked for
    counters: Mapping[str, Mapping[str, Any]]  # the newest valid totals' folded counters
    events: list[Mapping[str, Any]]  # the unique events of the days after those totals
    counted: int  # events the totals and those rows hold


def read_restore(path: str, snapshots: bool = True) -> StoredHistory:
    """The newest valid totals and the rows of the days after them."""
    base = newest_valid(path)
    first = next_day(base.through) if base is not None else None
    latest = None
    if snapshots:
        # Only each group's latest row is parsed: a day holds hundreds of thousands of snapshots.
        previous = base.snapshot_table() if base is not None else SCHEMA.empty_table()
        rows = _latest_rows(previous, visible_files(path, "snapshots", first))
        latest = list(latest_snapshots(_rows(rows)).values())
    events = unique_events(read_history(path, "events", first_day=first))
    return StoredHistory(latest, base.groups if base is not None else {}, events,
                         (base.events if base is not None else 0) + len(events))


def apply_restore(view: MonitorView, stored: StoredHistory) -> int:
    """The view as replaying the whole history would leave it, in one hold of its lock (a
    render sees it before or after, never a group restored without its counters). Returns the
    number of events counted."""
    with view.lock:
        if stored.snapshots is not None:
            view.update_groups(stored.snapshots)
        load_counters(view, stored.counters)
        view.apply_events(stored.events)
    return stored.counted


def restore(view: MonitorView, path: str, snapshots: bool = True) -> int:
    """The view as replaying the whole history would leave it: the newest valid totals, then
    the rows of the days after them. Returns the number of events counted."""
    return apply_restore(view, read_restore(path, snapshots))


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    rows = table.select(["group", "ts_ms", "kind", "payload"]).to_pylist()
    for row in rows:
        row["payload"] = json.loads(row["payload"])
    return rows
