"""MonitorView: the driver-side, in-memory picture the exporter serves.

Two writers feed it: the Spark job (group snapshots, events, record counters, progress on
`__consumer_offsets`, batch durations) and the end-offset poller (log end / start offsets and
topic metadata). The exporter reads it. Every public method takes one lock, so each writer's
update is seen whole or not at all.

Only state lives here; turning it into metric families is `streaming.exporter.evaluation`.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from coordinator.status import Commit, CommitWindow, StatusSettings
from coordinator.timelag import DEFAULT_TABLE_SIZE, OffsetTimeline
from streaming.exporter.catalog import COMPAT_TARGETS, GRANULARITIES, PARTITION
from streaming.exporter.histogram import DURATION_BUCKETS, FAST_BUCKETS, Histogram
from streaming.exporter.selection import EVERYTHING, Selection

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


class CommittedPartition:
    """A group's committed position on one partition, with its recent commit history."""

    __slots__ = ("topic", "partition", "key", "offset", "commit_s", "window", "labels",
                 "negative_seen_at")

    def __init__(self, cluster: str, group: str, topic: str, partition: int,
                 status: StatusSettings) -> None:
        self.topic = topic
        self.partition = partition
        self.key = (topic, partition)
        self.offset = -1
        self.commit_s = 0.0
        self.window = CommitWindow(status)
        self.labels = (cluster, group, topic, str(partition))  # shared by the per-partition series
        self.negative_seen_at: int | None = None  # end offset at which a negative lag was counted


class GroupRecord:
    __slots__ = ("name", "snapshot", "partitions", "subscribed", "owners", "rebalances",
                 "partitions_moved", "last_rebalance_s", "rebalance_duration", "sync_duration",
                 "downtime", "dead_since_s", "last_activity_s", "ever_had_members")

    def __init__(self, name: str) -> None:
        self.name = name
        self.snapshot: dict[str, Any] | None = None
        self.partitions: dict[TopicPartition, CommittedPartition] = {}
        self.subscribed: frozenset[str] | None = None  # last non-empty subscription seen
        self.owners: dict[TopicPartition, dict[str, Any]] = {}
        self.rebalances = 0
        self.partitions_moved = 0
        self.last_rebalance_s: float | None = None
        self.rebalance_duration = Histogram(DURATION_BUCKETS)
        self.sync_duration = Histogram(DURATION_BUCKETS)
        self.downtime = Histogram(DURATION_BUCKETS)
        self.dead_since_s: float | None = None
        self.last_activity_s = 0.0
        self.ever_had_members = False


class PartitionEnds:
    """What the poller knows about one partition's log."""

    __slots__ = ("timeline", "start", "observed_s")

    def __init__(self, table_size: int) -> None:
        self.timeline = OffsetTimeline(table_size)
        self.start: int | None = None
        self.observed_s = 0.0


class MonitorView:
    def __init__(self, settings: ViewSettings | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.settings = settings or ViewSettings()
        self.clock = clock
        self.lock = threading.RLock()
        self.groups: dict[str, GroupRecord] = {}
        self.ends: dict[TopicPartition, PartitionEnds] = {}
        self.topic_names: dict[str, str] = {}       # KIP-848 topic id -> name
        self.partition_counts: dict[str, int] = {}  # topic -> partitions, from metadata
        self.records_total: dict[str, int] = {}
        self.records_skipped: dict[str, int] = {}
        self.offsets_topic_lag: dict[int, int] = {}
        self.ready = False
        self.batch_duration = Histogram(FAST_BUCKETS)
        self.poll_duration = Histogram(FAST_BUCKETS)
        self.poll_failures = 0
        self.last_poll_s: float | None = None  # last successful end-offset poll
        self.last_poll_duration_s: float | None = None
        self.negative_lag_total = 0
        # Change tracking for streaming.exporter.metrics_cache: groups touched by the job since the cache
        # last looked; `version` is bumped when something every group's state depends on changes
        # (topic metadata), `ends_version` when end offsets change (every poll).
        self.changed_groups: set[str] = set()
        # Partitions whose end offset or log start changed since the cache last looked: a group
        # whose partitions all sat at their end needs no new lag figures until one of them does.
        self.moved_ends: set[TopicPartition] = set()
        self.version = 0
        self.ends_version = 0

    # ---- fed by the Spark job -------------------------------------------------------------

    def update_groups(self, snapshots: Iterable[Mapping[str, Any]]) -> None:
        """Replace the state of each group named in `snapshots` (GroupState.to_dict() shape)."""
        with self.lock:
            now = self.clock()
            for snapshot in snapshots:
                self._apply_snapshot(snapshot, now)

    def apply_events(self, events: Iterable[Mapping[str, Any]]) -> None:
        """Count rebalances, downtimes, deletions and commits (event.to_dict() shapes)."""
        with self.lock:
            now = self.clock()
            for event in events:
                self._apply_event(event, now)

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

    def observe_batch(self, duration_s: float) -> None:
        with self.lock:
            self.batch_duration.observe(duration_s)

    # ---- fed by the end-offset poller -----------------------------------------------------

    def wanted_partitions(self) -> set[TopicPartition]:
        """Partitions whose end offsets the poller should fetch: those live groups commit to."""
        with self.lock:
            wanted: set[TopicPartition] = set()
            for group in self.groups.values():
                if group.dead_since_s is None:
                    wanted.update(group.partitions)
            return wanted

    def update_end_offsets(self, ends: Mapping[TopicPartition, int],
                           starts: Mapping[TopicPartition, int], observed_s: float,
                           poll_duration_s: float) -> None:
        with self.lock:
            size = self.settings.time_table_size
            moved = self.moved_ends
            for key, end in ends.items():
                entry = self.ends.get(key)
                if entry is None:
                    entry = self.ends[key] = PartitionEnds(size)
                offsets = entry.timeline.offsets
                if not offsets or offsets[-1] != end:
                    moved.add(key)
                if not entry.timeline.add(end, observed_s):
                    latest = entry.timeline.latest
                    if latest is not None and end < latest[0]:
                        # The log went backwards (topic re-created or truncated): old samples lie.
                        entry.timeline.reset()
                        entry.timeline.add(end, observed_s)
                entry.observed_s = observed_s
            for key, start in starts.items():
                entry = self.ends.get(key)
                if entry is not None:
                    if entry.start != start:
                        moved.add(key)
                    entry.start = start
            self._forget_unwanted_ends()
            self.ends_version += 1
            self.poll_duration.observe(poll_duration_s)
            self.last_poll_s = observed_s
            self.last_poll_duration_s = poll_duration_s

    def record_poll_failure(self, poll_duration_s: float) -> None:
        """A poll failed or timed out: the previous values stay, their age keeps growing."""
        with self.lock:
            self.poll_failures += 1
            self.poll_duration.observe(poll_duration_s)

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
                    del self.groups[name]
            elif group.last_activity_s and now - group.last_activity_s > settings.expire_after_s:
                del self.groups[name]

    def _forget_unwanted_ends(self) -> None:
        wanted = set()
        for group in self.groups.values():
            wanted.update(group.partitions)
        for key in [key for key in self.ends if key not in wanted]:
            del self.ends[key]
            self.moved_ends.add(key)

    def take_changed_groups(self) -> set[str]:
        changed, self.changed_groups = self.changed_groups, set()
        return changed

    def take_moved_ends(self) -> set[TopicPartition]:
        moved, self.moved_ends = self.moved_ends, set()
        return moved

    def _group(self, name: str) -> GroupRecord:
        self.changed_groups.add(name)
        group = self.groups.get(name)
        if group is None:
            group = self.groups[name] = GroupRecord(name)
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
        group = self._group(name)
        group.dead_since_s = None
        # The offsets live in `partitions`; keeping them in the snapshot too would double memory.
        group.snapshot = {k: v for k, v in snapshot.items() if k != "offsets"}
        members = snapshot.get("members") or []
        if members:
            group.ever_had_members = True
        subscribed = snapshot.get("subscribed_topics") or []
        if subscribed:
            group.subscribed = frozenset(subscribed)
        group.owners = self._owners(snapshot)
        activity = (snapshot.get("updated_ms") or 0) / 1000.0
        seen: set[TopicPartition] = set()
        topics = self.settings.topics
        for entry in snapshot.get("offsets") or []:
            if not topics.everything and entry["topic"] not in topics:
                continue
            key = (entry["topic"], int(entry["partition"]))
            seen.add(key)
            commit_s = entry["commit_timestamp_ms"] / 1000.0
            self._commit(group, key, int(entry["offset"]), commit_s)
            activity = max(activity, commit_s)
        for key in [key for key in group.partitions if key not in seen]:
            del group.partitions[key]  # offset tombstone (deleted or expired offsets)
        last_rebalance = snapshot.get("last_rebalance")
        if last_rebalance and last_rebalance.get("end_ms") is not None:
            end_s = last_rebalance["end_ms"] / 1000.0
            if group.last_rebalance_s is None or end_s > group.last_rebalance_s:
                group.last_rebalance_s = end_s
        group.last_activity_s = max(group.last_activity_s, activity)

    def _commit(self, group: GroupRecord, key: TopicPartition, offset: int,
                commit_s: float) -> None:
        partition = group.partitions.get(key)
        if partition is None:
            partition = group.partitions[key] = CommittedPartition(
                self.settings.cluster, group.name, key[0], key[1], self.settings.status)
        if commit_s < partition.commit_s:
            return  # an older commit than the one we hold (replay): keep the newer
        partition.offset = offset
        partition.commit_s = commit_s
        partition.window.add(Commit(offset, commit_s, self._lag_at(key, offset, commit_s)))

    def _lag_at(self, key: TopicPartition, offset: int, when_s: float) -> int | None:
        entry = self.ends.get(key)
        if entry is None:
            return None
        end = entry.timeline.offset_at(when_s)
        return None if end is None else max(0, end - offset)

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
        group.partitions.clear()
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
        group = self._group(name)
        if kind == "rebalance":
            group.rebalances += 1
            group.partitions_moved += len(event.get("partitions_moved") or ())
            if event.get("duration_seconds") is not None:
                group.rebalance_duration.observe(float(event["duration_seconds"]))
            if event.get("sync_seconds") is not None:
                group.sync_duration.observe(float(event["sync_seconds"]))
            end_ms = event.get("end_ms", event.get("timestamp_ms"))
            if end_ms is not None:
                end_s = end_ms / 1000.0
                if group.last_rebalance_s is None or end_s > group.last_rebalance_s:
                    group.last_rebalance_s = end_s
        elif kind == "rebalance_downtime":
            if event.get("downtime_seconds") is not None:
                group.downtime.observe(float(event["downtime_seconds"]))
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
        self._commit(group, (topic, int(partition)), int(offset), commit_s)
        group.last_activity_s = max(group.last_activity_s, commit_s)
