"""End to end on a real broker: the job reads a real-format offsets log from Apache Kafka with the
default kafka-python source, polls real end offsets, and serves /metrics over HTTP.

The log is hand-made: the records Kafka's group coordinator would write (through the codec), each
group's records in `partition_for(group)` of an ordinary 50-partition topic that the job reads as
its `source.topic`. Kafka refuses produce to `__consumer_offsets` itself, and its coordinator would
take synthetic records there for real group state.
"""
from __future__ import annotations

import os
import time
import uuid

import pytest

from tests.support.kafka_broker import create_topic, produce_raw
from tests.support.scrape_support import parse, scrape
from coordinator import partition_for
from coordinator.records import encode
from tests.support.state_timeline import (cg_current, cg_epoch, cg_member, cg_target, cg_target_epoch,
                            group_metadata, member, offset_commit)
from streaming.config import load_config
from streaming.kafka.client import KafkaPythonOffsets
from streaming.job.lifecycle import Job

T0 = int(time.time() * 1000) - 60_000  # a minute ago: recent enough that no group expires
ORDERS_ENDS = {0: 40, 1: 50, 2: 60, 3: 70}
PAY_ENDS = {0: 30, 1: 20}


def _produce_data(bootstrap: str, topic: str, ends: dict[int, int]) -> None:
    create_topic(bootstrap, topic, len(ends))
    produce_raw(bootstrap, topic, [(p, b"k", b"v", T0) for p, n in ends.items() for _ in range(n)])


def _timeline(orders: str, pay: str, pay_id: str):
    """(record, timestamp) in log order: a classic group that rebalances, a KIP-848 group."""
    out = []
    ts = T0
    m1 = member("m1", [orders], [(orders, p) for p in range(4)])
    out.append((group_metadata("orders-app", 1, [m1], state_ts=ts - 300), ts))
    for i in range(3):
        ts += 1000
        out += [(offset_commit("orders-app", orders, p, 5 * i + p, ts), ts) for p in range(4)]
    ts += 300
    out += [(offset_commit("orders-app", orders, p, 20 + p, ts), ts) for p in range(4)]
    ts += 2000
    m1b = member("m1", [orders], [(orders, 0), (orders, 1)])
    m2 = member("m2", [orders], [(orders, 2), (orders, 3)], client_id="client-2", host="/10.0.0.9")
    out.append((group_metadata("orders-app", 2, [m1b, m2], state_ts=ts - 250), ts))
    ts += 1000
    out += [(offset_commit("orders-app", orders, p, 30 + p, ts), ts) for p in range(4)]
    # KIP-848: one member joins, gets both partitions of `pay`, commits.
    ts += 1000
    out += [(cg_member("payments", "c1", [pay]), ts), (cg_epoch("payments", 1), ts),
            (cg_target("payments", "c1", [(pay_id, 0), (pay_id, 1)]), ts),
            (cg_target_epoch("payments", 1), ts),
            (cg_current("payments", "c1", 1, [(pay_id, 0), (pay_id, 1)], previous=0), ts + 150)]
    out += [(offset_commit("payments", pay, p, 25 - 10 * p, ts + 500, version=4, leader_epoch=0), ts + 500)
            for p in range(2)]
    return out


def _scrape(port: int) -> dict[str, dict[frozenset, float]]:
    return parse(scrape(port)[1])


def _value(samples, name, **labels):
    labels.setdefault("cluster", "e2e")
    return samples.get(name, {}).get(frozenset(labels.items()))


@pytest.fixture(scope="module")
def running(spark, broker, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("job-kafka")
    suffix = uuid.uuid4().hex[:8]
    orders, pay, offsets_topic = f"orders-{suffix}", f"pay-{suffix}", f"offsets-{suffix}"
    _produce_data(broker.bootstrap, orders, ORDERS_ENDS)
    _produce_data(broker.bootstrap, pay, PAY_ENDS)
    client = KafkaPythonOffsets({"bootstrap_servers": broker.bootstrap}, timeout_s=10.0)
    try:
        names, _counts = client.topic_metadata()
    finally:
        client.close()
    pay_id = next(tid for tid, name in names.items() if name == pay)
    create_topic(broker.bootstrap, offsets_topic, 50)
    records = []
    for rec, ts in _timeline(orders, pay, pay_id):
        key, value = encode(rec)
        group = rec.key.get("group", rec.key.get("group_id"))
        records.append((partition_for(group, 50), key, value, ts))
    # A record that does not decode, and one of a type nobody knows: counted and skipped.
    records.append((7, b"\x00\x01\x00\x03abc", b"\x00\x03\x00", T0))
    records.append((8, b"\x00\x63\x00\x01g", b"\x00\x00", T0))
    produce_raw(broker.bootstrap, offsets_topic, records)
    env = {
        "GROUPSCOPE_CLUSTER__NAME": "e2e",
        "GROUPSCOPE_SOURCE__BOOTSTRAP_SERVERS": broker.bootstrap,
        "GROUPSCOPE_SOURCE__TOPIC": offsets_topic,
        "GROUPSCOPE_CHECKPOINT__PATH": os.path.join(str(tmp), "checkpoint"),
        "GROUPSCOPE_HISTORY__PATH": os.path.join(str(tmp), "history"),
        "GROUPSCOPE_EXPORTER__LISTEN": "127.0.0.1:0",
        "GROUPSCOPE_TRIGGER__INTERVAL": "1s",
        "GROUPSCOPE_LAG__POLL_INTERVAL": "1s",
        "GROUPSCOPE_METRICS__COMPAT": "burrow",
    }
    job = Job(load_config(None, env=env), spark=spark)
    job.start()
    try:
        deadline = time.monotonic() + 300
        samples = {}
        while time.monotonic() < deadline:
            job.query.processAllAvailable()
            samples = _scrape(job.exporter.port)
            if (_value(samples, "groupscope_ready") == 1
                    and _value(samples, "kafka_consumergroup_lag", group="payments", topic=pay,
                               partition="1") is not None
                    and _value(samples, "kafka_consumergroup_lag", group="orders-app",
                               topic=orders, partition="3") is not None):
                break
            time.sleep(1)
        yield job, samples, orders, pay
    finally:
        job.stop()


def test_lag_per_partition_and_rollups(running):
    job, s, orders, pay = running
    committed = {p: 30 + p for p in range(4)}
    for p, end in ORDERS_ENDS.items():
        assert _value(s, "kafka_partition_log_end_offset", topic=orders, partition=str(p)) == end
        assert _value(s, "kafka_consumergroup_committed_offset", group="orders-app", topic=orders,
                      partition=str(p)) == committed[p]
        assert _value(s, "kafka_consumergroup_lag", group="orders-app", topic=orders,
                      partition=str(p)) == end - committed[p]
    total = sum(ORDERS_ENDS[p] - committed[p] for p in range(4))
    assert _value(s, "kafka_consumergroup_topic_lag", group="orders-app", topic=orders) == total
    assert _value(s, "kafka_consumergroup_group_lag", group="orders-app") == total
    assert _value(s, "kafka_consumergroup_group_max_lag", group="orders-app") == 70 - 33
    # KIP-848 group: committed 25 and 15 against 30 and 20.
    assert _value(s, "kafka_consumergroup_lag", group="payments", topic=pay, partition="0") == 5
    assert _value(s, "kafka_consumergroup_lag", group="payments", topic=pay, partition="1") == 5


def test_group_state_series(running):
    job, s, orders, pay = running
    assert _value(s, "kafka_consumergroup_members", group="orders-app") == 2
    assert _value(s, "kafka_consumergroup_generation", group="orders-app") == 2
    info = {dict(k)["group"]: dict(k) for k in s["kafka_consumergroup_info"]}
    assert info["orders-app"]["state"] == "Stable" and info["orders-app"]["protocol"] == "range"
    assert info["orders-app"]["coordinator_partition"] == str(partition_for("orders-app"))
    assert info["payments"]["group_type"] == "consumer" and info["payments"]["state"] == "Stable"
    assert _value(s, "kafka_consumergroup_member_assigned_partitions", group="orders-app",
                  member_id="m2", client_id="client-2", client_host="/10.0.0.9", instance_id="") == 2
    # The KIP-848 assignment is by topic id; the metadata poll resolves it to the name.
    assert _value(s, "kafka_consumergroup_member_assigned_partitions", group="payments",
                  member_id="c1", client_id="client", client_host="/10.0.0.2", instance_id="") == 2


def test_rebalance_counters_and_histograms(running):
    job, s, orders, pay = running
    assert _value(s, "kafka_consumergroup_rebalances_total", group="orders-app") == 2
    assert _value(s, "kafka_consumergroup_rebalance_partitions_moved_total", group="orders-app") == 2
    assert _value(s, "kafka_consumergroup_rebalance_duration_seconds_count", group="orders-app") == 2
    assert _value(s, "kafka_consumergroup_rebalance_sync_duration_seconds_sum",
                  group="orders-app") == pytest.approx(0.3 + 0.25)
    assert _value(s, "kafka_consumergroup_rebalances_total", group="payments") == 1


def test_monitor_series(running):
    job, s, orders, pay = running
    assert _value(s, "groupscope_records_total", type_name="offset_commit") == 22
    assert _value(s, "groupscope_records_total", type_name="group_metadata") == 2
    assert _value(s, "groupscope_records_skipped_total", reason="malformed") == 1
    assert _value(s, "groupscope_records_skipped_total", reason="unknown_type") == 1
    assert _value(s, "groupscope_ready") == 1
    assert all(v == 0 for v in s["groupscope_offsets_topic_lag"].values())


def test_batch_duration_is_sparks_own_per_micro_batch(running):
    job, _, _, _ = running
    # Reports with no input are Spark checking for data while idle, not micro-batches.
    expected = {p["batchId"]: p["batchDuration"] / 1000 for p in job.query.recentProgress
                if p["numInputRows"] > 0}
    assert expected
    deadline = time.monotonic() + 30
    while True:  # Spark reports progress to listeners asynchronously
        s = _scrape(job.exporter.port)
        count = _value(s, "groupscope_batch_duration_seconds_count")
        if count == len(expected) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert count == len(expected)
    assert _value(s, "groupscope_batch_duration_seconds_sum") == pytest.approx(
        sum(expected.values()))


def test_compat_series(running):
    job, s, orders, pay = running
    # Burrow's exporter names, for dashboards built on it (the other compat sets: test_exporter).
    assert _value(s, "burrow_kafka_consumer_partition_lag", consumer_group="orders-app", topic=orders,
                  partition="0") == 10
    assert _value(s, "burrow_kafka_consumer_lag_total", consumer_group="orders-app") == \
        sum(ORDERS_ENDS[p] - 30 - p for p in range(4))
    assert _value(s, "burrow_kafka_topic_partition_offset", topic=orders, partition="2") == 60
