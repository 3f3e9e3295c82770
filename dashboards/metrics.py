"""The one list of series groupscope exports (names, kinds and labels).

Dashboards, recording rules, alert rules, the live-check fixture and the exporter tests all check
themselves against this list, so a renamed metric breaks a test instead of a 3 a.m. dashboard.
Every series also carries `cluster`, which is therefore not repeated in `labels`.
"""
from __future__ import annotations

from dataclasses import dataclass

GAUGE = "gauge"
COUNTER = "counter"
HISTOGRAM = "histogram"

# Label every exported series carries (from the job's config).
CLUSTER_LABEL = "cluster"

# Series Prometheus itself attaches or synthesises; queries may use them without an exporter.
PROMETHEUS_LABELS = frozenset({"job", "instance", "__name__"})
PROMETHEUS_SERIES = frozenset({"up", "scrape_duration_seconds", "scrape_samples_scraped"})

# Label values used by enumerations (status codes as exported values, lag_seconds methods).
STATUS_CODES = {0: "NOTFOUND", 1: "OK", 2: "WARN", 3: "ERR", 4: "STOP", 5: "STALL", 6: "REWIND"}
LAG_SECONDS_METHODS = {0: "caught up", 1: "interpolated", 2: "extrapolated", 3: "unknown"}


@dataclass(frozen=True)
class MetricSpec:
    name: str
    kind: str
    labels: tuple[str, ...]
    help: str

    def series_names(self) -> tuple[str, ...]:
        """Names that appear in the exposition (a histogram exposes three)."""
        if self.kind == HISTOGRAM:
            return (f"{self.name}_bucket", f"{self.name}_sum", f"{self.name}_count")
        return (self.name,)

    def series_labels(self, series_name: str) -> frozenset[str]:
        extra = {"le"} if series_name.endswith("_bucket") and self.kind == HISTOGRAM else set()
        return frozenset({CLUSTER_LABEL, *self.labels, *extra})


_G = ("group",)
_GTP = ("group", "topic", "partition")
_TP = ("topic", "partition")

METRICS: tuple[MetricSpec, ...] = (
    # Group state
    MetricSpec("kafka_consumergroup_info", GAUGE,
               ("group", "group_type", "protocol_type", "protocol", "state", "coordinator_partition"),
               "1 for every known group; state, protocol (assignor) and type as labels"),
    MetricSpec("kafka_consumergroup_generation", GAUGE, _G, "classic generation or group epoch"),
    MetricSpec("kafka_consumergroup_members", GAUGE, _G, "members in the last generation / epoch"),
    MetricSpec("kafka_consumergroup_member_assigned_partitions", GAUGE,
               ("group", "member_id", "client_id", "client_host", "instance_id"),
               "partitions assigned to the member"),
    MetricSpec("kafka_consumergroup_assignment_skew", GAUGE, _G,
               "max minus min assigned partitions over members with the same subscription"),
    MetricSpec("kafka_consumergroup_idle_members", GAUGE, _G, "members with zero partitions"),
    MetricSpec("kafka_consumergroup_unassigned_partitions", GAUGE, ("group", "topic"),
               "subscribed partitions no member owns"),
    # Lag
    MetricSpec("kafka_consumergroup_committed_offset", GAUGE, _GTP, "last visible committed offset"),
    MetricSpec("kafka_consumergroup_commit_timestamp_seconds", GAUGE, _GTP,
               "broker time of that commit"),
    MetricSpec("kafka_partition_log_end_offset", GAUGE, _TP, "log end offset (end-offset poller)"),
    MetricSpec("kafka_partition_log_start_offset", GAUGE, _TP, "log start offset (end-offset poller)"),
    MetricSpec("kafka_consumergroup_lag", GAUGE, _GTP, "log end offset minus committed offset"),
    MetricSpec("kafka_consumergroup_lag_seconds", GAUGE, _GTP, "time lag of the committed offset"),
    MetricSpec("kafka_consumergroup_lag_seconds_method", GAUGE, _GTP,
               "0 caught up, 1 interpolated, 2 extrapolated, 3 unknown"),
    MetricSpec("kafka_consumergroup_topic_lag", GAUGE, ("group", "topic"), "lag summed per topic"),
    MetricSpec("kafka_consumergroup_group_lag", GAUGE, _G, "lag summed per group"),
    MetricSpec("kafka_consumergroup_group_max_lag", GAUGE, _G, "largest partition lag"),
    MetricSpec("kafka_consumergroup_group_max_lag_seconds", GAUGE, _G, "largest partition time lag"),
    MetricSpec("kafka_consumergroup_status", GAUGE, _G, "group status code (see STATUS_CODES)"),
    MetricSpec("kafka_consumergroup_partition_status", GAUGE, _GTP, "partition status code"),
    MetricSpec("kafka_consumergroup_messages_lost", GAUGE, _GTP,
               "messages deleted by retention before the group committed past them"),
    # Rebalances
    MetricSpec("kafka_consumergroup_rebalances_total", COUNTER, _G, "completed rebalances"),
    MetricSpec("kafka_consumergroup_rebalance_duration_seconds", HISTOGRAM, _G,
               "rebalance duration (end - start)"),
    MetricSpec("kafka_consumergroup_rebalance_sync_duration_seconds", HISTOGRAM, _G,
               "classic: SyncGroup store time minus entry into CompletingRebalance"),
    MetricSpec("kafka_consumergroup_rebalance_partitions_moved_total", COUNTER, _G,
               "partitions whose owner changed in a rebalance"),
    MetricSpec("kafka_consumergroup_last_rebalance_timestamp_seconds", GAUGE, _G,
               "end of the last rebalance"),
    MetricSpec("kafka_consumergroup_rebalance_downtime_seconds", HISTOGRAM, _G,
               "per moved partition: first commit after the rebalance minus last commit before"),
    # The monitor itself
    MetricSpec("groupscope_records_total", COUNTER, ("type_name",), "records read from __consumer_offsets"),
    MetricSpec("groupscope_records_skipped_total", COUNTER, ("reason",), "records not decoded"),
    MetricSpec("groupscope_offsets_topic_lag", GAUGE, ("partition",),
               "how far the job is behind on __consumer_offsets"),
    MetricSpec("groupscope_ready", GAUGE, (), "1 once the start-time end of __consumer_offsets is read"),
    MetricSpec("groupscope_batch_duration_seconds", HISTOGRAM, (), "micro-batch duration"),
    MetricSpec("groupscope_end_offsets_poll_duration_seconds", HISTOGRAM, (),
               "end-offset poll duration"),
    MetricSpec("groupscope_end_offsets_age_seconds", GAUGE, (),
               "age of the freshest end offsets (+Inf before the first successful poll)"),
    MetricSpec("groupscope_end_offsets_poll_failures_total", COUNTER, (),
               "end-offset polls that failed or timed out"),
    MetricSpec("groupscope_negative_lag_total", COUNTER, (), "negative lag differences clamped to 0"),
    MetricSpec("groupscope_build_info", GAUGE, ("version",), "1, with the version as a label"),
)

BY_NAME: dict[str, MetricSpec] = {m.name: m for m in METRICS}


def exported_series() -> dict[str, frozenset[str]]:
    """Every series name in the exposition -> the labels it carries (cluster included)."""
    return {series: m.series_labels(series) for m in METRICS for series in m.series_names()}


def all_label_names() -> frozenset[str]:
    return frozenset().union(*exported_series().values(), PROMETHEUS_LABELS)
