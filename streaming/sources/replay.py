"""`groupscope-replay`: a capture file (docs/capture-format.md) as a streaming source.

The offset is the number of complete lines consumed, `{"line": n}`. A file that grows (a
simulator still writing) is followed; a half-written last line waits for its newline.
"""
from __future__ import annotations

import os
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadLimit, ReadMaxRows,
                                              SupportsTriggerAvailableNow)
from pyspark.sql.types import StructType

from streaming.sources.capture_file import CAPTURE_TOPIC, decode_line
from streaming.kafka.records import KafkaShapedSource, record_batch

FORMAT = "groupscope-replay"
INDEX_STEP = 10_000      # remember the byte position of every INDEX_STEP-th line
BATCH_ROWS = 10_000


class LineIndex:
    """Counts complete lines of a file and remembers where every INDEX_STEP-th one starts."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lines = 0
        self.scanned_bytes = 0
        self.marks = [0]  # marks[i] = byte position of line i * INDEX_STEP

    def refresh(self) -> int:
        size = os.path.getsize(self.path)
        if size < self.scanned_bytes:
            raise RuntimeError(f"capture file {self.path} shrank while being replayed")
        if size == self.scanned_bytes:
            return self.lines
        with open(self.path, "rb") as fh:
            fh.seek(self.scanned_bytes)
            position = self.scanned_bytes
            for line in fh:
                if not line.endswith(b"\n"):
                    break  # still being written
                position += len(line)
                self.lines += 1
                if self.lines % INDEX_STEP == 0:
                    self.marks.append(position)
            self.scanned_bytes = position
        return self.lines

    def mark_for(self, line: int) -> tuple[int, int]:
        """(line, byte position) of the last remembered line at or before `line`."""
        slot = min(line // INDEX_STEP, len(self.marks) - 1)
        return slot * INDEX_STEP, self.marks[slot]


class LineRange(InputPartition):
    def __init__(self, path: str, first: int, end: int, mark_line: int, mark_byte: int) -> None:
        super().__init__((first, end))
        self.path, self.first, self.end = path, first, end
        self.mark_line, self.mark_byte = mark_line, mark_byte


class ReplayStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, path: str, max_records: int | None, lines_per_split: int) -> None:
        self.path = path
        self.max_records = max_records
        self.lines_per_split = lines_per_split
        self._index: LineIndex | None = None
        self._target: int | None = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_index": None}

    def _lines(self) -> LineIndex:
        if self._index is None:
            self._index = LineIndex(self.path)
        self._index.refresh()
        return self._index

    def initialOffset(self) -> dict:
        return {"line": 0}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.max_records) if self.max_records else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._lines().lines

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        end = self._lines().lines
        if self._target is not None:
            end = min(end, self._target)
        end = max(end, start["line"])
        if isinstance(limit, ReadMaxRows):
            end = min(end, start["line"] + limit.max_rows)
        return {"line": end}

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        index = self._lines()
        if index.lines < end["line"]:
            raise RuntimeError(f"capture file {self.path} has {index.lines} lines, but the "
                               f"checkpoint has read {end['line']}: was it replaced?")
        splits = []
        for first in range(start["line"], end["line"], self.lines_per_split):
            mark_line, mark_byte = index.mark_for(first)
            splits.append(LineRange(self.path, first, min(end["line"], first + self.lines_per_split),
                                    mark_line, mark_byte))
        return splits

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_lines(partition)


def read_lines(split: LineRange) -> Iterator[pa.RecordBatch]:
    columns: tuple[list, ...] = ([], [], [], [], [], [])
    with open(split.path, "rb") as fh:
        fh.seek(split.mark_byte)
        number = split.mark_line
        for line in fh:
            if number >= split.end:
                break
            if number >= split.first:
                record = decode_line(line, f"{split.path} line {number + 1}")
                for column, value in zip(columns, (record.partition, record.key, record.value,
                                                   record.offset, record.timestamp_ms,
                                                   record.timestamp_type)):
                    column.append(value)
                if len(columns[0]) >= BATCH_ROWS:
                    yield _batch(columns)
                    columns = ([], [], [], [], [], [])
            number += 1
    if columns[0]:
        yield _batch(columns)


def _batch(columns: tuple[list, ...]) -> pa.RecordBatch:
    partitions, keys, values, offsets, stamps, kinds = columns
    return record_batch(CAPTURE_TOPIC, partitions, keys, values, offsets, stamps, kinds)


class ReplayDataSource(KafkaShapedSource):
    """`spark.readStream.format("groupscope-replay").option("path", file)`."""

    format_name = FORMAT
    reader_class = ReplayStreamReader

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        path = self.options.get("path")
        if not path:
            raise ValueError("the groupscope-replay source needs option path")
        limit = self.options.get("maxRecordsPerTrigger")
        return self.reader_class(os.path.abspath(path), int(limit) if limit else None,
                                  int(self.options.get("linesPerSplit", 100_000)))
