"""Real Kafka brokers (4.4.0 and 3.9.2) from tests/support/kafka_broker.py, checked end to end with
Kafka's own clients: VerifiableProducer fills a topic, VerifiableConsumer commits it as a group,
and ConsumerGroupCommand's parsed output (the future oracle) must agree.

The brokers are the session's (`broker`, `broker39`), so topic and group names are unique per
module. Only the tests that restart a broker or append to its `__consumer_offsets` have one of
their own: the shared brokers' coordinators must replay only what real clients wrote."""
from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Iterator

import pytest

from tests.support.kafka_broker import (
    OFFSETS_TOPIC, OFFSETS_TOPIC_PARTITIONS, KafkaBroker, create_topic, end_offsets,
    produce_internal, produce_raw, start_kafka)
from tests.support.kafka_tools import parse_list, parse_members, parse_offsets, parse_state

_SUFFIX = uuid.uuid4().hex[:8]
TOPIC, GROUP, PARTITIONS, PRODUCED = f"orders-{_SUFFIX}", f"G-{_SUFFIX}", 3, 300


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


@pytest.fixture(scope="module", params=["broker", "broker39"])
def scenario(request: pytest.FixtureRequest) -> Iterator[Scenario]:
    broker: KafkaBroker = request.getfixturevalue(request.param)
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


# an offset-commit tombstone (key v1: group "zz", topic "t", partition 0) for a group that never
# existed: harmless when a coordinator replays it
TOMBSTONE = (0, b"\x00\x01" + b"\x00\x02zz" + b"\x00\x01t" + (0).to_bytes(4, "big"), None, 0)


def test_internal_topic_refuses_other_clients(scenario: Scenario) -> None:
    """KafkaApis lets only client.id "__admin_client" append to internal topics."""
    from confluent_kafka import KafkaException

    with pytest.raises(KafkaException, match="(?i)invalid.?topic"):
        produce_internal(scenario.broker.bootstrap, OFFSETS_TOPIC, [TOMBSTONE], client_id="tests")


def test_share_and_streams_groups_enabled_on_4_4(broker: KafkaBroker) -> None:
    done = broker.run_tool("org.apache.kafka.tools.FeatureCommand", "--bootstrap-server",
                           broker.bootstrap, "describe")
    levels = {}
    for line in done.stdout.splitlines():
        fields = dict(part.split(": ", 1) for part in line.split("\t") if ": " in part) if "\t" in line \
            else dict(zip(line.split()[0::2], line.split()[1::2]))
        name = fields.get("Feature") or fields.get("Feature:")
        level = fields.get("FinalizedVersionLevel") or fields.get("FinalizedVersionLevel:")
        if name and level:
            levels[name] = level
    assert int(levels["share.version"]) >= 1 and int(levels["streams.version"]) >= 1, levels


@pytest.fixture(scope="module")
def own_broker() -> Iterator[KafkaBroker]:
    """A 4.4 broker of this module's own, to be written to internally and restarted."""
    broker = start_kafka("4.4.0")
    yield broker
    broker.stop()


def test_admin_client_may_append_to_internal_topic(own_broker: KafkaBroker) -> None:
    [(partition, offset)] = produce_internal(own_broker.bootstrap, OFFSETS_TOPIC, [TOMBSTONE])
    assert partition == 0 and offset >= 0


def test_restart_keeps_address_and_log(own_broker: KafkaBroker) -> None:
    create_topic(own_broker.bootstrap, "r", 1)
    produce_raw(own_broker.bootstrap, "r", [(0, b"k", b"v", 0)] * 5)
    before = own_broker.bootstrap
    own_broker.restart()
    assert end_offsets(before, "r", [0]) == {0: 5}
