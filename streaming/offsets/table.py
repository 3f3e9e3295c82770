"""OffsetsTable: the offsets lane's state in the driver, every committed offset as columns.

A row per (group, topic, partition) with a committed offset: the commit's fields and where its
record sits in `__consumer_offsets`; and per group, where its last offset record sits (commit or
tombstone) and its last commit (`coordinator.state.lanes.Activity`). A micro-batch's commits are
applied all at once (`apply`): the last record of each key wins unless the table holds a later
one, so a replayed batch changes nothing. What a batch cost is what it changed: key look-ups in
one sorted array (`RowIndex`) and column writes, no object per commit.

The group lane reads it through `lookup` (streaming/offsets/lookup.py) for the few groups a
batch has other records of, as it stood before that batch.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from coordinator.state.lanes import Activity, LaneEntry, offset_entry
from streaming.exporter.partition_table import Names
from streaming.exporter.row_index import RowIndex, compose

# The columns a batch's commits come in (the state stage's output, streaming.pipeline.state_stage).
COMMIT_INPUT = ("group", "ts_ms", "o_partition", "o_offset", "c_topic", "c_partition", "c_offset",
                "c_epoch", "c_metadata", "c_commit_ts", "c_topic_id")

# How the table is kept on disk (streaming/offsets/store.py).
ENTRY_SCHEMA = pa.schema([
    ("group", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
    ("offset", pa.int64()), ("leader_epoch", pa.int32()), ("metadata", pa.string()),
    ("commit_ts", pa.int64()), ("topic_id", pa.string()),
    ("o_partition", pa.int32()), ("o_offset", pa.int64()), ("ts_ms", pa.int64()),
])
ACTIVITY_SCHEMA = pa.schema([
    ("group", pa.string()), ("partition", pa.int32()), ("last_offset", pa.int64()),
    ("last_ts", pa.int64()), ("last_commit", pa.int64()),
])


@dataclass(frozen=True)
class Applied:
    """What one batch changed, for the view: the keys committed (their last commit each) and
    the keys deleted, as columns; the `offset_deleted` events of groups the group lane did not
    apply records of; the groups a commit found again after their deletion."""

    groups: list[str]
    topics: list[str]
    partitions: np.ndarray
    offsets: np.ndarray
    commit_s: np.ndarray
    coordinator_partitions: np.ndarray  # each commit's partition of __consumer_offsets
    updated_ms: np.ndarray              # and its record's time
    topic_ids: list                     # and the topic id it names (v4 commits), or None
    deleted_groups: list[str]
    deleted_topics: list[str]
    deleted_partitions: np.ndarray
    events: list[dict]
    revived: list[str]


def _column(table: pa.Table, name: str) -> np.ndarray:
    return table.column(name).to_numpy(zero_copy_only=False)


class OffsetsTable:
    _COLUMNS = (("group", np.int64, -1), ("topic", np.int64, -1), ("partition", np.int32, 0),
                ("offset", np.int64, -1), ("epoch", np.int32, -1), ("commit_ts", np.int64, 0),
                ("o_partition", np.int32, -1), ("o_offset", np.int64, -1), ("ts_ms", np.int64, 0))

    def __init__(self, rows: int = 1024) -> None:
        self.groups = Names()
        self.topics = Names()
        self.index = RowIndex()
        self._free: list[int] = []
        self._size = 0
        for name, dtype, fill in self._COLUMNS:
            setattr(self, name, np.full(rows, fill, dtype=dtype))
        self.metadata = np.full(rows, "", dtype=object)
        self.topic_id = np.full(rows, None, dtype=object)
        # Per group id: its __consumer_offsets partition, last record, its time, last commit.
        self.a_partition = np.full(64, -1, dtype=np.int32)
        self.a_last = np.full(64, -1, dtype=np.int64)
        self.a_ts = np.zeros(64, dtype=np.int64)
        self.a_commit = np.full(64, -1, dtype=np.int64)
        # Groups the group lane has deleted (-> the tombstone's offset), until a record finds
        # them again: their offsets are hidden, so a tombstone of one deletes nothing visible.
        self.dead_at: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.index)

    # ---- rows ------------------------------------------------------------------------------

    def _grow_rows(self, needed: int) -> None:
        size = len(self.offset)
        if needed <= size:
            return
        new = max(needed, 2 * size)
        for name, dtype, fill in self._COLUMNS:
            column = np.full(new, fill, dtype=dtype)
            column[:size] = getattr(self, name)
            setattr(self, name, column)
        for name, fill in (("metadata", ""), ("topic_id", None)):
            column = np.full(new, fill, dtype=object)
            column[:size] = getattr(self, name)
            setattr(self, name, column)

    def _reserve(self, count: int) -> np.ndarray:
        reused = self._free[-count:] if count else []
        del self._free[len(self._free) - len(reused):]
        fresh = count - len(reused)
        self._grow_rows(self._size + fresh)
        rows = np.concatenate([np.array(reused, dtype=np.int64),
                               np.arange(self._size, self._size + fresh, dtype=np.int64)])
        self._size += fresh
        return rows

    def _grow_groups(self, needed: int) -> None:
        size = len(self.a_last)
        if needed <= size:
            return
        new = max(needed, 2 * size)
        for name, fill in (("a_partition", -1), ("a_last", -1), ("a_ts", 0), ("a_commit", -1)):
            old = getattr(self, name)
            column = np.full(new, fill, dtype=old.dtype)
            column[:size] = old
            setattr(self, name, column)

    def _ids(self, names: Names, values: pa.ChunkedArray | pa.Array) -> np.ndarray:
        """Each value's id in `names`, made for new ones: one dictionary look-up per distinct
        value, not per row."""
        encoded = pc.dictionary_encode(values).combine_chunks() if isinstance(
            values, pa.ChunkedArray) else pc.dictionary_encode(values)
        ids = np.array([names.id(v) for v in encoded.dictionary.to_pylist()], dtype=np.int64)
        return ids[encoded.indices.to_numpy(zero_copy_only=False)] if len(ids) else \
            np.empty(0, dtype=np.int64)

    # ---- a batch ---------------------------------------------------------------------------

    def apply(self, commits: pa.Table, applied_by_group_lane: Iterable[str] = ()) -> Applied:
        """A micro-batch's commits and tombstones (COMMIT_INPUT columns). Groups in
        `applied_by_group_lane` had their records applied by the group lane, which emitted their
        events; the table emits the `offset_deleted` events of the others."""
        n = commits.num_rows
        if not n:
            return _NOTHING
        gids = self._ids(self.groups, commits.column("group"))
        tids = self._ids(self.topics, commits.column("c_topic"))
        parts = _column(commits, "c_partition").astype(np.int64)
        o_part = _column(commits, "o_partition").astype(np.int32)
        o_off = _column(commits, "o_offset").astype(np.int64)
        ts = _column(commits, "ts_ms").astype(np.int64)
        tomb = pc.is_null(commits.column("c_offset")).to_numpy(zero_copy_only=False)
        keys = compose(gids, tids, parts)
        events, revived = self._events_and_revivals(commits, gids, keys, o_off, tomb,
                                                    set(applied_by_group_lane))
        self._note_activity(gids, o_part, o_off, ts, tomb)
        # The last record of each key, in log order (a group's records share a partition).
        order = np.lexsort((o_off, keys))
        last = order[np.r_[keys[order][1:] != keys[order][:-1], True]]
        rows = self.index.lookup(keys[last])
        held = rows >= 0
        newer = ~held | (o_off[last] > self.o_offset[np.where(held, rows, 0)])
        last, rows, held = last[newer], rows[newer], held[newer]
        gone = tomb[last]
        # Deletions: rows freed, keys forgotten.
        dropped = last[gone & held]
        if len(dropped):
            positions = np.searchsorted(self.index.keys, keys[dropped])
            self._free.extend(self.index.remove_positions(positions).tolist())
        # Commits: rows found or made, columns written.
        put = last[~gone]
        at = rows[~gone]
        fresh = at < 0
        if fresh.any():
            made = self._reserve(int(fresh.sum()))
            self.index.add(keys[put[fresh]], made)
            at[fresh] = made
        if len(put):
            self.group[at] = gids[put]
            self.topic[at] = tids[put]
            self.partition[at] = parts[put]
            self.offset[at] = _column(commits, "c_offset")[put].astype(np.int64)
            epochs = commits.column("c_epoch").to_numpy(zero_copy_only=False)[put]
            self.epoch[at] = np.where(np.isnan(epochs.astype(np.float64)), -1, epochs).astype(np.int32)
            self.commit_ts[at] = _column(commits, "c_commit_ts")[put].astype(np.int64)
            self.metadata[at] = _strings(commits.column("c_metadata"), put, "")
            self.topic_id[at] = _strings(commits.column("c_topic_id"), put, None)
            self.o_partition[at] = o_part[put]
            self.o_offset[at] = o_off[put]
            self.ts_ms[at] = ts[put]
        group_names, topic_names = self.groups.names, self.topics.names
        deleted = last[gone]
        return Applied(
            groups=[group_names[g] for g in gids[put].tolist()],
            topics=[topic_names[t] for t in tids[put].tolist()],
            partitions=parts[put].astype(np.int32), offsets=self.offset[at].copy(),
            commit_s=self.commit_ts[at] / 1000.0, coordinator_partitions=o_part[put],
            updated_ms=ts[put], topic_ids=self.topic_id[at].tolist(),
            deleted_groups=[group_names[g] for g in gids[deleted].tolist()],
            deleted_topics=[topic_names[t] for t in tids[deleted].tolist()],
            deleted_partitions=parts[deleted].astype(np.int32), events=events, revived=revived)

    def _note_activity(self, gids: np.ndarray, o_part: np.ndarray, o_off: np.ndarray,
                       ts: np.ndarray, tomb: np.ndarray) -> None:
        self._grow_groups(int(gids.max()) + 1)
        order = np.lexsort((o_off, gids))
        last = order[np.r_[gids[order][1:] != gids[order][:-1], True]]
        g = gids[last]
        later = o_off[last] > self.a_last[g]
        g, last = g[later], last[later]
        self.a_partition[g] = o_part[last]
        self.a_last[g] = o_off[last]
        self.a_ts[g] = ts[last]
        commit_rows = np.flatnonzero(~tomb)
        if len(commit_rows):
            cg = gids[commit_rows]
            np.maximum.at(self.a_commit, cg, o_off[commit_rows])

    def _events_and_revivals(self, commits: pa.Table, gids: np.ndarray, keys: np.ndarray,
                             o_off: np.ndarray, tomb: np.ndarray,
                             by_group_lane: set[str]) -> tuple[list[dict], list[str]]:
        """`offset_deleted` for each tombstone (of a group the group lane did not see this batch)
        of a key held at that point by a group alive at that point (reducer semantics:
        coordinator.state.offsets.delete_offset); and the deleted groups a commit found again."""
        names = self.groups.names
        # A tombstone at or before the group's last record is a replay: it deleted nothing then.
        seen = np.where(gids < len(self.a_last), self.a_last[np.minimum(gids, len(self.a_last) - 1)], -1)
        candidates = np.flatnonzero(tomb & (o_off > seen))
        dead = self.dead_at
        revived: list[str] = []
        if dead:
            for g in np.unique(gids).tolist():
                name = names[g]
                if name in dead and name not in by_group_lane:
                    mine = np.flatnonzero(gids == g)
                    later = mine[~tomb[mine] & (o_off[mine] > dead[name])]
                    if len(later):
                        revived.append(name)
        if not len(candidates):
            for name in revived:
                dead.pop(name, None)
            return [], revived
        order = np.lexsort((o_off, keys))
        sorted_keys = keys[order]
        first_of_key = np.r_[True, sorted_keys[1:] != sorted_keys[:-1]]
        # Whether the key was held just before each row: the previous row of the key in the
        # batch is a commit, or it is the key's first row in the batch and the table holds it.
        held_before = np.empty(len(order), dtype=np.bool_)
        held_before[~first_of_key] = ~tomb[order][np.flatnonzero(~first_of_key) - 1]
        held_before[first_of_key] = self.index.lookup(sorted_keys[first_of_key]) >= 0
        was_held = np.empty(len(order), dtype=np.bool_)
        was_held[order] = held_before
        events = []
        group_col = commits.column("group")
        for i in candidates[was_held[candidates]].tolist():
            name = names[int(gids[i])]
            if name in by_group_lane:
                continue
            if name in dead and not self._revived_before(gids, o_off, tomb, int(gids[i]),
                                                         int(o_off[i]), dead[name]):
                continue
            events.append({"event": "offset_deleted", "group": group_col[i].as_py(),
                           "timestamp_ms": int(commits.column("ts_ms")[i].as_py()),
                           "partition": int(commits.column("o_partition")[i].as_py()),
                           "offset": int(o_off[i]), "topic": commits.column("c_topic")[i].as_py(),
                           "partition_id": int(commits.column("c_partition")[i].as_py())})
        for name in revived:
            dead.pop(name, None)
        return events, revived

    def _revived_before(self, gids: np.ndarray, o_off: np.ndarray, tomb: np.ndarray, g: int,
                        at: int, death: int) -> bool:
        """Whether a commit of group id `g` after its deletion and before `at` found it again."""
        if g < len(self.a_commit) and int(self.a_commit[g]) > death:
            return True
        mine = (gids == g) & ~tomb
        return bool(((o_off > death) & (o_off < at) & mine).any())

    # ---- the group lane's view -------------------------------------------------------------

    def note_position(self, group: str, partition: int, last_offset: int, last_ts: int) -> None:
        """Where `group`'s last record sits, as another reader of the log saw it (a checkpoint of
        the layout before the lane: its state's last position), for a group whose entries came
        without one. Its last commit is taken to sit there too: the group held offsets, and a
        later tombstone of it is later still, so no revival is read into it."""
        g = self.groups.id(group)
        self._grow_groups(g + 1)
        if last_offset > self.a_last[g]:
            self.a_partition[g], self.a_last[g], self.a_ts[g] = partition, last_offset, last_ts
            self.a_commit[g] = max(int(self.a_commit[g]), last_offset)

    def note_deleted(self, group: str, offset: int) -> None:
        """The group lane deleted `group` with a tombstone at `offset` of its partition."""
        self.dead_at[group] = offset

    def note_alive(self, group: str) -> None:
        """The group lane holds `group` alive (a snapshot of it that is not Dead)."""
        self.dead_at.pop(group, None)

    def lookup(self, groups: Iterable[str]) -> tuple[dict[str, list[LaneEntry]], dict[str, Activity]]:
        """Each known group's entries and activity."""
        entries: dict[str, list[LaneEntry]] = {}
        activity: dict[str, Activity] = {}
        ids = self.groups.ids
        topic_names = self.topics.names
        for name in groups:
            g = ids.get(name)
            if g is None or g >= len(self.a_last) or self.a_last[g] < 0:
                continue
            activity[name] = Activity(int(self.a_partition[g]), int(self.a_last[g]),
                                      int(self.a_ts[g]), int(self.a_commit[g]))
            rows = self.index.group_rows(g)
            entries[name] = [
                LaneEntry(topic_names[t], p, offset_entry(o, None if e < 0 else e, m, c, tid))
                for t, p, o, e, m, c, tid in zip(
                    self.topic[rows].tolist(), self.partition[rows].tolist(),
                    self.offset[rows].tolist(), self.epoch[rows].tolist(),
                    self.metadata[rows].tolist(), self.commit_ts[rows].tolist(),
                    self.topic_id[rows].tolist())]
        return entries, activity

    def held(self) -> Applied:
        """Every entry, as the `Applied` of one batch that committed them all (a restart's
        view), read from the columns as they are."""
        rows = self.index.rows[self.index.rows >= 0]
        gnames, tnames = self.groups.names, self.topics.names
        return Applied(
            groups=[gnames[g] for g in self.group[rows].tolist()],
            topics=[tnames[t] for t in self.topic[rows].tolist()],
            partitions=self.partition[rows].copy(), offsets=self.offset[rows].copy(),
            commit_s=self.commit_ts[rows] / 1000.0, coordinator_partitions=self.o_partition[rows],
            updated_ms=self.ts_ms[rows], topic_ids=self.topic_id[rows].tolist(),
            deleted_groups=[], deleted_topics=[], deleted_partitions=np.empty(0, np.int32),
            events=[], revived=[])

    def without_entries(self) -> list[tuple[str, int, int]]:
        """(group, its __consumer_offsets partition, its last record's time in ms) of each group
        the table knows with no offset left (every one deleted or expired) that the group lane
        has not deleted: Kafka still lists such a group, Empty, until its offsets cleanup deletes
        it with a tombstone of its own (GroupCoordinatorShard.cleanupGroupMetadata)."""
        known = np.flatnonzero(self.a_last >= 0)
        rows = self.index.rows[self.index.rows >= 0]
        empty = known[~np.isin(known, self.group[rows])]
        names, dead = self.groups.names, self.dead_at
        return [(names[g], int(self.a_partition[g]), int(self.a_ts[g])) for g in empty.tolist()
                if names[g] not in dead]

    def known(self, group: str) -> bool:
        g = self.groups.ids.get(group)
        return g is not None and g < len(self.a_last) and self.a_last[g] >= 0

    # ---- on disk ---------------------------------------------------------------------------

    def to_arrow(self) -> tuple[pa.Table, pa.Table]:
        """(every entry, every group's activity) as ENTRY_SCHEMA and ACTIVITY_SCHEMA tables."""
        rows = self.index.rows[self.index.rows >= 0]
        gnames, tnames = self.groups.names, self.topics.names
        epochs = self.epoch[rows]
        entries = pa.table({
            "group": pa.array([gnames[g] for g in self.group[rows].tolist()], pa.string()),
            "topic": pa.array([tnames[t] for t in self.topic[rows].tolist()], pa.string()),
            "partition": pa.array(self.partition[rows], pa.int32()),
            "offset": pa.array(self.offset[rows], pa.int64()),
            "leader_epoch": pa.array(epochs, pa.int32(), mask=epochs < 0),
            "metadata": pa.array(self.metadata[rows].tolist(), pa.string()),
            "commit_ts": pa.array(self.commit_ts[rows], pa.int64()),
            "topic_id": pa.array(self.topic_id[rows].tolist(), pa.string()),
            "o_partition": pa.array(self.o_partition[rows], pa.int32()),
            "o_offset": pa.array(self.o_offset[rows], pa.int64()),
            "ts_ms": pa.array(self.ts_ms[rows], pa.int64()),
        }, schema=ENTRY_SCHEMA)
        known = np.flatnonzero(self.a_last >= 0)
        activity = pa.table({
            "group": pa.array([gnames[g] for g in known.tolist()], pa.string()),
            "partition": pa.array(self.a_partition[known], pa.int32()),
            "last_offset": pa.array(self.a_last[known], pa.int64()),
            "last_ts": pa.array(self.a_ts[known], pa.int64()),
            "last_commit": pa.array(self.a_commit[known], pa.int64()),
        }, schema=ACTIVITY_SCHEMA)
        return entries, activity

    @classmethod
    def from_arrow(cls, entries: pa.Table, activity: pa.Table) -> "OffsetsTable":
        table = cls(rows=max(1024, entries.num_rows))
        if activity.num_rows:
            gids = table._ids(table.groups, activity.column("group"))
            table._grow_groups(int(gids.max()) + 1)
            table.a_partition[gids] = _column(activity, "partition")
            table.a_last[gids] = _column(activity, "last_offset")
            table.a_ts[gids] = _column(activity, "last_ts")
            table.a_commit[gids] = _column(activity, "last_commit")
        if entries.num_rows:
            table.apply(as_commits(entries))
        return table


def _strings(column: pa.ChunkedArray, rows: np.ndarray, null: str | None) -> list:
    values = column.take(pa.array(rows)).to_pylist()
    return [null if v is None else v for v in values] if null is not None else values


def as_commits(entries: pa.Table) -> pa.Table:
    """ENTRY_SCHEMA rows as a batch of commits (COMMIT_INPUT), to load them with `apply`."""
    return pa.table({
        "group": entries.column("group"), "ts_ms": entries.column("ts_ms"),
        "o_partition": entries.column("o_partition"), "o_offset": entries.column("o_offset"),
        "c_topic": entries.column("topic"), "c_partition": entries.column("partition"),
        "c_offset": entries.column("offset"), "c_epoch": entries.column("leader_epoch"),
        "c_metadata": entries.column("metadata"), "c_commit_ts": entries.column("commit_ts"),
        "c_topic_id": entries.column("topic_id"),
    })


_NOTHING = Applied([], [], np.empty(0, np.int32), np.empty(0, np.int64), np.empty(0),
                   np.empty(0, np.int32), np.empty(0, np.int64), [], [], [], np.empty(0, np.int32),
                   [], [])
