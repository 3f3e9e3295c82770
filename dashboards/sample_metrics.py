"""A realistic /metrics page for every series in streaming.exporter.catalog (compat off, the
default per-partition granularity), for
checking dashboards and rules against a real Prometheus before (or without) a running groupscope
job.

The page describes one small world: four groups on two topics, one per assignor, one of them in
trouble (ERR, a stopped and a stalled partition, skew, an idle member, an unowned partition,
messages lost). Counters and histograms grow with time so rates and quantiles have something to
show. Values are functions of the seconds elapsed since the page was first served.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterator

from streaming.exporter.catalog import HISTOGRAM, PARTITION, TP, MetricFamily, served_families

CLUSTER = "demo"
TOPICS = {"orders": 6, "payments": 5}
BUCKETS = (0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, math.inf)


@dataclass(frozen=True)
class SampleGroup:
    name: str
    group_type: str
    assignor: str
    topic: str
    assigned: tuple[int, ...]          # partitions per member
    status: int
    rebalances_per_second: float
    rebalance_seconds: float
    moved_per_rebalance: int
    lag_base: float
    lag_growth: float                  # messages per second

    def members(self) -> Iterator[tuple[str, str, str, str, int]]:
        for i, count in enumerate(self.assigned):
            instance = f"{self.name}-static-{i}" if self.group_type == "classic" and i == 0 else ""
            yield f"{self.name}-member-{i}", f"{self.name}-client-{i}", f"/10.0.0.{10 + i}", instance, count


GROUPS = (
    # The group in trouble (chosen by the live check's discovery: most rebalances).
    SampleGroup("payments-range", "classic", "range", "payments", (3, 1, 0), 3, 0.5, 8.0, 4, 500, 20),
    SampleGroup("orders-roundrobin", "classic", "roundrobin", "orders", (3, 3), 1, 0.1, 6.0, 6, 20, 0),
    SampleGroup("orders-coop", "classic", "cooperative-sticky", "orders", (2, 2, 2), 2, 0.2, 2.0, 1, 100, 2),
    SampleGroup("orders-848", "consumer", "uniform", "orders", (3, 3), 1, 0.1, 0.8, 1, 10, 0),
)
TROUBLED = GROUPS[0]


def _partition_lag(group: SampleGroup, partition: int, t: float) -> float:
    return group.lag_base + group.lag_growth * t + 10 * partition


def _log_end(partition: int, t: float) -> float:
    return 100_000 + 1000 * partition + 50 * t


def _partition_status(group: SampleGroup, partition: int) -> int:
    if group is TROUBLED:
        return {0: 4, 1: 5}.get(partition, 1)
    return 1 if group.status == 1 else (2 if partition == 0 else 1)


def _method(group: SampleGroup, partition: int) -> int:
    # the troubled group's most lagging partition (the last) has too few samples for an estimate
    return 3 if (group is TROUBLED and partition == TOPICS[group.topic] - 1) else (2 if partition == 1 else 1)


def _lost(group: SampleGroup, partition: int) -> float:
    return 120.0 if (group is TROUBLED and partition == 0) else 0.0


PRODUCE_RATE = 50.0  # every partition's log end moves 50 records/s (_log_end)


def _consume_rate(group: SampleGroup) -> float:
    return PRODUCE_RATE - group.lag_growth


def _catch_up(group: SampleGroup, lag: float) -> float:
    gain = _consume_rate(group) - PRODUCE_RATE
    return lag / gain if gain > 0 else math.inf


def _retention_risk(group: SampleGroup, partition: int) -> float:
    """Seconds until records not read yet are deleted: the troubled group within the hour."""
    return 1800.0 + 60 * partition if group is TROUBLED else 5 * 86400.0


def _histogram(count: float, value: float) -> dict[str, float]:
    """Cumulative buckets for `count` observations all equal to `value`."""
    out = {f"le={le}": (count if value <= le else 0.0) for le in BUCKETS}
    out["sum"], out["count"] = count * value, count
    return out


Labels = dict[str, str]
Sample = tuple[Labels, object]   # value: float, or a histogram dict


# A member owns the next `count` partitions of its group's topic (SampleGroup.members order).
_MEMBER_LAG: dict[str, Callable[[list[float]], float]] = {
    "kafka_consumergroup_member_lag": sum,
    "kafka_consumergroup_member_max_lag": max,
    "kafka_consumergroup_member_max_lag_seconds": lambda lags: max(lags) / 25,
}


def _group_samples(name: str, t: float, now: float) -> list[Sample]:
    rows: list[Sample] = []
    for grp in GROUPS:
        g = {"group": grp.name}
        rebalances = 10 + math.floor(grp.rebalances_per_second * t)
        partitions = range(TOPICS[grp.topic])
        lags = [_partition_lag(grp, p, t) for p in partitions]
        per_group: dict[str, object] = {
            "kafka_consumergroup_generation": 40 + rebalances,
            "kafka_consumergroup_members": len(grp.assigned),
            "kafka_consumergroup_assignment_skew": max(grp.assigned) - min(grp.assigned),
            "kafka_consumergroup_idle_members": sum(1 for a in grp.assigned if a == 0),
            "kafka_consumergroup_group_lag": sum(lags),
            "kafka_consumergroup_group_max_lag": max(lags),
            "kafka_consumergroup_group_max_lag_seconds": max(lags) / 25,
            "kafka_consumergroup_lag_unknown_partitions": 0,
            "kafka_consumergroup_group_retention_risk_seconds": _retention_risk(grp, 0),
            "kafka_consumergroup_group_consume_rate": _consume_rate(grp) * len(lags),
            "kafka_consumergroup_group_catch_up_seconds": _catch_up(grp, max(lags)),
            "kafka_consumergroup_status": grp.status,
            "kafka_consumergroup_rebalances_total": rebalances,
            "kafka_consumergroup_rebalance_partitions_moved_total": rebalances * grp.moved_per_rebalance,
            "kafka_consumergroup_last_rebalance_timestamp_seconds": now - 5,
            "kafka_consumergroup_rebalance_duration_seconds": _histogram(rebalances, grp.rebalance_seconds),
            "kafka_consumergroup_rebalance_sync_duration_seconds": _histogram(rebalances, grp.rebalance_seconds / 4),
            "kafka_consumergroup_rebalance_downtime_seconds":
                _histogram(rebalances * grp.moved_per_rebalance, grp.rebalance_seconds * 1.5),
        }
        if name in per_group:
            rows.append((g, per_group[name]))
        elif name == "kafka_consumergroup_info":
            rows.append((dict(g, group_type=grp.group_type, protocol_type="consumer", protocol=grp.assignor,
                              state="Stable", coordinator_partition=str(sum(map(ord, grp.name)) % 50)), 1))
        elif name == "kafka_consumergroup_member_assigned_partitions":
            for member_id, client_id, host, instance, count in grp.members():
                rows.append((dict(g, member_id=member_id, client_id=client_id, client_host=host,
                                  instance_id=instance), count))
        elif name in _MEMBER_LAG:
            first = 0
            for member_id, client_id, host, instance, count in grp.members():
                owned = lags[first:first + count]
                first += count
                if owned:
                    rows.append((dict(g, member_id=member_id, client_id=client_id, client_host=host,
                                      instance_id=instance), _MEMBER_LAG[name](owned)))
        elif name == "kafka_consumergroup_unassigned_partitions":
            rows.append((dict(g, topic=grp.topic), TOPICS[grp.topic] - sum(grp.assigned)))
        elif name == "kafka_consumergroup_topic_lag":
            rows.append((dict(g, topic=grp.topic), sum(lags)))
        else:
            for p in partitions:
                rows.append((dict(g, topic=grp.topic, partition=str(p)), _partition_value(name, grp, p, t, now)))
    return rows


def _partition_value(name: str, grp: SampleGroup, p: int, t: float, now: float) -> float:
    lag = _partition_lag(grp, p, t)
    values: dict[str, Callable[[], float]] = {
        "kafka_consumergroup_committed_offset": lambda: _log_end(p, t) - lag,
        "kafka_consumergroup_commit_timestamp_seconds": lambda: now - (3 if p else 90),
        "kafka_consumergroup_lag": lambda: lag,
        "kafka_consumergroup_lag_seconds": lambda: lag / 25,
        "kafka_consumergroup_lag_seconds_method": lambda: _method(grp, p),
        "kafka_consumergroup_partition_status": lambda: _partition_status(grp, p),
        "kafka_consumergroup_messages_lost": lambda: _lost(grp, p),
        "kafka_consumergroup_retention_risk_seconds": lambda: _retention_risk(grp, p),
        "kafka_consumergroup_retention_risk_method": lambda: _method(grp, p),
        "kafka_consumergroup_consume_rate": lambda: _consume_rate(grp),
        "kafka_consumergroup_catch_up_seconds": lambda: _catch_up(grp, lag),
        "kafka_consumergroup_catch_up_method": lambda: 1 if lag else 0,
    }
    if name not in values:
        raise KeyError(f"sample_metrics has no value for {name}: add it")
    return values[name]()


def _topic_samples(name: str, t: float) -> list[Sample]:
    rows: list[Sample] = []
    for topic, count in TOPICS.items():
        for p in range(count):
            end = _log_end(p, t)
            start = end - 200 if (topic == TROUBLED.topic and p == 0) else 0.0
            value = {"kafka_partition_log_end_offset": end,
                     "kafka_partition_produce_rate": PRODUCE_RATE}.get(name, start)
            rows.append(({"topic": topic, "partition": str(p)}, value))
    return rows


# A share group on orders: each partition a little behind, one of them with poison records
# (archived after too many deliveries) and records waiting to be delivered again.
SHARE_GROUP, SHARE_TOPIC = "orders-share", "orders"


def _share_risk(partition: int) -> float:
    return 2 * 86400.0 - 600 * partition


def _share_rate(partition: int) -> float:
    return 12.0 + partition


def _share_samples(name: str, t: float) -> list[Sample]:
    rows: list[Sample] = []
    lags = [5 + 3 * p + (t % 30) for p in range(TOPICS[SHARE_TOPIC])]
    for p, lag in enumerate(lags):
        labels = {"group": SHARE_GROUP, "topic": SHARE_TOPIC, "partition": str(p)}
        archived = math.floor(t / 20) if p == 0 else 0
        if name == "kafka_sharegroup_partition_start_offset":
            rows.append((labels, _log_end(p, t) - lag - 10))
        elif name == "kafka_sharegroup_partition_lag":
            rows.append((labels, lag))
        elif name == "kafka_sharegroup_partition_records":
            rows += [(dict(labels, state="available"), 2 if p == 0 else 0),
                     (dict(labels, state="acknowledged"), 10),
                     (dict(labels, state="archived"), min(archived, 3))]
        elif name == "kafka_sharegroup_partition_delivery_count_records":
            rows += [(dict(labels, delivery_count="1"), 10),
                     (dict(labels, delivery_count="5"), min(archived, 3))]
        elif name == "kafka_sharegroup_partition_archived_records_total":
            rows.append((labels, archived))
        elif name == "kafka_sharegroup_partition_retention_risk_seconds":
            rows.append((labels, _share_risk(p)))
        elif name == "kafka_sharegroup_partition_consume_rate":
            rows.append((labels, _share_rate(p)))
        elif name == "kafka_sharegroup_partition_catch_up_seconds":
            rows.append((labels, lag / 2.0))
    if name == "kafka_sharegroup_lag":
        rows.append(({"group": SHARE_GROUP}, sum(lags)))
    elif name == "kafka_sharegroup_archived_records_total":
        rows.append(({"group": SHARE_GROUP}, math.floor(t / 20)))
    elif name == "kafka_sharegroup_retention_risk_seconds":
        rows.append(({"group": SHARE_GROUP}, min(map(_share_risk, range(TOPICS[SHARE_TOPIC])))))
    elif name == "kafka_sharegroup_consume_rate":
        rows.append(({"group": SHARE_GROUP}, sum(map(_share_rate, range(TOPICS[SHARE_TOPIC])))))
    elif name == "kafka_sharegroup_catch_up_seconds":
        rows.append(({"group": SHARE_GROUP}, max(lags) / 2.0))
    return rows


def _monitor_samples(name: str, t: float) -> list[Sample]:
    per_label: dict[str, list[Sample]] = {
        "groupscope_records_total": [({"type_name": k}, 1000 + r * t) for k, r in
                                     (("offset_commit", 200), ("group_metadata", 2),
                                      ("consumer_group_current_member_assignment", 1))],
        "groupscope_records_skipped_total": [({"reason": "unknown_type"}, math.floor(t / 2)),
                                             ({"reason": "malformed"}, 0)],
        "groupscope_offsets_topic_lag": [({"partition": str(p)}, 5 * p) for p in range(3)],
        "groupscope_build_info": [({"version": "0.1.0"}, 1)],
        # a principal without READ on __share_group_state (share groups' delivery state)
        "groupscope_source_refusal_info": [
            ({"found_by": "share-state", "error": "this principal may not READ topic "
              "__share_group_state: grant it READ, or set source.share_state: false"}, 1)],
        "groupscope_share_state_records_total": [({"type_name": "share_snapshot"}, 20),
                                                 ({"type_name": "share_update"}, 100 + 5 * t)],
        "groupscope_share_state_records_skipped_total": [({"reason": "truncated"}, 0)],
    }
    single: dict[str, object] = {
        "groupscope_ready": 1,
        "groupscope_seeded_groups": 0,
        "groupscope_source_up": 1,
        "groupscope_source_access_denied": 0,
        "groupscope_topics_without_metadata": 0,
        "groupscope_topic_configs_refused": 0,
        "groupscope_log_dirs_refused": 0,
        "groupscope_batch_duration_seconds": _histogram(10 + math.floor(t), 0.8),
        "groupscope_end_offsets_poll_duration_seconds": _histogram(5 + math.floor(t / 2), 0.2),
        "groupscope_end_offsets_age_seconds": 2,
        "groupscope_end_offsets_poll_failures_total": math.floor(t / 5),
        "groupscope_negative_lag_total": math.floor(t / 10),
    }
    if name in per_label:
        return per_label[name]
    if name in single:
        return [({}, single[name])]
    raise KeyError(f"sample_metrics has no value for {name}: add it")


def _samples(spec: MetricFamily, t: float, now: float) -> list[Sample]:
    name = spec.exposed_name
    if name.startswith("groupscope_"):
        return _monitor_samples(name, t)
    if name.startswith("kafka_sharegroup_"):
        return _share_samples(name, t)
    if spec.labels == TP:
        return _topic_samples(name, t)
    return _group_samples(name, t, now)


def _labels_text(cluster: str, labels: Labels) -> str:
    return ",".join(f'{k}="{v}"' for k, v in {"cluster": cluster, **labels}.items())


def _lines(spec: MetricFamily, cluster: str, labels: Labels, value: object) -> Iterator[str]:
    if spec.kind != HISTOGRAM:
        number = float(value)
        text = ("+Inf" if number > 0 else "-Inf") if math.isinf(number) else repr(number)
        yield f"{spec.exposed_name}{{{_labels_text(cluster, labels)}}} {text}"
        return
    assert isinstance(value, dict)
    for key, v in value.items():
        if key.startswith("le="):
            le = key[3:]
            le_text = "+Inf" if le == "inf" else le
            yield (f'{spec.name}_bucket{{{_labels_text(cluster, dict(labels, le=le_text))}}} '
                   f'{float(v)!r}')
    yield f"{spec.name}_sum{{{_labels_text(cluster, labels)}}} {float(value['sum'])!r}"
    yield f"{spec.name}_count{{{_labels_text(cluster, labels)}}} {float(value['count'])!r}"


def render(elapsed_seconds: float, now_seconds: float, clusters: tuple[str, ...] = (CLUSTER,)) -> str:
    """The exposition text at `elapsed_seconds` after start, with timestamps relative to now:
    the same groups in each of `clusters`, as one job watching several clusters serves them."""
    out = []
    for spec in served_families(granularity=PARTITION):
        out.append(f"# HELP {spec.exposed_name} {spec.help}")
        out.append(f"# TYPE {spec.exposed_name} {spec.kind}")
        samples = _samples(spec, elapsed_seconds, now_seconds)
        for cluster in clusters:
            for labels, value in samples:
                out.extend(_lines(spec, cluster, labels, value))
    return "\n".join(out) + "\n"
