"""The offsets lane on disk, beside the query's checkpoint: what a restart reads back.

Each micro-batch with commits writes them, as the state stage handed them over, to
`<checkpoint>/offsets/delta-<batch id>.arrow` before Spark commits the batch; from time to time
the whole table is written as `base-<batch id>` (entries and activity, after that batch). A
restart takes the newest base at or below the last batch Spark committed and applies the deltas
after it up to that batch, in order: files of a batch Spark did not commit are the work of a
batch that runs again, and are ignored (then overwritten). Applying a batch twice changes
nothing (streaming.offsets.table), so nothing is lost or counted twice wherever a crash falls.

A base costs a write of every entry (about a second at 10^6 group-partitions), so one is written
when the deltas since the last have as many rows as it has, or every `BASE_EVERY_BATCHES`
batches: a batch pays for what it changed, and a restart reads at most about twice the table.
The previous base is kept until a later one is committed.
"""
from __future__ import annotations

import logging
import os
import re
from typing import Iterable

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.ipc as ipc

from streaming.offsets.table import ACTIVITY_SCHEMA, ENTRY_SCHEMA, OffsetsTable

log = logging.getLogger("groupscope.job")

BASE_EVERY_BATCHES = 2_000
_FILE = re.compile(r"^(delta|base|activity)-(\d+)\.arrow$")


def _filesystem(path: str) -> tuple[pafs.FileSystem, str]:
    if "://" in path:
        return pafs.FileSystem.from_uri(path)
    return pafs.LocalFileSystem(), os.path.abspath(path)


class OffsetsStore:
    def __init__(self, path: str) -> None:
        self.fs, self.root = _filesystem(path)
        self.fs.create_dir(self.root, recursive=True)
        self._since_base_rows = 0
        self._since_base_batches = 0
        self._base_rows = 0

    @staticmethod
    def exists(path: str) -> bool:
        fs, root = _filesystem(path)
        return fs.get_file_info(root).type == pafs.FileType.Directory

    def _files(self) -> dict[str, dict[int, str]]:
        found: dict[str, dict[int, str]] = {"delta": {}, "base": {}, "activity": {}}
        for info in self.fs.get_file_info(pafs.FileSelector(self.root)):
            match = _FILE.match(os.path.basename(info.path))
            if match:
                found[match.group(1)][int(match.group(2))] = info.path
        return found

    def empty(self) -> bool:
        files = self._files()
        return not files["delta"] and not files["base"]

    def _write(self, name: str, table: pa.Table) -> None:
        final = f"{self.root}/{name}"
        temporary = f"{self.root}/.{name}.tmp"
        with self.fs.open_output_stream(temporary) as out, ipc.new_file(out, table.schema) as writer:
            writer.write_table(table)
        self.fs.move(temporary, final)

    def _read(self, path: str) -> pa.Table:
        with self.fs.open_input_file(path) as source:
            return ipc.open_file(source).read_all()

    def after_batch(self, batch_id: int, commits: pa.Table, table: OffsetsTable) -> None:
        """Keep what batch `batch_id` brought: its commits, and now and then the whole table."""
        if commits.num_rows:
            self._write(f"delta-{batch_id}.arrow", commits)
            self._since_base_rows += commits.num_rows
            self._since_base_batches += 1
        if self._since_base_rows and (self._since_base_rows >= max(self._base_rows, 100_000)
                                      or self._since_base_batches >= BASE_EVERY_BATCHES):
            self.write_base(batch_id, table)

    def write_base(self, batch_id: int, table: OffsetsTable) -> None:
        entries, activity = table.to_arrow()
        self._write(f"base-{batch_id}.arrow", entries)
        self._write(f"activity-{batch_id}.arrow", activity)
        self._base_rows = entries.num_rows
        self._since_base_rows = self._since_base_batches = 0
        self._prune(batch_id)

    def _prune(self, newest_base: int) -> None:
        """Everything the base before `newest_base` no longer needs: the older bases and the
        deltas they hold. The one before stays until a batch after `newest_base` commits."""
        files = self._files()
        older = sorted(b for b in files["base"] if b < newest_base)
        if not older:
            return
        keep = older[-1]
        doomed: Iterable[str] = [p for b, p in files["base"].items() if b < keep]
        doomed = [*doomed, *[p for b, p in files["activity"].items() if b < keep],
                  *[p for b, p in files["delta"].items() if b <= keep]]
        for path in doomed:
            try:
                self.fs.delete_file(path)
            except OSError as exc:
                log.warning("cannot delete %s: %s", path, exc)

    def load(self, committed: int | None) -> OffsetsTable:
        """The table as batch `committed` (the last Spark committed; None: none) left it."""
        files = self._files()
        # A batch Spark did not commit runs again: what it wrote goes (its new run writes anew).
        for kind in files.values():
            for b, path in list(kind.items()):
                if committed is None or b > committed:
                    self.fs.delete_file(path)
                    del kind[b]
        if committed is None:
            return OffsetsTable()
        bases = [b for b in files["base"] if b <= committed and b in files["activity"]]
        if bases:
            base = max(bases)
            table = OffsetsTable.from_arrow(self._read(files["base"][base]),
                                            self._read(files["activity"][base]))
            self._base_rows = len(table)
        else:
            base, table = -1, OffsetsTable()
        deltas = sorted(b for b in files["delta"] if base < b <= committed)
        self._since_base_rows = 0
        for b in deltas:
            delta = self._read(files["delta"][b])
            table.apply(delta)
            self._since_base_rows += delta.num_rows
        self._since_base_batches = len(deltas)
        return table


__all__ = ["ACTIVITY_SCHEMA", "ENTRY_SCHEMA", "OffsetsStore"]
