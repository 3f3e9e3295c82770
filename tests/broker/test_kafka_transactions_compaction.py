"""groupscope on what real Kafka 4.4 writes to `__consumer_offsets` for transactions and after
compaction (docs/kafka-parity.md, rules 10 and 11).

One private broker (its `__consumer_offsets` is compacted mid-module, which the session broker's
other users must not see) and two groupscope jobs (queries of the test session's Spark):

* job 1 runs from the start: offsets committed inside transactions (Kafka's
  TransactionalMessageCopier with random aborts, and confluent-kafka's transactional producer
  with a fixed commit/abort pattern), groups committing repeatedly, live classic and KIP-848
  members, a deleted group and deleted offsets. Its whole history must never hold an offset that
  only an aborted transaction wrote, and at the quiet point its view must equal Kafka's.
* then the offsets topic's segments are rolled and the log cleaner compacts them (checked in the
  broker's log), and job 2, with a new checkpoint, reads the compacted topic: its view of every
  group must equal job 1's and Kafka's.
"""
from __future__ import annotations

import concurrent.futures
import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from coordinator.partitioning import partition_for
from streaming.job.history import read_history
from tests.support.groupscope_job import GroupscopeJob, run_groupscope_job
from tests.support.kafka_broker import (OFFSETS_TOPIC, KafkaBroker, create_topic, produce_raw,
                                        start_kafka)
from tests.support.parity import Views, differences, groupscope_views, kafka_views
from tests.support.parity_clients import Members
from tests.support.waiting import until

TXN_TOPIC = "txn-in"         # the transactional groups' input
OUT_TOPIC = "txn-out"
DATA_TOPIC = "cmp-data"      # the live members' topic
MANY_TOPIC = "cmp-many"      # the committing-only groups' topic
COPIER_GROUP, COPIER_RECORDS, COPIER_TXN = "txn-copier", 600, 25
PY_GROUP = "txn-py"
# (commit?, offsets on TXN_TOPIC partitions): partition 1 is only ever in aborted transactions.
PY_TRANSACTIONS = ((True, {0: 10}), (False, {0: 20, 1: 5}), (True, {0: 30}), (False, {0: 40, 1: 7}))
PY_COMMITTED = {0: {10, 30}}
SIMPLE = tuple(f"cmp-simple-{i}" for i in range(6))
GONE = "cmp-gone"            # deleted before compaction
TRIMMED = SIMPLE[0]          # loses MANY_TOPIC partition 0's offset
LIVE = {"cmp-classic": ("classic", "range"), "cmp-kip848": ("consumer", "uniform")}
# Converted between the protocols and back before compaction: one keeps a classic member
# throughout, the other converts while empty (so each conversion is a tombstone and the other
# kind's records, which the cleaner later leaves out of order or without their tombstones).
CONVERTED, CONVERTED_EMPTY = "cmp-convert", "cmp-convert-empty"
GROUPS = (COPIER_GROUP, PY_GROUP, *SIMPLE, GONE, *LIVE, CONVERTED, CONVERTED_EMPTY)
QUIET_TIMEOUT_S = 90.0
# Not Kafka's default of 50: a group's coordinator partition must be where its records land.
OFFSETS_PARTITIONS = 10


# -- writers ---------------------------------------------------------------------------------

def _py_transactions(broker: KafkaBroker) -> None:
    """confluent-kafka's transactional producer: offsets in transactions, committed or aborted as
    PY_TRANSACTIONS says; each stays open a moment, so the job polls while it is undecided."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": PY_GROUP,
                         "enable.auto.commit": False})
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "txn-py-producer"})
    try:
        producer.init_transactions(60)
        for commit, offsets in PY_TRANSACTIONS:
            producer.begin_transaction()
            producer.produce(OUT_TOPIC, b"x")
            producer.send_offsets_to_transaction(
                [TopicPartition(TXN_TOPIC, p, o) for p, o in offsets.items()],
                consumer.consumer_group_metadata(), 60)
            time.sleep(1.0)
            (producer.commit_transaction if commit else producer.abort_transaction)(60)
            time.sleep(1.0)
    finally:
        consumer.close()


def _run_copier(broker: KafkaBroker, log: Path) -> str:
    """Kafka's TransactionalMessageCopier over TXN_TOPIC partition 0, aborting at random; returns
    its stdout (JSON lines)."""
    with open(log, "w") as out:
        copier = broker.start_tool(
            "org.apache.kafka.tools.TransactionalMessageCopier", "--broker-list", broker.bootstrap,
            "--input-topic", TXN_TOPIC, "--input-partition", "0", "--output-topic", OUT_TOPIC,
            "--consumer-group", COPIER_GROUP, "--transactional-id", "txn-copier-id",
            "--transaction-size", str(COPIER_TXN), "--enable-random-aborts", "--use-group-metadata",
            stdout=out, stderr=subprocess.STDOUT)
        copier.wait(timeout=120)
    text = log.read_text()
    assert copier.returncode == 0, text[-2000:]
    return text


class Committer:
    """Standalone groups (no membership) committing offsets again and again through one
    kafka-python consumer each."""

    def __init__(self, broker: KafkaBroker, groups: tuple[str, ...]) -> None:
        from kafka import KafkaConsumer

        self.consumers = {g: KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=g,
                                           enable_auto_commit=False) for g in groups}

    def commit(self, group: str, offsets: dict[tuple[str, int], int]) -> None:
        from kafka import TopicPartition
        from kafka.structs import OffsetAndMetadata

        self.consumers[group].commit({TopicPartition(t, p): OffsetAndMetadata(o, "", -1)
                                      for (t, p), o in offsets.items()}, timeout_ms=30000)

    def close(self) -> None:
        for consumer in self.consumers.values():
            consumer.close(autocommit=False)


def _group_type(broker: KafkaBroker, group: str) -> str | None:
    """The group's type as ListGroups shows it; None while unknown (also while the coordinator
    is still loading its partitions: the caller asks again)."""
    from kafka import KafkaAdminClient
    from kafka.errors import CoordinatorLoadInProgressError

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        return next((g["group_type"] for g in admin.list_groups() if g["group_id"] == group), None)
    except CoordinatorLoadInProgressError:
        return None
    finally:
        admin.close()


def _members_of(members: Members, group: str) -> int:
    return len(members.describe([group])[group].get("members") or ())


def _convert_both_ways(broker: KafkaBroker, members: Members) -> None:
    """CONVERTED: a classic member, joined by a consumer-protocol member (the group becomes a
    consumer group), which leaves (back to classic, the classic member still in it).
    CONVERTED_EMPTY: the same conversions while the group is empty, each after its members left
    (an empty classic group takes a consumer-protocol member, an empty consumer group a classic
    one); every member commits before it leaves."""
    def become(group: str, group_type: str, count: int) -> None:
        until(f"{group} a {group_type} group of {count} members",
              lambda: _group_type(broker, group) == group_type and _members_of(members, group) == count,
              60, poll_s=0.5)

    members.start("cv-a", CONVERTED, DATA_TOPIC, "classic", "range")
    become(CONVERTED, "classic", 1)
    members.start("cv-b", CONVERTED, DATA_TOPIC, "consumer", "uniform")
    become(CONVERTED, "consumer", 2)
    time.sleep(2.0)  # a commit or two of both members
    members.stop("cv-b", wait=True)
    become(CONVERTED, "classic", 1)
    for name, protocol, assignor in (("cv-c", "classic", "range"), ("cv-d", "consumer", "uniform"),
                                     ("cv-e", "classic", "range")):
        members.start(name, CONVERTED_EMPTY, DATA_TOPIC, protocol, assignor)
        become(CONVERTED_EMPTY, protocol, 1)
        time.sleep(2.0)
        members.stop(name, wait=True)
        become(CONVERTED_EMPTY, protocol, 0)


# -- reading both sides ----------------------------------------------------------------------

def _quiet_views(job: GroupscopeJob, broker: KafkaBroker, members: Members) -> tuple[Views, Views]:
    """(Kafka's, groupscope's) views once they agree (the live members' auto-commits every second
    keep the job's offsets-topic lag from resting at 0 on a busy machine, so agreement, not
    `caught_up`, is the quiet point); on the deadline the last pair, for the assertions to show."""
    last: list = [{}, {}]

    def agree() -> bool:
        last[:] = kafka_views(broker, members.describe, GROUPS), groupscope_views(job, GROUPS)
        return not differences(last[0], last[1], GROUPS)

    try:
        until("groupscope agreeing with Kafka", agree, QUIET_TIMEOUT_S, poll_s=0.5)
    except AssertionError:
        pass
    return last[0], last[1]


def _count_records(broker: KafkaBroker, topic: str, isolation: str) -> int:
    """Records of `topic` (one partition) a consumer reads to the end under `isolation`."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, isolation_level=isolation,
                             enable_auto_commit=False, consumer_timeout_ms=3000,
                             auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition(topic, 0)])
        return sum(1 for _ in consumer)
    finally:
        consumer.close()


def _landing_partitions(broker: KafkaBroker) -> dict[str, set[int]]:
    """group -> the `__consumer_offsets` partitions its records are in, as read back from Kafka."""
    from kafka import KafkaConsumer, TopicPartition

    from coordinator.records import decode

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    try:
        partitions = [TopicPartition(OFFSETS_TOPIC, p) for p in range(OFFSETS_PARTITIONS)]
        consumer.assign(partitions)
        # Up to the end seen now: the live members keep committing.
        ends = consumer.end_offsets(partitions)
        landed: dict[str, set[int]] = {}
        deadline = time.monotonic() + 60
        while any(consumer.position(tp) < ends[tp] for tp in partitions):
            assert time.monotonic() < deadline, "reading __consumer_offsets to its end took over 60 s"
            for records in consumer.poll(timeout_ms=1000).values():
                for message in records:
                    key = decode(message.key, message.value).key
                    landed.setdefault(key.get("group", key.get("group_id")), set()).add(message.partition)
        return landed
    finally:
        consumer.close()


def _coordinator_partitions(job: GroupscopeJob) -> dict[str, str]:
    return {dict(k)["group"]: dict(k)["coordinator_partition"] for k in job.scrape()["kafka_consumergroup_info"]}


def _cleaned_partitions(broker: KafkaBroker) -> set[int]:
    """`__consumer_offsets` partitions the log cleaner reports having cleaned."""
    return {int(n) for n in re.findall(rf"[Cc]leaned log {OFFSETS_TOPIC}-(\d+)", broker.log())}


def _compact_offsets_topic(broker: KafkaBroker, committer: Committer, partitions: set[int]) -> None:
    """Roll and clean `__consumer_offsets`: short segment.ms and a low dirty ratio on the internal
    topic (Kafka accepts incremental config changes on it), then one commit per partition to
    clean (a segment rolls only on an append), then wait for the cleaner's log lines."""
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                       ResourceType)

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    resource = ConfigResource(ResourceType.TOPIC, OFFSETS_TOPIC, incremental_configs=[
        ConfigEntry("segment.ms", "100", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("min.cleanable.dirty.ratio", "0.01", incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)
    time.sleep(1.0)  # the change reaches the log, and the active segments grow older than 100 ms
    pokes = {}
    for i in range(10_000):
        name = f"cmp-poke-{i}"
        where = partition_for(name, OFFSETS_PARTITIONS)
        if where in partitions and where not in pokes:
            pokes[where] = name
        if len(pokes) == len(partitions):
            break
    poker = Committer(broker, tuple(pokes.values()))
    try:
        for group in pokes.values():
            poker.commit(group, {(MANY_TOPIC, 0): 1})
    finally:
        poker.close()
    until(f"the cleaner cleaning __consumer_offsets partitions {sorted(partitions)}",
          lambda: partitions <= _cleaned_partitions(broker), 60, poll_s=0.5)


# -- the run ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def run(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("txn-compaction")
    broker = start_kafka("4.4.0", extra_props={"offsets.topic.num.partitions": str(OFFSETS_PARTITIONS)})
    jobs: list[GroupscopeJob] = []
    members = committer = None
    try:
        jobs.append(run_groupscope_job(spark, broker.bootstrap, root / "job-before"))
        create_topic(broker.bootstrap, TXN_TOPIC, 2)
        create_topic(broker.bootstrap, OUT_TOPIC, 1)
        create_topic(broker.bootstrap, DATA_TOPIC, 4)
        create_topic(broker.bootstrap, MANY_TOPIC, 8)
        produce_raw(broker.bootstrap, TXN_TOPIC, [(p, None, b"r", 0) for p in (0, 1)
                                                  for _ in range(COPIER_RECORDS)])
        produce_raw(broker.bootstrap, DATA_TOPIC, [(p, None, b"r", 0) for p in range(4) for _ in range(5)])
        # as many records as the committing groups' highest offset: Kafka's lag is then >= 0
        produce_raw(broker.bootstrap, MANY_TOPIC, [(p, None, b"r", 0) for p in range(8) for _ in range(210)])

        members = Members(broker, root)
        for group, (protocol, assignor) in LIVE.items():
            for i in range(2):
                members.start(f"{group}-m{i}", group, DATA_TOPIC, protocol, assignor)
        committer = Committer(broker, (*SIMPLE, GONE))

        def commit_rounds() -> None:
            for round_ in range(1, 21):
                for g, group in enumerate((*SIMPLE, GONE)):
                    committer.commit(group, {(MANY_TOPIC, p): round_ * 10 + g for p in range(8)})

        # The writers touch groups of their own: side by side, as a cluster's clients are.
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            writers = [pool.submit(_convert_both_ways, broker, members),
                       pool.submit(_py_transactions, broker),
                       pool.submit(_run_copier, broker, root / "copier.jsonl"),
                       pool.submit(commit_rounds)]
            copier_out = writers[2].result()
            for writer in writers:
                writer.result()
        from kafka import KafkaAdminClient, TopicPartition

        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            admin.delete_groups([GONE])
            admin.delete_group_offsets(TRIMMED, [TopicPartition(MANY_TOPIC, 0)])
        finally:
            admin.close()

        before_kafka, before_ours = _quiet_views(jobs[0], broker, members)
        history = read_history(jobs[0].history_path, "snapshots")
        landed, labelled = _landing_partitions(broker), _coordinator_partitions(jobs[0])
        partitions = {partition_for(g, OFFSETS_PARTITIONS) for g in GROUPS}
        _compact_offsets_topic(broker, committer, partitions)

        jobs.append(run_groupscope_job(spark, broker.bootstrap, root / "job-after"))
        after_kafka, after_ours = _quiet_views(jobs[1], broker, members)
        first_job_now = groupscope_views(jobs[0], GROUPS)
        output = {level: _count_records(broker, OUT_TOPIC, level)
                  for level in ("read_committed", "read_uncommitted")}
        yield {"landed": landed, "labelled": labelled, "broker": broker, "copier": copier_out, "output": output, "history": history,
               "before": (before_kafka, before_ours), "after": (after_kafka, after_ours),
               "first_job_after": first_job_now, "cleaned": _cleaned_partitions(broker) & partitions}
    finally:
        if committer is not None:
            committer.close()
        if members is not None:
            members.kill_all()
        for job in jobs:
            job.stop()
        broker.stop()


def test_copier_aborted_some_transactions(run):
    """The scenario is what it claims: the copier finished, and it aborted transactions (their
    records stay in the output topic, visible to read_uncommitted only). The fixed-pattern
    producer wrote one record per transaction, 2 committed and 2 aborted."""
    lines = [json.loads(line) for line in run["copier"].splitlines() if line.startswith("{")]
    assert lines and lines[-1]["stage"] == "ShutdownComplete", run["copier"][-2000:]
    assert lines[-1]["totalProcessed"] == COPIER_RECORDS
    output = run["output"]
    assert output["read_committed"] == COPIER_RECORDS + 2, output
    assert output["read_uncommitted"] - output["read_committed"] > 2, output


def test_aborted_offsets_never_show(run):
    """Every snapshot job 1 ever wrote of the fixed-pattern group holds only offsets of committed
    transactions: partition 1 (only in aborted ones) never, partition 0 only 10 or 30."""
    seen: dict[int, set[int]] = {}
    for row in run["history"]:
        if row["group"] == PY_GROUP:
            for o in row["payload"]["offsets"]:
                assert o["topic"] == TXN_TOPIC
                seen.setdefault(o["partition"], set()).add(o["offset"])
    assert seen and seen[0] <= PY_COMMITTED[0] and 1 not in seen, seen
    assert 30 in seen[0], seen


def test_transactional_commits_match_kafka(run):
    kafka, ours = run["before"]
    assert kafka[PY_GROUP].committed == {(TXN_TOPIC, 0): 30}
    assert kafka[COPIER_GROUP].committed == {(TXN_TOPIC, 0): COPIER_RECORDS}
    assert differences(kafka, ours, (PY_GROUP, COPIER_GROUP)) == []


def test_job_before_compaction_matches_kafka(run):
    kafka, ours = run["before"]
    assert GONE not in kafka and ours[GONE].state == "Dead", ours.get(GONE)
    assert (MANY_TOPIC, 0) not in kafka[TRIMMED].committed
    assert set(kafka) == set(GROUPS) - {GONE}
    assert differences(kafka, ours, GROUPS) == []


def test_coordinator_partitions_are_where_kafka_wrote_the_groups(run):
    """On a cluster with 10 offsets partitions, each group's coordinator_partition label names the
    partition its records are in (Kafka's partitionFor over the topic's own partition count)."""
    landed = {g: run["landed"][g] for g in GROUPS}
    assert all(len(parts) == 1 for parts in landed.values()), landed
    assert {g: str(next(iter(landed[g]))) for g in GROUPS} == {g: run["labelled"][g] for g in GROUPS}
    assert {next(iter(parts)) for parts in landed.values()} <= set(range(OFFSETS_PARTITIONS))
    assert any(partition_for(g, 50) >= OFFSETS_PARTITIONS for g in GROUPS)  # the default would be wrong


def test_cleaner_compacted_the_groups_partitions(run):
    assert run["cleaned"] == {partition_for(g, OFFSETS_PARTITIONS) for g in GROUPS}


def test_job_on_compacted_topic_matches_kafka(run):
    kafka, ours = run["after"]
    assert differences(kafka, ours, GROUPS) == []


def test_job_on_compacted_topic_equals_job_that_read_it_whole(run):
    """Rule 10: the same view from the compacted topic as from every record, but for the group
    deleted before compaction: the job that read its records shows it Dead, the one that finds
    only its tombstone does not know it."""
    whole, compacted = dict(run["first_job_after"]), dict(run["after"][1])
    assert whole.pop(GONE).state == "Dead"
    assert GONE not in compacted
    assert compacted == whole
