"""Compaction of a day's batch files into parts, and retention.

A compaction writes its part under a hidden temporary name, renames it into place (atomic), and
only then deletes the files it replaced. A crash at any point leaves either the old files alone,
or the new part beside leftovers that it covers (history_layout.py): readers read each row once,
and the next compaction deletes the leftovers. Only batches below `bound` are compacted: the job
passes the id of the micro-batch it is writing, every lower batch is committed in the checkpoint,
so no batch a crash makes Spark run again ever lands inside a compacted range.
"""
from __future__ import annotations

import datetime as dt
import glob
import os
import shutil
import signal
from typing import Iterable, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from streaming.job.history_files import (ROW_GROUP_ROWS, SCHEMA, SUFFIXES, read_files,
                                         sort_by_group, temp_name, write_jsonl)
from streaming.job.history_layout import (KINDS, DayFiles, day_files, day_of, days, part_name)

# Set to a step name ("part-written", "part-renamed", "half-deleted") to SIGKILL the process
# there: tests/unit/test_history_store.py kills a compaction at each step for real.
CRASH_POINT_VARIABLE = "GROUPSCOPE_HISTORY_CRASH_POINT"


def _crash_point(step: str) -> None:
    if os.environ.get(CRASH_POINT_VARIABLE) == step:
        os.kill(os.getpid(), signal.SIGKILL)


def compact_day(path: str, kind: str, day: str, fmt: str, bound: int, closed: bool) -> bool:
    """Fold the day's batch files below `bound` into a part; a closed day ends as one part.
    Returns True when it wrote a part."""
    files = day_files(path, kind, day)
    pending = [(bid, name) for bid, name in files.batches if bid < bound]
    wrote = False
    if pending:
        first, last = pending[0][0], pending[-1][0]
        # A part must contain every part its range overlaps, or readers would skip their rows.
        absorbed = [p for p in files.parts if p[0] <= last and first <= p[1]]
        first = min([first] + [p[0] for p in absorbed])
        last = max([last] + [p[1] for p in absorbed])
        table = pa.concat_tables([_batch_table(files.folder, bid, name) for bid, name in pending] +
                                 [read_files([os.path.join(files.folder, p[2])]) for p in absorbed])
        _replace(files, first, last, lambda temp: _write_sorted(table, temp, fmt), fmt)
        wrote = True
        files = day_files(path, kind, day)
    if closed and len(files.parts) > 1:
        first, last = files.parts[0][0], max(p[1] for p in files.parts)
        inputs = [os.path.join(files.folder, p[2]) for p in files.parts]
        _replace(files, first, last, lambda temp: _merge_sorted(inputs, temp, fmt), fmt)
        wrote = True
        files = day_files(path, kind, day)
    _delete(files.folder, files.stale)
    return wrote


def _batch_table(folder: str, batch_id: int, name: str) -> pa.Table:
    # The batch id comes from the name: files written before the `batch` column have none.
    table = read_files([os.path.join(folder, name)])
    return table.set_column(SCHEMA.get_field_index("batch"), "batch",
                            pa.array([batch_id] * table.num_rows, pa.int64()))


def _replace(files: DayFiles, first: int, last: int, write, fmt: str) -> None:
    target = os.path.join(files.folder, part_name(first, last, SUFFIXES[fmt]))
    temp = temp_name(target)
    write(temp)
    _crash_point("part-written")
    os.replace(temp, target)
    _crash_point("part-renamed")
    _delete(files.folder, files.refreshed().stale)


def _delete(folder: str, names: Sequence[str]) -> None:
    for i, name in enumerate(names):
        if i == len(names) // 2 and i:
            _crash_point("half-deleted")
        try:
            os.remove(os.path.join(folder, name))
        except FileNotFoundError:
            pass


def _write_sorted(table: pa.Table, file: str, fmt: str) -> None:
    if fmt == "parquet":
        pq.write_table(sort_by_group(table), file, row_group_size=ROW_GROUP_ROWS,
                       compression=PART_COMPRESSION)
    else:
        write_jsonl(sort_by_group(table).to_pylist(), file)


# Parts are written once and read for months: zstd is about a third smaller than snappy here.
PART_COMPRESSION = "zstd"


def _merge_sorted(inputs: Sequence[str], file: str, fmt: str) -> None:
    """Merge parts into one file sorted by group, a slice of groups at a time: a day of
    snapshots is far larger than the driver should hold at once, and each slice is read with a
    group-range filter that skips the other row groups of every input."""
    if fmt != "parquet":
        _write_sorted(read_files(inputs), file, fmt)
        return
    counts = pc.value_counts(read_files(inputs, columns=["group"]).column("group"))
    by_group = sorted(zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist()))
    write_slices(file, (_group_range(inputs, low, high) for low, high in _slices(by_group)))


def write_slices(file: str, slices: Iterable[pa.Table]) -> None:
    """A part from slices of consecutive groups, each sorted and written as it comes: the
    day-end merge, and benchmarks/history.py's older days."""
    with pq.ParquetWriter(file, SCHEMA, compression=PART_COMPRESSION) as writer:
        for table in slices:
            writer.write_table(sort_by_group(table), row_group_size=ROW_GROUP_ROWS)


def _group_range(inputs: Sequence[str], low: str, high: str) -> pa.Table:
    return ds.dataset(list(inputs), schema=SCHEMA, format="parquet").to_table(
        filter=(ds.field("group") >= low) & (ds.field("group") <= high))


def _slices(by_group: list[tuple[str, int]]) -> list[tuple[str, str]]:
    """(first, last) group of consecutive groups holding about ROW_GROUP_ROWS rows together."""
    slices, start, rows = [], None, 0
    for name, count in by_group:
        if start is not None and rows + count > ROW_GROUP_ROWS:
            slices.append((start, previous))
            start, rows = None, 0
        if start is None:
            start = name
        rows += count
        previous = name
    if start is not None:
        slices.append((start, previous))
    return slices


def retention_cut(path: str, retention_s: float, now_s: float) -> str | None:
    """The oldest day kept: the retention counts back from now, or from the end of the newest
    day held when that is earlier (a replayed capture of last year keeps its last 30 days)."""
    newest = max((d for kind in KINDS for d in days(path, kind)), default=None)
    if retention_s <= 0 or newest is None:
        return None
    newest_end_s = (dt.date.fromisoformat(newest) - dt.date(1970, 1, 1)).days * 86400.0 + 86400.0
    return day_of(int((min(now_s, newest_end_s) - retention_s) * 1000))


def expire(path: str, retention_s: float, now_s: float) -> list[str]:
    """Delete the days older than the retention (0: keep all); returns the days deleted. A day
    goes whole: renamed to a hidden name first, so no reader sees half a day."""
    cut = retention_cut(path, retention_s, now_s)
    if cut is None:
        return []
    gone = []
    for kind in KINDS:
        for leftover in glob.glob(os.path.join(path, kind, ".expired-date=*")):
            shutil.rmtree(leftover)  # a crash stopped an earlier deletion
        for day in days(path, kind, last=cut):
            if day == cut:
                continue
            folder = os.path.join(path, kind, f"date={day}")
            doomed = os.path.join(path, kind, f".expired-date={day}")
            os.replace(folder, doomed)
            shutil.rmtree(doomed)
            gone.append(day)
    return sorted(set(gone))
