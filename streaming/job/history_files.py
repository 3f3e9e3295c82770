"""One history file, Parquet or JSON lines: its columns, how it is written whole, and how a set of
files is read with the group and time filters pushed down to Parquet's row-group statistics."""
from __future__ import annotations

import json
import os
from typing import Iterable, Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

# `batch` is the micro-batch that wrote the row: compacted files mix many batches, and readers
# order rows of equal time by it as they did when each batch had its own file.
SCHEMA = pa.schema([("group", pa.string()), ("ts_ms", pa.int64()), ("kind", pa.string()),
                    ("payload", pa.string()), ("batch", pa.int64())])
SUFFIXES = {"parquet": "parquet", "json": "jsonl"}
# A group's rows of a day sit together in a compacted file; row groups this size let a
# one-group query decode a few thousand rows of a day instead of all of them.
ROW_GROUP_ROWS = 8192


def file_format(file: str) -> str:
    return "parquet" if file.endswith(".parquet") else "json"


def temp_name(target: str) -> str:
    """Hidden (Spark and DuckDB skip names that start with a dot) and never matched by readers."""
    folder, name = os.path.split(target)
    return os.path.join(folder, f".{name}.tmp")


def rows_table(rows: Sequence[tuple[str, int, str, str]], batch_id: int) -> pa.Table:
    columns = list(zip(*rows)) if rows else [[], [], [], []]
    arrays = [list(col) for col in columns] + [[batch_id] * len(rows)]
    return pa.table(dict(zip(SCHEMA.names, arrays)), schema=SCHEMA)


def sort_by_group(table: pa.Table) -> pa.Table:
    """Rows by group, then time, then batch; the sort is stable, so a batch's own row order
    stays."""
    return table.take(pc.sort_indices(table, [("group", "ascending"), ("ts_ms", "ascending"),
                                              ("batch", "ascending")]))


def write_whole(table: pa.Table, target: str, fmt: str, compression: str = "snappy") -> None:
    """`table` at `target`, replacing it atomically: readers see the old file or the new one."""
    temp = temp_name(target)
    if fmt == "parquet":
        pq.write_table(table, temp, row_group_size=ROW_GROUP_ROWS, compression=compression)
    else:
        write_jsonl(table.to_pylist(), temp)
    os.replace(temp, target)


def write_jsonl(rows: Iterable[dict], file: str) -> None:
    with open(file, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")


def filter_expression(group: str | None, since_ms: int | None, until_ms: int | None):
    expr = None
    for term in ((ds.field("group") == group) if group is not None else None,
                 (ds.field("ts_ms") >= since_ms) if since_ms is not None else None,
                 (ds.field("ts_ms") <= until_ms) if until_ms is not None else None):
        if term is not None:
            expr = term if expr is None else expr & term
    return expr


def read_files(files: Sequence[str], group: str | None = None, since_ms: int | None = None,
               until_ms: int | None = None, columns: Sequence[str] | None = None) -> pa.Table:
    """Matching rows of `files`, file by file in the order given."""
    return pa.concat_tables(list(_tables(files, group, since_ms, until_ms, columns)) or
                            [SCHEMA.empty_table().select(list(columns or SCHEMA.names))])


def scan_batches(files: Sequence[str], columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
    """Every row of `files` a record batch at a time, so a day of snapshots is never all in
    memory."""
    parquet = [f for f in files if file_format(f) == "parquet"]
    if parquet:
        # One thread: callers number rows across passes, which needs the same order each time.
        yield from _dataset(parquet).to_batches(columns=list(columns), use_threads=False)
    for file in files:
        if file_format(file) == "json":
            yield from _jsonl_table(file, None, None, None).select(list(columns)).to_batches()


def _tables(files, group, since_ms, until_ms, columns) -> Iterator[pa.Table]:
    cols = list(columns or SCHEMA.names)
    run: list[str] = []  # consecutive Parquet files go to one dataset: threads, one scan
    for file in list(files) + [""]:
        if file and file_format(file) == "parquet":
            run.append(file)
            continue
        if run:
            yield _dataset(run).to_table(columns=cols,
                                         filter=filter_expression(group, since_ms, until_ms))
            run = []
        if file:
            yield _jsonl_table(file, group, since_ms, until_ms).select(cols)


def _dataset(files: Sequence[str]) -> ds.Dataset:
    # The schema is given so that files written before the `batch` column read it as null.
    return ds.dataset(list(files), schema=SCHEMA, format="parquet")


def _jsonl_table(file: str, group, since_ms, until_ms) -> pa.Table:
    rows = []
    with open(file, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            row = json.loads(line)
            if group is not None and row["group"] != group:
                continue
            if since_ms is not None and row["ts_ms"] < since_ms:
                continue
            if until_ms is not None and row["ts_ms"] > until_ms:
                continue
            row.setdefault("batch", None)
            rows.append(row)
    return pa.Table.from_pylist(rows, schema=SCHEMA)
