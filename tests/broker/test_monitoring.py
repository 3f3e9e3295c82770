"""The monitoring side wired from the config: view + exporter + end-offset poller against a real
broker (tansu), scraped over HTTP."""
from __future__ import annotations

import time
import urllib.request
import uuid

from prometheus_client.parser import text_string_to_metric_families

from tests.support.tansu import create_topic, produce_raw
from streaming.config import load_config
from streaming.job.settings import start_monitoring


def test_start_monitoring_polls_and_serves(broker):
    topic = f"monitoring-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 2)
    produce_raw(broker.bootstrap, topic, [(0, None, b"x", 1_700_000_000_000 + i) for i in range(7)])
    config = load_config(None, env={"GROUPSCOPE_SOURCE__BOOTSTRAP_SERVERS": broker.bootstrap,
                                    "GROUPSCOPE_EXPORTER__LISTEN": "127.0.0.1:0",
                                    "GROUPSCOPE_CLUSTER__NAME": "wired",
                                    "GROUPSCOPE_LAG__POLL_INTERVAL": "200ms"})
    monitoring = start_monitoring(config)
    try:
        now_ms = int(time.time() * 1000)
        monitoring.view.update_groups([{
            "group": "wired-group", "group_type": "classic", "protocol_type": "consumer",
            "protocol": "range", "state": "Empty", "generation": 2, "assignment_epoch": None,
            "leader": None, "current_state_timestamp_ms": None, "coordinator_partition": 3,
            "members": [], "subscribed_topics": [], "last_rebalance": None, "updated_ms": now_ms,
            "offsets": [{"topic": topic, "partition": 0, "offset": 3, "leader_epoch": None,
                         "metadata": "", "commit_timestamp_ms": now_ms, "topic_id": None}]}])
        url = f"http://127.0.0.1:{monitoring.exporter.port}/metrics"
        lag = None
        deadline = time.monotonic() + 30
        while lag is None and time.monotonic() < deadline:
            with urllib.request.urlopen(url, timeout=30) as response:
                text = response.read().decode()
            for family in text_string_to_metric_families(text):
                for sample in family.samples:
                    if sample.name == "kafka_consumergroup_lag":
                        assert sample.labels["cluster"] == "wired"
                        lag = sample.value
            time.sleep(0.1)
        assert lag == 4
    finally:
        monitoring.stop()
