"""OffsetsLane: the offsets table behind one lock, fed a micro-batch at a time by the job's sink,
kept on disk by its store, and read by the group lane's look-ups (streaming.offsets.lookup) while
a batch runs."""
from __future__ import annotations

import dataclasses
import threading
from typing import Iterable, Mapping

import pyarrow as pa
import pyarrow.compute as pc

from coordinator.state.lanes import Activity, LaneEntry
from streaming.offsets.store import OffsetsStore
from streaming.pipeline.commit_columns import COMMIT_KIND
from streaming.offsets.table import COMMIT_INPUT, ENTRY_SCHEMA, Applied, OffsetsTable, as_commits

NO_COMMITS = as_commits(ENTRY_SCHEMA.empty_table())


@dataclasses.dataclass(frozen=True)
class LaneBatch:
    """What a micro-batch did to the lane, for the view and the history: `applied`, the groups
    the group lane applied records of (their snapshots list their offsets), and every entry of
    the deleted groups a commit found again."""

    applied: Applied
    by_group_lane: frozenset[str]
    revived: dict[str, list[LaneEntry]]


class OffsetsLane:
    def __init__(self, table: OffsetsTable | None = None, store: OffsetsStore | None = None) -> None:
        self.table = table or OffsetsTable()
        self.store = store
        self.lock = threading.Lock()

    def lookup(self, groups: list[str]) -> tuple[dict[str, list[LaneEntry]], dict[str, Activity]]:
        with self.lock:
            return self.table.lookup(groups)

    def apply_batch(self, commits: pa.Table | None, snapshots: Iterable[Mapping],
                    events: Iterable[Mapping], batch_id: int | None = None) -> LaneBatch:
        """A micro-batch: its commits (the state stage's commit rows), and the group lane's
        snapshots and events, which say which groups it applied records of and which it deleted
        or holds alive. With a store, what the batch changed is on disk when this returns."""
        commits = NO_COMMITS if commits is None else commits
        states = {s["group"]: s.get("state") for s in snapshots}
        deaths = {e["group"]: int(e["offset"]) for e in events if e.get("event") == "group_deleted"}
        with self.lock:
            table = self.table
            applied = table.apply(commits, states)
            for group, state in states.items():
                if state != "Dead":
                    table.note_alive(group)
                elif group in deaths:
                    table.note_deleted(group, deaths[group])
            revived = table.lookup(applied.revived)[0] if applied.revived else {}
            if self.store is not None and batch_id is not None:
                self.store.after_batch(batch_id, commits, table)
        return LaneBatch(applied, frozenset(states), revived)

    def everything(self) -> LaneBatch:
        """Every entry, as one batch that committed them all (a restart's view)."""
        with self.lock:
            return LaneBatch(self.table.held(), frozenset(), {})

    def without_entries(self) -> list[tuple[str, int, int]]:
        """The groups known with none of their offsets left (OffsetsTable.without_entries): a
        restart's view serves them as the running one did."""
        with self.lock:
            return self.table.without_entries()


def split_commits(rows: pa.Table) -> tuple[pa.Table, pa.Table]:
    """The state stage's output (streaming.pipeline.state_stage.OUTPUT_SCHEMA) as the offsets
    lane's commits (COMMIT_INPUT columns) and the group lane's rows."""
    is_commit = pc.fill_null(pc.equal(rows.column("kind"), COMMIT_KIND), False)
    return (rows.filter(is_commit).select(list(COMMIT_INPUT)),
            rows.filter(pc.invert(is_commit)))
