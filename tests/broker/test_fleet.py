"""Two clusters in one job (`clusters` in the config): a Kafka 4.4 and a Kafka 3.9 broker, a
group on each. One exporter serves both, each series with its cluster's label and each family
once. The 3.9 broker is stopped: the 4.4 cluster's series stay fresh, the dead one is reported
down (`groupscope_source_up`, `/healthz`); restarted, it catches up."""
from __future__ import annotations

import threading
import time
import uuid

import yaml

from coordinator import partition_for
from coordinator.records import encode
from streaming.config import load_fleet
from streaming.job.fleet import Fleet
from tests.support.kafka_broker import create_topic, produce_raw
from tests.support.scrape_support import parse, scrape
from tests.support.state_timeline import offset_commit
from tests.support.waiting import until

LOG_PARTITIONS = 2
ENDS = 10
T0 = int(time.time() * 1000) - 60_000


def _commit(bootstrap: str, log_topic: str, group: str, topic: str, partition: int, offset: int,
            ts: int) -> None:
    produce_raw(bootstrap, log_topic, [(partition_for(group, LOG_PARTITIONS),
                                        *encode(offset_commit(group, topic, partition, offset, ts)),
                                        ts)])


def _lag(samples, cluster: str, group: str, topic: str) -> dict[int, float]:
    return {int(dict(labels)["partition"]): value
            for labels, value in samples.get("kafka_consumergroup_lag", {}).items()
            if dict(labels)["cluster"] == cluster and dict(labels)["group"] == group
            and dict(labels)["topic"] == topic}


def _healthz(port: int) -> tuple[int, str]:
    import urllib.error

    try:
        return scrape(port, "/healthz")
    except urllib.error.HTTPError as answer:  # 503: what it says is the point
        return answer.code, answer.read().decode()


def _gauge(samples, name: str, cluster: str) -> float | None:
    return samples.get(name, {}).get(frozenset({("cluster", cluster)}))


def test_two_clusters_in_one_job_and_one_of_them_down(spark, broker, broker39, tmp_path):
    tag = uuid.uuid4().hex[:8]
    data, log_topic = f"fleet-data-{tag}", f"fleet-offsets-{tag}"
    clusters = {"k44": broker, "k39": broker39}
    for name, b in clusters.items():
        create_topic(b.bootstrap, data, 2)
        create_topic(b.bootstrap, log_topic, LOG_PARTITIONS)
        produce_raw(b.bootstrap, data, [(p, None, b"x", T0) for p in range(2) for _ in range(ENDS)])
        for p in range(2):
            _commit(b.bootstrap, log_topic, f"fleet-{name}", data, p, 3 + p, T0 + p)
    config = tmp_path / "groupscope.yaml"
    config.write_text(yaml.safe_dump({
        "source": {"topic": log_topic},
        "checkpoint": {"path": str(tmp_path / "checkpoint")},
        "history": {"path": str(tmp_path / "history")},
        "exporter": {"listen": "127.0.0.1:0"},
        "lag": {"poll_interval": "0.5s", "timeout": "2s"},
        "trigger": {"interval": "0.5s"},
        "clusters": [{"name": name, "source": {"bootstrap_servers": b.bootstrap}}
                     for name, b in clusters.items()]}))
    fleet = Fleet(load_fleet(str(config), env={}), spark=spark).start()
    stop = threading.Event()
    waiter = threading.Thread(target=fleet.wait, args=(stop,))
    waiter.start()
    killed = False
    try:
        def served():
            return parse(scrape(fleet.exporter.port)[1])

        until("both clusters' lag", lambda: all(
            _lag(served(), name, f"fleet-{name}", data) == {0: ENDS - 3, 1: ENDS - 4}
            for name in clusters), timeout_s=120)
        text = scrape(fleet.exporter.port)[1]
        assert text.count("# TYPE kafka_consumergroup_lag gauge") == 1  # each family once
        status, body = _healthz(fleet.exporter.port)
        assert status == 200 and body == "k44: ok\nk39: ok\n"
        assert (tmp_path / "checkpoint" / "k44").is_dir() and (tmp_path / "history" / "k39").is_dir()

        # Stopped cleanly (SIGTERM, data kept): to the monitor as gone as a crash, and back
        # in seconds, where a killed broker spends ten recovering its logs.
        broker39.shut_down()
        killed = True
        _commit(broker.bootstrap, log_topic, "fleet-k44", data, 0, ENDS, T0 + 10_000)
        until("k44 fresh while k39 is down", lambda: (
            (s := served()) and _lag(s, "k44", "fleet-k44", data).get(0) == 0
            and _gauge(s, "groupscope_source_up", "k39") == 0), timeout_s=60)
        samples = served()
        assert _gauge(samples, "groupscope_source_up", "k44") == 1
        assert _lag(samples, "k39", "fleet-k39", data) == {0: ENDS - 3, 1: ENDS - 4}  # as last seen
        status, body = _healthz(fleet.exporter.port)
        assert status == 503 and body.startswith("k44: ok\nk39: source unreachable")

        broker39.restart()
        killed = False
        _commit(broker39.bootstrap, log_topic, "fleet-k39", data, 1, ENDS, T0 + 20_000)
        until("k39 caught up once restarted", lambda: (
            (s := served()) and _lag(s, "k39", "fleet-k39", data).get(1) == 0
            and _gauge(s, "groupscope_source_up", "k39") == 1), timeout_s=120)
        assert _healthz(fleet.exporter.port)[0] == 200
    finally:
        stop.set()
        waiter.join(timeout=60)
        fleet.stop()
        if killed:
            broker39.restart()


def test_healthz_says_stopping_for_every_cluster_while_a_fleet_stops(spark, broker, tmp_path):
    """Two clusters (two names for the session broker) in one job; the first one's stop is held
    as a long drain holds it: meanwhile /healthz answers 503, every cluster stopping, since
    what is served no longer follows any of them."""
    tag = uuid.uuid4().hex[:8]
    data, log_topic = f"fleet-stop-data-{tag}", f"fleet-stop-offsets-{tag}"
    create_topic(broker.bootstrap, data, 1)
    create_topic(broker.bootstrap, log_topic, LOG_PARTITIONS)
    _commit(broker.bootstrap, log_topic, f"fleet-stop-{tag}", data, 0, 3, T0)
    config = tmp_path / "groupscope.yaml"
    config.write_text(yaml.safe_dump({
        "source": {"topic": log_topic, "share_state": False},
        "checkpoint": {"path": str(tmp_path / "checkpoint")},
        "exporter": {"listen": "127.0.0.1:0"},
        "lag": {"poll_interval": "0.5s", "timeout": "2s"},
        "trigger": {"interval": "0.5s"},
        "clusters": [{"name": name, "source": {"bootstrap_servers": broker.bootstrap}}
                     for name in ("east", "west")]}))
    fleet = Fleet(load_fleet(str(config), env={}), spark=spark).start()
    held, release = threading.Event(), threading.Event()
    first_stop = fleet.jobs[0].stop

    def slow_stop() -> None:
        first_stop()
        held.set()
        release.wait(60)

    fleet.jobs[0].stop = slow_stop
    stopping = threading.Thread(target=fleet.stop)
    try:
        until("both clusters ok", lambda: _healthz(fleet.exporter.port) == (200, "east: ok\nwest: ok\n"),
              timeout_s=120)
        stopping.start()
        assert held.wait(60), "the first cluster's stop did not end"
        status, body = _healthz(fleet.exporter.port)
        assert status == 503 and [line.split(": ", 1) for line in body.splitlines()] == [
            [name, "stopping: what is served no longer follows the cluster"] for name in ("east", "west")]
    finally:
        release.set()
        if stopping.ident:
            stopping.join(60)
        else:
            fleet.stop()
