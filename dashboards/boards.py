"""The three groupscope dashboards: overview, one group in detail, rebalances by assignor."""
from __future__ import annotations

from typing import Any

from coordinator.status import Status
from dashboards import grafana_model as g
from dashboards.rollups import (
    assignor_info, by_assignor, group_lag, mean_of_histogram, per_rebalance, selector,
    trusted_max_lag_seconds,
)

OVERVIEW_UID = "groupscope-overview"
GROUP_UID = "groupscope-group"
REBALANCES_UID = "groupscope-rebalances"

RATE = "$__rate_interval"
CLUSTER = 'cluster="$cluster"'
GROUPS = 'cluster="$cluster", group=~"$group"'       # multi-select group variable
ONE_GROUP = 'cluster="$cluster", group="$group"'     # single-select group variable


def _group_link(cluster: str, group: str) -> list[dict[str, Any]]:
    return [{"title": f"Open group {group}", "targetBlank": False,
             "url": f"/d/{GROUP_UID}?var-cluster={cluster}&var-group={group}&${{__url_time_range}}"}]


# Graph series carry labels; table rows carry columns.
GROUP_LINK = _group_link("${__field.labels.cluster}", "${__field.labels.group}")
TABLE_GROUP_LINK = _group_link("${__data.fields.cluster}", "${__data.fields.group}")
BOARD_LINKS = [{"type": "dashboards", "tags": ["groupscope"], "asDropdown": False, "includeVars": False,
                "keepTime": True, "title": "groupscope", "icon": "external link"}]
LAG_STEPS = g.thresholds((None, "green"), (1000, "yellow"), (10000, "red"))
LAG_SECONDS_STEPS = g.thresholds((None, "green"), (60, "yellow"), (300, "red"))


def _s(metric: str, matchers: str) -> str:
    return selector(metric, matchers)


def _cluster_variable() -> g.Variable:
    return g.query_variable("cluster", "Cluster", "label_values(groupscope_ready, cluster)")


def _group_variable(multi: bool) -> g.Variable:
    return g.query_variable("group", "Group", 'label_values(kafka_consumergroup_info{cluster="$cluster"}, group)',
                            multi=multi)


def _status_counts(matchers: str) -> list[dict[str, Any]]:
    return [g.target(f"sum({_s('kafka_consumergroup_status', matchers)} == bool {int(status)})", status.name,
                     instant=True)
            for status in Status if status is not Status.NOTFOUND]


def _status_colours() -> list[dict[str, Any]]:
    colours = g.STATUS_MAPPING[0]["options"]
    return [{"matcher": {"id": "byName", "options": entry["text"]},
             "properties": [{"id": "color", "value": {"mode": "fixed", "fixedColor": entry["color"]}}]}
            for entry in colours.values()]


def _monitor_headline() -> list[g.Panel]:
    """The two figures that say whether anything else on the page can be trusted."""
    return [
        g.stat("Monitor ready", [g.target(_s("groupscope_ready", CLUSTER), "{{cluster}}")],
               mappings=g.READY_MAPPING, threshold=g.thresholds((None, "orange"), (1, "green")),
               description="1 once every __consumer_offsets partition was read up to the end seen at start. "
                           "Until then state and lag are incomplete."),
        g.stat("Behind on __consumer_offsets",
               [g.target(f"sum({_s('groupscope_offsets_topic_lag', CLUSTER)})", "records")],
               threshold=g.thresholds((None, "green"), (1000, "yellow"), (100000, "red")),
               description="Records of __consumer_offsets not yet processed: every figure here is this far "
                           "behind the brokers."),
    ]


def _monitor_health(layout: g.Layout) -> None:
    layout.row("The monitor itself")
    layout.add(
        g.stat("End offsets age", [g.target(_s("groupscope_end_offsets_age_seconds", CLUSTER), "age")],
               unit="s", threshold=g.thresholds((None, "green"), (60, "yellow"), (300, "red")), width=6,
               description="Age of the freshest log end offsets; lag is computed against them."),
        g.stat("Skipped records (range)",
               [g.target(f"sum(increase({_s('groupscope_records_skipped_total', CLUSTER)}[$__range]))",
                         "skipped", instant=True)],
               threshold=g.thresholds((None, "green"), (1, "red")), width=6,
               description="Records of __consumer_offsets that could not be decoded (unknown type, "
                           "unsupported version, malformed)."),
        g.stat("Negative lag clamped (range)",
               [g.target(f"sum(increase({_s('groupscope_negative_lag_total', CLUSTER)}[$__range]))",
                         "clamped", instant=True)],
               threshold=g.thresholds((None, "green"), (1, "yellow")), width=6,
               description="Commits seen above the known log end offset (end offsets older than the commit)."),
        g.table("Version", [g.target(_s("groupscope_build_info", CLUSTER), instant=True, fmt="table")],
                width=6, height=4, hide=("Time", "Value")),
    )
    layout.add(
        g.timeseries("Behind on __consumer_offsets by partition",
                     [g.target(f"topk(10, {_s('groupscope_offsets_topic_lag', CLUSTER)})", "partition {{partition}}")],
                     width=8),
        g.timeseries("Records read / skipped per second",
                     [g.target(f"sum by (type_name) (rate({_s('groupscope_records_total', CLUSTER)}[{RATE}]))",
                               "{{type_name}}"),
                      g.target(f"sum by (reason) (rate({_s('groupscope_records_skipped_total', CLUSTER)}[{RATE}]))",
                               "skipped: {{reason}}"),
                      g.target(f"sum(rate({_s('groupscope_end_offsets_poll_failures_total', CLUSTER)}[{RATE}]))",
                               "end-offset poll failures")],
                     unit="ops", width=8),
        g.timeseries("Batch and end-offset poll duration (p95)",
                     [g.target(f"histogram_quantile(0.95, sum by (le) (rate("
                               f"{_s('groupscope_batch_duration_seconds_bucket', CLUSTER)}[{RATE}])))", "micro-batch"),
                      g.target(f"histogram_quantile(0.95, sum by (le) (rate("
                               f"{_s('groupscope_end_offsets_poll_duration_seconds_bucket', CLUSTER)}[{RATE}])))",
                               "end-offset poll")],
                     unit="s", width=8),
    )


def overview() -> dict[str, Any]:
    layout = g.Layout()
    layout.add(
        g.stat("Groups", [g.target(f"count({_s('kafka_consumergroup_info', GROUPS)})", "groups")],
               threshold=g.thresholds((None, "blue"))),
        g.stat("Groups not OK", [g.target(
            f"count({_s('kafka_consumergroup_status', GROUPS)} != 1) or vector(0)", "groups")],
            threshold=g.thresholds((None, "green"), (1, "red"))),
        g.stat("Groups over 5 min behind", [g.target(
            f"count({trusted_max_lag_seconds(GROUPS)} > 300) or vector(0)", "groups")],
            threshold=g.thresholds((None, "green"), (1, "red")),
            description="Groups whose oldest unconsumed message is older than 5 minutes (the default SLO "
                        "of KafkaConsumerGroupLagSecondsOverSLO)."),
        g.stat("Groups with lost messages",
               [g.target(f"count(sum by (group) ({_s('kafka_consumergroup_messages_lost', GROUPS)}) > 0) or vector(0)",
                         "groups")],
               threshold=g.thresholds((None, "green"), (1, "red"))),
        *_monitor_headline(),
    )
    layout.row("Groups")
    layout.add(
        g.bargauge("Groups by state",
                   [g.target(f"count by (group_type, state) ({_s('kafka_consumergroup_info', GROUPS)})",
                             "{{group_type}} {{state}}", instant=True)]),
        g.bargauge("Groups by status", _status_counts(GROUPS),
                   threshold=g.thresholds((None, "red")), overrides=_status_colours(),
                   description="Burrow-style evaluation over a sliding window of commits. STOP/STALL/REWIND "
                               "show as ERR at group level."),
    )
    layout.add(
        g.table("Groups needing attention",
                [g.target(f"{_s('kafka_consumergroup_status', GROUPS)} != 1", instant=True, fmt="table"),
                 g.target(group_lag(GROUPS) +
                          f" and on (cluster, group) {_s('kafka_consumergroup_status', GROUPS)} != 1",
                          instant=True, fmt="table"),
                 g.target(_s("kafka_consumergroup_group_max_lag_seconds", GROUPS) +
                          f" and on (cluster, group) {_s('kafka_consumergroup_status', GROUPS)} != 1",
                          instant=True, fmt="table")],
                rename={"Value #A": "status", "Value #B": "lag", "Value #C": "time lag"},
                overrides=[{"matcher": {"id": "byName", "options": "status"}, "properties": [
                               {"id": "mappings", "value": g.STATUS_MAPPING},
                               {"id": "custom.cellOptions", "value": {"type": "color-background"}}]},
                           {"matcher": {"id": "byName", "options": "time lag"},
                            "properties": [{"id": "unit", "value": "s"}]}],
                links=TABLE_GROUP_LINK, width=24, height=7, sort_by="lag",
                description="Every group whose status is not OK. Click a row to open the group."),
    )
    layout.row("Lag")
    layout.add(
        g.timeseries("Top 10 groups by lag (messages)",
                     [g.target(f"topk(10, {group_lag(GROUPS)})", "{{group}}")],
                     links=GROUP_LINK),
        g.timeseries("Top 10 groups by time lag",
                     [g.target(f"topk(10, {trusted_max_lag_seconds(GROUPS)})", "{{group}}")],
                     unit="s", links=GROUP_LINK,
                     description="Largest partition time lag per group (how old the oldest unconsumed message is), "
                                 "ignoring partitions whose estimate is 'unknown'."),
    )
    layout.add(
        g.table("Lag by group",
                [g.target(group_lag(GROUPS), instant=True, fmt="table"),
                 g.target(_s("kafka_consumergroup_group_max_lag_seconds", GROUPS), instant=True, fmt="table"),
                 g.target(f"deriv({group_lag(GROUPS)}[15m:])",
                          instant=True, fmt="table"),
                 g.target(_s("kafka_consumergroup_members", GROUPS), instant=True, fmt="table")],
                rename={"Value #A": "lag", "Value #B": "time lag", "Value #C": "lag trend /s",
                        "Value #D": "members"},
                overrides=[{"matcher": {"id": "byName", "options": "time lag"}, "properties": [
                               {"id": "unit", "value": "s"}, {"id": "thresholds", "value": LAG_SECONDS_STEPS},
                               {"id": "custom.cellOptions", "value": {"type": "color-text"}}]},
                           {"matcher": {"id": "byName", "options": "lag"}, "properties": [
                               {"id": "thresholds", "value": LAG_STEPS},
                               {"id": "custom.cellOptions", "value": {"type": "color-text"}}]}],
                links=TABLE_GROUP_LINK, width=24, height=9, sort_by="time lag"),
    )
    layout.row("Rebalances and assignments")
    layout.add(
        g.timeseries("Rebalances per hour",
                     [g.target(f"sum by (group) (rate({_s('kafka_consumergroup_rebalances_total', GROUPS)}[{RATE}])) * 3600",
                               "{{group}}")],
                     links=GROUP_LINK, width=12),
        g.table("Skewed or idle assignments",
                [g.target(f"{_s('kafka_consumergroup_assignment_skew', GROUPS)} > 1", instant=True, fmt="table"),
                 g.target(f"{_s('kafka_consumergroup_idle_members', GROUPS)} > 0", instant=True, fmt="table"),
                 g.target(f"sum by (cluster, group) ({_s('kafka_consumergroup_unassigned_partitions', GROUPS)}) > 0",
                          instant=True, fmt="table")],
                rename={"Value #A": "skew (max-min partitions)", "Value #B": "idle members",
                        "Value #C": "unassigned partitions"},
                links=TABLE_GROUP_LINK, width=12,
                description="Groups whose members' partition counts differ by more than one, that have members "
                            "with no partitions, or partitions nobody owns."),
    )
    _share_groups(layout)
    _monitor_health(layout)
    return g.dashboard(OVERVIEW_UID, "groupscope / Overview",
                       "Kafka consumer groups at a glance: state, status, lag, rebalances, and the monitor's own health.",
                       layout, [_cluster_variable(), _group_variable(multi=True)], links=BOARD_LINKS)


def _share_groups(layout: g.Layout) -> None:
    """Share groups (KIP-932): their lag as Kafka computes it, and the records they gave up on."""
    layout.row("Share groups")
    layout.add(
        g.timeseries("Share lag by group", [g.target(_s("kafka_sharegroup_lag", GROUPS), "{{group}}")],
                     links=GROUP_LINK, width=8,
                     description="Records not yet delivered to completion, as kafka-share-groups.sh counts "
                                 "them: the log end offset minus the share-partition start offset minus "
                                 "the records past it already acknowledged or archived."),
        g.timeseries("Records archived per minute",
                     [g.target(f"sum by (group) (rate({_s('kafka_sharegroup_archived_records_total', GROUPS)}"
                               f"[{RATE}])) * 60", "{{group}}")],
                     bars=True, links=GROUP_LINK, width=8,
                     description="Records a share group will not deliver again: rejected by a consumer, or "
                                 "delivered as often as group.share.delivery.count.limit allows (poison "
                                 "messages)."),
        g.table("Share-partitions",
                [g.target(_s("kafka_sharegroup_partition_lag", GROUPS), instant=True, fmt="table"),
                 g.target(_s("kafka_sharegroup_partition_start_offset", GROUPS), instant=True, fmt="table"),
                 g.target(_s("kafka_sharegroup_partition_records", f'{GROUPS}, state="available"'),
                          instant=True, fmt="table"),
                 g.target(_s("kafka_sharegroup_partition_records", f'{GROUPS}, state="archived"'),
                          instant=True, fmt="table")],
                hide=("Time", "cluster", "state"),
                rename={"Value #A": "lag", "Value #B": "start offset", "Value #C": "to deliver again",
                        "Value #D": "archived"},
                links=TABLE_GROUP_LINK, width=8, sort_by="lag"),
        g.timeseries("Share groups' retention risk",
                     [g.target(f"min by (group) ({_s('kafka_sharegroup_retention_risk_seconds', GROUPS)})",
                               "{{group}}")],
                     unit="s", links=GROUP_LINK, width=24,
                     threshold=g.thresholds((None, "red"), (3600, "yellow"), (86400, "green")),
                     description="Seconds until the record at a share-partition's start offset is deleted by "
                                 "the topic's retention.ms if the start offset stays where it is (its pace is "
                                 "not kept): the lowest of the group's partitions."),
    )


def _group_header(layout: g.Layout) -> None:
    layout.add(
        g.stat("State", [g.target(_s("kafka_consumergroup_info", ONE_GROUP),
                                  "{{state}} ({{group_type}}, {{protocol}})")],
               show_name=True,
               description="From the last group record: state (group type, assignor)."),
        g.stat("Status", [g.target(_s("kafka_consumergroup_status", ONE_GROUP), "status")],
               mappings=g.STATUS_MAPPING,
               threshold=g.thresholds((None, "text"), (1, "green"), (2, "yellow"), (3, "red"))),
        g.stat("Members", [g.target(_s("kafka_consumergroup_members", ONE_GROUP), "members")]),
        g.stat("Lag", [g.target(group_lag(ONE_GROUP), "lag")], threshold=LAG_STEPS),
        g.stat("Time lag (max)", [g.target(_s("kafka_consumergroup_group_max_lag_seconds", ONE_GROUP), "time lag")],
               unit="s", threshold=LAG_SECONDS_STEPS),
        g.stat("Last rebalance", [g.target(
            f"time() - {_s('kafka_consumergroup_last_rebalance_timestamp_seconds', ONE_GROUP)}", "ago")],
               unit="s", threshold=g.thresholds((None, "yellow"), (600, "green"))),
    )


def group_detail() -> dict[str, Any]:
    layout = g.Layout()
    _group_header(layout)
    layout.row("Lag")
    layout.add(
        g.timeseries("Lag per topic", [g.target(_s("kafka_consumergroup_topic_lag", ONE_GROUP), "{{topic}}")],
                     stack=True),
        g.timeseries("Time lag per topic (oldest partition)",
                     [g.target(f"max by (topic) ({_s('kafka_consumergroup_lag_seconds', ONE_GROUP)})", "{{topic}}")],
                     unit="s", threshold=LAG_SECONDS_STEPS),
        g.timeseries("Lag per partition",
                     [g.target(_s("kafka_consumergroup_lag", ONE_GROUP), "{{topic}}[{{partition}}]")]),
        g.timeseries("Time lag per partition",
                     [g.target(_s("kafka_consumergroup_lag_seconds", ONE_GROUP), "{{topic}}[{{partition}}]")],
                     unit="s", description="Time since the committed message was produced (estimated from end "
                                          "offset samples). See 'time lag method' for how far to trust it."),
        g.state_timeline("Time lag method per partition",
                         [g.target(_s("kafka_consumergroup_lag_seconds_method", ONE_GROUP), "{{topic}}[{{partition}}]")],
                         mappings=g.LAG_METHOD_MAPPING),
    )
    layout.add(
        g.timeseries("Produced vs consumed (messages/s)",
                     [g.target(f"sum by (topic) (deriv({_s('kafka_partition_log_end_offset', CLUSTER)}[{RATE}]) "
                               f"and on (cluster, topic, partition) {_s('kafka_consumergroup_lag', ONE_GROUP)})",
                               "produced {{topic}}"),
                      g.target(f"sum by (topic) (deriv({_s('kafka_consumergroup_committed_offset', ONE_GROUP)}[{RATE}]))",
                               "consumed {{topic}}")],
                     unit="ops", description="Consumed is the speed of the committed offset; when it stays below "
                                            "produced, lag grows."),
        g.timeseries("Commits seen per partition",
                     [g.target(f"sum by (topic) (changes({_s('kafka_consumergroup_commit_timestamp_seconds', ONE_GROUP)}"
                               f"[{RATE}]))", "{{topic}}")],
                     bars=True, description="Commit timestamps that changed within each interval (several commits "
                                           "between two scrapes count once)."),
        g.timeseries("Since last commit",
                     [g.target(f"max by (topic) (time() - {_s('kafka_consumergroup_commit_timestamp_seconds', ONE_GROUP)})",
                               "{{topic}}")],
                     unit="s"),
        g.timeseries("Messages lost to retention",
                     [g.target(f"sum by (topic) ({_s('kafka_consumergroup_messages_lost', ONE_GROUP)})", "{{topic}}"),
                      g.target(f"min by (topic) ({_s('kafka_consumergroup_committed_offset', ONE_GROUP)} - on "
                               f"(cluster, topic, partition) group_left {_s('kafka_partition_log_start_offset', CLUSTER)})",
                               "retention margin {{topic}} (messages)")],
                     description="Lost: messages deleted by retention before the group read them. Margin: how far "
                                 "the committed offset is above the log start (negative means loss)."),
    )
    layout.row("Retention risk and catch-up")
    layout.add(
        g.timeseries("Retention risk per partition",
                     [g.target(_s("kafka_consumergroup_retention_risk_seconds", ONE_GROUP), "{{topic}}[{{partition}}]")],
                     unit="s", threshold=g.thresholds((None, "red"), (3600, "yellow"), (86400, "green")),
                     description="Seconds until records the group has not read yet are deleted by the topic's "
                                 "retention.ms, at its pace (no line: its pace keeps it clear, or the topic's "
                                 "settings cannot be described). Deletion goes a segment at a time: the loss may "
                                 "come up to segment.ms and one retention check later, never earlier."),
        g.timeseries("Catch-up forecast",
                     [g.target(_s("kafka_consumergroup_group_catch_up_seconds", ONE_GROUP), "group"),
                      g.target(f"max by (topic) ({_s('kafka_consumergroup_catch_up_seconds', ONE_GROUP)})",
                               "{{topic}}")],
                     unit="s", description="Lag / (consume rate - produce rate) over lag.rate_window; +Inf (off "
                                           "the chart) means never: consumers no faster than producers."),
        g.timeseries("Consumed vs produced (records/s, the forecast's rates)",
                     [g.target(f"sum by (topic) ({_s('kafka_consumergroup_consume_rate', ONE_GROUP)})",
                               "consumed {{topic}}"),
                      g.target(f"sum by (topic) ({_s('kafka_partition_produce_rate', CLUSTER)} and on "
                               f"(cluster, topic, partition) {_s('kafka_consumergroup_consume_rate', ONE_GROUP)})",
                               "produced {{topic}}")],
                     unit="ops"),
        g.state_timeline("Forecast method per partition",
                         [g.target(_s("kafka_consumergroup_catch_up_method", ONE_GROUP), "{{topic}}[{{partition}}]")],
                         mappings=g.RATE_METHOD_MAPPING,
                         description="Whole window: both rates over lag.rate_window; shorter span: over the "
                                     "commits kept (status.window_size); unknown: no forecast."),
    )
    layout.row("Status")
    layout.add(
        g.state_timeline("Status history",
                         [g.target(_s("kafka_consumergroup_status", ONE_GROUP), "group"),
                          g.target(_s("kafka_consumergroup_partition_status", ONE_GROUP), "{{topic}}[{{partition}}]")],
                         mappings=g.STATUS_MAPPING, width=24, height=9),
    )
    layout.row("Members and assignment")
    layout.add(
        g.table("Members", [g.target(_s("kafka_consumergroup_member_assigned_partitions", ONE_GROUP),
                                     instant=True, fmt="table")],
                hide=("Time", "cluster", "group"), rename={"Value": "partitions"}, sort_by="partitions"),
        g.timeseries("Partitions per member", [g.target(
            _s("kafka_consumergroup_member_assigned_partitions", ONE_GROUP), "{{client_id}} {{member_id}}")],
            stack=True),
        g.timeseries("Lag per member", [
            g.target(_s("kafka_consumergroup_member_lag", ONE_GROUP), "{{client_id}} {{member_id}}"),
            g.target(_s("kafka_consumergroup_member_max_lag", ONE_GROUP), "max {{client_id}} {{member_id}}")],
            description="Which consumer is behind: the lag of the partitions each member owns, summed, and "
                        "the highest of them. Served with metrics.member_lag: true (off by default: a series "
                        "per member)."),
        g.timeseries("Generation / epoch", [g.target(_s("kafka_consumergroup_generation", ONE_GROUP), "generation")],
                     description="Classic generation id, or the group epoch for KIP-848 groups. Each step is a "
                                 "rebalance."),
        g.timeseries("Members, skew, idle, unassigned",
                     [g.target(_s("kafka_consumergroup_members", ONE_GROUP), "members"),
                      g.target(_s("kafka_consumergroup_assignment_skew", ONE_GROUP), "skew"),
                      g.target(_s("kafka_consumergroup_idle_members", ONE_GROUP), "idle members"),
                      g.target(f"sum({_s('kafka_consumergroup_unassigned_partitions', ONE_GROUP)})", "unassigned partitions")]),
    )
    layout.row("Rebalances")
    layout.add(
        g.timeseries("Rebalance duration (mean per interval)",
                     [g.target(mean_of_histogram("kafka_consumergroup_rebalance_duration_seconds", RATE, ONE_GROUP),
                               "duration"),
                      g.target(mean_of_histogram("kafka_consumergroup_rebalance_sync_duration_seconds", RATE, ONE_GROUP),
                               "sync")],
                     unit="s", bars=True, width=8),
        g.timeseries("Partitions moved per interval",
                     [g.target(f"sum(increase({_s('kafka_consumergroup_rebalance_partitions_moved_total', ONE_GROUP)}"
                               f"[{RATE}]))", "moved")],
                     bars=True, width=8),
        g.timeseries("Downtime per moved partition (mean)",
                     [g.target(mean_of_histogram("kafka_consumergroup_rebalance_downtime_seconds", RATE, ONE_GROUP),
                               "downtime")],
                     unit="s", bars=True, width=8),
    )
    annotations = [
        g.annotation("Rebalances",
                     f"sum by (group) (increase({_s('kafka_consumergroup_rebalances_total', ONE_GROUP)}[1m])) > 0",
                     color="orange", title="Rebalance",
                     text="Group {{group}} completed a rebalance: see 'Rebalances' panels for duration and "
                          "partitions moved."),
        g.annotation("Status ERR or worse", f"{_s('kafka_consumergroup_status', ONE_GROUP)} >= 3",
                     color="red", title="Status not OK", text="Group {{group}} status ERR/STOP/STALL/REWIND"),
    ]
    return g.dashboard(GROUP_UID, "groupscope / Group detail",
                       "One consumer group: lag and time lag by partition, members, generations, rebalances, "
                       "commits and status history.",
                       layout, [_cluster_variable(), _group_variable(multi=False)],
                       annotations=annotations, links=BOARD_LINKS)


def _assignor_figures(info: str) -> list[g.Panel]:
    def rated(series: str, fn: str = "rate") -> str:
        return f"{fn}({_s(series, GROUPS)}[{RATE}])"

    def quantile(histogram: str, q: float) -> str:
        return f"histogram_quantile({q}, {by_assignor(rated(histogram + '_bucket'), info, ('le',))})"

    def ratio(numerator: str, denominator: str) -> str:
        return (f"{by_assignor(rated(numerator, 'increase'), info)} / "
                f"{by_assignor(rated(denominator, 'increase'), info)}")

    legend = "{{group_type}} / {{protocol}}"
    duration = "kafka_consumergroup_rebalance_duration_seconds"
    downtime = "kafka_consumergroup_rebalance_downtime_seconds"
    rebalances_total = "kafka_consumergroup_rebalances_total"
    return [
        g.timeseries("Rebalances per hour by assignor",
                     [g.target(f"{by_assignor(rated(rebalances_total), info)} * 3600", legend)], width=8),
        g.timeseries("Rebalance duration by assignor (p50, p95)",
                     [g.target(quantile(duration, 0.5), f"p50 {legend}"),
                      g.target(quantile(duration, 0.95), f"p95 {legend}")], unit="s", width=8),
        g.timeseries("Mean rebalance duration by assignor",
                     [g.target(ratio(f"{duration}_sum", f"{duration}_count"), legend)], unit="s", width=8),
        g.timeseries("Partitions moved per rebalance by assignor",
                     [g.target(ratio("kafka_consumergroup_rebalance_partitions_moved_total", rebalances_total),
                               legend)], width=8,
                     description="Eager assignors revoke everything; sticky and cooperative ones should move only "
                                 "what changed."),
        g.timeseries("Downtime per moved partition by assignor (p95)",
                     [g.target(quantile(downtime, 0.95), legend)], unit="s", width=8),
        g.timeseries("Partition-seconds of downtime per rebalance by assignor",
                     [g.target(ratio(f"{downtime}_sum", rebalances_total), legend)], unit="s", width=8,
                     description="Total stop-the-world cost of one rebalance: summed downtime of every moved "
                                 "partition. This is what CooperativeSticky buys over Range."),
    ]


def rebalances() -> dict[str, Any]:
    info = assignor_info('cluster="$cluster", protocol=~"$assignor"')
    layout = g.Layout()
    layout.add(g.text("How to read this", (
        "Each rebalance is one generation (classic) or group-epoch (KIP-848) step, measured from "
        "`__consumer_offsets`. Classic start times are estimated from the members' last commits; KIP-848 times "
        "are exact. *Downtime* is per moved partition: first commit after the rebalance minus last commit before. "
        "Compare assignors on the same workload: eager `range`/`roundrobin` move and stop every partition, "
        "`cooperative-sticky` and the KIP-848 `uniform` assignor move only what they must.")))
    layout.row("By assignor")
    layout.add(*_assignor_figures(info))
    layout.row("Distributions (selected groups)")
    layout.add(
        g.heatmap("Rebalance duration", f"sum by (le) (increase({_s('kafka_consumergroup_rebalance_duration_seconds_bucket', GROUPS)}[{RATE}]))"),
        g.heatmap("Downtime per moved partition", f"sum by (le) (increase({_s('kafka_consumergroup_rebalance_downtime_seconds_bucket', GROUPS)}[{RATE}]))"),
        g.heatmap("Sync phase", f"sum by (le) (increase({_s('kafka_consumergroup_rebalance_sync_duration_seconds_bucket', GROUPS)}[{RATE}]))"),
        g.timeseries("Partitions moved per interval", [g.target(
            f"sum by (group) (increase({_s('kafka_consumergroup_rebalance_partitions_moved_total', GROUPS)}[{RATE}]))",
            "{{group}}")], bars=True, stack=True, links=GROUP_LINK),
    )
    layout.row("Per group over the time range")
    layout.add(g.table(
        "Rebalances per group",
        [g.target(f"sum by (cluster, group) (increase({_s('kafka_consumergroup_rebalances_total', GROUPS)}[$__range]))",
                  instant=True, fmt="table"),
         g.target(mean_of_histogram("kafka_consumergroup_rebalance_duration_seconds", "$__range", GROUPS),
                  instant=True, fmt="table"),
         g.target(per_rebalance("kafka_consumergroup_rebalance_partitions_moved_total", "$__range", GROUPS),
                  instant=True, fmt="table"),
         g.target(mean_of_histogram("kafka_consumergroup_rebalance_downtime_seconds", "$__range", GROUPS),
                  instant=True, fmt="table"),
         g.target(assignor_info(GROUPS), instant=True, fmt="table")],
        rename={"Value #A": "rebalances", "Value #B": "mean duration", "Value #C": "moved / rebalance",
                "Value #D": "mean downtime / partition"},
        hide=("Time", "Value #E"), sort_by="rebalances", links=TABLE_GROUP_LINK, width=24, height=9,
        overrides=[{"matcher": {"id": "byRegexp", "options": "mean.*"},
                    "properties": [{"id": "unit", "value": "s"}]}]))
    assignor = g.query_variable("assignor", "Assignor",
                                'label_values(kafka_consumergroup_info{cluster="$cluster"}, protocol)', multi=True)
    return g.dashboard(REBALANCES_UID, "groupscope / Rebalances",
                       "Rebalance duration, downtime and partitions moved, compared across assignors.",
                       layout, [_cluster_variable(), _group_variable(multi=True), assignor],
                       links=BOARD_LINKS, time_from="now-24h")


# Queries that list only problems, so they are empty on a healthy cluster (the live check reports
# them apart): (dashboard file, panel title or annotation name).
PROBLEMS_ONLY = frozenset({
    ("groupscope-overview.json", "Groups needing attention"),
    ("groupscope-overview.json", "Skewed or idle assignments"),
    ("groupscope-group.json", "Status ERR or worse"),
})

# Panels with data only where share groups exist (Kafka 4.x; the demo's simulator has none).
SHARE_GROUP_PANELS = frozenset({
    ("groupscope-overview.json", "Share lag by group"),
    ("groupscope-overview.json", "Records archived per minute"),
    ("groupscope-overview.json", "Share-partitions"),
    ("groupscope-overview.json", "Share groups' retention risk"),
})

# Panels with data only where the topics' retention settings are read (DescribeConfigs: the
# demo's simulator has no topic settings, so it serves no retention risk).
TOPIC_SETTINGS_PANELS = frozenset({
    ("groupscope-group.json", "Retention risk per partition"),
})

BOARDS = {"groupscope-overview.json": overview, "groupscope-group.json": group_detail,
          "groupscope-rebalances.json": rebalances}
