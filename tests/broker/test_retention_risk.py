"""Retention risk against a real broker, through the job: a topic keeping records 60 s in
segments of 5 s, a producer writing 20 records/s, and three kafka-python consumers committing
to `__consumer_offsets`: one stops, one keeps up, one reads slower than its producer for SLOW_S
and then faster. Beside it a topic deleting by size (retention.bytes 2 MiB in segments of
1 MiB, the least Kafka takes, 5 kB records) that a fourth group stopped on. The job (a query of the
session's Spark) reads their commits, the topics' settings (DescribeConfigs), their sizes
(DescribeLogDirs) and the first unconsumed records (lag.time_method exact); the test scrapes its
/metrics, and a live Prometheus scraping the same endpoint evaluates the repository's two
alerts. About 75 s: the loss takes the retention's 60 s."""
from __future__ import annotations

import math
import re
import threading
import time
import uuid
from pathlib import Path

import pytest
import yaml

from dashboards.livecheck import prometheus_binary, running_prometheus
from dashboards.promtool import RULE_FILES
from tests.support.groupscope_job import run_groupscope_job
from tests.support.kafka_broker import create_topic, end_offsets

pytestmark = [pytest.mark.broker,
              pytest.mark.skipif(prometheus_binary() is None, reason="prometheus not installed "
                                 "(run scripts/ensure-promtool.sh as root)")]

RETENTION_S, SEGMENT_S, CHECK_S = 60.0, 5.0, 1.0  # the session broker checks every second
RATE = 20  # records/s produced
SIZE_LIMIT, SEGMENT_BYTES, RECORD = 2 * 1024 * 1024, 1024 * 1024, 5000  # the topic by size
BY_SIZE = 5  # the risk's method where retention.bytes deletes first
# "will lose records within": the alert's hour is all of a 60 s retention, so the test's copy of
# the alert asks for under 30 s, half the retention
AT_RISK_S = 30.0
# The falling-behind alert's durations, scaled: a minute of them to 800 ms (its 15 minutes to
# 12 s), so that it fires within the slow group's SLOW_S
MINUTE_MS = 800
SLOW_S = 40.0
LAG_SUM = "cluster_group:kafka_consumergroup_lag:sum"  # the recorded lag the alert compares
RISK_ALERT, BEHIND_ALERT = "KafkaConsumerGroupRetentionRisk", "KafkaConsumerGroupFallingBehind"
RISK = "kafka_consumergroup_retention_risk_seconds"
LOST = "kafka_consumergroup_messages_lost"
PLAN = "kafka_consumergroup_catch_up_seconds"


def _rules(tmp_path: Path) -> Path:
    """The repository's two alerts, scaled to a minute's retention: the risk's hour to
    AT_RISK_S, the falling-behind alert's minutes to MINUTE_MS each (its range selectors,
    offsets and `for`), beside the recording rule of the group's lag that it reads."""
    doc = yaml.safe_load(RULE_FILES[1].read_text())
    rules = {r["alert"]: r for g in doc["groups"] for r in g["rules"]
             if r.get("alert") in (RISK_ALERT, BEHIND_ALERT)}
    assert rules[RISK_ALERT]["expr"].count("< 3600") == 2, rules[RISK_ALERT]["expr"]
    rules[RISK_ALERT]["expr"] = rules[RISK_ALERT]["expr"].replace("< 3600", f"< {AT_RISK_S:g}")
    behind = rules[BEHIND_ALERT]
    # the durations this test was scaled for: never for 15 minutes, the lag's lowest of the
    # last 5 above its highest of 10 to 15 minutes ago, for 5 minutes
    durations = r"(\[|offset )(\d+)m\b"
    assert sorted(int(m[1]) for m in re.findall(durations, behind["expr"])) == [5, 5, 10, 15], \
        behind["expr"]
    assert behind["for"] == "5m" and LAG_SUM in behind["expr"], behind
    behind["expr"] = re.sub(durations, lambda m: f"{m[1]}{int(m[2]) * MINUTE_MS}ms",
                            behind["expr"])
    behind["for"] = f"{5 * MINUTE_MS}ms"
    recorded = [r for g in yaml.safe_load(RULE_FILES[0].read_text())["groups"]
                for r in g["rules"] if r.get("record") == LAG_SUM]
    path = tmp_path / "retention_alerts.yml"
    # the recording rule first: a group's rules are evaluated in order
    path.write_text(yaml.safe_dump({"groups": [{"name": "retention", "rules": recorded + list(
        rules.values())}]}, sort_keys=False))
    return path


def _produce(bootstrap: str, topics: dict[str, bytes], stop: threading.Event) -> None:
    """RATE records/s to partition 0 of each topic (its value each)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=0)
    try:
        while not stop.is_set():
            for topic, value in topics.items():
                producer.send(topic, value, partition=0)
            stop.wait(1.0 / RATE)
        producer.flush()
    finally:
        producer.close()


class _Consumers:
    """One kafka-python consumer a group, each assigned partition 0 from `start` and committing
    what it read (groups without members: `Empty`, as a stopped consumer's group is)."""

    def __init__(self, bootstrap: str, groups: dict[str, str]) -> None:
        """`groups`: group -> its topic."""
        from kafka import KafkaConsumer, TopicPartition

        self.tps, self.consumers = {}, {}
        for group, topic in groups.items():
            consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group,
                                     enable_auto_commit=False)
            self.tps[group] = TopicPartition(topic, 0)
            consumer.assign([self.tps[group]])
            consumer.seek(self.tps[group], end_offsets(bootstrap, topic, [0])[0])
            self.consumers[group] = consumer

    def read(self, group: str, most: int | None = None) -> None:
        """Read up to `most` records (all there are: None) and commit the position."""
        consumer = self.consumers[group]
        consumer.poll(timeout_ms=200, max_records=most)
        consumer.commit()

    def stop(self, group: str, commit: bool = False) -> None:
        """Close the group's consumer (`commit`: after committing where it is)."""
        from kafka.structs import OffsetAndMetadata

        consumer, tp = self.consumers.pop(group), self.tps[group]
        if commit:
            consumer.commit({tp: OffsetAndMetadata(consumer.position(tp), "", -1)})
        consumer.close(autocommit=False)

    def close(self) -> None:
        for group in list(self.consumers):
            self.stop(group)


def _figures(samples, group: str) -> dict[str, float]:
    return {name: value for name, series in samples.items() for labels, value in series.items()
            if dict(labels).get("group") == group and "partition" in dict(labels)}


def _spans(samples: list[tuple[float, object]]) -> str:
    """(time, value) samples as runs of one value: '0.8-5.7 s None, 6.6-30.1 s never, ...'."""
    runs: list[list] = []
    for t, value in samples:
        if runs and runs[-1][2] == value:
            runs[-1][1] = t
        else:
            runs.append([t, t, value])
    return ", ".join(f"{a:.1f}-{b:.1f} s {v}" for a, b, v in runs)


def _firing(api) -> set[tuple[str, str]]:
    return {(r["metric"]["alertname"], r["metric"]["group"])
            for r in api.query('ALERTS{alertstate="firing"}')}


def test_a_stopped_group_is_at_risk_before_it_loses_records_and_loses_them_as_forecast(
        spark, broker, tmp_path):
    suffix = uuid.uuid4().hex[:8]
    topic, sized = f"risk-{suffix}", f"risk-size-{suffix}"
    groups = {name: f"{name}-{suffix}" for name in ("stopped", "healthy", "slow", "sized")}
    create_topic(broker.bootstrap, topic, 1, {"retention.ms": str(int(RETENTION_S * 1000)),
                                              "segment.ms": str(int(SEGMENT_S * 1000))})
    create_topic(broker.bootstrap, sized, 1, {"retention.bytes": str(SIZE_LIMIT),
                                              "segment.bytes": str(SEGMENT_BYTES)})
    # Only this test's groups: Prometheus scrapes every second with a timeout of one, and in a
    # whole broker suite a job serving every earlier test's groups answered later than that.
    job = run_groupscope_job(spark, broker.bootstrap, tmp_path / "job", time_method="exact",
                             rate_window="10s", include=(f".*-{suffix}",))
    stop = threading.Event()
    producing = threading.Thread(target=_produce, args=(
        broker.bootstrap, {topic: b"v", sized: b"s" * RECORD}, stop))
    producing.start()
    seen: dict[str, list[tuple[float, dict[str, float]]]] = {name: [] for name in groups}
    alerts: list[tuple[float, set[tuple[str, str]]]] = []
    consumers = None
    try:
        with running_prometheus(f"http://127.0.0.1:{job.port}/metrics",
                                rule_files=(_rules(tmp_path),)) as api:
            time.sleep(2.0)
            consumers = _Consumers(broker.bootstrap, {
                group: sized if name == "sized" else topic for name, group in groups.items()})
            for name in ("stopped", "sized"):
                consumers.stop(groups[name], commit=True)
            # The clock starts once the job has read the log's backlog (in a whole broker
            # suite, that of every test before): the alert's scaled windows leave no room for a
            # job still catching up.
            deadline = time.monotonic() + 120
            while not job.caught_up(samples := job.scrape()):
                assert time.monotonic() < deadline, (
                    "the job did not read __consumer_offsets to its end",
                    samples.get("groupscope_ready"), samples.get("groupscope_offsets_topic_lag"))
                time.sleep(0.5)
            started, lost = time.time(), {}
            while time.time() - started < RETENTION_S + 25:
                time.sleep(0.8)
                now = time.time()
                consumers.read(groups["healthy"])
                # the slow group: a quarter of the producer's pace for SLOW_S, then three
                # times it
                consumers.read(groups["slow"],
                               RATE // 4 if now - started < SLOW_S else 3 * RATE)
                samples = job.scrape()
                for name, group in groups.items():
                    seen[name].append((now - started, _figures(samples, group)))
                alerts.append((now - started, _firing(api)))
                for name in ("stopped", "sized"):
                    if name not in lost and seen[name][-1][1].get(LOST, 0) > 0:
                        lost[name] = now - started
                # and the slow group faster for long enough to lose its alert
                if len(lost) == 2 and now - started > SLOW_S + 15:
                    break
    finally:
        stop.set()
        producing.join()
        if consumers is not None:
            consumers.close()
        job.stop()
    assert "stopped" in lost, "the stopped group lost nothing to retention"
    lost_at = lost["stopped"]
    before = [(t, f) for t, f in seen["stopped"] if t < lost_at and RISK in f]
    # at risk before the loss, read from the record itself, and the risk counted down to it
    flagged = [t for t, f in before if f[RISK] < AT_RISK_S]
    assert flagged and flagged[0] < lost_at - 10, (flagged, lost_at)
    assert all(f["kafka_consumergroup_retention_risk_method"] == 4 for _, f in before)
    # the loss came within the stated error: never before the forecast, at most one segment's
    # time and one retention check after it (and a poll, to be seen)
    forecast = _forecast(before, lost_at, "by age")
    assert forecast - 1.5 <= lost_at <= forecast + SEGMENT_S + CHECK_S + 1.5, \
        (forecast, lost_at)
    last = before[-1][1]
    assert last["kafka_consumergroup_consume_rate"] == 0.0 and last[PLAN] == math.inf
    # Prometheus fired the repository's alert on the served series, ahead of the loss
    risk_fired = [t for t, firing in alerts if (RISK_ALERT, groups["stopped"]) in firing]
    assert risk_fired and risk_fired[0] < lost_at - 10, (risk_fired, lost_at)
    # the healthy group never came near it
    assert all(f.get(RISK, math.inf) >= AT_RISK_S for _, f in seen["healthy"])
    assert all(f.get(LOST, 0) == 0 for _, f in seen["healthy"])
    assert not [t for t, firing in alerts if (RISK_ALERT, groups["healthy"]) in firing]
    # nor the falling-behind alert, though keeping pace at a steady lag its forecast is
    # "never" on some polls: its lag does not grow
    healthy_never = [t for t, f in seen["healthy"] if f.get(PLAN) == math.inf]
    print(f"healthy: forecast never on {len(healthy_never)} of {len(seen['healthy'])} polls")
    assert not [t for t, firing in alerts if (BEHIND_ALERT, groups["healthy"]) in firing], \
        healthy_never
    # the slow group: "never" while slower than its producer, a finite forecast once faster;
    # the falling-behind alert while it was slower, resolved while it caught up
    plan = [(t, f.get(PLAN)) for t, f in seen["slow"]]
    never = [t for t, p in plan if p == math.inf]
    finite = [t for t, p in plan if p is not None and 0 < p < math.inf]
    assert never and min(never) < 20, plan
    assert finite and min(finite) > min(never), plan
    behind = [t for t, firing in alerts if (BEHIND_ALERT, groups["slow"]) in firing]
    timeline = _spans([(t, "never" if p == math.inf else "finite" if p else p) for t, p in plan])
    assert behind and min(behind) < SLOW_S, (_spans([(t, (BEHIND_ALERT, groups["slow"]) in f)
                                                     for t, f in alerts]), timeline)
    resolved = [t for t, firing in alerts if min(behind) < t and min(finite) < t
                and (BEHIND_ALERT, groups["slow"]) not in firing]
    assert resolved, (behind, timeline)
    print(f"slow: falling behind from {min(behind):.1f} s (slower until {SLOW_S:g} s), "
          f"resolved at {min(resolved):.1f} s")
    # by size: at risk from the start (retention.bytes first: the topic keeps records forever
    # by age), lost no earlier than forecast and at most one segment's production later
    assert "sized" in lost, "the group stopped on the size-limited topic lost nothing"
    before = [(t, f) for t, f in seen["sized"] if t < lost["sized"] and RISK in f]
    assert before and before[0][0] < lost["sized"] - 10, ([(t, f.get(RISK)) for t, f in seen["sized"]], lost)
    assert all(f["kafka_consumergroup_retention_risk_method"] == BY_SIZE for _, f in before)
    forecast = _forecast(before, lost["sized"], "by size")
    segment_s = SEGMENT_BYTES / (RATE * RECORD)
    assert forecast - 1.5 <= lost["sized"] <= forecast + segment_s + CHECK_S + 1.5, \
        (forecast, lost)


def _forecast(before: list[tuple[float, dict[str, float]]], lost_at: float, how: str) -> float:
    """When the last figure before the loss said it would come (printed beside the loss)."""
    when, last = before[-1]
    forecast = when + last[RISK]
    flagged = next(t for t, f in before if f[RISK] < AT_RISK_S)
    print(f"{how}: at risk (under {AT_RISK_S:g} s) {lost_at - flagged:.1f} s before the loss; "
          f"lost {lost_at - forecast:+.1f} s after the forecast")
    return forecast
