"""Every metric family groupscope exports: name, kind, labels, help, and which compatibility
target (`metrics.compat`) adds it or adds labels to it. Pure data, in exposition order.

The exporter serves exactly these families (`streaming.exporter.evaluation` fills them);
dashboards, recording and alert rules, the sample page and the tests check themselves against
them, so a renamed metric breaks a test instead of a 3 a.m. dashboard. Kept free of the view and
of Spark so that `dashboards` can import it cheaply.

Names are family names: a counter is exposed with `_total` appended (as prometheus-client does),
a histogram as `_bucket`, `_sum` and `_count` series (see `MetricFamily.series`). Every family
carries `cluster` first.

Compatibility adds other tools' names. Where a tool's name equals one of ours with the same
meaning, our family simply gains that tool's extra labels (kafka_exporter's `consumergroup` on
`kafka_consumergroup_lag` / `_members`; kafka-lag-exporter's `cluster_name`, `is_simple_consumer`
on `_group_max_lag*`). One name clashes in meaning: kafka-lag-exporter's
`kafka_consumergroup_group_lag` is per partition while ours is the group's sum; with that
compatibility on, the name takes kafka-lag-exporter's meaning and the group sum is served as
`kafka_consumergroup_group_sum_lag` (which that tool also has).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from enum import IntEnum
from typing import Iterable

from coordinator.status import Status
from coordinator.rate_methods import RateMethod
from coordinator.timelag import TimeLagMethod

GAUGE, COUNTER, HISTOGRAM = "gauge", "counter", "histogram"

# metrics.granularity: a group's lag figures per partition, or per topic only (sums, maxima and
# counts: one series per group and topic where there was one per partition).
PARTITION, TOPIC = "partition", "topic"
GRANULARITIES = (PARTITION, TOPIC)

KAFKA_EXPORTER = "kafka_exporter"
KAFKA_LAG_EXPORTER = "kafka_lag_exporter"
BURROW = "burrow"
COMPAT_TARGETS = (KAFKA_EXPORTER, KAFKA_LAG_EXPORTER, BURROW)

# Families that multiply the series count, served only when their switch is on
# (metrics.member_lag: a series per consumer).
MEMBER_LAG = "member_lag"

C = ("cluster",)
G = ("cluster", "group")
GT = G + ("topic",)
GTP = GT + ("partition",)
GM = G + ("member_id", "client_id", "client_host", "instance_id")
TP = ("cluster", "topic", "partition")
KLE = ("cluster", "cluster_name")
KLE_P = KLE + ("group", "topic", "partition", "member_host", "consumer_id", "client_id")
BURROW_G = ("cluster", "consumer_group")
BURROW_GTP = BURROW_G + ("topic", "partition")
KE_G = ("cluster", "consumergroup")
KE_GROUP_LABELS = ((KAFKA_EXPORTER, ("consumergroup",)),)
KLE_GROUP_LABELS = ((KAFKA_LAG_EXPORTER, ("cluster_name", "is_simple_consumer")),)


def _codes(statuses: Iterable[Status]) -> str:
    return " ".join(f"{s.value} {s.name}" for s in statuses)


def _methods(methods: Iterable[IntEnum] = TimeLagMethod) -> str:
    return ", ".join(f"{m.value} {m.name.lower().replace('_', ' ')}" for m in methods)


@dataclass(frozen=True)
class MetricFamily:
    name: str
    kind: str
    help: str
    labels: tuple[str, ...]
    # (compat target, labels it appends) for the targets that reuse this name with more labels.
    compat_labels: tuple[tuple[str, tuple[str, ...]], ...] = ()
    only_with: str | None = None   # served only with this compat target on
    not_with: str | None = None    # with this target on, a family of the same name replaces it
    # Served only at this `metrics.granularity` (None: at both): a series per group and partition
    # (PARTITION) or its per-topic roll-up replacing it (TOPIC).
    granularity: str | None = None
    switch: str | None = None      # served only with this switch on (MEMBER_LAG)

    def served_with(self, compat: Iterable[str], granularity: str | None = None,
                    switches: Iterable[str] | None = None) -> bool:
        """Whether served with these compat targets at this granularity (None: at any) and
        these switches on (None: whichever)."""
        compat = tuple(compat)
        return ((self.only_with is None or self.only_with in compat)
                and (self.not_with is None or self.not_with not in compat)
                and (granularity is None or self.granularity in (None, granularity))
                and (switches is None or self.switch is None or self.switch in tuple(switches)))

    def with_compat(self, compat: Iterable[str]) -> MetricFamily:
        """This family as served with these compat targets (their labels appended)."""
        compat = tuple(compat)
        extra = tuple(label for target, labels in self.compat_labels if target in compat
                      for label in labels)
        return replace(self, labels=self.labels + extra, compat_labels=())

    @property
    def exposed_name(self) -> str:
        return exposed_name(self.name, self.kind)

    def series(self) -> dict[str, frozenset[str]]:
        """Series name in the exposition -> the labels it carries."""
        labels = frozenset(self.labels)
        if self.kind == HISTOGRAM:
            return {f"{self.name}_bucket": labels | {"le"}, f"{self.name}_sum": labels,
                    f"{self.name}_count": labels}
        return {self.exposed_name: labels}


def exposed_name(name: str, kind: str) -> str:
    return name + "_total" if kind == COUNTER else name


def series_names(name: str, kind: str) -> set[str]:
    """The family's name and the names of the series it is exposed as."""
    if kind == HISTOGRAM:
        return {name, f"{name}_bucket", f"{name}_sum", f"{name}_count"}
    return {name, exposed_name(name, kind)}


_f = MetricFamily  # short, for the table below


def _only_with(target: str, *families: MetricFamily) -> tuple[MetricFamily, ...]:
    return tuple(replace(family, only_with=target) for family in families)


CATALOG: tuple[MetricFamily, ...] = (
    # Group state
    _f("kafka_consumergroup_info", GAUGE, "1 for every known group.",
       G + ("group_type", "protocol_type", "protocol", "state", "coordinator_partition")),
    _f("kafka_consumergroup_generation", GAUGE,
       "Classic generation id, or group epoch for KIP-848 groups.", G),
    _f("kafka_consumergroup_members", GAUGE, "Members in the last stored generation / epoch.", G,
       compat_labels=KE_GROUP_LABELS),
    _f("kafka_consumergroup_member_assigned_partitions", GAUGE,
       "Partitions assigned to the member.", GM),
    _f("kafka_consumergroup_assignment_skew", GAUGE,
       "Max minus min assigned partitions over members with the same subscription.", G),
    _f("kafka_consumergroup_idle_members", GAUGE, "Members with zero partitions.", G),
    _f("kafka_consumergroup_unassigned_partitions", GAUGE,
       "Subscribed partitions that no member owns.", GT),
    # Lag
    _f("kafka_consumergroup_committed_offset", GAUGE,
       "Last committed offset (read_committed view).", GTP, granularity=PARTITION),
    _f("kafka_consumergroup_commit_timestamp_seconds", GAUGE,
       "Broker commit time of the committed offset.", GTP, granularity=PARTITION),
    _f("kafka_partition_log_end_offset", GAUGE, "Log end offset from the end-offset poller.", TP),
    _f("kafka_partition_log_start_offset", GAUGE, "Log start offset from the end-offset poller.",
       TP),
    _f("kafka_consumergroup_lag", GAUGE, "Log end offset minus committed offset, never negative.",
       GTP, compat_labels=KE_GROUP_LABELS, granularity=PARTITION),
    _f("kafka_consumergroup_lag_seconds", GAUGE,
       "Age of the oldest unconsumed record (estimated, or read: lag.time_method).", GTP,
       granularity=PARTITION),
    _f("kafka_consumergroup_lag_seconds_method", GAUGE,
       f"How lag_seconds was obtained: {_methods()} (with unknown, a lower "
       "bound).", GTP, granularity=PARTITION),
    _f("kafka_consumergroup_messages_lost", GAUGE,
       "Records removed by retention before the group read them.", GTP, granularity=PARTITION),
    _f("kafka_consumergroup_topic_lag", GAUGE, "Sum of partition lags per topic.", GT),
    _f("kafka_consumergroup_topic_max_lag", GAUGE, "Highest partition lag per topic.", GT,
       granularity=TOPIC),
    _f("kafka_consumergroup_topic_max_lag_seconds", GAUGE,
       "Highest known partition time lag per topic (lag_seconds_method below unknown); absent "
       "while none is known.", GT, granularity=TOPIC),
    _f("kafka_consumergroup_topic_messages_lost", GAUGE,
       "Records removed by retention before the group read them, summed per topic.", GT,
       granularity=TOPIC),
    _f("kafka_consumergroup_topic_committed_offset", GAUGE,
       "Sum of the committed offsets per topic.", GT, granularity=TOPIC),
    _f("kafka_consumergroup_group_lag", GAUGE, "Sum of partition lags of the group.", G,
       not_with=KAFKA_LAG_EXPORTER),
    _f("kafka_consumergroup_group_lag", GAUGE, "Partition lag (kafka-lag-exporter names).", KLE_P,
       only_with=KAFKA_LAG_EXPORTER, granularity=PARTITION),
    _f("kafka_consumergroup_group_max_lag", GAUGE, "Highest partition lag of the group.", G,
       compat_labels=KLE_GROUP_LABELS),
    _f("kafka_consumergroup_group_max_lag_seconds", GAUGE,
       "Highest partition time lag of the group.", G, compat_labels=KLE_GROUP_LABELS),
    _f("kafka_consumergroup_member_lag", GAUGE,
       "Sum of the lags of the member's assigned partitions (those with a committed offset "
       "and a known end offset; metrics.member_lag).", GM, switch=MEMBER_LAG),
    _f("kafka_consumergroup_member_max_lag", GAUGE,
       "Highest lag of the member's assigned partitions (metrics.member_lag).", GM,
       switch=MEMBER_LAG),
    _f("kafka_consumergroup_member_max_lag_seconds", GAUGE,
       "Highest time lag of the member's assigned partitions (metrics.member_lag).", GM,
       switch=MEMBER_LAG),
    _f("kafka_consumergroup_lag_unknown_partitions", GAUGE,
       "Committed partitions whose end offset is unknown (topic not describable, deleted, not "
       "polled yet): their lag is not served and the group's lag roll-ups leave them out, and a "
       "group with none known has no roll-ups.", G),
    _f("kafka_consumergroup_status", GAUGE,
       f"Group health: {_codes(s for s in Status if s <= Status.ERR)}.", G),
    _f("kafka_consumergroup_partition_status", GAUGE, f"Partition health: {_codes(Status)}.",
       GTP, granularity=PARTITION),
    _f("kafka_consumergroup_topic_status_partitions", GAUGE,
       "Partitions of the topic in each partition status (only statuses some partition has).",
       GT + ("status",), granularity=TOPIC),
    # Retention risk, rates and the catch-up forecast (docs/retention-risk.md)
    _f("kafka_consumergroup_retention_risk_seconds", GAUGE,
       "Seconds until records the group has not read yet are deleted by the topic's time-based "
       "retention, at its pace (+Inf: its pace keeps it clear; 0: due now); the loss may come "
       "up to segment.ms plus one retention check later, never earlier. Absent without the "
       "topic's settings (DESCRIBE_CONFIGS) or lag.", GTP, granularity=PARTITION),
    _f("kafka_consumergroup_retention_risk_method", GAUGE,
       f"How the first unconsumed record's time behind retention_risk_seconds was obtained: "
       f"{_methods()} (with unknown, the log's first record's: an early bound); 5: "
       f"retention.bytes deletes first (from the log's size on disk).",
       GTP, granularity=PARTITION),
    _f("kafka_consumergroup_consume_rate", GAUGE,
       "Records/s the committed offset moved over lag.rate_window (or the commits' shorter "
       "span: catch_up_method).", GTP, granularity=PARTITION),
    _f("kafka_consumergroup_catch_up_seconds", GAUGE,
       "Forecast seconds until the lag is consumed: lag / (consume rate - produce rate) over "
       "the same span; +Inf (never) while consumers are not faster than producers.", GTP,
       granularity=PARTITION),
    _f("kafka_consumergroup_catch_up_method", GAUGE,
       f"How catch_up_seconds was obtained: {_methods(RateMethod)}.", GTP, granularity=PARTITION),
    _f("kafka_consumergroup_group_retention_risk_seconds", GAUGE,
       "Lowest retention_risk_seconds of the group's partitions.", G),
    _f("kafka_consumergroup_group_consume_rate", GAUGE,
       "Sum of the group's partitions' consume rates (records/s).", G),
    _f("kafka_consumergroup_group_catch_up_seconds", GAUGE,
       "Highest catch_up_seconds of the group's partitions (+Inf: some partition never "
       "catches up).", G),
    _f("kafka_partition_produce_rate", GAUGE,
       "Records/s the log end offset moved over lag.rate_window (or the samples' shorter span).",
       TP),
    _f("groupscope_topic_configs_refused", GAUGE,
       "Topics whose settings this principal may not DESCRIBE_CONFIGS: no retention risk is "
       "served for them.", C),
    _f("groupscope_log_dirs_refused", GAUGE,
       "1 while this principal may not DESCRIBE the cluster (DescribeLogDirs): no retention "
       "risk by retention.bytes is served.", C),
    # Rebalances. The three histograms are served for a group once it has had members
    # (streaming.exporter.evaluation: a group that only commits offsets cannot rebalance).
    _f("kafka_consumergroup_rebalances", COUNTER, "Completed rebalances.", G),
    _f("kafka_consumergroup_rebalance_duration_seconds", HISTOGRAM,
       "Rebalance duration (end minus start).", G),
    _f("kafka_consumergroup_rebalance_sync_duration_seconds", HISTOGRAM,
       "Rebalance sync phase: from the assignment being decided (a classic leader's assignment "
       "stored; a KIP-848 target computed, dated by Kafka 4.3+) to the rebalance's end.", G),
    _f("kafka_consumergroup_rebalance_partitions_moved", COUNTER,
       "Partitions whose owner changed in a rebalance.", G),
    _f("kafka_consumergroup_last_rebalance_timestamp_seconds", GAUGE,
       "End of the last rebalance.", G),
    _f("kafka_consumergroup_rebalance_downtime_seconds", HISTOGRAM,
       "Per-partition downtime caused by rebalances.", G),
    # Share groups (KIP-932): each share-partition's delivery state, from __share_group_state
    _f("kafka_sharegroup_partition_start_offset", GAUGE,
       "Share-partition start offset: every record before it is done with.", GTP,
       granularity=PARTITION),
    _f("kafka_sharegroup_partition_lag", GAUGE,
       "Share lag as Kafka computes it: log end offset minus start offset minus the records "
       "past it whose delivery is complete; absent while Kafka would report it unknown.", GTP,
       granularity=PARTITION),
    _f("kafka_sharegroup_partition_records", GAUGE,
       "Records at or past the start offset in each state the partition leader wrote: "
       "available (to be delivered again), acknowledged, archived (not to be delivered again).",
       GTP + ("state",), granularity=PARTITION),
    _f("kafka_sharegroup_partition_delivery_count_records", GAUGE,
       "Records at or past the start offset by how often they have been delivered.",
       GTP + ("delivery_count",), granularity=PARTITION),
    _f("kafka_sharegroup_partition_archived_records", COUNTER,
       "Records seen entering the archived state (rejected, or delivered as often as the group "
       "allows) since the job started.", GTP, granularity=PARTITION),
    _f("kafka_sharegroup_lag", GAUGE, "Sum of the group's known share-partition lags.", G),
    _f("kafka_sharegroup_archived_records", COUNTER,
       "Records of the group seen entering the archived state, summed.", G),
    _f("kafka_sharegroup_partition_retention_risk_seconds", GAUGE,
       "Seconds until the record at the share-partition start offset is deleted by the topic's "
       "time-based retention at the start offset's pace over lag.rate_window (as if it stayed "
       "while that is unknown); up to segment.ms plus one retention check later, never "
       "earlier.", GTP, granularity=PARTITION),
    _f("kafka_sharegroup_retention_risk_seconds", GAUGE,
       "Lowest retention risk of the share group's partitions.", G),
    _f("kafka_sharegroup_partition_consume_rate", GAUGE,
       "Records/s the share-partition start offset moved over lag.rate_window.", GTP,
       granularity=PARTITION),
    _f("kafka_sharegroup_consume_rate", GAUGE,
       "Sum of the share group's partitions' consume rates.", G),
    _f("kafka_sharegroup_partition_catch_up_seconds", GAUGE,
       "Seconds until the start offset reaches the log end at these rates: (log end - start "
       "offset) / (consume rate - produce rate); +Inf while not faster than the producers.",
       GTP, granularity=PARTITION),
    _f("kafka_sharegroup_catch_up_seconds", GAUGE,
       "Highest catch-up forecast of the share group's partitions.", G),
    *_only_with(
        KAFKA_EXPORTER,
        _f("kafka_consumergroup_current_offset", GAUGE, "Committed offset (kafka_exporter names).",
           KE_G + ("topic", "partition"), granularity=PARTITION),
        _f("kafka_consumergroup_current_offset_sum", GAUGE,
           "Sum of committed offsets per topic (kafka_exporter names).", KE_G + ("topic",)),
        _f("kafka_consumergroup_lag_sum", GAUGE, "Sum of lags per topic (kafka_exporter names).",
           KE_G + ("topic",)),
        _f("kafka_topic_partition_current_offset", GAUGE, "Log end offset (kafka_exporter names).",
           TP),
        _f("kafka_topic_partition_oldest_offset", GAUGE, "Log start offset (kafka_exporter names).",
           TP),
        _f("kafka_topic_partitions", GAUGE, "Partitions of the topic (kafka_exporter names).",
           ("cluster", "topic")),
    ),
    *_only_with(
        KAFKA_LAG_EXPORTER,
        _f("kafka_consumergroup_group_offset", GAUGE,
           "Committed offset (kafka-lag-exporter names).", KLE_P, granularity=PARTITION),
        _f("kafka_consumergroup_group_lag_seconds", GAUGE, "Time lag (kafka-lag-exporter names).",
           KLE_P, granularity=PARTITION),
        _f("kafka_consumergroup_group_sum_lag", GAUGE, "Sum of partition lags.", KLE + ("group",)),
        _f("kafka_consumergroup_group_topic_sum_lag", GAUGE, "Sum of partition lags per topic.",
           KLE + ("group", "topic")),
        _f("kafka_partition_latest_offset", GAUGE, "Log end offset (kafka-lag-exporter names).",
           KLE + ("topic", "partition")),
        _f("kafka_partition_earliest_offset", GAUGE, "Log start offset (kafka-lag-exporter names).",
           KLE + ("topic", "partition")),
        _f("kafka_consumergroup_poll_time_ms", GAUGE,
           "Duration of the last end-offset poll in ms (kafka-lag-exporter names).", KLE),
    ),
    *_only_with(
        BURROW,
        _f("burrow_kafka_consumer_status", GAUGE, "Burrow group status code.", BURROW_G),
        _f("burrow_kafka_consumer_lag_total", GAUGE, "Burrow total group lag.", BURROW_G),
        _f("burrow_kafka_topic_partition_status", GAUGE, "Burrow partition status code.",
           BURROW_GTP, granularity=PARTITION),
        _f("burrow_kafka_consumer_current_offset", GAUGE, "Burrow committed offset.", BURROW_GTP,
           granularity=PARTITION),
        _f("burrow_kafka_consumer_partition_lag", GAUGE, "Burrow partition lag.", BURROW_GTP,
           granularity=PARTITION),
        _f("burrow_kafka_topic_partition_offset", GAUGE, "Burrow log end offset.", TP),
    ),
    # The monitor itself
    _f("groupscope_records", COUNTER, "Records read from __consumer_offsets, by type.",
       C + ("type_name",)),
    _f("groupscope_records_skipped", COUNTER, "Records not applied, by reason.", C + ("reason",)),
    _f("groupscope_share_state_records", COUNTER,
       "Records read from __share_group_state, by type.", C + ("type_name",)),
    _f("groupscope_share_state_records_skipped", COUNTER,
       "__share_group_state records not applied, by reason.", C + ("reason",)),
    _f("groupscope_offsets_topic_lag", GAUGE,
       "How far the job is behind on each __consumer_offsets partition.", C + ("partition",)),
    _f("groupscope_ready", GAUGE,
       "1 once __consumer_offsets has been read up to the end seen at start.", C),
    _f("groupscope_seeded_groups", GAUGE,
       "Groups served as the Admin API showed them at launch, not yet read from "
       "__consumer_offsets (source.admin_seed); 0 once the job is ready.", C),
    _f("groupscope_source_up", GAUGE,
       "1 while the cluster answers (its last end-offset poll succeeded), else 0; 0 too until "
       "a first poll has succeeded (unknown is not up).", C),
    _f("groupscope_source_access_denied", GAUGE,
       "1 while the cluster refuses this job: its credentials or TLS, or an ACL on the source "
       "topic (/healthz and the log name which, and what to fix).", C),
    _f("groupscope_source_refusal_info", GAUGE,
       "1 for each refusal the cluster gives this job now, by the client that met it (found_by) "
       "and what it says and what to fix (error, as /healthz and the log say it).",
       C + ("found_by", "error")),
    _f("groupscope_topics_without_metadata", GAUGE,
       "Topics groups commit to that metadata does not show (deleted, or no DESCRIBE ACL): "
       "their lag is unknown.", C),
    _f("groupscope_batch_duration_seconds", HISTOGRAM, "Spark micro-batch duration.", C),
    _f("groupscope_end_offsets_poll_duration_seconds", HISTOGRAM,
       "Duration of end-offset polls (failed ones included).", C),
    _f("groupscope_end_offsets_age_seconds", GAUGE,
       "Seconds since the end offsets in use were fetched.", C),
    _f("groupscope_end_offsets_poll_failures", COUNTER,
       "End-offset polls that failed or timed out.", C),
    _f("groupscope_negative_lag", COUNTER,
       "Times a committed offset was found above the known log end offset.", C),
    _f("groupscope_build_info", GAUGE, "groupscope version.", C + ("version",)),
)


def served_families(compat: Iterable[str] = (), granularity: str | None = None,
                    switches: Iterable[str] | None = None) -> list[MetricFamily]:
    """The families served with these compat targets at this granularity and these switches
    on (None: the families of both granularities, or of every switch, as dashboards and rules
    may use any), labels resolved, in exposition order."""
    compat = tuple(compat)
    return [family.with_compat(compat) for family in CATALOG
            if family.served_with(compat, granularity, switches)]


def exported_series(compat: Iterable[str] = (), granularity: str | None = None,
                    switches: Iterable[str] | None = None) -> dict[str, frozenset[str]]:
    """Every series name in the exposition -> the labels it carries."""
    return {name: labels for family in served_families(compat, granularity, switches)
            for name, labels in family.series().items()}
