"""Retention risk against a real broker: a topic keeping records 60 s in segments of 5 s, a
producer writing 20 records/s, and three groups whose commits reach the view as the job's
would: one stopped, one keeping up, one slower than its producer and then faster. The view
reads the topic's settings with DescribeConfigs and its offsets and first unconsumed records
with the end-offset poller, as the job does. About 75 s: the loss takes the retention's 60 s."""
from __future__ import annotations

import math
import threading
import time
import uuid

import pytest

from streaming.config import load_config
from streaming.exporter.end_offset_poller import EndOffsetPoller, PollerSettings
from streaming.exporter.metrics_cache import MetricsCache
from streaming.exporter.view import MonitorView, ViewSettings
from streaming.job.settings import offsets_client_factory, topic_configs_poller
from tests.support.kafka_broker import create_topic, end_offsets
from tests.support.scrape_support import parse
from tests.unit.test_exporter import snapshot

pytestmark = pytest.mark.broker

RETENTION_S, SEGMENT_S, CHECK_S = 60.0, 5.0, 1.0  # the session broker checks every second
RATE = 20  # records/s produced
AT_RISK_S = 30.0  # "will lose records within" this, here: the default hour is all of 60 s


def _produce(bootstrap: str, topic: str, stop: threading.Event) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=0)
    try:
        while not stop.is_set():
            producer.send(topic, b"v", partition=0)
            stop.wait(1.0 / RATE)
        producer.flush()
    finally:
        producer.close()


def _commit(view: MonitorView, group: str, topic: str, offset: int) -> None:
    now = view.clock()
    view.update_groups([snapshot(group, [], [(topic, 0, offset, now)], state="Empty",
                                 subscribed=[topic], updated_s=now)])


def _figures(cache: MetricsCache, group: str) -> dict[str, float]:
    out = {}
    for name, samples in parse(cache.text()).items():
        for labels, value in samples.items():
            if dict(labels).get("group") == group and "partition" in dict(labels):
                out[name] = value
    return out


def test_a_stopped_group_is_at_risk_before_it_loses_records_and_loses_them_as_forecast(broker):
    topic = f"risk-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 1, {"retention.ms": str(int(RETENTION_S * 1000)),
                                              "segment.ms": str(int(SEGMENT_S * 1000))})
    config = load_config(None, env={"GROUPSCOPE_SOURCE__BOOTSTRAP_SERVERS": broker.bootstrap,
                                    "GROUPSCOPE_LAG__RATE_WINDOW": "10s"})
    view = MonitorView(ViewSettings(cluster="default"))
    poller = EndOffsetPoller(view, offsets_client_factory(config),
                             PollerSettings(interval_s=1.0, time_method="exact"),
                             configs=topic_configs_poller(config, view, 5.0))
    cache = MetricsCache(view)
    stop = threading.Event()
    producing = threading.Thread(target=_produce, args=(broker.bootstrap, topic, stop))
    producing.start()
    seen: dict[str, list[tuple[float, dict[str, float]]]] = {"stopped": [], "healthy": [],
                                                             "slow": []}
    try:
        time.sleep(2.0)
        end = end_offsets(broker.bootstrap, topic, [0])[0]
        for group in seen:
            _commit(view, group, topic, end)
        assert poller.poll_once()
        slow, previous_end, started = end, end, time.time()
        lost_at = None
        while time.time() - started < RETENTION_S + 25:
            time.sleep(1.0)
            assert poller.poll_once()
            now, end = time.time(), view.log_end((topic, 0))[0]
            _commit(view, "healthy", topic, previous_end)  # a poll behind: about 1 s of lag
            # the slow group: a quarter of the producer's pace for 20 s, then three times it
            slow = min(end, slow + (RATE // 4 if now - started < 20 else 3 * RATE))
            _commit(view, "slow", topic, slow)
            previous_end = end
            for group in seen:
                seen[group].append((now, _figures(cache, group)))
            if lost_at is None and seen["stopped"][-1][1].get(
                    "kafka_consumergroup_messages_lost", 0) > 0:
                lost_at = now
            if lost_at is not None and now - started > 40:
                break
    finally:
        stop.set()
        producing.join()
        poller.stop()
    risk = "kafka_consumergroup_retention_risk_seconds"
    assert lost_at is not None, "the stopped group lost nothing to retention"
    before = [(t, f) for t, f in seen["stopped"] if t < lost_at and risk in f]
    # at risk before the loss, read from the record itself, and the risk counted down to it
    flagged = [t for t, f in before if f[risk] < AT_RISK_S]
    assert flagged and flagged[0] < lost_at - 10, (flagged, lost_at)
    assert all(f["kafka_consumergroup_retention_risk_method"] == 4 for _, f in before)
    # the loss came within the stated error: never before the forecast, at most one segment's
    # time and one retention check after it (and a poll, to be seen)
    when, last = before[-1]
    forecast = when + last[risk]
    print(f"at risk {lost_at - flagged[0]:.1f} s before the loss; lost {lost_at - forecast:+.1f} s "
          f"after the forecast")
    assert forecast - 1.5 <= lost_at <= forecast + SEGMENT_S + CHECK_S + 1.5, \
        (forecast, lost_at)
    assert last["kafka_consumergroup_consume_rate"] == 0.0
    assert last["kafka_consumergroup_catch_up_seconds"] == math.inf
    # the healthy group never came near it
    assert all(f.get(risk, math.inf) >= AT_RISK_S for _, f in seen["healthy"])
    assert all(f.get("kafka_consumergroup_messages_lost", 0) == 0 for _, f in seen["healthy"])
    # the slow group: "never" while slower than its producer, a finite forecast once faster
    plan = [(t - started, f.get("kafka_consumergroup_catch_up_seconds")) for t, f in seen["slow"]]
    never = [t for t, p in plan if p == math.inf]
    finite = [t for t, p in plan if p is not None and 0 < p < math.inf]
    assert never and min(never) < 20, plan
    assert finite and min(finite) > min(never), plan
