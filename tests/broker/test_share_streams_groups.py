"""Share groups (KIP-932) and streams groups (KIP-1071) on Kafka 4.4: groupscope's view of each
against Kafka's own commands (ShareGroupCommand, StreamsGroupCommand), while members come and go.

Share members are Kafka's console share consumer; the streams application is
jvm/streams-app/StreamsApp.java (tests/support/streams_app.py). Each look is repeated until both
sides agree (a look at Kafka and one at groupscope are never at the same instant), so a failure
shows the last disagreement.
"""
from __future__ import annotations

import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any, Callable

import pytest

from tests.support.groupscope_job import CLUSTER, GroupscopeJob, run_groupscope_job
from tests.support.kafka_broker import KafkaBroker, create_topic
from tests.support.kafka_tools import (parse_assignment, parse_last_column_rows, parse_streams_tasks,
                                       parse_tables)
from tests.support.offsets_log import SHARE_STATE_TOPIC, decoded_by_type, group_records, values
from tests.support.streams_app import compile_streams_app, start_streams_app

SHARE_COMMAND = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
STREAMS_COMMAND = "org.apache.kafka.tools.streams.StreamsGroupCommand"
SHARE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleShareConsumer"
CONFIG_COMMAND = "org.apache.kafka.tools.ConfigCommand"
PARTITIONS = 3
TIMEOUT_S = 90

Side = dict[str, Any]  # {"state", "epoch", "assignment_epoch", "members": {id: (client, tasks, epoch)}}


@pytest.fixture(scope="module")
def job(spark, broker, tmp_path_factory):
    """One job for the module: each test watches groups of its own."""
    running = run_groupscope_job(spark, broker.bootstrap, tmp_path_factory.mktemp("job"), share_state=True)
    yield running
    running.stop()


def _produce(bootstrap: str, topic: str, count: int) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(count):
        producer.send(topic, key=str(i).encode(), value=f"v{i}".encode())
    producer.close()


def _ours(job: GroupscopeJob, group: str, group_type: str) -> Side | None:
    before = job.snapshots().get(group)
    samples = job.scrape()
    info = [dict(l) for l in samples.get("kafka_consumergroup_info", {})
            if ("group", group) in l and ("cluster", CLUSTER) in l]
    snapshot = job.snapshots().get(group)
    if not info or snapshot is None or snapshot != before:
        return None  # not yet, or a micro-batch changed the group while it was scraped: look again
    assert info[0]["group_type"] == group_type and info[0]["protocol_type"] == group_type, info
    members = {m["member_id"]: (m["client_id"], tuple(sorted(tuple(tp) for tp in m["assigned"])),
                                m["member_epoch"]) for m in snapshot["members"]}
    count = samples.get("kafka_consumergroup_members", {}).get(frozenset({("cluster", CLUSTER), ("group", group)}))
    assert count == len(members), f"{group}: kafka_consumergroup_members {count}, snapshot {sorted(members)}"
    return {"state": info[0]["state"], "epoch": snapshot["generation"],
            "assignment_epoch": snapshot["assignment_epoch"], "members": members}


def _kafka_share(broker: KafkaBroker, group: str) -> Side:
    args = ("--bootstrap-server", broker.bootstrap, "--describe", "--group", group, "--verbose")
    state = parse_tables(broker.run_tool(SHARE_COMMAND, *args, "--state").stdout)
    members = parse_tables(broker.run_tool(SHARE_COMMAND, *args, "--members").stdout)
    return {"state": state[0]["STATE"], "epoch": int(state[0]["GROUP-EPOCH"]),
            "assignment_epoch": int(state[0]["ASSIGNMENT-EPOCH"]),
            "members": {m["CONSUMER-ID"]: (m["CLIENT-ID"], tuple(sorted(
                (t, p) for t, parts in parse_assignment(m["ASSIGNMENT"]).items() for p in parts)),
                int(m["MEMBER-EPOCH"])) for m in members}}


def _kafka_streams(broker: KafkaBroker, group: str) -> Side:
    args = ("--bootstrap-server", broker.bootstrap, "--describe", "--group", group, "--verbose")
    state = parse_tables(broker.run_tool(STREAMS_COMMAND, *args, "--state").stdout)
    members = parse_last_column_rows(broker.run_tool(STREAMS_COMMAND, *args, "--members").stdout)
    return {"state": state[0]["STATE"], "epoch": int(state[0]["GROUP-EPOCH"]),
            "assignment_epoch": int(state[0]["TARGET-ASSIGNMENT-EPOCH"]),
            "members": {m["MEMBER"]: (m["CLIENT-ID"], tuple(sorted(
                (sub, p) for sub, parts in parse_streams_tasks(m["ASSIGNMENTS"]).get("ACTIVE", {}).items()
                for p in parts)), int(m["MEMBER-EPOCH"])) for m in members}}


def _agree(kafka: Callable[[], Side], ours: Callable[[], Side | None], members: int, what: str) -> Side:
    """Both views once they are equal, Kafka's with `members` members, all Stable."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        try:
            k = kafka()
        except (IndexError, KeyError, ValueError) as error:  # the group not yet (or no longer) described
            k = {"error": repr(error)}
        g = ours()
        if k == g and len(k["members"]) == members and k["state"] == "Stable":
            return k
        assert time.monotonic() < deadline, f"{what}:\nKafka      {k}\ngroupscope {g}"
        time.sleep(1.0)


def _two_then_one(members: list[subprocess.Popen], kafka: Callable[[], Side],
                  ours: Callable[[], Side | None], what: str,
                  rebalances: Callable[[], float] | None = None) -> None:
    """Two members share the topic's partitions on both sides; the first stops cleanly (SIGTERM:
    the client closes and leaves), and both sides agree the other now holds them all."""
    try:
        two = _agree(kafka, ours, 2, f"two {what}")
        assert sorted(p for _, tps, _ in two["members"].values() for _, p in tps) == list(range(PARTITIONS))
        members[0].send_signal(signal.SIGTERM)
        members[0].wait(timeout=60)
        one = _agree(kafka, ours, 1, f"one {what} left")
        assert one["epoch"] > two["epoch"]
        assert len(next(iter(one["members"].values()))[1]) == PARTITIONS
        if rebalances is not None:  # the second member's join and the first one's leave at least
            assert rebalances() >= 2
    finally:
        for member in members:
            member.kill()
            member.wait(timeout=10)


def test_share_group_members_come_and_go(broker, job) -> None:
    run = uuid.uuid4().hex[:6]
    topic, group = f"share-in-{run}", f"share-{run}"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    _produce(broker.bootstrap, topic, 200)
    consumers = [broker.start_tool(SHARE_CONSUMER, "--bootstrap-server", broker.bootstrap, "--topic", topic,
                                   "--group", group, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for _ in range(2)]
    _two_then_one(consumers, lambda: _kafka_share(broker, group), lambda: _ours(job, group, "share"),
                  "share consumers", lambda: job.scrape().get("kafka_consumergroup_rebalances_total", {}).get(
                      frozenset({("cluster", CLUSTER), ("group", group)}), 0))
    _check_share_records(broker, group, topic)


def _check_share_records(broker: KafkaBroker, group: str, topic: str) -> None:
    """The share group's records as the 4.4 broker wrote them (tests/support/offsets_log.py):
    membership in `__consumer_offsets`, delivery state in `__share_group_state`."""
    by_type = decoded_by_type(group_records(broker.bootstrap, {group}))
    assert sorted(by_type) == [10, 11, 12, 13, 14, 15]
    assert all(v["subscribed_topic_names"] == [topic] for v in values(by_type, 10))
    epochs = [v["epoch"] for v in values(by_type, 11)]
    assert epochs and epochs == sorted(epochs) and all(v["metadata_hash"] for v in values(by_type, 11))
    assert values(by_type, 12) and all("assignment_timestamp" in v for v in values(by_type, 12))
    (initialized,) = values(by_type, 15)[-1]["initialized_topics"]
    assert (initialized["topic_name"], initialized["partitions"]) == (topic, list(range(PARTITIONS)))
    held = {p for v in values(by_type, 14) for t in v["assigned_partitions"] for p in t["partitions"]
            if t["topic_id"] == initialized["topic_id"]}
    assert held == set(range(PARTITIONS))
    state = decoded_by_type(group_records(broker.bootstrap, {group}, topic=SHARE_STATE_TOPIC),
                            share_state=True)
    assert 0 in state and set(state) <= {0, 1}  # ShareSnapshot, then ShareUpdates
    assert {(r.key["topic_id"], r.key["partition"]) for records in state.values() for r in records} \
        == {(initialized["topic_id"], p) for p in range(PARTITIONS)}


# -- share groups' delivery state (__share_group_state) against kafka-share-groups.sh ------------
RECORDS_PER_PARTITION = 10
DELIVERY_LIMIT = 5  # group.share.delivery.count.limit, Kafka's default


def _kafka_share_offsets(broker: KafkaBroker, group: str) -> dict[tuple[str, int], tuple[int | None, int | None]]:
    """kafka-share-groups.sh --describe --offsets: (topic, partition) -> (start offset, lag),
    None where it prints "-"."""
    out = broker.run_tool(SHARE_COMMAND, "--bootstrap-server", broker.bootstrap, "--describe",
                          "--group", group, "--offsets").stdout
    return {(r["TOPIC"], int(r["PARTITION"])): tuple(None if r[c] == "-" else int(r[c])
                                                    for c in ("START-OFFSET", "LAG"))
            for r in parse_tables(out)}


def _our_share_offsets(samples, group: str) -> dict[tuple[str, int], tuple[int | None, int | None]]:
    def by_partition(name: str) -> dict[tuple[str, int], int]:
        return {(dict(k)["topic"], int(dict(k)["partition"])): int(v)
                for k, v in samples.get(name, {}).items() if ("group", group) in k}

    starts, lags = by_partition("kafka_sharegroup_partition_start_offset"), \
        by_partition("kafka_sharegroup_partition_lag")
    return {tp: (start, lags.get(tp)) for tp, start in starts.items()}


def _looks(broker: KafkaBroker, job: GroupscopeJob, group: str):
    """Kafka's share offsets of `group`, then a scrape and our share offsets in it."""
    kafka = _kafka_share_offsets(broker, group)
    samples = job.scrape()
    return kafka, samples, _our_share_offsets(samples, group)


def _share_sum(samples, name: str, group: str, **labels: str) -> int:
    return sum(int(v) for k, v in samples.get(name, {}).items()
               if ("group", group) in k and all((n, x) in k for n, x in labels.items()))


def _from_earliest(broker: KafkaBroker, groups) -> None:
    """Share groups start at the log's end unless told otherwise (one tool a group, all at
    once)."""
    configs = [broker.start_tool(CONFIG_COMMAND, "--bootstrap-server", broker.bootstrap, "--entity-type", "groups",
                                 "--entity-name", group, "--alter", "--add-config",
                                 "share.auto.offset.reset=earliest") for group in groups]
    for tool in configs:
        out, err = tool.communicate(timeout=120)
        assert tool.returncode == 0, out + err


def _share_consumers(broker: KafkaBroker, topic: str, groups) -> list[subprocess.Popen]:
    """Kafka's console share consumer for each (group, extra arguments), all started at once."""
    return [broker.start_tool(SHARE_CONSUMER, "--bootstrap-server", broker.bootstrap, "--topic", topic,
                              "--group", group, *args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for group, args in groups]


def test_share_group_delivery_state_matches_kafka(broker, job) -> None:
    """Four share groups read one topic, each consumer as Kafka's console share consumer: one
    accepts every record, one rejects every record, one releases every record until Kafka
    archives it, one accepts five and exits (its other acquired records go back). Once each is
    quiet, groupscope's start offset and lag of every share-partition equal kafka-share-groups.sh
    --describe --offsets, and its archived and available records are what the consumers did."""
    run = uuid.uuid4().hex[:6]
    topic = f"share-state-{run}"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    modes = {"accept": (), "reject": ("--reject",), "release": ("--release",),
             "partial": ("--max-messages", "5")}
    groups = {mode: f"share-{mode}-{run}" for mode in modes}
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for p in range(PARTITIONS):
        for i in range(RECORDS_PER_PARTITION):
            producer.send(topic, value=f"r{i}".encode(), partition=p)
    producer.close()
    _from_earliest(broker, groups.values())
    consumers = _share_consumers(broker, topic, [(groups[mode], args) for mode, args in modes.items()])
    try:
        total = PARTITIONS * RECORDS_PER_PARTITION
        expected_lag = {"accept": 0, "reject": 0, "release": 0, "partial": total - 5}
        expected_archived = {"accept": 0, "reject": total, "release": total, "partial": 0}
        for mode, group in groups.items():
            deadline = time.monotonic() + TIMEOUT_S
            while True:
                kafka, samples, ours = _looks(broker, job, group)
                archived = _share_sum(samples, "kafka_sharegroup_archived_records_total", group)
                # a share-partition no consumer has fetched from is uninitialised ("-"): all of
                # its records are still to be delivered
                unconsumed = sum(RECORDS_PER_PARTITION if lag is None else lag for _, lag in kafka.values())
                done = len(kafka) == PARTITIONS and unconsumed == expected_lag[mode]
                # ("-", "-"): no series on our side either
                shown = {tp: figures for tp, figures in kafka.items() if figures != (None, None)}
                if done and ours == shown and archived == expected_archived[mode]:
                    break
                assert time.monotonic() < deadline, \
                    f"{mode}:\nKafka      {kafka}\ngroupscope {ours}, archived {archived}"
                time.sleep(1.0)
            assert _share_sum(samples, "kafka_sharegroup_lag", group) == \
                sum(lag for _, lag in kafka.values() if lag is not None), mode
            if mode == "release":  # every record delivered as often as the group allows
                assert _share_sum(samples, "kafka_sharegroup_partition_archived_records_total", group) == total
            if mode == "partial":
                # what the consumer held but did not accept went back: to be delivered again
                available = _share_sum(samples, "kafka_sharegroup_partition_records", group, state="available")
                acknowledged = _share_sum(samples, "kafka_sharegroup_partition_records", group,
                                          state="acknowledged")
                assert acknowledged <= 5 and available > 0, (acknowledged, available)
        records = samples["groupscope_share_state_records_total"]
        assert sum(records.values()) > 0 and not samples.get("groupscope_share_state_records_skipped_total")
    finally:
        for consumer in consumers:
            consumer.kill()
            consumer.wait(timeout=10)


def test_streams_group_members_come_and_go(broker, job, tmp_path: Path) -> None:
    run = uuid.uuid4().hex[:6]
    source, sink, app_id = f"streams-in-{run}", f"streams-out-{run}", f"streams-app-{run}"
    create_topic(broker.bootstrap, source, PARTITIONS)
    create_topic(broker.bootstrap, sink, PARTITIONS)
    _produce(broker.bootstrap, source, 200)
    classpath = compile_streams_app(broker, tmp_path / "classes")
    apps = [start_streams_app(broker, classpath, app_id, source, sink, tmp_path / f"state{i}") for i in range(2)]
    _two_then_one(apps, lambda: _kafka_streams(broker, app_id), lambda: _ours(job, app_id, "streams"),
                  "streams instances")
    _check_streams_records(broker, app_id, source)


def _check_streams_records(broker: KafkaBroker, group: str, source: str) -> None:
    """The streams group's records as the 4.4 broker wrote them (tests/support/offsets_log.py)."""
    by_type = decoded_by_type(group_records(broker.bootstrap, {group}))
    assert sorted(by_type) == [1, 17, 19, 20, 21, 22, 23]
    assert {r.key["topic"] for r in by_type[1]} == {source}
    assert {r.key["partition"] for r in by_type[1]} == set(range(PARTITIONS))
    (topology,) = {tuple(tuple(s["source_topics"]) for s in v["subtopologies"])
                   for v in values(by_type, 23)}
    assert topology == ((source,),)
    assert values(by_type, 19) and all(v["process_id"] and v["topology_epoch"] == values(by_type, 23)[0]["epoch"]
                                       for v in values(by_type, 19))
    assert values(by_type, 20) and all("assignment_timestamp" in v for v in values(by_type, 20))
    active = {p for v in values(by_type, 22) for t in v["active_tasks"] for p in t["partitions"]}
    assert active == set(range(PARTITIONS))
    for v in values(by_type, 22):  # KIP-1251's epochs, where written: one per task
        for task in v["active_tasks"]:
            assert len(task.get("assignment_epochs") or task["partitions"]) == len(task["partitions"])


def _transactional_producer(broker: KafkaBroker):
    from confluent_kafka import Producer

    # open for as long as a test may take (the broker aborts it after this)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transaction.timeout.ms": 600_000,
                         "transactional.id": f"share-txn-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(60)
    return producer


def _transaction(producer, topic: str, per_partition: int) -> None:
    producer.begin_transaction()
    for p in range(PARTITIONS):
        for i in range(per_partition):
            producer.produce(topic, value=f"t{i}".encode(), partition=p)
    assert producer.flush(30) == 0


def test_share_lag_while_a_transaction_is_open(broker, job) -> None:
    """A share group reads uncommitted (Kafka's default) and accepts 30 of the 60 records of a
    transaction still open, then its consumer stops: its lag, per partition and summed, is
    kafka-share-groups.sh's, taken to the high watermark (against the last stable offset,
    where the transaction begins, it would be minus the records accepted)."""
    run = uuid.uuid4().hex[:6]
    topic, group = f"share-open-{run}", f"share-open-{run}"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    _from_earliest(broker, [group])
    producer = _transactional_producer(broker)
    _transaction(producer, topic, 20)
    consumer = broker.start_tool(SHARE_CONSUMER, "--bootstrap-server", broker.bootstrap, "--topic", topic,
                                 "--group", group, "--max-messages", "30",
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        consumer.wait(timeout=TIMEOUT_S)
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            kafka, samples, ours = _looks(broker, job, group)
            settled = len(kafka) == PARTITIONS and sum(lag or 0 for _, lag in kafka.values()) == 30
            if settled and ours == kafka:
                break
            assert time.monotonic() < deadline, f"Kafka      {kafka}\ngroupscope {ours}"
            time.sleep(1.0)
        assert sum(lag for _, lag in ours.values()) == 30, ours
        assert _share_sum(samples, "kafka_sharegroup_lag", group) == 30
    finally:
        consumer.kill()
        consumer.wait(timeout=10)
        producer.abort_transaction(60)


def test_transaction_markers_are_not_archived_records(broker, job) -> None:
    """Two committed transactions of 10 records a partition: a share consumer acknowledges each
    commit marker's offset as a gap, which Kafka stores as archived. One group accepts every
    record, one rejects every record: their archived-records counters are 0 and 60, the
    records alone, not the markers."""
    run = uuid.uuid4().hex[:6]
    topic = f"share-markers-{run}"
    groups = {"accept": f"share-markers-accept-{run}", "reject": f"share-markers-reject-{run}"}
    create_topic(broker.bootstrap, topic, PARTITIONS)
    _from_earliest(broker, groups.values())
    producer = _transactional_producer(broker)
    for _ in range(2):
        _transaction(producer, topic, 10)
        producer.commit_transaction(60)
    consumers = _share_consumers(broker, topic, [(groups["accept"], ()), (groups["reject"], ("--reject",))])
    try:
        for mode, group in groups.items():
            deadline = time.monotonic() + TIMEOUT_S
            while True:
                kafka, samples, ours = _looks(broker, job, group)
                done = len(kafka) == PARTITIONS and all(lag == 0 for _, lag in kafka.values())
                archived = _share_sum(samples, "kafka_sharegroup_archived_records_total", group)
                if done and ours == kafka and archived == {"accept": 0, "reject": 60}[mode]:
                    break
                assert time.monotonic() < deadline, \
                    f"{mode}:\nKafka      {kafka}\ngroupscope {ours}, archived {archived}"
                time.sleep(1.0)
    finally:
        for consumer in consumers:
            consumer.kill()
            consumer.wait(timeout=10)


def test_share_archived_counters_go_on_across_a_restart(spark, broker, tmp_path) -> None:
    """A share group that rejected every record: its archived counter, served before the job
    stops, is served again after it starts on its checkpoint (never lower), though the new run
    reads `__share_group_state` from its start and counts none of that backlog itself."""
    run = uuid.uuid4().hex[:6]
    topic, group = f"share-restart-{run}", f"share-restart-{run}"
    total = PARTITIONS * RECORDS_PER_PARTITION
    create_topic(broker.bootstrap, topic, PARTITIONS)
    _produce(broker.bootstrap, topic, total)
    _from_earliest(broker, [group])
    # The job first: what `__share_group_state` holds when it starts is backlog, not counted
    # (streaming/job/share_state.py), so a consumer that rejected everything before would leave 0.
    job = run_groupscope_job(spark, broker.bootstrap, tmp_path / "job", share_state=True)
    (consumer,) = _share_consumers(broker, topic, [(group, ("--reject",))])
    try:
        def archived() -> int | None:
            samples = job.scrape()
            if not any(("group", group) in k for k in samples.get("kafka_sharegroup_archived_records_total", {})):
                return None
            return _share_sum(samples, "kafka_sharegroup_archived_records_total", group)

        deadline = time.monotonic() + TIMEOUT_S
        while archived() != total:
            assert time.monotonic() < deadline, f"archived {archived()} of {total}"
            time.sleep(1.0)
        consumer.kill()
        consumer.wait(timeout=10)
        job.stop()
        job = run_groupscope_job(spark, broker.bootstrap, tmp_path / "job", share_state=True)
        seen = []
        deadline = time.monotonic() + TIMEOUT_S
        while not seen or seen[-1] != total:
            seen.append(archived())
            assert seen[-1] in (None, total), f"served after the restart: {seen}"
            assert time.monotonic() < deadline, f"not served again: {seen}"
            time.sleep(0.5)
    finally:
        consumer.kill()
        job.stop()
