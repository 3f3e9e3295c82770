"""Evaluate the MonitorView into the families of `streaming.exporter.catalog`: which series
exist, their labels and values.

The work is split in a group's state (`Evaluator.group_state`: info, assignment, rebalances;
changes only when the group does), every group's lag part (`lag_part`: the per-partition
figures and their roll-ups, evaluated a column at a time against the freshest end offsets the
poller has delivered), topic partitions (`Evaluator.topics`) and the monitor itself
(`Evaluator.monitor`), so that `streaming.exporter.metrics_cache` re-evaluates only what changed.
`build_families` evaluates everything at once (what the cache must match; used by tests).
"""
from __future__ import annotations

from typing import Any

from coordinator.state.share_partition import (UNKNOWN, records_by_delivery_count, records_by_state,
                                               share_lag)
from streaming.exporter.catalog import (KAFKA_EXPORTER, KAFKA_LAG_EXPORTER, PARTITION,
                                       served_families)
from streaming.exporter.exposition import Family
from streaming.exporter.lag_frame import evaluate
from streaming.exporter.lag_render import ColumnFamily, lag_families, log_families
from streaming.exporter.risk_render import risk_families
from streaming.exporter.plain_states import is_plain, uses_group_management
from streaming.exporter.view import GroupRecord, MonitorView

try:
    from importlib.metadata import version as _package_version
    VERSION = _package_version("groupscope")
except Exception:  # not installed (running from a source tree)
    VERSION = "unknown"

Sink = dict  # family name -> list of (label values, value) samples


def family_specs(compat: tuple[str, ...], granularity: str = PARTITION,
                 switches: tuple[str, ...] = ()) -> dict[str, Family]:
    """Every family the exporter serves with these compat targets at this granularity and
    these switches on, in exposition order, as empty Family objects (name, kind, help, label
    names) to fill."""
    return {f.name: Family(f.name, f.kind, f.help, f.labels)
            for f in served_families(compat, granularity, switches)}


def build_families(view: MonitorView, now_s: float | None = None) -> list[Family]:
    """Everything the exporter serves, evaluated now, in exposition order."""
    with view.lock:
        now = view.clock() if now_s is None else now_s
        view.housekeeping(now)
        evaluator = Evaluator(view, now)
        sink: Sink = {}
        for name in state_order(view):
            evaluator.group_state(view.groups[name], sink)
        columns = lag_part(view, now) + log_part(view)
        monitor: Sink = {}
        evaluator.monitor(monitor)
    families = family_specs(view.settings.compat, view.settings.granularity,
                            view.settings.switches)
    for family in columns:
        sink.setdefault(family.name, []).extend(family.samples())
    for name, family in families.items():
        family.samples = sink.get(name, []) + monitor.get(name, [])
    return list(families.values())


def state_order(view: MonitorView) -> list[str]:
    """The groups in the order their state samples are served: the others by name, then the
    plain groups by name (`streaming.exporter.plain_states`, rendered as one block)."""
    plain, other = [], []
    for name in sorted(view.groups):
        (plain if is_plain(view.groups[name]) else other).append(name)
    return other + plain


def lag_part(view: MonitorView, now: float, kept: dict | None = None) -> list[ColumnFamily]:
    """Every live group's lag families at `now`, as columns (`kept`: see `lag_families`).
    Callers hold the view's lock."""
    groups, frame = view.groups, evaluate(view, now)
    kept = {} if kept is None else kept
    lag = lag_families(frame, view.settings.cluster, view.settings.compat,
                       view.settings.granularity, view.topic_table(),
                       lambda name: groups[name].owners,
                       lambda name: groups[name].ever_had_members, kept,
                       member_lag=view.settings.member_lag)
    return lag + risk_families(view, frame, now, view.topic_table(), kept)


def log_part(view: MonitorView) -> list[ColumnFamily]:
    """The polled partitions' log offsets, as columns. Callers hold the view's lock."""
    return log_families(view, view.topic_table())


# A refusal's label keeps its first characters: the what and the fix, not a whole stack.
REFUSAL_LABEL_CHARS = 300


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

    # ---- groups -----------------------------------------------------------------------------

    def group_state(self, group: GroupRecord, sink: Sink) -> None:
        """What changes only when the group itself changes (or topic metadata does): state,
        assignment, rebalance counters and histograms."""
        if group.dead_since_s is not None:
            self._info(group, group.snapshot or {"group": group.name, "state": "Dead"}, sink)
            return
        if group.snapshot is not None:
            self._info(group, group.snapshot, sink)
            self._assignment(group, group.snapshot, sink)
        if group.name in self.view.seeded:
            # The launch seed's look knows no counter, duration or generation: absent until
            # the log brings the group (a 0 there would read as a reset, then a burst).
            return
        key = (self.cluster, group.name)
        _out(sink, "kafka_consumergroup_rebalances").append((key, group.rebalances))
        _out(sink, "kafka_consumergroup_rebalance_partitions_moved").append(
            (key, group.partitions_moved))
        if uses_group_management(group):
            _out(sink, "kafka_consumergroup_rebalance_duration_seconds").append(
                (key, group.rebalance_duration))
            _out(sink, "kafka_consumergroup_rebalance_sync_duration_seconds").append(
                (key, group.sync_duration))
            _out(sink, "kafka_consumergroup_rebalance_downtime_seconds").append(
                (key, group.downtime))
        if group.last_rebalance_s is not None:
            _out(sink, "kafka_consumergroup_last_rebalance_timestamp_seconds").append(
                (key, group.last_rebalance_s))

    def _info(self, group: GroupRecord, snapshot: dict[str, Any], sink: Sink) -> None:
        c, name = self.cluster, group.name
        # Unknown (None) to the Admin API's look (source.type admin, the launch seed): empty.
        where = snapshot.get("coordinator_partition")
        _out(sink, "kafka_consumergroup_info").append(
            ((c, name, snapshot.get("group_type") or "", snapshot.get("protocol_type") or "",
              snapshot.get("protocol") or "", snapshot.get("state") or "",
              "" if where is None else str(where)), 1))
        if name not in self.view.seeded:
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

    # ---- the monitor itself ----------------------------------------------------------------

    def share_groups(self, sink: Sink) -> None:
        """Every share-partition whose topic metadata named, and each share group's roll-ups.
        Evaluated at each scrape: share-partitions are few beside group-partitions."""
        view, c = self.view, self.cluster
        # at metrics.granularity topic, only the group roll-ups
        part: Sink = sink if view.settings.granularity == PARTITION else {}
        start, lag = _out(part, "kafka_sharegroup_partition_start_offset"), \
            _out(part, "kafka_sharegroup_partition_lag")
        records = _out(part, "kafka_sharegroup_partition_records")
        deliveries = _out(part, "kafka_sharegroup_partition_delivery_count_records")
        archived = _out(part, "kafka_sharegroup_partition_archived_records")
        group_lag: dict[str, int] = {}
        group_archived: dict[str, int] = {}
        for (group, topic_id, partition), sp in sorted(view.share_partitions.items()):
            topic = view.topic_names.get(topic_id)
            if topic is None or topic not in view.settings.topics:
                continue
            labels = (c, group, topic, str(partition))
            if sp.start_offset != UNKNOWN:  # not yet initialised: Kafka describes it as "-"
                start.append((labels, sp.start_offset))
            end = view.log_end((topic, partition))
            partition_lag = share_lag(sp, None if end is None else end[0])
            if partition_lag is not None:
                lag.append((labels, partition_lag))
                group_lag[group] = group_lag.get(group, 0) + partition_lag
            for state, n in records_by_state(sp).items():
                records.append(((*labels, state), n))
            for count, n in records_by_delivery_count(sp).items():
                deliveries.append(((*labels, str(count)), n))
            if sp.polled_lag is not None:
                continue  # polled (source.type admin): what it archived is not known
            archived.append((labels, sp.archived_seen))
            group_archived[group] = group_archived.get(group, 0) + sp.archived_seen
        _out(sink, "kafka_sharegroup_lag").extend(((c, g), n) for g, n in sorted(group_lag.items()))
        _out(sink, "kafka_sharegroup_archived_records").extend(
            ((c, g), n) for g, n in sorted(group_archived.items()))

    def monitor(self, sink: Sink) -> None:
        view, c = self.view, self.cluster
        # records read and skipped, by type and by reason, of each topic read
        for name, counts in (("groupscope_records", view.records_total),
                             ("groupscope_records_skipped", view.records_skipped),
                             ("groupscope_share_state_records", view.share_records),
                             ("groupscope_share_state_records_skipped", view.share_skipped)):
            _out(sink, name).extend(((c, label), n) for label, n in sorted(counts.items()))
        progress = _out(sink, "groupscope_offsets_topic_lag")
        for partition, lag in sorted(view.offsets_topic_lag.items()):
            progress.append(((c, str(partition)), lag))
        _out(sink, "groupscope_ready").append(((c,), 1 if view.ready else 0))
        _out(sink, "groupscope_seeded_groups").append(((c,), len(view.seeded)))
        _out(sink, "groupscope_source_up").append(((c,), 1 if view.source_up else 0))
        _out(sink, "groupscope_source_access_denied").append(
            ((c,), 1 if view.source_refusal else 0))
        refusals = _out(sink, "groupscope_source_refusal_info")
        for found_by, refusal in sorted(view.source_refusals.items()):
            refusals.append(((c, found_by, refusal[:REFUSAL_LABEL_CHARS]), 1))
        _out(sink, "groupscope_topics_without_metadata").append(((c,), view.topics_without_metadata))
        _out(sink, "groupscope_batch_duration_seconds").append(((c,), view.batch_duration))
        _out(sink, "groupscope_end_offsets_poll_duration_seconds").append(
            ((c,), view.poll_duration))
        age = float("inf") if view.last_poll_s is None else max(0.0, self.now - view.last_poll_s)
        _out(sink, "groupscope_end_offsets_age_seconds").append(((c,), age))
        _out(sink, "groupscope_end_offsets_poll_failures").append(((c,), view.poll_failures))
        _out(sink, "groupscope_negative_lag").append(((c,), view.negative_lag_total))
        _out(sink, "groupscope_build_info").append(((c, VERSION), 1))
        self.share_groups(sink)
        if self.kle:
            poll_ms = (view.last_poll_duration_s or 0.0) * 1000.0
            _out(sink, "kafka_consumergroup_poll_time_ms").append(((c, c), poll_ms))
