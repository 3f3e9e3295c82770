"""The exporter over HTTP: feed a MonitorView with group snapshots and events, scrape /metrics on
an ephemeral 127.0.0.1 port, parse with prometheus_client.parser and check exact values."""
from __future__ import annotations

import gc
import gzip
import math
import urllib.error
import urllib.request

import pytest
from hypothesis import example, given, settings, strategies as st
from prometheus_client.parser import text_string_to_metric_families

from coordinator.retention import parse_config
from coordinator.state.share_partition import ACKNOWLEDGED, ARCHIVED, AVAILABLE, SharePartition, StateBatch
from coordinator.status import Status, StatusSettings
from streaming.exporter.catalog import COMPAT_TARGETS, GRANULARITIES, exported_series
from streaming.exporter.evaluation import Evaluator, build_families
from streaming.exporter.exposition import render_text
from streaming.exporter.server import ExporterSettings, start_exporter
from streaming.exporter.gzip_member import GzipMember, gzipped
from streaming.exporter.metrics_cache import MetricsCache
from streaming.exporter.view import MonitorView, ViewSettings
from tests.support.collector_probe import collections_in_fresh_interpreter, garbage_collections
from tests.support.scrape_support import parse, scrape

T0 = 1_700_000_000.0


class Clock:
    def __init__(self, now: float = T0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def member(member_id, assigned, topics=("orders",), client_id="app", host="/10.0.0.1",
           instance=None):
    return {"member_id": member_id, "group_instance_id": instance, "client_id": client_id,
            "client_host": host, "rack": None, "session_timeout_ms": 45000,
            "rebalance_timeout_ms": 300000, "subscribed_topics": list(topics),
            "subscribed_topic_regex": None, "assigned": [list(tp) for tp in assigned],
            "member_epoch": None, "member_state": None, "target": None,
            "pending_revocation": None, "extra": {}}


def snapshot(group, members, offsets, generation=4, state="Stable", protocol="range",
             group_type="classic", subscribed=None, last_rebalance=None, updated_s=T0 - 60):
    if subscribed is None:
        subscribed = sorted({t for m in members for t in m["subscribed_topics"]})
    return {"group": group, "group_type": group_type, "protocol_type": "consumer",
            "protocol": protocol, "state": state, "generation": generation,
            "assignment_epoch": None, "leader": members[0]["member_id"] if members else None,
            "current_state_timestamp_ms": None, "coordinator_partition": 12,
            "members": members, "subscribed_topics": subscribed,
            "offsets": [{"topic": t, "partition": p, "offset": o, "leader_epoch": None,
                         "metadata": "", "commit_timestamp_ms": int(ts * 1000), "topic_id": None}
                        for t, p, o, ts in offsets],
            "last_rebalance": last_rebalance, "updated_ms": int(updated_s * 1000)}


def value(samples, name, **labels):
    labels.setdefault("cluster", "test")
    return samples[name][frozenset(labels.items())]


@pytest.fixture()
def clock():
    return Clock()


def make_view(clock, **settings):
    settings.setdefault("cluster", "test")
    settings.setdefault("status", StatusSettings(window_size=4, min_complete=0.5))
    return MonitorView(ViewSettings(**settings), clock=clock)


@pytest.fixture()
def served(clock):
    """(view, scrape function) with the exporter on an ephemeral port."""
    running = []

    def start(**settings):
        exporter_settings = settings.pop("exporter", ExporterSettings(listen="127.0.0.1:0"))
        view = make_view(clock, **settings)
        exporter = start_exporter(view, exporter_settings)
        running.append(exporter)
        return view, exporter.port

    yield start
    for exporter in running:
        exporter.stop()


def feed_orders_group(view, clock):
    """Group `shop`: 2 members on orders (3 partitions) + an idle member; end offsets polled
    twice."""
    view.update_topic_metadata({}, {"orders": 4, "audit": 1})
    members = [member("m-a", [("orders", 0), ("orders", 1)], client_id="a", host="/10.0.0.1"),
               member("m-b", [("orders", 2)], client_id="b", host="/10.0.0.2", instance="i-b"),
               member("m-c", [], client_id="c", host="/10.0.0.3")]
    offsets = [("orders", 0, 100, T0 - 30), ("orders", 1, 250, T0 - 30),
               ("orders", 2, 900, T0 - 30), ("audit", 0, 5, T0 - 30)]
    view.update_groups([snapshot("shop", members, offsets)])
    view.update_end_offsets({("orders", 0): 50, ("orders", 1): 200, ("orders", 2): 880,
                             ("audit", 0): 9},
                            {("orders", 0): 0, ("orders", 1): 0, ("orders", 2): 0,
                             ("audit", 0): 0}, T0 - 100, 0.05)
    view.update_end_offsets({("orders", 0): 150, ("orders", 1): 300, ("orders", 2): 880,
                             ("audit", 0): 9},
                            {("orders", 0): 120, ("orders", 1): 0, ("orders", 2): 0,
                             ("audit", 0): 0}, T0 - 10, 0.05)


ORDERS_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


def feed_share_group(view) -> None:
    """Share group `workers` on orders 0 (offsets 100-104 acknowledged, 105-106 archived, 107
    to be delivered again) and orders 1 (its start offset known, its delivery-complete count
    not: lag unknown); orders' end offsets from feed_orders_group."""
    view.update_topic_metadata({ORDERS_ID: "orders"}, {"orders": 4, "audit": 1})
    batches = [StateBatch(100, 104, ACKNOWLEDGED, 1), StateBatch(105, 106, ARCHIVED, 5),
               StateBatch(107, 107, AVAILABLE, 2)]
    view.apply_share_state({("workers", ORDERS_ID, 0): SharePartition("workers", ORDERS_ID, 0, 100, 7,
                                                                   tuple(batches), archived_seen=2),
                            ("workers", ORDERS_ID, 1): SharePartition("workers", ORDERS_ID, 1, 40, -1, ())},
                           {"share_snapshot": 2, "share_update": 5}, {"truncated": 1})


def test_share_groups_series(served, clock) -> None:
    view, port = served()
    feed_orders_group(view, clock)
    feed_share_group(view)
    samples = parse(scrape(port)[1])
    p0 = (("cluster", "test"), ("group", "workers"), ("topic", "orders"), ("partition", "0"))
    p1 = (("cluster", "test"), ("group", "workers"), ("topic", "orders"), ("partition", "1"))
    assert samples["kafka_sharegroup_partition_start_offset"] == {frozenset(p0): 100, frozenset(p1): 40}
    # Kafka's lag: the end offset (150) minus the start offset minus the completed deliveries
    assert samples["kafka_sharegroup_partition_lag"] == {frozenset(p0): 150 - 100 - 7}
    assert samples["kafka_sharegroup_lag"] == {frozenset({("cluster", "test"), ("group", "workers")}): 43}
    assert {dict(k)["state"]: v for k, v in samples["kafka_sharegroup_partition_records"].items()
            if ("partition", "0") in k} == {"available": 1, "acknowledged": 5, "archived": 2}
    assert {dict(k)["delivery_count"]: v for k, v in
            samples["kafka_sharegroup_partition_delivery_count_records"].items()
            if ("partition", "0") in k} == {"1": 5, "2": 1, "5": 2}
    assert samples["kafka_sharegroup_partition_archived_records_total"][frozenset(p0)] == 2
    assert samples["groupscope_share_state_records_total"] == {
        frozenset({("cluster", "test"), ("type_name", "share_snapshot")}): 2,
        frozenset({("cluster", "test"), ("type_name", "share_update")}): 5}
    # the poller is asked for the end offsets of the share-partitions too
    assert {("orders", 0), ("orders", 1)} <= view.wanted_partitions()


def test_a_scrape_may_ask_for_some_families_by_name(served, clock) -> None:
    """`/metrics?name[]=...` (prometheus-client's filter): only the families named, by family
    or series name, each whole."""
    view, port = served()
    feed_orders_group(view, clock)
    everything = parse(scrape(port)[1])
    some = parse(scrape(port, "/metrics?name[]=kafka_consumergroup_lag&name[]=groupscope_records_total"
                                 "&name[]=kafka_consumergroup_rebalance_duration_seconds_bucket")[1])
    assert set(some) == {"kafka_consumergroup_lag", "groupscope_records_total",
                         "kafka_consumergroup_rebalance_duration_seconds_bucket",
                         "kafka_consumergroup_rebalance_duration_seconds_sum",
                         "kafka_consumergroup_rebalance_duration_seconds_count"} & set(everything)
    assert some["kafka_consumergroup_lag"] == everything["kafka_consumergroup_lag"]
    assert parse(scrape(port, "/metrics?name[]=no_such_family")[1]) == {}


@pytest.mark.parametrize("granularity", GRANULARITIES)
def test_member_lag_sums_and_maximises_the_partitions_each_member_owns(served, clock, granularity):
    view, port = served(member_lag=True, granularity=granularity)
    feed_orders_group(view, clock)
    samples = parse(scrape(port)[1])
    member_labels = {"m-a": dict(client_id="a", client_host="/10.0.0.1", instance_id=""),
                     "m-b": dict(client_id="b", client_host="/10.0.0.2", instance_id="i-b")}
    owned = {"m-a": (0, 1), "m-b": (2,)}
    # The same group in a view without the switch, at partition granularity: its lag per
    # partition is what the member figures are made of.
    reference, reference_port = served()
    feed_orders_group(reference, clock)
    ref = parse(scrape(reference_port)[1])
    for mid, partitions in owned.items():
        labels = dict(group="shop", member_id=mid, **member_labels[mid])
        lags = [value(ref, "kafka_consumergroup_lag", group="shop", topic="orders",
                      partition=str(p)) for p in partitions]
        seconds = [value(ref, "kafka_consumergroup_lag_seconds", group="shop", topic="orders",
                         partition=str(p)) for p in partitions]
        assert value(samples, "kafka_consumergroup_member_lag", **labels) == sum(lags)
        assert value(samples, "kafka_consumergroup_member_max_lag", **labels) == max(lags)
        assert value(samples, "kafka_consumergroup_member_max_lag_seconds", **labels) == max(seconds)
    assert sum(lags) == 0 and value(samples, "kafka_consumergroup_member_lag",  # m-b: caught up
                                     group="shop", member_id="m-b", **member_labels["m-b"]) == 0
    # The idle member owns nothing, so it has no lag series; and without the switch, no member
    # has one.
    assert {dict(k)["member_id"] for k in samples["kafka_consumergroup_member_lag"]} == {"m-a", "m-b"}
    assert "kafka_consumergroup_member_lag" not in ref


def test_a_first_record_read_makes_the_time_lag_exact_until_the_commit_moves(clock):
    view = make_view(clock)
    feed_orders_group(view, clock)
    # orders/0 and orders/1 are 50 behind; orders/2 is caught up, audit is not subscribed.
    assert view.unread_lagging() == [("orders", 0, 100, 50), ("orders", 1, 250, 50)]
    view.set_first_records({("orders", 0, 100): T0 - 40.0, ("orders", 1, 249): T0 - 1.0})
    samples = parse(MetricsCache(view).text())
    assert value(samples, "kafka_consumergroup_lag_seconds", group="shop", topic="orders",
                 partition="0") == clock.now - (T0 - 40.0)
    assert value(samples, "kafka_consumergroup_lag_seconds_method", group="shop",
                 topic="orders", partition="0") == 4
    # A record read at another offset than the committed one is not this row's.
    assert value(samples, "kafka_consumergroup_lag_seconds_method", group="shop",
                 topic="orders", partition="1") != 4
    assert view.unread_lagging() == [("orders", 1, 250, 50)]
    members = [member("m-a", [("orders", 0), ("orders", 1)], client_id="a", host="/10.0.0.1")]
    view.update_groups([snapshot("shop", members, [("orders", 0, 120, T0 - 5),
                                                   ("orders", 1, 250, T0 - 30),
                                                   ("orders", 2, 900, T0 - 30)])])
    samples = parse(MetricsCache(view).text())
    assert value(samples, "kafka_consumergroup_lag_seconds_method", group="shop",
                 topic="orders", partition="0") != 4
    assert view.unread_lagging() == [("orders", 1, 250, 50), ("orders", 0, 120, 30)]


def test_healthz_is_503_until_ready(served):
    view, port = served()
    with pytest.raises(urllib.error.HTTPError) as error:
        scrape(port, "/healthz")
    assert error.value.code == 503
    view.set_offsets_topic_progress({0: 3, 1: 0}, ready=False)
    with pytest.raises(urllib.error.HTTPError):
        scrape(port, "/healthz")
    view.set_offsets_topic_progress({0: 0, 1: 0}, ready=True)
    assert scrape(port, "/healthz")[0] == 200
    samples = parse(scrape(port)[1])
    assert value(samples, "groupscope_ready") == 1
    assert value(samples, "groupscope_offsets_topic_lag", partition="0") == 0


def test_lag_sums_maxima_and_group_state(served, clock):
    view, port = served()
    feed_orders_group(view, clock)
    status, text = scrape(port)
    assert status == 200
    s = parse(text)
    g = dict(group="shop")
    assert value(s, "kafka_consumergroup_info", group="shop", group_type="classic",
                 protocol_type="consumer", protocol="range", state="Stable",
                 coordinator_partition="12") == 1
    assert value(s, "kafka_consumergroup_generation", **g) == 4
    assert value(s, "kafka_consumergroup_members", **g) == 3
    assert value(s, "kafka_consumergroup_member_assigned_partitions", group="shop",
                 member_id="m-b", client_id="b", client_host="/10.0.0.2", instance_id="i-b") == 1
    assert value(s, "kafka_consumergroup_idle_members", **g) == 1
    assert value(s, "kafka_consumergroup_assignment_skew", **g) == 2
    assert value(s, "kafka_consumergroup_unassigned_partitions", topic="orders", **g) == 1
    # Lag against the freshest end offsets (second poll); audit is not subscribed: no lag.
    assert value(s, "kafka_consumergroup_lag", topic="orders", partition="0", **g) == 50
    assert value(s, "kafka_consumergroup_lag", topic="orders", partition="1", **g) == 50
    assert value(s, "kafka_consumergroup_lag", topic="orders", partition="2", **g) == 0
    assert not any(dict(k).get("topic") == "audit" for k in s["kafka_consumergroup_lag"])
    assert value(s, "kafka_consumergroup_committed_offset", topic="orders", partition="2",
                 **g) == 900
    assert value(s, "kafka_consumergroup_commit_timestamp_seconds", topic="orders",
                 partition="2", **g) == T0 - 30
    assert value(s, "kafka_consumergroup_topic_lag", topic="orders", **g) == 100
    assert value(s, "kafka_consumergroup_group_lag", **g) == 100
    assert value(s, "kafka_consumergroup_group_max_lag", **g) == 50
    assert value(s, "kafka_partition_log_end_offset", topic="orders", partition="1") == 300
    assert value(s, "kafka_partition_log_start_offset", topic="orders", partition="0") == 120
    # Committed 100 below log start 120: 20 records lost to retention.
    assert value(s, "kafka_consumergroup_messages_lost", topic="orders", partition="0", **g) == 20
    # Commit 900 above the end offset 880 we know: lag 0, counted as negative (once).
    assert value(s, "groupscope_negative_lag_total") == 1
    assert value(s, "groupscope_negative_lag_total") == parse(scrape(port)[1])[
        "groupscope_negative_lag_total"][frozenset({("cluster", "test")})]
    # Time lag: orders/1 committed 250; end 200 -> 300 between T0-100 and T0-10, so the end
    # reached 251 at T0-100 + 51 * 0.9 = T0-54.1; now is T0.
    assert value(s, "kafka_consumergroup_lag_seconds", topic="orders", partition="1",
                 **g) == pytest.approx(54.1)
    assert value(s, "kafka_consumergroup_lag_seconds_method", topic="orders", partition="1",
                 **g) == 1
    assert value(s, "kafka_consumergroup_lag_seconds", topic="orders", partition="2", **g) == 0
    assert value(s, "kafka_consumergroup_lag_seconds_method", topic="orders", partition="2",
                 **g) == 0
    # orders/0: committed 100 is older than the table (first sample end 50 -> 150): interpolated
    # between 50 and 150: end reached 101 at T0-100 + 51 * 0.9.
    assert value(s, "kafka_consumergroup_lag_seconds", topic="orders", partition="0",
                 **g) == pytest.approx(54.1)
    assert value(s, "kafka_consumergroup_group_max_lag_seconds", **g) == pytest.approx(54.1)
    assert value(s, "kafka_consumergroup_status", **g) == 1
    assert value(s, "groupscope_end_offsets_age_seconds") == pytest.approx(10.0)
    assert value(s, "groupscope_end_offsets_poll_duration_seconds_count") == 2


def test_include_unsubscribed_exports_abandoned_topics(served, clock):
    view, port = served(include_unsubscribed=True)
    feed_orders_group(view, clock)
    s = parse(scrape(port)[1])
    assert value(s, "kafka_consumergroup_lag", group="shop", topic="audit", partition="0") == 4
    assert value(s, "kafka_consumergroup_group_lag", group="shop") == 104


def test_empty_group_keeps_its_last_subscription_for_lag(served, clock):
    view, port = served()
    feed_orders_group(view, clock)
    view.update_groups([snapshot("shop", [], [("orders", 0, 140, T0 - 5), ("audit", 0, 5, T0 - 5)],
                                 generation=5, state="Empty")])
    s = parse(scrape(port)[1])
    assert value(s, "kafka_consumergroup_members", group="shop") == 0
    assert value(s, "kafka_consumergroup_lag", group="shop", topic="orders", partition="0") == 10
    assert "kafka_consumergroup_lag" in s and all(
        dict(k)["topic"] == "orders" for k in s["kafka_consumergroup_lag"])
    # Offsets missing from the snapshot were deleted: their series are gone.
    assert (frozenset(dict(cluster="test", group="shop", topic="orders", partition="1").items())
            not in s["kafka_consumergroup_committed_offset"])


def test_rebalance_counters_and_histograms(served, clock):
    view, port = served()
    feed_orders_group(view, clock)
    rebalance = {"event": "rebalance", "group": "shop", "timestamp_ms": int((T0 - 20) * 1000),
                 "partition": 12, "offset": 77, "group_type": "classic", "protocol": "range",
                 "from_generation": 3, "to_generation": 4, "start_ms": int((T0 - 23) * 1000),
                 "start_method": "commit_burst", "end_ms": int((T0 - 20) * 1000),
                 "sync_seconds": 0.2, "duration_seconds": 3.0, "members_joined": ["m-c"],
                 "members_left": [], "members_kept": ["m-a", "m-b"],
                 "partitions_revoked": [["orders", 2]], "partitions_assigned": [["orders", 2]],
                 "partitions_kept": [["orders", 0], ["orders", 1]],
                 "partitions_moved": [["orders", 2]],
                 "quality": {"members": 3, "min_partitions": 0, "max_partitions": 2, "skew": 2,
                             "idle_members": 1, "unowned_partitions": None}}
    second = dict(rebalance, duration_seconds=45.0, sync_seconds=None, to_generation=5,
                  end_ms=int((T0 - 5) * 1000), partitions_moved=[["orders", 0], ["orders", 1]])
    downtime = {"event": "rebalance_downtime", "group": "shop", "timestamp_ms": int(T0 * 1000),
                "partition": 12, "offset": 80, "to_generation": 4, "topic": "orders",
                "partition_id": 2, "downtime_seconds": 7.5}
    view.apply_events([rebalance, second, downtime])
    s = parse(scrape(port)[1])
    g = dict(group="shop")
    assert value(s, "kafka_consumergroup_rebalances_total", **g) == 2
    assert value(s, "kafka_consumergroup_rebalance_partitions_moved_total", **g) == 3
    assert value(s, "kafka_consumergroup_last_rebalance_timestamp_seconds", **g) == T0 - 5
    name = "kafka_consumergroup_rebalance_duration_seconds"
    assert value(s, name + "_bucket", le="2.5", **g) == 0
    assert value(s, name + "_bucket", le="5.0", **g) == 1
    assert value(s, name + "_bucket", le="60.0", **g) == 2
    assert value(s, name + "_bucket", le="+Inf", **g) == 2
    assert value(s, name + "_sum", **g) == 48.0
    assert value(s, name + "_count", **g) == 2
    sync = "kafka_consumergroup_rebalance_sync_duration_seconds"
    assert value(s, sync + "_count", **g) == 1 and value(s, sync + "_bucket", le="0.25", **g) == 1
    down = "kafka_consumergroup_rebalance_downtime_seconds"
    assert value(s, down + "_bucket", le="5.0", **g) == 0
    assert value(s, down + "_bucket", le="10.0", **g) == 1
    assert value(s, down + "_sum", **g) == 7.5


def test_deleted_group_shows_dead_then_disappears(served, clock):
    view, port = served(dead_grace_s=60.0)
    feed_orders_group(view, clock)
    view.update_groups([snapshot("other", [], [("orders", 3, 1, T0 - 1)], state="Empty")])
    view.apply_events([{"event": "group_deleted", "group": "shop", "timestamp_ms": int(T0 * 1000),
                        "partition": 12, "offset": 99}])
    s = parse(scrape(port)[1])
    assert value(s, "kafka_consumergroup_info", group="shop", group_type="classic",
                 protocol_type="consumer", protocol="range", state="Dead",
                 coordinator_partition="12") == 1
    assert not any(dict(k)["group"] == "shop" for k in s["kafka_consumergroup_committed_offset"])
    clock.now += 61
    view.update_end_offsets({("orders", 3): 1}, {}, clock.now, 0.01)
    s = parse(scrape(port)[1])
    assert not any(dict(k).get("group") == "shop" for name in s for k in s[name])
    assert value(s, "kafka_consumergroup_members", group="other") == 0


def test_a_deletion_the_batch_snapshot_outlived_keeps_the_group(served, clock):
    # A conversion (or a group created again) in one micro-batch: the tombstone's event and the
    # snapshot of the group its next records made. The snapshot is the newer word.
    view, port = served(dead_grace_s=60.0)
    view.update_groups([snapshot("conv", [], [("orders", 3, 5, T0 - 1)], state="Empty", updated_s=T0)])
    view.apply_events([{"event": "group_deleted", "group": "conv", "timestamp_ms": int(T0 * 1000),
                        "partition": 12, "offset": 99}])
    s = parse(scrape(port)[1])
    assert value(s, "kafka_consumergroup_info", group="conv", group_type="classic", protocol_type="consumer",
                 protocol="range", state="Empty", coordinator_partition="12") == 1
    assert value(s, "kafka_consumergroup_committed_offset", group="conv", topic="orders", partition="3") == 5
    # a deletion after the snapshot still buries it
    view.apply_events([{"event": "group_deleted", "group": "conv", "timestamp_ms": int(T0 * 1000) + 1,
                        "partition": 12, "offset": 100}])
    s = parse(scrape(port)[1])
    assert not any(dict(k)["group"] == "conv" for k in s.get("kafka_consumergroup_committed_offset", {}))


def test_dead_snapshot_with_no_grace_removes_at_once(served, clock):
    view, port = served(dead_grace_s=0.0)
    feed_orders_group(view, clock)
    view.update_groups([snapshot("shop", [], [], state="Dead")])
    s = parse(scrape(port)[1])
    assert "kafka_consumergroup_info" not in s or not s["kafka_consumergroup_info"]


def test_groups_that_stop_committing_expire(served, clock):
    view, port = served(expire_after_s=3600.0)
    feed_orders_group(view, clock)
    view.update_groups([snapshot("fresh", [], [("orders", 3, 1, T0 + 3500)], state="Empty",
                                 updated_s=T0 + 3500)])
    clock.now += 3600  # shop's last commit (T0 - 30) is now 3630 s old
    view.update_end_offsets({("orders", 0): 150}, {}, clock.now, 0.01)
    s = parse(scrape(port)[1])
    groups = {dict(k)["group"] for k in s["kafka_consumergroup_generation"]}
    assert groups == {"fresh"}


def test_status_per_partition_and_group(served, clock):
    view, port = served()
    view.update_topic_metadata({}, {"t": 2})
    ends = {("t", 0): 0, ("t", 1): 0}
    view.update_end_offsets(ends, {}, T0 - 400, 0.01)
    # t/0 keeps committing the same offset while the end grows: STALL. t/1 progresses but
    # never catches up and lag grows: WARN.
    for step in range(4):
        when = T0 - 300 + step * 60
        view.update_end_offsets({("t", 0): 100 + 50 * step, ("t", 1): 100 + 80 * step}, {},
                                when - 1, 0.01)
        view.update_groups([snapshot("g", [member("m", [("t", 0), ("t", 1)], topics=("t",))],
                                     [("t", 0, 50, when), ("t", 1, 60 + 20 * step, when)])])
    clock.now = T0 - 300 + 3 * 60 + 5
    view.update_end_offsets({("t", 0): 260, ("t", 1): 360}, {}, clock.now, 0.01)
    s = parse(scrape(port)[1])
    assert value(s, "kafka_consumergroup_partition_status", group="g", topic="t",
                 partition="0") == 5
    assert value(s, "kafka_consumergroup_partition_status", group="g", topic="t",
                 partition="1") == 2
    assert value(s, "kafka_consumergroup_status", group="g") == 3  # STALL shows as ERR


def test_kip848_topic_ids_map_through_metadata(served, clock):
    view, port = served()
    consumer = snapshot("new", [member("m1", [("AAAAAAAAAAAAAAAAAAAAAQ", 0)], topics=("events",))],
                        [("events", 0, 10, T0 - 5)], group_type="consumer", protocol="uniform")
    view.update_groups([consumer])
    view.update_topic_metadata({"AAAAAAAAAAAAAAAAAAAAAQ": "events"}, {"events": 2})
    view.update_end_offsets({("events", 0): 12}, {}, T0 - 1, 0.01)
    s = parse(scrape(port)[1])
    assert value(s, "kafka_consumergroup_unassigned_partitions", group="new", topic="events") == 1
    assert value(s, "kafka_consumergroup_lag", group="new", topic="events", partition="0") == 2


def test_monitor_counters(served, clock):
    view, port = served()
    view.set_record_totals({"offset_commit": 15, "group_metadata": 2}, {"unknown_type": 1})
    view.observe_batch(0.3)
    view.record_poll_failure(10.0)
    s = parse(scrape(port)[1])
    assert value(s, "groupscope_records_total", type_name="offset_commit") == 15
    assert value(s, "groupscope_records_total", type_name="group_metadata") == 2
    assert value(s, "groupscope_records_skipped_total", reason="unknown_type") == 1
    assert value(s, "groupscope_batch_duration_seconds_bucket", le="0.25") == 0
    assert value(s, "groupscope_batch_duration_seconds_bucket", le="0.5") == 1
    assert value(s, "groupscope_end_offsets_poll_failures_total") == 1
    assert math.isinf(value(s, "groupscope_end_offsets_age_seconds"))
    assert ("groupscope_build_info" in s)


def test_compat_series(served, clock):
    view, port = served(compat=("kafka_exporter", "kafka_lag_exporter", "burrow"))
    feed_orders_group(view, clock)
    s = parse(scrape(port)[1])
    # kafka_exporter: its label names on the shared names, plus its own families.
    assert value(s, "kafka_consumergroup_lag", group="shop", consumergroup="shop", topic="orders",
                 partition="1") == 50
    assert value(s, "kafka_consumergroup_members", group="shop", consumergroup="shop") == 3
    assert value(s, "kafka_consumergroup_current_offset", consumergroup="shop", topic="orders",
                 partition="1") == 250
    assert value(s, "kafka_consumergroup_lag_sum", consumergroup="shop", topic="orders") == 100
    assert value(s, "kafka_consumergroup_current_offset_sum", consumergroup="shop",
                 topic="orders") == 1250
    assert value(s, "kafka_topic_partition_current_offset", topic="orders", partition="1") == 300
    assert value(s, "kafka_topic_partition_oldest_offset", topic="orders", partition="0") == 120
    assert value(s, "kafka_topic_partitions", topic="orders") == 4
    # kafka-lag-exporter: per-partition names with member labels.
    kle = dict(cluster_name="test", group="shop", topic="orders", partition="2",
               member_host="/10.0.0.2", consumer_id="m-b", client_id="b")
    assert value(s, "kafka_consumergroup_group_lag", **kle) == 0
    assert value(s, "kafka_consumergroup_group_offset", **kle) == 900
    assert value(s, "kafka_consumergroup_group_lag_seconds", **kle) == 0
    assert value(s, "kafka_consumergroup_group_sum_lag", cluster_name="test", group="shop") == 100
    assert value(s, "kafka_consumergroup_group_topic_sum_lag", cluster_name="test", group="shop",
                 topic="orders") == 100
    assert value(s, "kafka_consumergroup_group_max_lag", cluster_name="test", group="shop",
                 is_simple_consumer="false") == 50
    assert value(s, "kafka_partition_latest_offset", cluster_name="test", topic="orders",
                 partition="1") == 300
    assert value(s, "kafka_partition_earliest_offset", cluster_name="test", topic="orders",
                 partition="0") == 120
    assert value(s, "kafka_consumergroup_poll_time_ms", cluster_name="test") == 50.0
    # Burrow.
    assert value(s, "burrow_kafka_consumer_partition_lag", consumer_group="shop", topic="orders",
                 partition="0") == 50
    assert value(s, "burrow_kafka_consumer_current_offset", consumer_group="shop",
                 topic="orders", partition="0") == 100
    assert value(s, "burrow_kafka_consumer_lag_total", consumer_group="shop") == 100
    assert value(s, "burrow_kafka_consumer_status", consumer_group="shop") == 1
    assert value(s, "burrow_kafka_topic_partition_status", consumer_group="shop", topic="orders",
                 partition="0") == 1
    assert value(s, "burrow_kafka_topic_partition_offset", topic="orders", partition="1") == 300


def test_compat_off_by_default(served, clock):
    view, port = served()
    feed_orders_group(view, clock)
    s = parse(scrape(port)[1])
    assert not any(name.startswith("burrow_") for name in s)
    assert "kafka_consumergroup_current_offset" not in s
    assert all("consumergroup" not in dict(k) for k in s["kafka_consumergroup_lag"])


def test_basic_auth(served, clock):
    settings = ExporterSettings(listen="127.0.0.1:0", username="prom", password="s3cret")
    view, port = served(exporter=settings)
    for auth in (None, ("prom", "wrong"), ("other", "s3cret")):
        with pytest.raises(urllib.error.HTTPError) as error:
            scrape(port, auth=auth)
        assert error.value.code == 401
        assert error.value.headers["WWW-Authenticate"].startswith("Basic")
    status, text = scrape(port, auth=("prom", "s3cret"))
    assert status == 200 and "groupscope_ready" in text


def test_cached_text_equals_a_full_evaluation(clock):
    view = make_view(clock, compat=COMPAT_TARGETS)
    feed_orders_group(view, clock)
    view.apply_events([{"event": "rebalance_downtime", "group": "shop",
                        "timestamp_ms": int(T0 * 1000), "partition": 1, "offset": 2,
                        "downtime_seconds": 1.5}])
    cache = MetricsCache(view)
    cache.refresh()
    view.update_end_offsets({("orders", 1): 320}, {}, T0 - 5, 0.01)
    cache.refresh()  # a lag-only refresh
    view.update_groups([snapshot("late", [], [("orders", 3, 1, T0 - 1)], state="Empty")])
    text = cache.text()  # renders the group changed since the refresh
    assert 'group="late"' in text and 'kafka_consumergroup_lag{' in text
    assert text == render_text(build_families(view))


@pytest.mark.parametrize("kwargs", [dict(listen="nohost"), dict(listen="127.0.0.1:x"),
                                    dict(certfile="/c.pem"), dict(username="u")])
def test_bad_exporter_settings(kwargs):
    with pytest.raises(ValueError):
        ExporterSettings(**kwargs)


def test_unknown_compat_target_is_rejected():
    with pytest.raises(ValueError, match="metrics.compat"):
        ViewSettings(compat=("prometheus_nonsense",))


def test_tls(tmp_path, clock):
    import shutil
    import ssl
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    view = make_view(clock)
    view.set_offsets_topic_progress({}, ready=True)
    exporter = start_exporter(view, ExporterSettings(listen="127.0.0.1:0", certfile=str(cert),
                                                     keyfile=str(key)))
    try:
        context = ssl.create_default_context(cafile=str(cert))
        url = f"https://127.0.0.1:{exporter.port}/metrics"
        with urllib.request.urlopen(url, context=context, timeout=30) as response:
            assert value(parse(response.read().decode()), "groupscope_ready") == 1
        with pytest.raises(OSError):  # plain HTTP is not served (reset or refused)
            urllib.request.urlopen(f"http://127.0.0.1:{exporter.port}/metrics", timeout=5).read()
    finally:
        exporter.stop()


def test_scrape_picks_up_group_changes_without_a_refresh(served, clock):
    view, port = served()
    feed_orders_group(view, clock)
    s = parse(scrape(port)[1])
    assert value(s, "kafka_consumergroup_lag", group="shop", topic="orders", partition="1") == 50
    members = [member("m-a", [("orders", 0), ("orders", 1), ("orders", 2)])]
    view.update_groups([snapshot("shop", members, [("orders", 1, 290, T0 - 2)], generation=6)])
    view.set_record_totals({"offset_commit": 7}, {"malformed": 2})
    s = parse(scrape(port)[1])
    assert value(s, "kafka_consumergroup_lag", group="shop", topic="orders", partition="1") == 10
    assert value(s, "kafka_consumergroup_generation", group="shop") == 6
    assert value(s, "kafka_consumergroup_unassigned_partitions", group="shop", topic="orders") == 1
    assert value(s, "groupscope_records_total", type_name="offset_commit") == 7
    assert value(s, "groupscope_records_skipped_total", reason="malformed") == 2


@pytest.mark.parametrize("granularity", GRANULARITIES)
@pytest.mark.parametrize("compat,member_lag", [((), False), ((), True),
                                               *(((target,), False) for target in COMPAT_TARGETS),
                                               (COMPAT_TARGETS, True)])
def test_exposition_matches_the_catalog(served, clock, compat, granularity, member_lag):
    """Every series the catalog declares for these compat targets, this granularity and these
    switches (what dashboards and rules are checked against) is exported with exactly those
    labels, and nothing else is."""
    view, port = served(compat=compat, granularity=granularity, member_lag=member_lag)
    feed_orders_group(view, clock)
    feed_share_group(view)
    clock.now += 5  # the share-partitions' start offsets seen again: their rates have a span
    feed_share_group(view)
    view.apply_events([{"event": "rebalance", "group": "shop", "timestamp_ms": int(T0 * 1000),
                        "partition": 1, "offset": 1, "end_ms": int(T0 * 1000),
                        "duration_seconds": 1.0, "sync_seconds": 0.1, "partitions_moved": []}])
    view.set_record_totals({"offset_commit": 1}, {"malformed": 1})
    view.set_offsets_topic_progress({0: 0}, ready=True)
    view.set_source_refusal("connect", "authentication failed (SASL PLAIN): check the password")
    with view.lock:  # as topic_configs_poller reads them: retention risk needs the settings
        view.retention.update({"orders": parse_config({"retention.ms": "86400000"})}, 0)
    seen: dict[str, set[frozenset[str]]] = {}
    for family in text_string_to_metric_families(scrape(port)[1]):
        for sample in family.samples:
            seen.setdefault(sample.name, set()).add(frozenset(sample.labels))
    expected = exported_series(compat, granularity, view.settings.switches)
    assert set(seen) == set(expected)
    for name, label_sets in seen.items():
        assert label_sets == {expected[name]}, name


def refresh_scenario() -> list[int]:
    """collector_probe scenario: one refresh of a 100-group view."""
    view = make_view(Clock())
    view.update_topic_metadata({}, {"orders": 50})
    view.update_groups([snapshot(f"g{g}", [], [("orders", p, 100 + p, T0 - 30) for p in range(50)])
                        for g in range(100)])
    view.update_end_offsets({("orders", p): 400 for p in range(50)}, {}, T0 - 5, 0.01)
    cache = MetricsCache(view)
    # A view this small would trigger few collections anyway (each cheap; with 10^5 partitions
    # each full one scans them all): a low threshold makes every allocation burst show.
    gc.set_threshold(10)
    with garbage_collections() as collections:
        cache.refresh()
    assert gc.isenabled()
    lag = parse(cache.text())["kafka_consumergroup_lag"]
    assert len(lag) == 100 * 50 and set(lag.values()) == {400 - 100 - p for p in range(50)}
    return collections


def test_a_refresh_runs_without_a_garbage_collection():
    # It builds every group's figures and keeps them, no cycles among them (streaming.gc_pause).
    collections = collections_in_fresh_interpreter("tests.unit.test_exporter:refresh_scenario")
    assert len(collections) <= 1  # at most one, as the collector is turned back on


_OPS = st.one_of(
    st.tuples(st.just("commit"), st.integers(0, 2), st.integers(0, 2), st.integers(0, 40)),
    st.tuples(st.just("end"), st.integers(0, 2), st.integers(0, 40)),
    st.tuples(st.just("start"), st.integers(0, 2), st.integers(0, 40)),
    st.tuples(st.just("wait"), st.floats(0.5, 90.0)),
    st.tuples(st.just("refresh")),
    st.tuples(st.just("scrape")),
    # groups without members (served as one block of columns, streaming.exporter.plain_states)
    st.tuples(st.just("plain"), st.integers(0, 2), st.integers(0, 2), st.integers(0, 40),
              st.integers(0, 2)),
    st.tuples(st.just("join"), st.integers(0, 2)),
    st.tuples(st.just("drop"), st.integers(0, 2)))
# Names a label must escape, and one sorted between the others'.
_PLAIN_NAMES = ('plain "quoted"', "plain\\back\nslash", "g1-plain")


@settings(max_examples=150, deadline=None)
@given(st.lists(_OPS, max_size=30))
# A group caught up falls behind and a scrape renders it, then time passes.
@example([("commit", 0, 0, 10), ("end", 0, 10), ("refresh",), ("commit", 0, 0, 4), ("scrape",),
          ("wait", 30.0), ("refresh",)])
def test_the_cache_serves_what_a_full_evaluation_does(ops):
    """Commits, polls (end offsets and log starts up, down or unchanged), time passing, refreshes
    and scrapes in any order: right after each refresh (which brings time lags up to now; between
    refreshes a scrape serves them as of the last one), the cached exposition, which renders a
    group's state part again only when it changed, equals evaluating everything afresh."""
    clock = Clock()
    view = make_view(clock, compat=COMPAT_TARGETS)
    view.update_topic_metadata({}, {"orders": 3})
    cache = MetricsCache(view)
    offsets: dict[int, dict[int, int]] = {}
    for op in ops:
        if op[0] == "commit":
            _, g, p, offset = op
            offsets.setdefault(g, {})[p] = offset
            view.update_groups([snapshot(f"g{g}", [member("m", [("orders", p)])],
                                         [("orders", q, o, clock.now) for q, o in
                                          sorted(offsets[g].items())], updated_s=clock.now)])
        elif op[0] == "end":
            clock.now += 0.1
            view.update_end_offsets({("orders", op[1]): op[2]}, {}, clock.now, 0.01)
        elif op[0] == "start":
            view.update_end_offsets({}, {("orders", op[1]): op[2]}, clock.now, 0.01)
        elif op[0] in ("plain", "join"):
            name = _PLAIN_NAMES[op[1]]
            if op[0] == "plain":
                offsets.setdefault(name, {})[op[2]] = op[3]
            members = [member("m", [("orders", 0)])] if op[0] == "join" else []
            made = snapshot(name, members, [("orders", q, o, clock.now) for q, o in
                                            sorted(offsets.get(name, {}).items())],
                            generation=1 if members else 0, protocol="range" if members else None,
                            state=("Empty", "Stable", "Dead")[op[4]] if op[0] == "plain"
                            else "Stable", updated_s=clock.now)
            if op[0] == "plain" and op[4] == 1:
                made["coordinator_partition"] = None  # as the Admin API's look gives it
            view.update_groups([made])
        elif op[0] == "drop":
            view.apply_events([{"event": "group_deleted", "group": _PLAIN_NAMES[op[1]],
                                "timestamp_ms": int(clock.now * 1000) + 1}])
        elif op[0] == "wait":
            clock.now += op[1]
        elif op[0] == "refresh":
            cache.refresh()
            assert cache.text() == render_text(build_families(view))
        else:
            cache.text()
    cache.refresh()
    assert cache.text() == render_text(build_families(view))


_GRANULARITY_OPS = st.one_of(
    st.tuples(st.just("commit"), st.integers(0, 2), st.sampled_from(("orders", "audit")),
              st.integers(0, 3), st.integers(0, 40)),
    st.tuples(st.just("end"), st.sampled_from(("orders", "audit")), st.integers(0, 3),
              st.integers(0, 40)),
    st.tuples(st.just("start"), st.sampled_from(("orders", "audit")), st.integers(0, 3),
              st.integers(0, 40)),
    st.tuples(st.just("wait"), st.floats(0.5, 90.0)))


def _by_topic(families, name: str, combine) -> dict[tuple, float]:
    """A per-partition family rolled up by (group, topic) with `combine` (sum, max, ...)."""
    rolled: dict[tuple, list] = {}
    for labels, sample in families[name].samples:
        if sample == sample:  # NaN (an unknown time lag) takes part in no roll-up
            rolled.setdefault((labels[1], labels[2]), []).append(sample)
    return {key: combine(samples) for key, samples in rolled.items()}


def _topic_family(families, name: str) -> dict[tuple, float]:
    return {(labels[1], labels[2]): sample for labels, sample in families[name].samples}


@settings(max_examples=100, deadline=None)
@given(st.lists(_GRANULARITY_OPS, max_size=40))
# Two partitions of a topic behind their log start, at different lags and statuses.
@example([("commit", 0, "orders", 0, 5), ("commit", 0, "orders", 1, 8), ("end", "orders", 0, 30),
          ("end", "orders", 1, 8), ("start", "orders", 0, 20), ("start", "orders", 1, 20),
          ("wait", 30.0), ("end", "orders", 0, 35), ("commit", 1, "audit", 2, 3),
          ("end", "audit", 2, 3)])
def test_topic_granularity_serves_the_per_topic_roll_ups_of_the_partition_series(ops):
    """Two views fed the same commits, polls and time, one at each metrics.granularity: the topic
    one serves, per group and topic, the sums, maxima and status counts of the partition one's
    series, the same group-level series, and no series per group and partition; its cache serves
    what evaluating it afresh does."""
    clock = Clock()
    views = {g: make_view(clock, granularity=g, compat=COMPAT_TARGETS) for g in GRANULARITIES}
    topic_cache = MetricsCache(views["topic"])
    offsets: dict[int, dict[tuple[str, int], int]] = {}
    for view in views.values():
        view.update_topic_metadata({}, {"orders": 4, "audit": 4})
    for op in ops:
        for view in views.values():
            if op[0] == "commit":
                _, g, topic, p, offset = op
                offsets.setdefault(g, {})[(topic, p)] = offset
                view.update_groups([snapshot(
                    f"g{g}", [member("m", [(topic, p)], topics=("orders", "audit"))],
                    [(t, q, o, clock.now) for (t, q), o in sorted(offsets[g].items())],
                    updated_s=clock.now)])
            elif op[0] == "end":
                view.update_end_offsets({(op[1], op[2]): op[3]}, {}, clock.now + 0.1, 0.01)
            elif op[0] == "start":
                view.update_end_offsets({}, {(op[1], op[2]): op[3]}, clock.now, 0.01)
        clock.now += op[1] if op[0] == "wait" else 0.1 if op[0] == "end" else 0.0
    per_partition = {f.name: f for f in build_families(views["partition"])}
    per_topic = {f.name: f for f in build_families(views["topic"])}
    assert _topic_family(per_topic, "kafka_consumergroup_topic_lag") == _by_topic(
        per_partition, "kafka_consumergroup_lag", sum)
    assert _topic_family(per_topic, "kafka_consumergroup_topic_max_lag") == _by_topic(
        per_partition, "kafka_consumergroup_lag", max)
    assert _topic_family(per_topic, "kafka_consumergroup_topic_max_lag_seconds") == _by_topic(
        per_partition, "kafka_consumergroup_lag_seconds", max)
    assert _topic_family(per_topic, "kafka_consumergroup_topic_messages_lost") == _by_topic(
        per_partition, "kafka_consumergroup_messages_lost", sum)
    assert _topic_family(per_topic, "kafka_consumergroup_topic_committed_offset") == _by_topic(
        per_partition, "kafka_consumergroup_committed_offset", sum)
    statuses: dict[tuple, int] = {}
    for labels, code in per_partition["kafka_consumergroup_partition_status"].samples:
        key = (labels[1], labels[2], Status(code).name)
        statuses[key] = statuses.get(key, 0) + 1
    assert {labels[1:]: n for labels, n in
            per_topic["kafka_consumergroup_topic_status_partitions"].samples} == statuses
    for name, family in per_topic.items():
        if name in per_partition:
            assert render_text([family]) == render_text([per_partition[name]]), name
        assert "partition" not in family.label_names or family.label_names[:2] != (
            "cluster", "group"), name
    topic_cache.refresh()
    assert topic_cache.text() == render_text(build_families(views["topic"]))


def renders_of(monkeypatch, part: str) -> list[str]:
    """The names of the groups whose `part` (an Evaluator method) is evaluated from now on."""
    rendered: list[str] = []
    evaluate = getattr(Evaluator, part)
    monkeypatch.setattr(Evaluator, part, lambda self, group, sink: (
        rendered.append(group.name), evaluate(self, group, sink))[1])
    return rendered


def test_a_refresh_renders_the_state_of_only_the_groups_that_changed(clock, monkeypatch):
    """The lag part is evaluated whole (as columns) at every refresh; a group's state part only
    when the group's state changed (not when it only committed)."""
    view = make_view(clock)
    view.update_topic_metadata({}, {"orders": 3})
    for g, committed in enumerate((10, 10, 4)):  # g2 lags: its time lag grows as time passes
        view.update_groups([snapshot(f"g{g}", [member("m", [("orders", g)])],
                                     [("orders", g, committed, T0 - 30)])])
    ends = {("orders", p): 10 for p in range(3)}
    view.update_end_offsets(ends, {}, T0 - 20, 0.01)
    cache = MetricsCache(view)
    cache.refresh()
    rendered = renders_of(monkeypatch, "group_state")
    clock.now += 60
    view.update_end_offsets({**ends, ("orders", 1): 12}, {}, T0 + 40, 0.01)
    cache.refresh()
    assert rendered == []
    samples = parse(cache.text())
    assert value(samples, "kafka_consumergroup_lag", group="g1", topic="orders",
                 partition="1") == 2
    assert value(samples, "kafka_consumergroup_lag_seconds", group="g2", topic="orders",
                 partition="2") > 60
    # A commit alone changes the lag part only.
    view.update_groups([snapshot("g2", [member("m", [("orders", 2)])],
                                 [("orders", 2, 9, clock.now)], updated_s=clock.now)])
    samples = parse(cache.text())
    assert rendered == []
    assert value(samples, "kafka_consumergroup_lag", group="g2", topic="orders",
                 partition="2") == 1
    view.update_groups([snapshot("g1", [member("m", [("orders", 1)])],
                                 [("orders", 1, 12, clock.now)], generation=5)])
    samples = parse(cache.text())
    assert rendered == ["g1"]
    assert value(samples, "kafka_consumergroup_lag", group="g1", topic="orders",
                 partition="1") == 0
    assert value(samples, "kafka_consumergroup_generation", group="g1") == 5
    assert cache.text() == render_text(build_families(view))


def test_the_poller_renders_again_only_what_a_scrape_read(clock, monkeypatch):
    """After a poll the cache renders again only if a scrape read its last render: polls with no
    scrape between them render nothing (the next scrape renders what it serves)."""
    view = make_view(clock)
    view.update_topic_metadata({}, {"orders": 1})
    view.update_groups([snapshot("g", [member("m", [("orders", 0)])], [("orders", 0, 4, T0 - 30)])])
    cache = MetricsCache(view)
    refreshes = []
    refresh = MetricsCache.refresh
    monkeypatch.setattr(MetricsCache, "refresh",
                        lambda self, *slots: (refreshes.append(clock.now), refresh(self, *slots))[1])
    for step in range(3):
        view.update_end_offsets({("orders", 0): 10 + step}, {}, T0 + step, 0.01)
        cache.refresh_if_read()
    assert len(refreshes) == 1  # the first render; nothing read it since
    assert value(parse(cache.text()), "kafka_consumergroup_lag", group="g", topic="orders",
                 partition="0") == 8
    view.update_end_offsets({("orders", 0): 20}, {}, T0 + 5, 0.01)
    cache.refresh_if_read()
    assert len(refreshes) == 3  # the scrape's (the view changed) and the poll's after it
    assert value(parse(cache.text()), "kafka_consumergroup_lag", group="g", topic="orders",
                 partition="0") == 16


def test_a_scrape_of_some_families_does_not_make_the_poller_render_them_all(clock, monkeypatch):
    """A scrape that asks for some families (`name[]`, the committed offsets alone: a watcher
    read back to back) is answered on its own path; it neither counts as a read of the whole
    render nor sets the scrapes' pace, so the poller does not render every family after each
    poll for it."""
    view = make_view(clock)
    view.update_topic_metadata({}, {"orders": 1})
    view.update_groups([snapshot("g", [member("m", [("orders", 0)])], [("orders", 0, 4, T0 - 30)])])
    cache = MetricsCache(view)
    cache.text()
    refreshes = []
    refresh = MetricsCache.refresh
    monkeypatch.setattr(MetricsCache, "refresh",
                        lambda self, *slots: (refreshes.append(clock.now), refresh(self, *slots))[1])
    asked = ["kafka_consumergroup_committed_offset"]
    for step in range(3):
        clock.now += 1
        view.update_end_offsets({("orders", 0): 10 + step}, {}, clock.now, 0.01)
        cache.refresh_if_read()  # after the first: nothing read it since
        b"".join(cache.exposition(asked))
    assert len(refreshes) == 1 and cache.poll_by() is None
    assert value(parse(cache.text()), "kafka_consumergroup_lag", group="g", topic="orders",
                 partition="0") == 8


def test_the_poller_renders_for_the_last_poll_before_a_scrape(clock, monkeypatch):
    """Scrapes every 15 s, polls every 5 s: once two scrapes set the pace, the one render a
    scrape interval is after the last poll before the next scrape, and that scrape renders
    nothing itself, yet serves the lag of that poll."""
    view = make_view(clock)
    view.update_topic_metadata({}, {"orders": 1})
    view.update_groups([snapshot("g", [member("m", [("orders", 0)])], [("orders", 0, 4, T0 - 30)])])
    cache = MetricsCache(view, max_age_s=60.0)
    cache.poll_interval_s = 5.0
    refreshes = []
    refresh = MetricsCache.refresh
    monkeypatch.setattr(MetricsCache, "refresh",
                        lambda self, *slots: (refreshes.append(clock.now), refresh(self, *slots))[1])
    at_scrape = []
    for scrape in range(4):
        clock.now = T0 + 15 * scrape
        before = len(refreshes)
        served = parse(cache.text())
        at_scrape.append(len(refreshes) - before)
        if scrape >= 2:  # the end offset of the poll 2 s before, less the committed 4
            assert value(served, "kafka_consumergroup_lag", group="g", topic="orders",
                         partition="0") == 100 * scrape - 2 - 4
        for poll in (3, 8, 13):
            clock.now = T0 + 15 * scrape + poll
            view.update_end_offsets({("orders", 0): 100 * (scrape + 1) + poll - 15}, {},
                                    clock.now, 0.01)
            cache.refresh_if_read()
    # The first scrape renders, the first poll after it too (no pace yet), the second scrape
    # renders what two polls changed; from the third, each scrape finds its render done.
    assert at_scrape == [1, 1, 0, 0]
    assert [round(t - T0) for t in refreshes] == [0, 3, 15, 28, 43, 58]


def test_metadata_that_did_not_change_renders_no_group_again(clock, monkeypatch):
    view = make_view(clock)
    view.update_topic_metadata({"AAAAAAAAAAAAAAAAAAAAAQ": "orders"}, {"orders": 3})
    for g in range(3):
        view.update_groups([snapshot(f"g{g}", [member("m", [("orders", g)])],
                                     [("orders", g, 10, T0 - 30)])])
    cache = MetricsCache(view)
    cache.refresh()
    rendered = renders_of(monkeypatch, "group_state")
    view.update_topic_metadata({"AAAAAAAAAAAAAAAAAAAAAQ": "orders"}, {"orders": 3})  # the same
    cache.refresh()
    assert rendered == []
    view.update_topic_metadata({"AAAAAAAAAAAAAAAAAAAAAQ": "orders"}, {"orders": 4})  # grew
    cache.refresh()
    assert sorted(rendered) == ["g0", "g1", "g2"]
    assert value(parse(cache.text()), "kafka_consumergroup_unassigned_partitions", group="g0",
                 topic="orders") == 3
    assert cache.text() == render_text(build_families(view))


def test_rebalance_histograms_appear_with_a_groups_first_member(clock):
    view = make_view(clock)
    view.update_topic_metadata({}, {"orders": 2})
    # Offsets committed by a consumer that assigns its partitions itself: no member, ever.
    view.update_groups([snapshot("etl", [], [("orders", 0, 5, T0 - 30)], generation=0,
                                 state="Empty", subscribed=[])])
    view.update_groups([snapshot("app", [member("m", [("orders", 1)])],
                                 [("orders", 1, 7, T0 - 30)])])
    cache = MetricsCache(view)
    histograms = ("kafka_consumergroup_rebalance_duration_seconds",
                  "kafka_consumergroup_rebalance_sync_duration_seconds",
                  "kafka_consumergroup_rebalance_downtime_seconds")

    def histogram_groups(samples):
        return {name: {dict(k)["group"] for k in samples.get(name + "_count", {})}
                for name in histograms}

    s = parse(cache.text())
    assert histogram_groups(s) == {name: {"app"} for name in histograms}
    assert value(s, "kafka_consumergroup_rebalance_duration_seconds_count", group="app") == 0
    assert value(s, "kafka_consumergroup_rebalances_total", group="etl") == 0
    assert value(s, "kafka_consumergroup_committed_offset", group="etl", topic="orders",
                 partition="0") == 5
    view.update_groups([snapshot("etl", [member("e", [("orders", 0)])],
                                 [("orders", 0, 6, T0 - 10)], generation=1)])
    s = parse(cache.text())
    assert histogram_groups(s) == {name: {"app", "etl"} for name in histograms}
    assert cache.text() == render_text(build_families(view))


def test_a_gzipped_scrape_is_the_plain_one_compressed(served, clock):
    view, port = served()
    feed_orders_group(view, clock)
    plain = scrape(port)[1]
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics",
                                     headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.headers["Content-Encoding"] == "gzip"
        body = response.read()
    assert gzip.decompress(body).decode() == plain
    assert value(parse(plain), "kafka_consumergroup_lag", group="shop", topic="orders",
                 partition="1") == 50


def test_a_large_exposition_is_served_whole_in_pieces(served, clock):
    """Past the sizes at which the server cuts its pieces (a family's group states joined
    64 KB at a time, the lag part sent 1 MB at a time): plain, gzipped and `text()` agree."""
    view, port = served()
    view.update_topic_metadata({}, {"orders": 20})
    view.update_groups([snapshot(f"g{g:04d}", [member(f"m{g}", [("orders", p) for p in range(20)])],
                                 [("orders", p, 1000 + g, T0 - 30) for p in range(20)])
                        for g in range(700)])
    view.update_end_offsets({("orders", p): 5000 for p in range(20)},
                            {("orders", p): 0 for p in range(20)}, T0 - 5, 0.01)
    plain = scrape(port)[1]
    assert len(plain) > 2 * 2**20
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics",
                                     headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(request, timeout=30) as response:
        assert gzip.decompress(response.read()).decode() == plain
    samples = parse(plain)
    assert len(samples["kafka_consumergroup_member_assigned_partitions"]) == 700
    assert {v for v in samples["kafka_consumergroup_lag"].values()} == {5000 - 1000 - g
                                                                        for g in range(700)}


def test_a_scrape_serves_the_picture_it_started_from(clock):
    view = make_view(clock)
    feed_orders_group(view, clock)
    cache = MetricsCache(view)
    before = cache.text()
    pieces = cache.exposition()
    members = [member("m-a", [("orders", 0), ("orders", 1), ("orders", 2)])]
    view.update_groups([snapshot("shop", members, [("orders", 1, 290, T0 - 2)], generation=6)])
    cache.refresh()  # replaces the group's parts while the first scrape is still being read
    assert b"".join(pieces).decode() == before
    after = parse(cache.text())
    assert value(after, "kafka_consumergroup_generation", group="shop") == 6
    assert cache.text() == render_text(build_families(view))


def test_a_group_first_seen_dead_keeps_its_labels(served, clock):
    # Created and deleted within one micro-batch: the Dead snapshot is the first the view sees.
    view, port = served(dead_grace_s=60.0)
    view.update_groups([snapshot("brief", [], [], state="Dead")])
    s = parse(scrape(port)[1])
    assert value(s, "kafka_consumergroup_info", group="brief", group_type="classic", protocol_type="consumer",
                 protocol="range", state="Dead", coordinator_partition="12") == 1


def test_a_group_that_never_rebalanced_holds_no_histogram_of_its_own():
    view = MonitorView(ViewSettings(cluster="c"), clock=Clock())
    view.update_groups([snapshot("quiet", [], [("orders", 0, 5, T0 - 60)]),
                        snapshot("busy", [member("m1", [("orders", 0)])], [("orders", 0, 5, T0 - 60)])])
    view.apply_events([{"event": "rebalance", "group": "busy", "timestamp_ms": int(T0 * 1000),
                        "duration_seconds": 2.0, "sync_seconds": 0.5, "partitions_moved": []}])
    quiet, busy = view.groups["quiet"], view.groups["busy"]
    assert quiet._histograms is None and quiet.rebalance_duration.count == 0
    assert (busy.rebalance_duration.count, busy.rebalance_duration.sum) == (1, 2.0)
    assert busy.sync_duration.count == 1 and busy.downtime.count == 0
    assert busy.downtime is quiet.downtime  # both share the one empty histogram
    with pytest.raises(TypeError):
        quiet.downtime.observe(1.0)  # the shared one is read-only
    text = MetricsCache(view).text()
    assert 'kafka_consumergroup_rebalance_duration_seconds_count{cluster="c",group="busy"} 1' in text
    assert 'kafka_consumergroup_rebalance_downtime_seconds_count{cluster="c",group="busy"} 0' in text


def test_many_plain_groups_are_served_from_their_kept_block():
    """Groups without members render as one block of columns, large families kept gzipped:
    served whole, plain or gzipped, and equal to evaluating each group on its own."""
    clock = Clock()
    view = make_view(clock)
    view.update_groups([snapshot(f"batch-{g:05d}", [], [("orders", 0, g, T0 - 5)], generation=0,
                                 protocol=None, state="Empty") for g in range(3000)])
    cache = MetricsCache(view)
    text = cache.text()
    assert any(isinstance(piece, GzipMember) for piece in cache.plain_chunks)
    assert text == render_text(build_families(view))
    sent = b"".join(gzipped(cache.exposition(members=True)))
    assert gzip.decompress(sent).decode() == text
    info = parse(text)["kafka_consumergroup_info"]
    assert len(info) == 3000 and set(info.values()) == {1}
