"""PromQL shared by the recording rules and the dashboards.

The dashboards inline these expressions (so they work where only the dashboards are imported),
and `generate.py` writes the same expressions out as recording rules for alerts and long ranges.
"""
from __future__ import annotations

from dataclasses import dataclass

# Labels that name a group's assignor: `protocol` is the classic assignor (range, roundrobin,
# cooperative-sticky, ...) or the KIP-848 server assignor (uniform, range); `group_type` tells
# the two apart.
ASSIGNOR_LABELS = ("group_type", "protocol")


def selector(metric: str, matchers: str = "") -> str:
    return f"{metric}{{{matchers}}}" if matchers else metric


def assignor_info(matchers: str = "") -> str:
    """One series per (cluster, group) carrying its assignor labels.

    `kafka_consumergroup_info` also carries `state`, so a group briefly has two series while its
    state changes; topk keeps the join below one-to-one through that.
    """
    labels = ", ".join(("cluster", "group", *ASSIGNOR_LABELS))
    return (f"topk by (cluster, group) (1, max by ({labels}) "
            f"({selector('kafka_consumergroup_info', matchers)}))")


def by_assignor(per_group_expr: str, info: str, extra_by: tuple[str, ...] = ()) -> str:
    """Sum a per-group expression by assignor (joining the assignor labels onto each group)."""
    by = ", ".join(("cluster", *ASSIGNOR_LABELS, *extra_by))
    labels = ", ".join(ASSIGNOR_LABELS)
    return f"sum by ({by}) ({per_group_expr} * on (cluster, group) group_left ({labels}) {info})"


def per_rebalance(counter_or_sum: str, window: str, matchers: str = "", by: str = "cluster, group") -> str:
    """Average of a rebalance figure per completed rebalance over a window."""
    return (f"sum by ({by}) (increase({selector(counter_or_sum, matchers)}[{window}])) "
            f"/ sum by ({by}) (increase({selector('kafka_consumergroup_rebalances_total', matchers)}[{window}]))")


def mean_of_histogram(histogram: str, window: str, matchers: str = "", by: str = "cluster, group") -> str:
    return (f"sum by ({by}) (increase({selector(histogram + '_sum', matchers)}[{window}])) "
            f"/ sum by ({by}) (increase({selector(histogram + '_count', matchers)}[{window}]))")


def group_lag(matchers: str = "") -> str:
    """A group's total lag, summed from the per-topic sums.

    Not `kafka_consumergroup_group_lag`: with `metrics.compat: [kafka_lag_exporter]` that name
    takes kafka-lag-exporter's per-partition meaning, and these queries must not change with it.
    """
    return f"sum by (cluster, group) ({selector('kafka_consumergroup_topic_lag', matchers)})"


def trusted_max_lag_seconds(matchers: str = "") -> str:
    """Largest time lag over partitions whose figure is not 'unknown' (method 3; 4, a record
    read, is the exactest there is). At
    `metrics.granularity: topic` the per-topic maxima (which leave unknown estimates out) stand
    in for the partitions' series."""
    return (f"max by (cluster, group) ({selector('kafka_consumergroup_lag_seconds', matchers)} "
            f"and on (cluster, group, topic, partition) "
            f"{selector('kafka_consumergroup_lag_seconds_method', matchers)} != 3) "
            f"or max by (cluster, group) "
            f"({selector('kafka_consumergroup_topic_max_lag_seconds', matchers)})")


def per_topic(aggregation: str, partition_metric: str, topic_metric: str, matchers: str = "",
              rate_window: str = "") -> str:
    """A (cluster, group, topic) roll-up of a per-partition family, or at `metrics.granularity:
    topic` of the per-topic family that replaces it: one expression serves both. With
    `rate_window`, of the families' rates over that window."""
    def rolled(metric: str) -> str:
        series = selector(metric, matchers)
        if rate_window:
            series = f"rate({series}[{rate_window}])"
        return f"{aggregation} by (cluster, group, topic) ({series})"

    return f"{rolled(partition_metric)} or {rolled(topic_metric)}"


@dataclass(frozen=True)
class RecordingRule:
    record: str
    expr: str


ASSIGNOR_INFO = "cluster_group:kafka_consumergroup_assignor:info"
GROUP_LAG = "cluster_group:kafka_consumergroup_lag:sum"
REBALANCE_HISTOGRAMS = (
    "kafka_consumergroup_rebalance_duration_seconds",
    "kafka_consumergroup_rebalance_sync_duration_seconds",
    "kafka_consumergroup_rebalance_downtime_seconds",
)


def _group_rollups() -> list[RecordingRule]:
    return [
        RecordingRule(ASSIGNOR_INFO, assignor_info()),
        RecordingRule("cluster_group_type_state:kafka_consumergroup_info:count",
                      "count by (cluster, group_type, state) (kafka_consumergroup_info)"),
        RecordingRule("cluster_status:kafka_consumergroup_status:count",
                      'count_values by (cluster) ("status", kafka_consumergroup_status)'),
        RecordingRule(GROUP_LAG, group_lag()),
        RecordingRule("cluster_group:kafka_consumergroup_lag:deriv15m", f"deriv({GROUP_LAG}[15m])"),
        RecordingRule("cluster_group:kafka_consumergroup_lag_seconds:max_trusted",
                      trusted_max_lag_seconds()),
        RecordingRule("cluster_topic:kafka_partition_log_end_offset:rate5m",
                      "sum by (cluster, topic) (rate(kafka_partition_log_end_offset[5m]))"),
        RecordingRule("cluster_group_topic:kafka_consumergroup_committed_offset:rate5m",
                      per_topic("sum", "kafka_consumergroup_committed_offset",
                                "kafka_consumergroup_topic_committed_offset", rate_window="5m")),
        RecordingRule("cluster_group_topic:kafka_consumergroup_messages_lost:sum",
                      per_topic("sum", "kafka_consumergroup_messages_lost",
                                "kafka_consumergroup_topic_messages_lost")),
    ]


def _rebalance_rollups() -> list[RecordingRule]:
    rules = [
        RecordingRule("cluster_group:kafka_consumergroup_rebalances:increase15m",
                      "sum by (cluster, group) (increase(kafka_consumergroup_rebalances_total[15m]))"),
        RecordingRule("cluster_group:kafka_consumergroup_rebalance_duration_seconds:mean15m",
                      mean_of_histogram("kafka_consumergroup_rebalance_duration_seconds", "15m")),
        RecordingRule("cluster_group:kafka_consumergroup_rebalance_partitions_moved:per_rebalance15m",
                      per_rebalance("kafka_consumergroup_rebalance_partitions_moved_total", "15m")),
    ]
    for counter in ("kafka_consumergroup_rebalances_total",
                    "kafka_consumergroup_rebalance_partitions_moved_total"):
        rules.append(RecordingRule(
            f"cluster_assignor:{counter.removesuffix('_total')}:rate5m",
            by_assignor(f"rate({counter}[5m])", ASSIGNOR_INFO)))
    for histogram in REBALANCE_HISTOGRAMS:
        for suffix, extra_by in (("_bucket", ("le",)), ("_sum", ()), ("_count", ())):
            rules.append(RecordingRule(
                f"cluster_assignor{'_le' if extra_by else ''}:{histogram}{suffix}:rate5m",
                by_assignor(f"rate({histogram}{suffix}[5m])", ASSIGNOR_INFO, extra_by)))
    return rules


def _monitor_rollups() -> list[RecordingRule]:
    return [
        RecordingRule("cluster:groupscope_offsets_topic_lag:sum",
                      "sum by (cluster) (groupscope_offsets_topic_lag)"),
        RecordingRule("cluster_reason:groupscope_records_skipped:increase15m",
                      "sum by (cluster, reason) (increase(groupscope_records_skipped_total[15m]))"),
        RecordingRule("cluster_type_name:groupscope_records:rate5m",
                      "sum by (cluster, type_name) (rate(groupscope_records_total[5m]))"),
    ]


def recording_rule_groups() -> dict[str, list[RecordingRule]]:
    """Rule groups in evaluation order (the assignor join reads ASSIGNOR_INFO from the same group)."""
    return {
        "groupscope-group-rollups": _group_rollups() + _rebalance_rollups(),
        "groupscope-monitor-rollups": _monitor_rollups(),
    }
