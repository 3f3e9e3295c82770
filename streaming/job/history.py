"""The history sink: rebalance and membership events and periodic group snapshots, as Parquet
(or JSON lines) partitioned by date, so that "what did this group look like at 14:03 and what
changed" has an answer long after the fact.

Layout: `<path>/events/date=YYYY-MM-DD/batch-<id>.parquet` and
`<path>/snapshots/date=YYYY-MM-DD/batch-<id>.parquet`. A file is named after the micro-batch that
wrote it, so a micro-batch that Spark runs again after a crash overwrites its own file instead of
adding a second copy. Columns: group, ts_ms, kind (event name or "snapshot"), payload (JSON).

On start the job reads the history back (`restore_view` in lifecycle.py) to restore the exporter's counters and
the last known snapshot of every group.
"""
from __future__ import annotations

import datetime as dt
import glob
import json
import os
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

import pyarrow as pa
import pyarrow.parquet as pq

_SCHEMA = pa.schema([("group", pa.string()), ("ts_ms", pa.int64()), ("kind", pa.string()),
                     ("payload", pa.string())])

# Events worth keeping: offset commits are the bulk of the log and live in the snapshots instead.
HISTORY_EVENTS = frozenset({"rebalance", "rebalance_downtime", "member_joined", "member_left",
                            "group_emptied", "group_deleted", "offset_deleted"})


def _day(ts_ms: int) -> str:
    return dt.datetime.fromtimestamp(ts_ms / 1000.0, dt.timezone.utc).strftime("%Y-%m-%d")


@dataclass
class HistoryWriter:
    path: str
    format: str = "parquet"

    def write(self, batch_id: int, kind: str, rows: Iterable[tuple[str, int, str, str]]) -> int:
        """Write rows (group, ts_ms, kind, payload JSON) of one micro-batch; returns the count."""
        by_day: dict[str, list[tuple[str, int, str, str]]] = {}
        for row in rows:
            by_day.setdefault(_day(row[1]), []).append(row)
        for day, day_rows in by_day.items():
            folder = os.path.join(self.path, kind, f"date={day}")
            os.makedirs(folder, exist_ok=True)
            target = os.path.join(folder, f"batch-{batch_id:010d}.{self._suffix}")
            temp = target + ".tmp"
            if self.format == "parquet":
                columns = list(zip(*day_rows))
                table = pa.table({name: list(col) for name, col in zip(_SCHEMA.names, columns)},
                                 schema=_SCHEMA)
                pq.write_table(table, temp)
            else:
                with open(temp, "w", encoding="utf-8") as fh:
                    for g, ts, k, payload in day_rows:
                        fh.write(json.dumps({"group": g, "ts_ms": ts, "kind": k,
                                             "payload": payload}) + "\n")
            os.replace(temp, target)  # whole files only: a crash leaves the old file or none
        return sum(len(r) for r in by_day.values())

    @property
    def _suffix(self) -> str:
        return "parquet" if self.format == "parquet" else "jsonl"


def read_history(path: str, kind: str, group: str | None = None, since_ms: int | None = None,
                 until_ms: int | None = None) -> list[dict[str, Any]]:
    """Rows of `kind` ("events" or "snapshots"), oldest first, payload parsed."""
    rows: list[dict[str, Any]] = []
    for file in sorted(glob.glob(os.path.join(path, kind, "date=*", "batch-*"))):
        if file.endswith(".tmp"):
            continue
        if since_ms is not None and _file_day(file) < _day(since_ms):
            continue
        for row in _read_file(file):
            if group is not None and row["group"] != group:
                continue
            if since_ms is not None and row["ts_ms"] < since_ms:
                continue
            if until_ms is not None and row["ts_ms"] > until_ms:
                continue
            row["payload"] = json.loads(row["payload"])
            rows.append(row)
    rows.sort(key=lambda r: (r["ts_ms"], _position(r["payload"])))
    return rows


def _position(payload: Mapping[str, Any]) -> tuple[int, int]:
    return (payload.get("partition", -1) if isinstance(payload.get("partition"), int) else -1,
            payload.get("offset", -1) if isinstance(payload.get("offset"), int) else -1)


def _file_day(file: str) -> str:
    return os.path.basename(os.path.dirname(file))[len("date="):]


def _read_file(file: str) -> list[dict[str, Any]]:
    if file.endswith(".parquet"):
        return pq.read_table(file).to_pylist()
    with open(file, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


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
