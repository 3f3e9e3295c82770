"""Evaluate the MonitorView into the families of `streaming.exporter.catalog`: which series
exist, their labels and values. Lag, time lag and status are evaluated here against the freshest
end offsets the poller has delivered.

The work is split per group (`Evaluator.group`), per topic partition (`Evaluator.topics`) and for
the monitor itself (`Evaluator.monitor`), so that `streaming.exporter.metrics_cache` can
re-evaluate only what changed. `build_families` evaluates everything at once (what the cache must
match; used by tests).
"""
from __future__ import annotations

from typing import Any

from coordinator.lag import LagRollup, messages_lost, partition_lag, roll_up
from coordinator.status import Status, evaluate_partition, group_status
from coordinator.timelag import time_lag
from streaming.exporter.catalog import (BURROW, KAFKA_EXPORTER, KAFKA_LAG_EXPORTER, PARTITION,
                                       served_families)
from streaming.exporter.exposition import Family
from streaming.exporter.view import GroupRecord, MonitorView

try:
    from importlib.metadata import version as _package_version
    VERSION = _package_version("groupscope")
except Exception:  # not installed (running from a source tree)
    VERSION = "unknown"

Sink = dict  # family name -> list of (label values, value) samples


def family_specs(compat: tuple[str, ...], granularity: str = PARTITION) -> dict[str, Family]:
    """Every family the exporter serves with these compat targets at this granularity, in
    exposition order, as empty Family objects (name, kind, help, label names) to fill."""
    return {f.name: Family(f.name, f.kind, f.help, f.labels)
            for f in served_families(compat, granularity)}


def build_families(view: MonitorView, now_s: float | None = None) -> list[Family]:
    """Everything the exporter serves, evaluated now, in exposition order."""
    with view.lock:
        now = view.clock() if now_s is None else now_s
        view.housekeeping(now)
        evaluator = Evaluator(view, now)
        sink: Sink = {}
        for name in sorted(view.groups):
            evaluator.group(view.groups[name], sink)
        evaluator.topics(sink)
        evaluator.monitor(sink)
    families = family_specs(view.settings.compat, view.settings.granularity)
    for name, family in families.items():
        family.samples = sink.get(name, [])
    return list(families.values())


def _uses_group_management(group: GroupRecord) -> bool:
    """Whether the group has ever had members (or a generation, or a rebalance). A group that
    only commits offsets (consumers that assign partitions themselves: Spark, Flink, many
    connectors) never joins, so it cannot rebalance: its three rebalance histograms would be
    constant zeros (about 5 KB of text per group and scrape, a third of a 10-partition group's
    series), and they appear with its first member instead."""
    if group.ever_had_members or group.rebalances or group.downtime.count:
        return True
    snapshot = group.snapshot
    return bool(snapshot and (snapshot.get("generation") or snapshot.get("members")))


def _discard(sample: tuple) -> None:
    """Where a per-partition sample goes when metrics.granularity is topic."""


def _out(sink: Sink, name: str) -> list:
    samples = sink.get(name)
    if samples is None:
        samples = sink[name] = []
    return samples


class Evaluator:
    """Evaluates groups, topic partitions and the monitor's own figures at time `now` into a
    sink. Callers hold the view's lock."""

    def __init__(self, view: MonitorView, now: float) -> None:
        self.view = view
        self.now = now
        self.cluster = view.settings.cluster
        compat = view.settings.compat
        self.ke = KAFKA_EXPORTER in compat
        self.kle = KAFKA_LAG_EXPORTER in compat
        self.burrow = BURROW in compat
        # metrics.granularity: topic serves per-topic roll-ups instead of per-partition series.
        self.per_partition = view.settings.granularity == PARTITION

    # ---- groups -----------------------------------------------------------------------------

    def group(self, group: GroupRecord, sink: Sink) -> None:
        self.group_state(group, sink)
        self.group_lag(group, sink)

    def group_state(self, group: GroupRecord, sink: Sink) -> None:
        """What changes only when the group itself changes (or topic metadata does): state,
        assignment, committed offsets, rebalance counters and histograms."""
        if group.dead_since_s is not None:
            self._info(group, group.snapshot or {"group": group.name, "state": "Dead"}, sink)
            return
        if group.snapshot is not None:
            self._info(group, group.snapshot, sink)
            self._assignment(group, group.snapshot, sink)
        if self.per_partition:
            committed_out = _out(sink, "kafka_consumergroup_committed_offset").append
            commit_ts_out = _out(sink, "kafka_consumergroup_commit_timestamp_seconds").append
            for part in self._exported_partitions(group):
                committed_out((part.labels, part.offset))
                commit_ts_out((part.labels, part.commit_s))
        else:
            committed_sum = _out(sink, "kafka_consumergroup_topic_committed_offset")
            for topic, total in sorted(self._offset_sums(group).items()):
                committed_sum.append(((self.cluster, group.name, topic), total))
        key = (self.cluster, group.name)
        _out(sink, "kafka_consumergroup_rebalances").append((key, group.rebalances))
        _out(sink, "kafka_consumergroup_rebalance_partitions_moved").append(
            (key, group.partitions_moved))
        if _uses_group_management(group):
            _out(sink, "kafka_consumergroup_rebalance_duration_seconds").append(
                (key, group.rebalance_duration))
            _out(sink, "kafka_consumergroup_rebalance_sync_duration_seconds").append(
                (key, group.sync_duration))
            _out(sink, "kafka_consumergroup_rebalance_downtime_seconds").append(
                (key, group.downtime))
        if group.last_rebalance_s is not None:
            _out(sink, "kafka_consumergroup_last_rebalance_timestamp_seconds").append(
                (key, group.last_rebalance_s))

    def group_lag(self, group: GroupRecord, sink: Sink) -> None:
        """What also changes with end offsets and time: lag, time lag, status, their roll-ups."""
        if group.dead_since_s is None:
            self._partitions(group, sink)

    def lag_at_rest(self, group: GroupRecord) -> bool:
        """Whether `group_lag`'s figures stay what they are until the group or the end offsets
        of its partitions change: every exported partition is at its end (lag 0, so time lag 0
        and status OK whatever the time) or has no end offset yet (NOTFOUND)."""
        if group.dead_since_s is not None:
            return True
        ends_by_key = self.view.ends
        for part in self._exported_partitions(group):
            ends = ends_by_key.get(part.key)
            offsets = ends.timeline.offsets if ends is not None else None
            if offsets and offsets[-1] > part.offset:
                return False
        return True

    def _exported_partitions(self, group: GroupRecord):
        """Committed partitions whose series are exported (subscribed topics only, by default)."""
        subscribed = None if self.view.settings.include_unsubscribed else group.subscribed
        if subscribed is None:
            return group.partitions.values()
        return [part for part in group.partitions.values() if part.topic in subscribed]

    def _info(self, group: GroupRecord, snapshot: dict[str, Any], sink: Sink) -> None:
        c, name = self.cluster, group.name
        _out(sink, "kafka_consumergroup_info").append(
            ((c, name, snapshot.get("group_type") or "", snapshot.get("protocol_type") or "",
              snapshot.get("protocol") or "", snapshot.get("state") or "",
              str(snapshot.get("coordinator_partition", ""))), 1))
        _out(sink, "kafka_consumergroup_generation").append(
            ((c, name), int(snapshot.get("generation") or 0)))
        members = len(snapshot.get("members") or ())
        _out(sink, "kafka_consumergroup_members").append(
            ((c, name, name) if self.ke else (c, name), members))

    def _assignment(self, group: GroupRecord, snapshot: dict[str, Any], sink: Sink) -> None:
        c, name = self.cluster, group.name
        members = snapshot.get("members") or []
        by_subscription: dict[frozenset[str], list[int]] = {}
        idle = 0
        assigned_out = _out(sink, "kafka_consumergroup_member_assigned_partitions")
        for member in members:
            assigned = len(member.get("assigned") or ())
            assigned_out.append(((c, name, member.get("member_id") or "",
                                  member.get("client_id") or "", member.get("client_host") or "",
                                  member.get("group_instance_id") or ""), assigned))
            if assigned == 0:
                idle += 1
            topics = frozenset(member.get("subscribed_topics") or ())
            by_subscription.setdefault(topics, []).append(assigned)
        skew = max((max(counts) - min(counts) for counts in by_subscription.values()), default=0)
        _out(sink, "kafka_consumergroup_assignment_skew").append(((c, name), skew))
        _out(sink, "kafka_consumergroup_idle_members").append(((c, name), idle))
        if members:
            self._unassigned(group, snapshot, sink)

    def _unassigned(self, group: GroupRecord, snapshot: dict[str, Any], sink: Sink) -> None:
        counts = self.view.partition_counts
        owned: dict[str, set[int]] = {}
        for topic, partition in group.owners:
            owned.setdefault(topic, set()).add(partition)
        out = _out(sink, "kafka_consumergroup_unassigned_partitions")
        for topic in snapshot.get("subscribed_topics") or ():
            total = counts.get(topic)
            if total is None:
                continue  # topic unknown to metadata (not polled yet, or deleted)
            mine = owned.get(topic, ())
            missing = total - sum(1 for p in mine if p < total)
            out.append(((self.cluster, group.name, topic), missing))

    def _partitions(self, group: GroupRecord, sink: Sink) -> None:
        view, now = self.view, self.now
        status_settings = view.settings.status
        recent = status_settings.recent_catch_up_s
        ends_by_key = view.ends
        name = group.name
        ke, kle, burrow = self.ke, self.kle, self.burrow
        rows: list[tuple[str, int, float]] = []
        statuses: list[tuple[str, Status]] = []  # (topic, status) per exported partition
        if self.per_partition:
            compat = ke or kle or burrow
            lag_out = _out(sink, "kafka_consumergroup_lag").append
            seconds_out = _out(sink, "kafka_consumergroup_lag_seconds").append
            method_out = _out(sink, "kafka_consumergroup_lag_seconds_method").append
            lost_out = _out(sink, "kafka_consumergroup_messages_lost").append
            status_out = _out(sink, "kafka_consumergroup_partition_status").append
        else:  # the figures go to per-topic roll-ups only (_topic_rollups)
            compat = False
            lag_out = seconds_out = method_out = lost_out = status_out = _discard
            lost_by_topic: dict[str, int] = {}
        for part in self._exported_partitions(group):
            key = part.key
            topic = part.topic
            labels = part.labels
            offset = part.offset
            ends = ends_by_key.get(key)
            timeline = ends.timeline if ends is not None else None
            if timeline is None or not timeline.offsets:
                statuses.append((topic, Status.NOTFOUND))
                status_out((labels, 0))
                if compat:
                    self._compat_partition(group, key, part, None, None, Status.NOTFOUND, sink)
                continue
            end = timeline.offsets[-1]
            lag, negative = partition_lag(end, offset)
            if negative and part.negative_seen_at != end:
                part.negative_seen_at = end
                view.negative_lag_total += 1
            lag_out((labels + (name,) if ke else labels, lag))
            seconds, method = time_lag(timeline, offset, now)
            seconds_out((labels, seconds))
            method_out((labels, int(method)))
            lost = messages_lost(ends.start, offset)
            lost_out((labels, lost))
            rows.append((topic, lag, seconds))

            def recently_caught_up(timeline=timeline, offset=offset) -> bool:
                end_then = timeline.offset_at(max(now - recent, timeline.times[0]))
                return end_then is not None and end_then <= offset

            status = evaluate_partition(part.window, lag, now, recently_caught_up,
                                        status_settings)
            statuses.append((topic, status))
            status_out((labels, int(status)))
            if compat:
                self._compat_partition(group, key, part, lag, seconds, status, sink)
            if not self.per_partition:
                lost_by_topic[topic] = lost_by_topic.get(topic, 0) + lost
        rollup = self._group_rollups(group, rows, statuses, sink)
        if not self.per_partition:
            self._topic_rollups(group, rollup, lost_by_topic, statuses, sink)

    def _topic_rollups(self, group: GroupRecord, rollup: LagRollup | None,
                       lost_by_topic: dict[str, int], statuses: list[tuple[str, Status]],
                       sink: Sink) -> None:
        """What metrics.granularity=topic serves instead of the per-partition series: maxima,
        losses and partitions per status for each topic (its lag sum is served at both)."""
        c, name = self.cluster, group.name
        if rollup is not None:
            max_out = _out(sink, "kafka_consumergroup_topic_max_lag").append
            for topic, most in sorted(rollup.max_by_topic.items()):
                max_out(((c, name, topic), most))
            seconds_out = _out(sink, "kafka_consumergroup_topic_max_lag_seconds").append
            for topic, most in sorted(rollup.max_seconds_by_topic.items()):
                seconds_out(((c, name, topic), most))
        lost_out = _out(sink, "kafka_consumergroup_topic_messages_lost").append
        for topic, lost in sorted(lost_by_topic.items()):
            lost_out(((c, name, topic), lost))
        counts: dict[tuple[str, Status], int] = {}
        for topic_status in statuses:
            counts[topic_status] = counts.get(topic_status, 0) + 1
        status_out = _out(sink, "kafka_consumergroup_topic_status_partitions").append
        for (topic, status), n in sorted(counts.items()):
            status_out(((c, name, topic, status.name), n))

    def _group_rollups(self, group: GroupRecord, rows: list[tuple[str, int, float]],
                       statuses: list[tuple[str, Status]], sink: Sink) -> LagRollup | None:
        """Sums and maxima over the partitions whose end offset is known. A group none of whose
        partitions has one (a topic the principal may not describe, deleted, or not polled yet)
        has no lag figure at all rather than a lag of 0, which no lag alert would ever fire on;
        `kafka_consumergroup_lag_unknown_partitions` says how many partitions are unknown."""
        c, name = self.cluster, group.name
        key = (c, name)
        unknown = sum(1 for _, status in statuses if status is Status.NOTFOUND)
        _out(sink, "kafka_consumergroup_lag_unknown_partitions").append((key, unknown))
        overall = group_status(status for _, status in statuses) if statuses else Status.NOTFOUND
        _out(sink, "kafka_consumergroup_status").append((key, int(overall)))
        if self.burrow:
            _out(sink, "burrow_kafka_consumer_status").append((key, int(overall)))
        if not rows:
            if self.ke:
                self._kafka_exporter_group(group, {}, sink)
            return None
        rollup = roll_up(rows)
        topic_lag = _out(sink, "kafka_consumergroup_topic_lag")
        for topic, total in sorted(rollup.by_topic.items()):
            topic_lag.append(((c, name, topic), total))
        if not self.kle:
            _out(sink, "kafka_consumergroup_group_lag").append((key, rollup.total))
        max_key = key + ((c, "true" if not group.ever_had_members else "false")
                         if self.kle else ())
        _out(sink, "kafka_consumergroup_group_max_lag").append((max_key, rollup.max_lag))
        _out(sink, "kafka_consumergroup_group_max_lag_seconds").append(
            (max_key, rollup.max_lag_seconds))
        if self.ke:
            self._kafka_exporter_group(group, rollup.by_topic, sink)
        if self.kle:
            _out(sink, "kafka_consumergroup_group_sum_lag").append(((c, c, name), rollup.total))
            topic_sum = _out(sink, "kafka_consumergroup_group_topic_sum_lag")
            for topic, total in sorted(rollup.by_topic.items()):
                topic_sum.append(((c, c, name, topic), total))
        if self.burrow:
            _out(sink, "burrow_kafka_consumer_lag_total").append((key, rollup.total))
        return rollup

    def _compat_partition(self, group: GroupRecord, key, part, lag: int | None,
                          seconds: float | None, status: Status, sink: Sink) -> None:
        c, name = self.cluster, group.name
        topic, partition = part.labels[2], part.labels[3]
        if self.ke:
            _out(sink, "kafka_consumergroup_current_offset").append(
                ((c, name, topic, partition), part.offset))
        if self.kle:
            owner = group.owners.get(key) or {}
            labels = (c, c, name, topic, partition, owner.get("client_host") or "",
                      owner.get("member_id") or "", owner.get("client_id") or "")
            _out(sink, "kafka_consumergroup_group_offset").append((labels, part.offset))
            if lag is not None:
                _out(sink, "kafka_consumergroup_group_lag").append((labels, lag))
                _out(sink, "kafka_consumergroup_group_lag_seconds").append((labels, seconds))
        if self.burrow:
            labels = (c, name, topic, partition)
            _out(sink, "burrow_kafka_consumer_current_offset").append((labels, part.offset))
            if lag is not None:
                _out(sink, "burrow_kafka_consumer_partition_lag").append((labels, lag))
            _out(sink, "burrow_kafka_topic_partition_status").append((labels, int(status)))

    def _kafka_exporter_group(self, group: GroupRecord, lag_by_topic: dict[str, int],
                              sink: Sink) -> None:
        c, name = self.cluster, group.name
        current_sum = _out(sink, "kafka_consumergroup_current_offset_sum")
        for topic, total in sorted(self._offset_sums(group).items()):
            current_sum.append(((c, name, topic), total))
        lag_sum = _out(sink, "kafka_consumergroup_lag_sum")
        for topic, total in sorted(lag_by_topic.items()):
            lag_sum.append(((c, name, topic), total))

    def _offset_sums(self, group: GroupRecord) -> dict[str, int]:
        sums: dict[str, int] = {}
        for part in self._exported_partitions(group):
            sums[part.topic] = sums.get(part.topic, 0) + part.offset
        return sums

    # ---- topics and the monitor itself ------------------------------------------------------

    def topics(self, sink: Sink) -> None:
        view, c = self.view, self.cluster
        ke, kle, burrow = self.ke, self.kle, self.burrow
        end_out = _out(sink, "kafka_partition_log_end_offset").append
        start_out = _out(sink, "kafka_partition_log_start_offset").append
        topics_seen: set[str] = set()
        for (topic, partition), ends in sorted(view.ends.items()):
            latest = ends.timeline.latest
            if latest is None:
                continue
            labels = (c, topic, str(partition))
            end_out((labels, latest[0]))
            if ends.start is not None:
                start_out((labels, ends.start))
            topics_seen.add(topic)
            if ke:
                _out(sink, "kafka_topic_partition_current_offset").append((labels, latest[0]))
                if ends.start is not None:
                    _out(sink, "kafka_topic_partition_oldest_offset").append((labels, ends.start))
            if kle:
                kle_labels = (c, c, topic, str(partition))
                _out(sink, "kafka_partition_latest_offset").append((kle_labels, latest[0]))
                if ends.start is not None:
                    _out(sink, "kafka_partition_earliest_offset").append((kle_labels, ends.start))
            if burrow:
                _out(sink, "burrow_kafka_topic_partition_offset").append((labels, latest[0]))
        if ke:
            partitions = _out(sink, "kafka_topic_partitions")
            for topic in sorted(topics_seen):
                if topic in view.partition_counts:
                    partitions.append(((c, topic), view.partition_counts[topic]))

    def monitor(self, sink: Sink) -> None:
        view, c = self.view, self.cluster
        records = _out(sink, "groupscope_records")
        for type_name, n in sorted(view.records_total.items()):
            records.append(((c, type_name), n))
        skipped = _out(sink, "groupscope_records_skipped")
        for reason, n in sorted(view.records_skipped.items()):
            skipped.append(((c, reason), n))
        progress = _out(sink, "groupscope_offsets_topic_lag")
        for partition, lag in sorted(view.offsets_topic_lag.items()):
            progress.append(((c, str(partition)), lag))
        _out(sink, "groupscope_ready").append(((c,), 1 if view.ready else 0))
        _out(sink, "groupscope_batch_duration_seconds").append(((c,), view.batch_duration))
        _out(sink, "groupscope_end_offsets_poll_duration_seconds").append(
            ((c,), view.poll_duration))
        age = float("inf") if view.last_poll_s is None else max(0.0, self.now - view.last_poll_s)
        _out(sink, "groupscope_end_offsets_age_seconds").append(((c,), age))
        _out(sink, "groupscope_end_offsets_poll_failures").append(((c,), view.poll_failures))
        _out(sink, "groupscope_negative_lag").append(((c,), view.negative_lag_total))
        _out(sink, "groupscope_build_info").append(((c, VERSION), 1))
        if self.kle:
            poll_ms = (view.last_poll_duration_s or 0.0) * 1000.0
            _out(sink, "kafka_consumergroup_poll_time_ms").append(((c, c), poll_ms))
