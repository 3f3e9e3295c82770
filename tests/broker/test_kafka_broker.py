"""Real Kafka brokers (4.4.0 and 3.9.2) from tests/support/kafka_broker.py, checked end to end with
Kafka's own clients: VerifiableProducer fills a topic, VerifiableConsumer commits it as group G,
and ConsumerGroupCommand's parsed output (the future oracle) must agree."""
from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Iterator

import pytest

from tests.support.kafka_broker import (
    KAFKA3_VERSION, OFFSETS_TOPIC, OFFSETS_TOPIC_PARTITIONS, KafkaBroker,
    create_topic, end_offsets, produce_internal, produce_raw, start_kafka)
from tests.support.kafka_tools import parse_list, parse_members, parse_offsets, parse_state

TOPIC, GROUP, PARTITIONS, PRODUCED = "orders", "G", 3, 300


@dataclass
class Scenario:
    broker: KafkaBroker
    consumer: subprocess.Popen  # still running: the group has a live member


def _events(proc: subprocess.Popen) -> "queue.Queue[dict]":
    """VerifiableConsumer's JSON events, read on a thread (a full pipe would stall the client)."""
    events: queue.Queue[dict] = queue.Queue()

    def pump() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            if line.startswith("{"):
                events.put(json.loads(line))
    threading.Thread(target=pump, daemon=True).start()
    return events


def _wait_committed(events: "queue.Queue[dict]", total: int, timeout: float = 60.0) -> dict[int, int]:
    committed: dict[int, int] = {}
    deadline = time.monotonic() + timeout
    while sum(committed.values()) < total:
        try:
            event = events.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(f"group committed only {committed} of {total} within {timeout}s")
        if event.get("name") == "offsets_committed" and event.get("success"):
            for item in event["offsets"]:
                committed[item["partition"]] = item["offset"]
    return committed


@pytest.fixture(scope="module", params=["4.4.0", KAFKA3_VERSION])
def scenario(request: pytest.FixtureRequest) -> Iterator[Scenario]:
    broker = start_kafka(request.param)
    consumer = None
    try:
        create_topic(broker.bootstrap, TOPIC, PARTITIONS)
        # --repeating-keys: keyed records, so the default partitioner spreads them over partitions
        done = broker.run_tool("org.apache.kafka.tools.VerifiableProducer", "--bootstrap-server",
                               broker.bootstrap, "--topic", TOPIC, "--max-messages", str(PRODUCED),
                               "--repeating-keys", "30", "--acks", "-1")
        assert done.returncode == 0, done.stderr
        consumer = broker.start_tool("org.apache.kafka.tools.VerifiableConsumer", "--bootstrap-server",
                                     broker.bootstrap, "--topic", TOPIC, "--group-id", GROUP,
                                     "--reset-policy", "earliest", "--session-timeout", "10000")
        _wait_committed(_events(consumer), PRODUCED)
        yield Scenario(broker, consumer)
    except BaseException:
        print(broker.log()[-5000:])
        raise
    finally:
        if consumer is not None:
            consumer.terminate()
            consumer.wait(timeout=30)
        broker.stop()


def test_produced_records_spread_over_partitions(scenario: Scenario) -> None:
    ends = end_offsets(scenario.broker.bootstrap, TOPIC, range(PARTITIONS))
    assert sum(ends.values()) == PRODUCED
    assert sum(1 for end in ends.values() if end > 0) >= 2


def test_describe_offsets_matches_commits(scenario: Scenario) -> None:
    assert GROUP in parse_list(scenario.broker.consumer_groups("--list").stdout)
    done = scenario.broker.consumer_groups("--describe", "--group", GROUP, "--offsets")
    assert done.returncode == 0, done.stderr
    rows = parse_offsets(done.stdout)
    assert {(r.group, r.topic) for r in rows} == {(GROUP, TOPIC)}
    assert sorted(r.partition for r in rows) == list(range(PARTITIONS))
    assert sum(r.current_offset or 0 for r in rows) == PRODUCED
    for row in rows:
        assert row.log_end_offset == (row.current_offset or 0)
        assert row.lag in (0, None)  # None where nothing was ever committed (an empty partition)
        assert row.consumer_id and row.client_id  # assigned to the live member


def test_members_verbose_lists_the_member(scenario: Scenario) -> None:
    done = scenario.broker.consumer_groups("--describe", "--group", GROUP, "--members", "--verbose")
    assert done.returncode == 0, done.stderr
    [member] = parse_members(done.stdout)
    assert member.group == GROUP and member.partitions == PARTITIONS
    assert member.client_id.startswith("consumer-") and member.host.endswith("127.0.0.1")
    [(topic, parts)] = member.assignment.items()
    assert topic in (TOPIC, "")  # 3.9's --verbose prints "(0,1,2)": no topic name
    assert sorted(parts) == list(range(PARTITIONS))


def test_state_is_stable(scenario: Scenario) -> None:
    done = scenario.broker.consumer_groups("--describe", "--group", GROUP, "--state")
    [state] = parse_state(done.stdout)
    assert (state.group, state.state, state.members, state.coordinator_id) == (GROUP, "Stable", 1, 1)


def test_consumer_offsets_holds_keyed_records(scenario: Scenario) -> None:
    from kafka import KafkaConsumer, TopicPartition

    tps = [TopicPartition(OFFSETS_TOPIC, p) for p in range(OFFSETS_TOPIC_PARTITIONS)]
    consumer = KafkaConsumer(bootstrap_servers=scenario.broker.bootstrap, enable_auto_commit=False)
    try:
        consumer.assign(tps)
        consumer.seek_to_beginning()
        ends = {tp: end for tp, end in consumer.end_offsets(tps).items() if end > 0}
        assert ends, "the group's commits left no record in __consumer_offsets"
        records = []
        deadline = time.monotonic() + 30
        while any(consumer.position(tp) < end for tp, end in ends.items()):
            assert time.monotonic() < deadline, "could not read __consumer_offsets to its end"
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(batch)
    finally:
        consumer.close()
    assert records and all(r.key is not None for r in records)
    # key version 0/1 = offset commit; others = group metadata (2 classic, 3+ KIP-848 records)
    versions = {int.from_bytes(r.key[:2], "big") for r in records}
    assert versions & {0, 1} and versions - {0, 1}, versions
    assert any(GROUP.encode() in r.key for r in records)


def test_internal_topic_produce_rule(scenario: Scenario) -> None:
    """KafkaApis lets only client.id "__admin_client" append to internal topics."""
    from confluent_kafka import KafkaException

    # an offset-commit tombstone (key v1: group "zz", topic "t", partition 0) for a group that never
    # existed: harmless when the coordinator replays it
    key = b"\x00\x01" + b"\x00\x02zz" + b"\x00\x01t" + (0).to_bytes(4, "big")
    with pytest.raises(KafkaException, match="(?i)invalid.?topic"):
        produce_internal(scenario.broker.bootstrap, OFFSETS_TOPIC, [(0, key, None, 0)], client_id="tests")
    [(partition, offset)] = produce_internal(scenario.broker.bootstrap, OFFSETS_TOPIC, [(0, key, None, 0)])
    assert partition == 0 and offset >= 0


@pytest.fixture(scope="module")
def kafka4() -> Iterator[KafkaBroker]:
    broker = start_kafka("4.4.0")
    yield broker
    broker.stop()


def test_share_and_streams_groups_enabled_on_4_4(kafka4: KafkaBroker) -> None:
    done = kafka4.run_tool("org.apache.kafka.tools.FeatureCommand", "--bootstrap-server",
                           kafka4.bootstrap, "describe")
    levels = {}
    for line in done.stdout.splitlines():
        fields = dict(part.split(": ", 1) for part in line.split("\t") if ": " in part) if "\t" in line \
            else dict(zip(line.split()[0::2], line.split()[1::2]))
        name = fields.get("Feature") or fields.get("Feature:")
        level = fields.get("FinalizedVersionLevel") or fields.get("FinalizedVersionLevel:")
        if name and level:
            levels[name] = level
    assert int(levels["share.version"]) >= 1 and int(levels["streams.version"]) >= 1, levels


def test_restart_keeps_port_and_commits(kafka4: KafkaBroker) -> None:
    create_topic(kafka4.bootstrap, "r", 1)
    produce_raw(kafka4.bootstrap, "r", [(0, b"k", b"v", 0)] * 5)
    before = kafka4.bootstrap
    kafka4.restart()
    assert kafka4.bootstrap == before
    assert end_offsets(kafka4.bootstrap, "r", [0]) == {0: 5}
