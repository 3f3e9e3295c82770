"""MonitorView: the driver-side, in-memory picture the exporter serves.

Per group it keeps an object (state, members, rebalance counters); the committed partitions of
every group and the end offsets of every partition are columns (`PartitionTable`, `EndsTable`),
evaluated a column at a time (`streaming.exporter.lag_frame`): at a million group-partitions an
object each was most of the driver's memory and time.

Two writers feed it: the Spark job (group snapshots, events, record counters, progress on
`__consumer_offsets`, batch durations) and the end-offset poller (log end / start offsets and
topic metadata). The exporter reads it. Every public method takes one lock, so each writer's
update is seen whole or not at all.

Only state lives here; turning it into metric families is `streaming.exporter.evaluation`.
"""
from __future__ import annotations

import threading
import time
from itertools import chain
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Iterable, Mapping

import numpy as np

from coordinator.lag_arrays import NO_LAG, offsets_at
from coordinator.state.lanes import LaneEntry, offsets_only_view
from coordinator.state.share_partition import SharePartition
from coordinator.status import StatusSettings
from coordinator.timelag import DEFAULT_TABLE_SIZE
from streaming.exporter.catalog import COMPAT_TARGETS, GRANULARITIES, MEMBER_LAG, PARTITION
from streaming.exporter.ends_table import EndsTable, tp_key, tp_parts
from streaming.exporter.lag_render import NameTable
from streaming.exporter.partition_table import Names, PartitionTable
from streaming.exporter.risk_frame import TopicRetention
from streaming.exporter.row_index import RowIndex, compose
from streaming.exporter.histogram import DURATION_BUCKETS, FAST_BUCKETS, EmptyHistogram, Histogram
from streaming.exporter.selection import EVERYTHING, Selection
from streaming.exporter.share_windows import ShareStartWindows
from streaming.offsets.table import Applied

TopicPartition = tuple[str, int]



@dataclass(frozen=True)
class ViewSettings:
    cluster: str = "default"
    include_unsubscribed: bool = False   # lag.include_unsubscribed
    expire_after_s: float = 7 * 86400.0  # groups.expire_after
    dead_grace_s: float = 300.0          # groups.dead_grace: how long a deleted group shows as Dead
    time_table_size: int = DEFAULT_TABLE_SIZE  # lag.time_table_size
    status: StatusSettings = field(default_factory=StatusSettings)
    compat: tuple[str, ...] = ()         # metrics.compat
    groups: Selection = EVERYTHING       # groups.include, groups.exclude
    topics: Selection = EVERYTHING       # topics.include, topics.exclude
    granularity: str = PARTITION         # metrics.granularity
    member_lag: bool = False             # metrics.member_lag

    def __post_init__(self) -> None:
        unknown = [name for name in self.compat if name not in COMPAT_TARGETS]
        if unknown:
            raise ValueError(f"metrics.compat: unknown target(s) {', '.join(unknown)}; "
                             f"choose from {', '.join(COMPAT_TARGETS)}")
        if self.granularity not in GRANULARITIES:
            raise ValueError(f"metrics.granularity: {self.granularity!r} is not one of "
                             f"{', '.join(GRANULARITIES)}")
        if self.expire_after_s <= 0 or self.dead_grace_s < 0:
            raise ValueError("groups.expire_after must be > 0 and groups.dead_grace >= 0")

    @property
    def switches(self) -> tuple[str, ...]:
        """The catalog's switches (MetricFamily.switch) these settings turn on."""
        return (MEMBER_LAG,) if self.member_lag else ()


REBALANCE_HISTOGRAMS = ("rebalance_duration", "sync_duration", "downtime")
_NOTHING_OBSERVED = EmptyHistogram(DURATION_BUCKETS)


class GroupRecord:
    __slots__ = ("name", "id", "snapshot", "pending", "pending_times", "snapshot_from",
                 "subscribed", "owners", "rebalances", "partitions_moved", "last_rebalance_s",
                 "_histograms", "dead_since_s", "last_activity_s", "ever_had_members")

    def __init__(self, name: str, group_id: int) -> None:
        self.name = name
        self.id = group_id  # its id in the PartitionTable's group column
        self.snapshot: dict[str, Any] | None = None
        # Commits gathered while a batch is applied, applied to the table with every other
        # group's at once: topic id, partition and offset, flat, three numbers a commit, and the
        # commit times. From commit `snapshot_from` on, those of the batch's last snapshot of the
        # group, which lists all its partitions.
        self.pending: list[int] = []
        self.pending_times: list[float] = []
        self.snapshot_from: int | None = None
        self.subscribed: frozenset[str] | None = None  # last non-empty subscription seen
        self.owners: dict[TopicPartition, dict[str, Any]] = {}
        self.rebalances = 0
        self.partitions_moved = 0
        self.last_rebalance_s: float | None = None
        # The rebalance histograms (REBALANCE_HISTOGRAMS), made at a group's first observation:
        # most groups of a large estate never rebalance (offset-only committers), and three
        # histograms each were about 800 B a group.
        self._histograms: dict[str, Histogram] | None = None
        self.dead_since_s: float | None = None
        self.last_activity_s = 0.0
        self.ever_had_members = False

    def histogram(self, name: str) -> Histogram:
        """One of REBALANCE_HISTOGRAMS, to read: an empty one while nothing was observed."""
        histograms = self._histograms
        return _NOTHING_OBSERVED if histograms is None else histograms.get(name, _NOTHING_OBSERVED)

    def own_histogram(self, name: str) -> Histogram:
        """One of REBALANCE_HISTOGRAMS, to add to: made if the group has none yet."""
        if name not in REBALANCE_HISTOGRAMS:
            raise KeyError(name)
        if self._histograms is None:
            self._histograms = {}
        histogram = self._histograms.get(name)
        if histogram is None:
            histogram = self._histograms[name] = Histogram(DURATION_BUCKETS)
        return histogram

    @property
    def rebalance_duration(self) -> Histogram:
        return self.histogram("rebalance_duration")

    @property
    def sync_duration(self) -> Histogram:
        return self.histogram("sync_duration")

    @property
    def downtime(self) -> Histogram:
        return self.histogram("downtime")


def _named_member(member: Mapping[str, Any], ids: Mapping[str, str]) -> Mapping[str, Any]:
    """`member` (a snapshot's) with the topic ids of `ids` in its partition lists named."""
    out = None
    for key in ("assigned", "target", "pending_revocation"):
        pairs = member.get(key)
        if pairs and any(topic in ids for topic, _ in pairs):
            out = dict(member) if out is None else out
            out[key] = sorted([ids.get(topic, topic), partition] for topic, partition in pairs)
    return member if out is None else out


def _state_differs(new: Mapping[str, Any], old: Mapping[str, Any]) -> bool:
    """Whether two snapshots (offsets left out) differ in more than their time: each commit
    moves `updated_ms`, and nothing in a group's state part depends on it."""
    if len(new) != len(old):
        return True
    return any(value != old.get(key) for key, value in new.items() if key != "updated_ms")


class MonitorView:
    def __init__(self, settings: ViewSettings | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.settings = settings or ViewSettings()
        self.clock = clock
        self.lock = threading.RLock()
        self.groups: dict[str, GroupRecord] = {}
        self.group_ids = Names()
        self.topics = Names()  # topic name -> id, for the columns
        self.table = PartitionTable(self.settings.status.window_size)
        self.ends = EndsTable(self.settings.time_table_size)
        self.index = RowIndex()  # (group, topic, partition) -> row of the table
        self._touched: dict[GroupRecord, None] = {}  # groups with commits gathered, in order
        self._released: list[int] = []
        self.groups_version = 0  # bumped when a group appears, dies or goes
        self._order: tuple | None = None  # exposition_order's cache
        self._topic_rank: np.ndarray | None = None
        self._topic_names: NameTable | None = None
        self.topic_names: dict[str, str] = {}       # KIP-848 topic id -> name
        # Share-partitions from `__share_group_state` ((group, topic id, partition) -> state),
        # with that topic's record counts by type and its skipped records by reason.
        self.share_partitions: dict[tuple[str, str, int], SharePartition] = {}
        self.share_starts = ShareStartWindows(self.settings.status)  # their start offsets' pace
        self.share_records: dict[str, int] = {}
        self.share_skipped: dict[str, int] = {}
        self.partition_counts: dict[str, int] = {}  # topic -> partitions, from metadata
        self.records_total: dict[str, int] = {}
        self.records_skipped: dict[str, int] = {}
        self.offsets_topic_lag: dict[int, int] = {}
        self.ready = False
        self.seeded: set[str] = set()  # groups served from the seed, not yet from the log
        # Why the source topic cannot be read (an ACL missing), by who found it: the end-offset
        # poller ("describe") or the query ("read"); and how many topics groups commit to have no
        # metadata this principal may see.
        self.source_refusals: dict[str, str] = {}
        self.source_up = True  # False while the end-offset poller cannot reach the cluster
        # Set when the job begins to stop: from then on nothing it serves moves on any more.
        self.stopping = False
        self.topics_without_metadata = 0
        self.batch_duration = Histogram(FAST_BUCKETS)
        self.poll_duration = Histogram(FAST_BUCKETS)
        self.poll_failures = 0
        self.last_poll_s: float | None = None  # last successful end-offset poll
        self.last_poll_duration_s: float | None = None
        self.negative_lag_total = 0
        self.retention = TopicRetention()  # the polled topics' retention settings (risk_frame)
        # Change tracking for streaming.exporter.metrics_cache: groups whose state part (anything
        # but their committed offsets) changed since the cache last looked; `version` is bumped
        # when something every group's state depends on changes (topic metadata),
        # `ends_version` when end offsets change (every poll), `offsets_version` when committed
        # offsets do (a commit, a deletion).
        self.changed_groups: set[str] = set()
        self.version = 0
        self.ends_version = 0
        self.offsets_version = 0

    # ---- fed by the Spark job -------------------------------------------------------------

    def update_groups(self, snapshots: Iterable[Mapping[str, Any]]) -> None:
        """Replace the state of each group named in `snapshots` (GroupState.to_dict() shape)."""
        with self.lock:
            now = self.clock()
            for snapshot in snapshots:
                if self.seeded and snapshot["group"] in self.seeded:
                    self._unseed(snapshot["group"])
                self._apply_snapshot(snapshot, now)
            self._flush()

    def apply_offsets(self, applied: Applied, skip: Collection[str] = (),
                      revived: Mapping[str, list[LaneEntry]] | None = None) -> None:
        """A micro-batch's commits and deletions from the offsets lane, a column at a time.
        Groups in `skip` came with a snapshot of the group lane, which lists their offsets;
        `revived`: every entry of the deleted groups a commit found again."""
        with self.lock:
            now = self.clock()
            tracked = self.settings.groups
            for name in applied.revived:
                group = self.groups.get(name)
                if name in skip or name not in tracked or group is None or group.dead_since_s is None:
                    continue
                group.dead_since_s = None
                group.snapshot = None  # a new group of the same name (reducer.after_death)
                group.subscribed = None
                group.owners = {}
                self.groups_version += 1
                self.changed_groups.add(name)
            gids, alive = self._lane_groups(applied.groups, applied.coordinator_partitions,
                                            applied.updated_ms, skip, now)
            topics = self._lane_topics(applied.topics)
            keep = alive & (topics >= 0)
            rows = [(gids[keep], topics[keep], applied.partitions[keep].astype(np.int64),
                     applied.offsets[keep], applied.commit_s[keep])]
            for name, entries in (revived or {}).items():
                group = self.groups.get(name)
                if group is None or name in skip or group.dead_since_s is not None:
                    continue
                kept = [e for e in entries if e.topic in self.settings.topics]
                if kept:
                    rows.append((np.full(len(kept), group.id, dtype=np.int64),
                                 self._lane_topics([e.topic for e in kept]),
                                 np.array([e.partition for e in kept], dtype=np.int64),
                                 np.array([e.entry[0] for e in kept], dtype=np.int64),
                                 np.array([e.entry[3] / 1000.0 for e in kept])))
            self._name_topic_ids(applied, skip)
            columns = [np.concatenate(parts) for parts in zip(*rows)]
            self._flush()
            committed = len(columns[0]) > 0
            if committed:
                self._write_commits(*columns)
            released = self._release_keys(applied, skip)
            if committed or released:
                self.offsets_version += 1

    def serve_offsets_only(self, groups: Iterable[tuple[str, int, int]]) -> None:
        """Groups known only by offsets that are all gone, as (group, __consumer_offsets
        partition, last record's time in ms), made as the first commit made them (an Empty
        classic group, streaming.offsets.lane.OffsetsLane.without_entries); groups the view
        has are left as they are. Their last activity is their last record's (a tombstone's):
        the table keeps no commit time for a group without offsets."""
        with self.lock:
            for name, partition, updated_ms in groups:
                if name in self.groups or name not in self.settings.groups:
                    continue
                group = self._group(name)
                group.snapshot = offsets_only_view(name, partition, updated_ms)
                group.last_activity_s = updated_ms / 1000.0

    def _name_topic_ids(self, applied: Applied, skip: Collection[str]) -> None:
        """A v4 commit names the topic id its group's KIP-848 assignment records use
        (coordinator.state.offsets.make_visible): the members' partitions of the group's
        snapshot, listed by id while nothing named it, by name from now on."""
        named: dict[str, dict[str, str]] = {}
        for name, topic, topic_id in zip(applied.groups, applied.topics, applied.topic_ids):
            if topic_id is not None and name not in skip:
                named.setdefault(name, {})[topic_id] = topic
        for name, ids in named.items():
            group = self.groups.get(name)
            snapshot = group.snapshot if group is not None else None
            if not snapshot or not snapshot.get("members"):
                continue
            members = [_named_member(member, ids) for member in snapshot["members"]]
            if members != snapshot["members"]:
                group.snapshot = dict(snapshot, members=members)
                group.owners = self._owners(group.snapshot)
                self.changed_groups.add(name)

    def _lane_groups(self, names: list[str], partitions: np.ndarray, updated_ms: np.ndarray,
                     skip: Collection[str], now: float) -> tuple[np.ndarray, np.ndarray]:
        """Each commit's group id in the view (groups made for the first commit of a group the
        group lane never showed: offsets only, Empty, as Kafka shows it), and whether its offsets
        are served (a tracked group, not in `skip`, not deleted)."""
        ids = np.full(len(names), -1, dtype=np.int64)
        alive = np.zeros(len(names), dtype=np.bool_)
        if not names:
            return ids, alive
        tracked = self.settings.groups
        unique, first, inverse = np.unique(np.array(names, dtype=object), return_index=True,
                                           return_inverse=True)
        latest = np.zeros(len(unique))
        np.maximum.at(latest, inverse, updated_ms / 1000.0)
        by_name = np.full(len(unique), -1, dtype=np.int64)
        served = np.zeros(len(unique), dtype=np.bool_)
        for i, name in enumerate(unique.tolist()):
            if name in skip or name not in tracked:
                continue
            if self.seeded and name in self.seeded:
                self._unseed(name)
            group = self.groups.get(name)
            if group is None or group.snapshot is None:
                group = self._group(name)
                if group.dead_since_s is None:
                    group.snapshot = offsets_only_view(name, int(partitions[first[i]]),
                                                       int(latest[i] * 1000))
            if group.dead_since_s is not None:
                continue
            by_name[i] = group.id
            served[i] = True
            group.last_activity_s = max(group.last_activity_s, float(latest[i]))
        return by_name[inverse], served[inverse]

    def _lane_topics(self, topics: list[str]) -> np.ndarray:
        """Each topic's id in the view, -1 for a topic topics.include/exclude leave out."""
        selection = self.settings.topics
        every = selection.everything
        unique, inverse = np.unique(np.array(topics, dtype=object), return_inverse=True)
        ids = np.array([self.topics.id(t) if every or t in selection else -1
                        for t in unique.tolist()], dtype=np.int64)
        return ids[inverse] if len(topics) else np.empty(0, dtype=np.int64)

    def _release_keys(self, applied: Applied, skip: Collection[str]) -> bool:
        """Free the rows of the offsets the batch deleted (groups in `skip` aside)."""
        keys = []
        for name, topic, partition in zip(applied.deleted_groups, applied.deleted_topics,
                                          applied.deleted_partitions.tolist()):
            group = self.groups.get(name)
            tid = self.topics.ids.get(topic)
            if group is not None and tid is not None and name not in skip:
                keys.append((group.id, tid, partition))
        if not keys:
            return False
        numbers = np.array(keys, dtype=np.int64)
        at, found = self.index.positions(compose(numbers[:, 0], numbers[:, 1], numbers[:, 2]))
        rows = self.index.remove_positions(at[found])
        self.table.release(rows.tolist())
        return len(rows) > 0

    def seed_groups(self, snapshots: Iterable[Mapping[str, Any]]) -> int:
        """Serve groups the log has not shown yet from another look at them (the Admin API's,
        at launch: streaming/job/admin_seed.py) until `update_groups` brings each one from the
        log or `end_seed` drops those it never brought. Groups the view already has are left as
        they are. Returns how many were seeded."""
        with self.lock:
            now = self.clock()
            for snapshot in snapshots:
                name = snapshot["group"]
                if name not in self.groups and name in self.settings.groups:
                    self._apply_snapshot(snapshot, now)
                    self.seeded.add(name)
            self._flush()
            return len(self.seeded)

    def end_seed(self) -> None:
        """The log has been read to the end: seeded groups it never brought are gone."""
        with self.lock:
            for name in list(self.seeded):
                self._unseed(name)
            self._flush()

    def _unseed(self, name: str) -> None:
        # Dropped whole, not updated: a seeded commit is dated at the look, later than the log's
        # own commits of the same offsets, which the table would then take for replays.
        self.seeded.discard(name)
        group = self.groups.get(name)
        if group is not None:
            self._drop_group(group)

    def apply_events(self, events: Iterable[Mapping[str, Any]]) -> None:
        """Count rebalances, downtimes, deletions and commits (event.to_dict() shapes)."""
        with self.lock:
            now = self.clock()
            for event in events:
                self._apply_event(event, now)
            self._flush()

    def set_record_totals(self, by_type_name: Mapping[str, int],
                          skipped_by_reason: Mapping[str, int]) -> None:
        """Replace the record counters with absolute totals (e.g. kept in Spark's state store,
        so that a replayed batch cannot count twice)."""
        with self.lock:
            self.records_total = {k: int(v) for k, v in by_type_name.items()}
            self.records_skipped = {k: int(v) for k, v in skipped_by_reason.items()}

    def set_offsets_topic_progress(self, lag_by_partition: Mapping[int, int], ready: bool) -> None:
        """How far the job is behind on each `__consumer_offsets` partition, and whether it has
        read every partition up to the end offset seen at start."""
        with self.lock:
            self.offsets_topic_lag = dict(lag_by_partition)
            self.ready = bool(ready)

    @property
    def source_refusal(self) -> str | None:
        with self.lock:
            return next(iter(self.source_refusals.values()), None)

    def set_source_refusal(self, found_by: str, refusal: str | None) -> None:
        with self.lock:
            if refusal is None:
                self.source_refusals.pop(found_by, None)
            else:
                self.source_refusals[found_by] = refusal

    def apply_share_state(self, changed: Mapping[tuple[str, str, int], SharePartition | None],
                          records: Mapping[str, int], skipped: Mapping[str, int]) -> None:
        """The share-partitions a batch of `__share_group_state` changed (None: removed), and
        the records it read and skipped, counted."""
        with self.lock:
            now = self.clock()
            for key, state in changed.items():
                if state is None:
                    self.share_partitions.pop(key, None)
                else:
                    self.share_partitions[key] = state
                self.share_starts.update(key, state, now)
            for counts, mine in ((records, self.share_records), (skipped, self.share_skipped)):
                for name, n in counts.items():
                    mine[name] = mine.get(name, 0) + n

    def share_topic_partitions(self) -> set[TopicPartition]:
        """The (topic, partition) of every share-partition whose topic name metadata gave."""
        with self.lock:
            names = self.topic_names
            return {(names[t], p) for _, t, p in self.share_partitions if t in names}

    def share_topics_unnamed(self) -> bool:
        """Whether a share-partition's topic id is one the last metadata did not name."""
        with self.lock:
            return any(t not in self.topic_names for _, t, _ in self.share_partitions)

    def observe_batch(self, duration_s: float) -> None:
        with self.lock:
            self.batch_duration.observe(duration_s)

    # ---- fed by the end-offset poller -----------------------------------------------------

    def wanted_partitions(self) -> set[TopicPartition]:
        """Partitions whose end offsets the poller should fetch: those live groups commit to
        (a Dead group holds none), and those share groups consume."""
        with self.lock:
            return self._partitions(self._held()) | self.share_topic_partitions()

    def update_end_offsets(self, ends: Mapping[TopicPartition, int],
                           starts: Mapping[TopicPartition, int], observed_s: float,
                           poll_duration_s: float) -> None:
        with self.lock:
            topic_id = self.topics.id
            self.ends.update({tp_key(topic_id(t), p): end for (t, p), end in ends.items()},
                             {tp_key(topic_id(t), p): start for (t, p), start in starts.items()},
                             observed_s)
            self._forget_unwanted_ends()
            self.ends_version += 1
            self.source_up = True
            self.poll_duration.observe(poll_duration_s)
            self.last_poll_s = observed_s
            self.last_poll_duration_s = poll_duration_s

    def set_first_record_times(self, times: Mapping[TopicPartition, float]) -> None:
        """When each polled partition's first record still in the log was written (seconds),
        which bounds every time lag on it. A change is a change of the end offsets' part: a
        render made between the poll's end offsets and these times is stale."""
        with self.lock:
            ids = self.topics.ids
            if self.ends.set_first_times({tp_key(ids[t], p): first_s
                                          for (t, p), first_s in times.items() if t in ids}):
                self.ends_version += 1

    def unread_lagging(self) -> list[tuple[str, int, int, int]]:
        """(topic, partition, committed offset, lag) of every exported group-partition behind
        its latest end offset whose first unconsumed record has not been read at that offset
        (lag.time_method), most lag first; a partition committed at one offset by several
        groups is listed once."""
        with self.lock:
            table = self.table
            rows = np.flatnonzero(table.live & table.exported)
            offset = table.offset[rows]
            at = self.ends.rows_of(table.tp[rows])
            have = (at >= 0) & (offset >= 0) & (table.first_at[rows] != offset)
            rows, offset, at = rows[have], offset[have], at[have]
            counts = self.ends.counts[at]
            end = self.ends.offsets[at, np.maximum(counts - 1, 0)]
            behind = (counts > 0) & (end > offset)
            lag = (end - offset)[behind]
            order = np.argsort(-lag, kind="stable")
            rows, offset, lag = rows[behind][order], offset[behind][order], lag[order]
            tp = table.tp[rows]
            # Each (partition, offset) once: groups committed at one offset share its read.
            _, first = np.unique(np.stack([tp, offset], axis=1), axis=0, return_index=True)
            first.sort()
            topics, partitions = tp_parts(tp[first])
            names = self.topics.names
            return [(names[t], p, o, n) for t, p, o, n in
                    zip(topics.tolist(), partitions.tolist(), offset[first].tolist(),
                        lag[first].tolist())]

    def set_first_records(self, found: Mapping[tuple[str, int, int], float]) -> None:
        """The timestamps (seconds) of the first records at or after committed offsets:
        (topic, partition, offset) -> when it was written. Rows committed at that offset take
        it; a row that has moved on since keeps its estimate."""
        if not found:
            return
        with self.lock:
            table = self.table
            ids = self.topics.ids
            wanted = {(tp_key(ids[t], p), o): ts for (t, p, o), ts in found.items() if t in ids}
            rows = np.flatnonzero(table.live & table.exported)
            rows = rows[np.isin(table.tp[rows], np.fromiter((tp for tp, _ in wanted),
                                                              dtype=np.int64, count=len(wanted)))]
            for row, tp, off in zip(rows.tolist(), table.tp[rows].tolist(),
                                    table.offset[rows].tolist()):
                ts = wanted.get((tp, off))
                if ts is not None:
                    table.first_at[row], table.first_s[row] = off, ts
            self.offsets_version += 1

    def record_poll_failure(self, poll_duration_s: float) -> None:
        """A poll failed or timed out: the previous values stay, their age keeps growing."""
        with self.lock:
            self.poll_failures += 1
            self.poll_duration.observe(poll_duration_s)
            self.source_up = False

    def update_topic_metadata(self, topic_names_by_id: Mapping[str, str],
                              partition_counts: Mapping[str, int]) -> None:
        with self.lock:
            names, counts = dict(topic_names_by_id), dict(partition_counts)
            if names == self.topic_names and counts == self.partition_counts:
                # The poller asks again every lag.metadata_interval; an unchanged answer must
                # not make the exporter render every group again (15 s of CPU at 10^5 groups).
                return
            renamed = names != self.topic_names
            self.topic_names, self.partition_counts = names, counts
            self.version += 1
            if renamed:  # owners are keyed by topic name, resolved through topic ids
                for group in self.groups.values():
                    if group.snapshot is not None:
                        group.owners = self._owners(group.snapshot)

    # ---- internals ----------------------------------------------------------------------

    def housekeeping(self, now: float) -> None:
        """Drop groups whose Dead grace ran out and groups that stopped committing."""
        settings = self.settings
        for name in list(self.groups):
            group = self.groups[name]
            if group.dead_since_s is not None:
                if now - group.dead_since_s >= settings.dead_grace_s:
                    self._drop_group(group)
            elif group.last_activity_s and now - group.last_activity_s > settings.expire_after_s:
                self._drop_group(group)
        self._flush()

    def _drop_group(self, group: GroupRecord) -> None:
        self._release_rows(group)
        del self.groups[group.name]
        self.group_ids.release(group.name)
        self.groups_version += 1

    def _held(self) -> np.ndarray:
        """The tp keys of the partitions some group holds a committed offset for."""
        return np.unique(self.table.tp[self.table.live])

    def _partitions(self, keys: np.ndarray) -> set[TopicPartition]:
        names = self.topics.names
        topic_ids, partitions = tp_parts(keys)
        return {(names[t], p) for t, p in zip(topic_ids.tolist(), partitions.tolist())}

    def _forget_unwanted_ends(self) -> None:
        held = np.array(self.ends.keys(), dtype=np.int64)
        share = [tp for tp in map(self._tp, self.share_topic_partitions()) if tp is not None]
        self.ends.forget(held[~np.isin(held, np.concatenate(
            [self._held(), np.array(share, dtype=np.int64)]))].tolist())

    def take_changed_groups(self) -> set[str]:
        changed, self.changed_groups = self.changed_groups, set()
        return changed

    def _group(self, name: str, state_changes: bool = True) -> GroupRecord:
        """The group's record (made if new); `state_changes`: whether what follows changes its
        state part (a commit alone does not: most batches bring only commits)."""
        group = self.groups.get(name)
        if group is None:
            group = self.groups[name] = GroupRecord(name, self.group_ids.id(name))
            self.groups_version += 1
            state_changes = True
        if state_changes:
            self.changed_groups.add(name)
        return group

    def tracks(self, group: str) -> bool:
        """Whether `group` is one the monitor serves (groups.include / groups.exclude)."""
        return group in self.settings.groups

    def _apply_snapshot(self, snapshot: Mapping[str, Any], now: float) -> None:
        name = snapshot["group"]
        if name not in self.settings.groups:
            return
        if snapshot.get("state") == "Dead":
            self._mark_dead(name, now, snapshot)
            return
        group = self._group(name, state_changes=False)
        if group.dead_since_s is not None:
            group.dead_since_s = None
            self.groups_version += 1
            self.changed_groups.add(name)
        # The offsets live in `partitions`; keeping them in the snapshot too would double memory.
        state = {k: v for k, v in snapshot.items() if k != "offsets"}
        if group.snapshot is None or _state_differs(state, group.snapshot):
            # What follows derives from the state alone: a snapshot of commits leaves it.
            self.changed_groups.add(name)
            if snapshot.get("members"):
                group.ever_had_members = True
            subscribed = snapshot.get("subscribed_topics") or []
            if subscribed and frozenset(subscribed) != group.subscribed:
                group.subscribed = frozenset(subscribed)
                self._export(group)
            group.owners = self._owners(snapshot)
        group.snapshot = state
        activity = (snapshot.get("updated_ms") or 0) / 1000.0
        topics = self.settings.topics
        every_topic = topics.everything
        ids, topic_id = self.topics.ids, self.topics.id
        add, add_time = group.pending.extend, group.pending_times.append
        # Partitions held but not listed are an offset tombstone's (deleted or expired offsets):
        # released when the batch is applied (_apply_commits).
        group.snapshot_from = len(group.pending_times)
        self._touched[group] = None
        for entry in snapshot.get("offsets") or ():
            topic = entry["topic"]
            if not every_topic and topic not in topics:
                continue
            tid = ids.get(topic)
            commit_s = entry["commit_timestamp_ms"] / 1000.0
            add((topic_id(topic) if tid is None else tid, int(entry["partition"]),
                 int(entry["offset"])))
            add_time(commit_s)
            if commit_s > activity:
                activity = commit_s
        last_rebalance = snapshot.get("last_rebalance")
        if last_rebalance and last_rebalance.get("end_ms") is not None:
            end_s = last_rebalance["end_ms"] / 1000.0
            if group.last_rebalance_s is None or end_s > group.last_rebalance_s:
                group.last_rebalance_s = end_s
                self.changed_groups.add(name)
        group.last_activity_s = max(group.last_activity_s, activity)

    def _exported(self, group: GroupRecord, topic: str) -> bool:
        """Whether a partition's series are served: subscribed topics only, by default."""
        subscribed = group.subscribed
        return self.settings.include_unsubscribed or subscribed is None or topic in subscribed

    def _export(self, group: GroupRecord) -> None:
        rows = self.index.group_rows(group.id)
        if len(rows):
            names = self.topics.names
            self.table.set_exported(rows.tolist(), [self._exported(group, names[t]) for t in
                                                    self.table.topic[rows].tolist()])

    def _commit(self, group: GroupRecord, topic: str, partition: int, offset: int,
                commit_s: float) -> None:
        group.pending.extend((self.topics.id(topic), partition, offset))
        group.pending_times.append(commit_s)
        self._touched[group] = None

    def _release_rows(self, group: GroupRecord) -> None:
        """Give up every row of the group, and the commits gathered for it."""
        group.pending, group.pending_times, group.snapshot_from = [], [], None
        self._released.extend(self.index.remove_group(group.id).tolist())

    def _flush(self) -> None:
        """Free the rows given up, apply the gathered commits to the table, then free the rows
        the commits' snapshots no longer list.

        Rows given up before the commits are free for them: when the log's snapshots replace
        the launch seed's groups (10^6 group-partitions at 10^5 groups), the new rows take the
        seed's instead of growing the table to twice the rows it holds, for good."""
        touched, self._touched = self._touched, {}
        released, self._released = self._released, []
        self.table.release(released)
        groups = [g for g in touched if g.pending_times or g.snapshot_from is not None]
        committed = self._apply_commits(groups) if groups else False
        unlisted, self._released = self._released, []
        self.table.release(unlisted)
        if committed or released or unlisted:
            self.offsets_version += 1

    def _apply_commits(self, groups: list[GroupRecord]) -> bool:
        """The gathered commits of `groups`, all at once (`_write_commits`), and the rows their
        snapshots no longer list released. Whether anything was committed."""
        counts = [len(g.pending_times) for g in groups]
        starts = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        n = int(starts[-1])
        numbers = np.fromiter(chain.from_iterable(g.pending for g in groups), dtype=np.int64,
                              count=3 * n).reshape(n, 3)
        times = np.fromiter(chain.from_iterable(g.pending_times for g in groups),
                            dtype=np.float64, count=n)
        topics, partitions, offsets = numbers[:, 0], numbers[:, 1], numbers[:, 2]
        snapshots = [(i, g.snapshot_from) for i, g in enumerate(groups)
                     if g.snapshot_from is not None]
        gids = np.repeat(np.array([g.id for g in groups], dtype=np.int64), counts)
        for g in groups:
            g.pending, g.pending_times, g.snapshot_from = [], [], None
        keys = self._write_commits(gids, topics, partitions, offsets, times, groups)
        if snapshots:
            self._release_unlisted(groups, snapshots, starts, keys)
        return n > 0

    def _write_commits(self, gids: np.ndarray, topics: np.ndarray, partitions: np.ndarray,
                       offsets: np.ndarray, times: np.ndarray,
                       groups: list[GroupRecord] | None = None) -> np.ndarray:
        """Commits as columns: rows found or made for them, each with its lag when it was made
        (from the end offsets known at its commit time). Returns their keys."""
        n = len(gids)
        keys = compose(gids, topics, partitions)
        rows = self.index.lookup(keys)
        missing = np.flatnonzero(rows < 0)
        if len(missing):
            new_keys, first, inverse = np.unique(keys[missing], return_index=True,
                                                 return_inverse=True)
            made = missing[first]
            new_rows = self.table.reserve(len(new_keys))
            if groups is None:
                names = self.group_ids.names
                groups = [self.groups[names[g]] for g in np.unique(gids[made]).tolist()]
            self.table.fill(new_rows, gids[made].astype(np.int32), topics[made].astype(np.int32),
                            partitions[made].astype(np.int32), tp_key(topics[made],
                                                                      partitions[made]),
                            self._exported_flags(groups, gids[made], topics[made]))
            self.index.add(new_keys, new_rows)
            rows[missing] = new_rows[inverse.reshape(-1)]
        if n:
            ends = self.ends
            at = ends.rows_of(self.table.tp[rows])
            have = at >= 0
            lags = np.full(len(rows), NO_LAG, dtype=np.int64)
            if have.any():
                r = at[have]
                end, known = offsets_at(ends.offsets[r], ends.times[r], ends.counts[r],
                                        times[have])
                lags[have] = np.where(known, np.maximum(0, end - offsets[have]), NO_LAG)
            self.table.commit(rows, offsets, times, lags, self.settings.status.min_distance_s)
        return keys

    def _release_unlisted(self, groups: list[GroupRecord], snapshots: list[tuple[int, int]],
                          starts: np.ndarray, keys: np.ndarray) -> None:
        """Release the rows of partitions a group holds but its last snapshot did not list (an
        offset tombstone's). Every listed one is held by now, so only groups holding more than
        they listed have any: the rest (nearly all) are not compared key by key."""
        first = np.array([starts[i] + start for i, start in snapshots], dtype=np.int64)
        listed = np.array([starts[i + 1] for i, _ in snapshots], dtype=np.int64) - first
        index = self.index
        gids = np.array([groups[i].id for i, _ in snapshots], dtype=np.int64)
        # Rows held per group, counted over these groups' keys only: a batch costs what it
        # touched, not the whole index.
        low, high = index.group_ranges(gids)
        at = index.group_positions(gids)
        owner = np.repeat(np.arange(len(gids)), high - low)
        held = np.bincount(owner[index.rows[at] >= 0], minlength=len(gids))
        more = np.flatnonzero(held > listed)
        if not len(more):
            return
        at = at[np.isin(owner, more)]
        wanted = np.concatenate([keys[first[m]:first[m] + listed[m]] for m in more.tolist()])
        gone = at[~np.isin(index.keys[at], wanted)]
        self._released.extend(index.remove_positions(gone).tolist())

    def _exported_flags(self, groups: list[GroupRecord], gids: np.ndarray,
                        topics: np.ndarray) -> np.ndarray:
        """Whether each new row is exported, decided now: the batch may have resubscribed."""
        if self.settings.include_unsubscribed:
            return np.ones(len(gids), dtype=np.bool_)
        by_id = {g.id: g for g in groups}
        names = self.topics.names
        _, first, inverse = np.unique(compose(gids, topics, np.zeros_like(topics)),
                                      return_index=True, return_inverse=True)
        flags = np.array([self._exported(by_id[g], names[t]) for g, t in
                          zip(gids[first].tolist(), topics[first].tolist())], dtype=np.bool_)
        return flags[inverse.reshape(-1)]

    def _tp(self, key: TopicPartition) -> int | None:
        topic_id = self.topics.ids.get(key[0])
        return None if topic_id is None else tp_key(topic_id, key[1])

    def log_end(self, key: TopicPartition) -> tuple[int, float] | None:
        """The latest log end offset polled for `key`, and when; None if it is not held."""
        with self.lock:
            tp = self._tp(key)
            return None if tp is None else self.ends.latest(tp)

    def log_start(self, key: TopicPartition) -> int | None:
        with self.lock:
            tp = self._tp(key)
            return None if tp is None else self.ends.start(tp)

    def end_samples(self, key: TopicPartition) -> list[tuple[int, float]]:
        """The time-lag table of `key`: (log end offset, observed time), oldest first."""
        with self.lock:
            tp = self._tp(key)
            return [] if tp is None else self.ends.samples(tp)

    def polled(self) -> set[TopicPartition]:
        """The partitions whose end offsets the view holds."""
        with self.lock:
            return self._partitions(np.array(self.ends.keys(), dtype=np.int64))

    def committed(self, group: str) -> dict[TopicPartition, int]:
        """The committed offset of each partition the view holds for `group`."""
        with self.lock:
            record = self.groups.get(group)
            if record is None:
                return {}
            table, names = self.table, self.topics.names
            rows = self.index.group_rows(record.id)
            return {(names[t], p): o for t, p, o in zip(table.topic[rows].tolist(),
                                                        table.partition[rows].tolist(),
                                                        table.offset[rows].tolist())}

    def topic_rank(self) -> np.ndarray:
        """Each topic id's place in name order."""
        names = self.topics.names
        if self._topic_rank is None or len(self._topic_rank) != len(names):
            by_name = sorted(range(len(names)), key=lambda i: names[i] or "")
            self._topic_rank = np.empty(len(names), dtype=np.int64)
            self._topic_rank[by_name] = np.arange(len(names))
        return self._topic_rank

    def topic_table(self) -> NameTable:
        """The topics' names by id, escaped once for the exposition."""
        names = self.topics.names
        if self._topic_names is None or len(self._topic_names.raw) != len(names):
            self._topic_names = NameTable(names)
        return self._topic_names

    def exposition_order(self) -> tuple[tuple, list[str], np.ndarray, np.ndarray]:
        """(a key that changes when the rest does, the live groups by name, each exported row's
        group position in that list, the exported rows) with rows in exposition order: group
        name, topic name, partition. Kept until rows or groups come or go."""
        key = (self.table.version, self.groups_version, len(self.topics.names))
        if self._order is None or self._order[0] != key:
            table = self.table
            live = sorted(name for name, group in self.groups.items()
                          if group.dead_since_s is None)
            position = np.full(len(self.group_ids.names), -1, dtype=np.int64)
            position[[self.groups[name].id for name in live]] = np.arange(len(live))
            rows = np.flatnonzero(table.exported)
            group_pos = position[table.group[rows]]
            rows, group_pos = rows[group_pos >= 0], group_pos[group_pos >= 0]
            topic_rank = self.topic_rank()
            order = np.lexsort((table.partition[rows], topic_rank[table.topic[rows]], group_pos))
            self._order = (key, live, group_pos[order], rows[order])
        return self._order

    def _owners(self, snapshot: Mapping[str, Any]) -> dict[TopicPartition, dict[str, Any]]:
        owners = {}
        for member in snapshot.get("members") or []:
            for topic, partition in member.get("assigned") or []:
                owners[(self.topic_names.get(topic, topic), int(partition))] = member
        return owners

    def _mark_dead(self, name: str, now: float, snapshot: Mapping[str, Any] | None = None) -> None:
        group = self._group(name)
        if group.dead_since_s is None:
            group.dead_since_s = now
            self.groups_version += 1
        self._release_rows(group)
        group.owners = {}
        if group.snapshot is None and snapshot is not None:
            # Created and deleted within one micro-batch: the Dead snapshot is all the view saw,
            # and its info series still needs the group's type and coordinator partition.
            group.snapshot = {k: v for k, v in snapshot.items() if k != "offsets"}
        if group.snapshot is not None:
            group.snapshot = dict(group.snapshot, state="Dead", members=[])

    def _snapshot_knows(self, name: str, event: Mapping[str, Any]) -> bool:
        """Whether the group's snapshot was taken after `event`: it then says itself whether the
        group is Dead. A tombstone and the group's next records (a conversion, or a group created
        again under the same name) often share a micro-batch, whose snapshot is the revived
        group's; the deletion must not bury it."""
        group = self.groups.get(name)
        snapshot = group.snapshot if group is not None else None
        return snapshot is not None and (snapshot.get("updated_ms") or 0) >= (event.get("timestamp_ms") or 0)

    def _apply_event(self, event: Mapping[str, Any], now: float) -> None:
        kind = event.get("event")
        name = event.get("group")
        if name is None or name not in self.settings.groups:
            return
        if kind == "group_deleted":
            if not self._snapshot_knows(name, event):
                self._mark_dead(name, now)
            return
        group = self._group(name, state_changes=kind != "offset_committed")
        if kind == "rebalance":
            group.rebalances += 1
            group.partitions_moved += len(event.get("partitions_moved") or ())
            if event.get("duration_seconds") is not None:
                group.own_histogram("rebalance_duration").observe(float(event["duration_seconds"]))
            if event.get("sync_seconds") is not None:
                group.own_histogram("sync_duration").observe(float(event["sync_seconds"]))
            end_ms = event.get("end_ms", event.get("timestamp_ms"))
            if end_ms is not None:
                end_s = end_ms / 1000.0
                if group.last_rebalance_s is None or end_s > group.last_rebalance_s:
                    group.last_rebalance_s = end_s
        elif kind == "rebalance_downtime":
            if event.get("downtime_seconds") is not None:
                group.own_histogram("downtime").observe(float(event["downtime_seconds"]))
        elif kind == "offset_committed":
            self._event_commit(group, event)

    def _event_commit(self, group: GroupRecord, event: Mapping[str, Any]) -> None:
        """Commits carried by events fill the status window between snapshots (a snapshot only
        shows the last commit of a batch). Replaying the same commit from a snapshot is harmless:
        the window merges commits closer than min_distance."""
        topic = event.get("topic")
        partition = event.get("partition_id")
        offset = event.get("committed_offset")
        if topic is None or partition is None or offset is None or topic not in self.settings.topics:
            return
        commit_ms = event.get("commit_timestamp_ms", event.get("timestamp_ms"))
        commit_s = commit_ms / 1000.0
        self._commit(group, topic, int(partition), int(offset), commit_s)
        group.last_activity_s = max(group.last_activity_s, commit_s)
