"""`source.type: admin` against a real Kafka 4.4 broker, as managed Kafka serves it: the
principal may not read `__consumer_offsets` at all (no ACL on it), only DESCRIBE its groups and
topics. Live classic and KIP-848 members (Java clients) and a group that only commits: the admin
source's groups, members, assignments, committed offsets and lag equal what Kafka's own
AdminClient shows (docs/kafka-parity.md's rules), and a member leaving is counted as a
rebalance that moved its partitions."""
from __future__ import annotations

import json
import time
import uuid

import pytest

from streaming.config import load_config
from streaming.exporter.metrics_cache import MetricsCache
from streaming.job.admin_job import AdminJob
from tests.support.groupscope_job import CLUSTER, start_groupscope_job
from tests.support.kafka_broker import assigned_member, create_topic, produce_raw
from tests.support.parity import differences, groupscope_views, kafka_views
from tests.support.parity_clients import Members
from tests.support.scrape_support import parse
from tests.support.waiting import until
from tests.support.secured_kafka import SCRAM_USER, STORE_PASSWORD, grant, revoke

PARTITIONS = 4


class _Served:
    """What tests.support.parity reads from a job (its scrape and its groups' snapshots), here
    from an AdminJob in this process."""

    def __init__(self, job: AdminJob) -> None:
        self.job = job
        self.cache = MetricsCache(job.view)  # one, as the exporter keeps: it tracks changes

    def scrape(self):
        return parse(b"".join(bytes(p) for p in self.cache.exposition()).decode())

    def snapshots(self):
        return {name: seen.snapshot for name, seen in self.job._seen.items()}


def _settings(secured, tmp_path) -> dict[str, str]:
    (tmp_path / "password").write_text(secured.scram_password)
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
                                f'username="{SCRAM_USER}" password="${{file:{tmp_path / "password"}}}";',
            "ssl.truststore.location": str(secured.tls.truststore),
            "ssl.truststore.password": STORE_PASSWORD}


@pytest.mark.timeout(300)
def test_the_admin_source_shows_what_kafkas_admin_client_shows(broker, secured_broker, tmp_path):
    tag = uuid.uuid4().hex[:8]
    topic, prefix = f"adm-data-{tag}", f"adm-{tag}-"
    classic, modern, committing = f"{prefix}classic", f"{prefix}kip848", f"{prefix}simple"
    groups = (classic, modern, committing)
    create_topic(broker.bootstrap, topic, PARTITIONS)
    now_ms = int(time.time() * 1000)
    produce_raw(broker.bootstrap, topic, [(p, None, b"x", now_ms) for p in range(PARTITIONS)
                                          for _ in range(20)])
    # A group that only commits (a consumer assigning its partitions itself).
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata
    simple = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=committing,
                           enable_auto_commit=False)
    simple.commit({TopicPartition(topic, p): OffsetAndMetadata(5 + p, "", -1)
                   for p in range(PARTITIONS)})
    simple.close()

    principal = f"User:{SCRAM_USER}"
    # What managed Kafka gives: groups and topics described, __consumer_offsets not readable.
    grant(broker.bootstrap, principal, [("GROUP", prefix, "DESCRIBE", "PREFIXED"),
                                        ("TOPIC", topic, "DESCRIBE")])
    members = Members(broker, tmp_path)
    job = None
    try:
        members.start("c1", classic, topic, "classic", "range")
        members.start("c2", classic, topic, "classic", "range")
        members.start("k1", modern, topic, "consumer", "uniform")
        members.start("k2", modern, topic, "consumer", "uniform")
        env = {"GROUPSCOPE_SOURCE__TYPE": "admin", "GROUPSCOPE_CLUSTER__NAME": CLUSTER,
               "GROUPSCOPE_SOURCE__BOOTSTRAP_SERVERS": secured_broker.sasl_ssl,
               "GROUPSCOPE_SOURCE__KAFKA": json.dumps(_settings(secured_broker, tmp_path)),
               "GROUPSCOPE_SOURCE__ADMIN_INTERVAL": "0.5s", "GROUPSCOPE_LAG__POLL_INTERVAL": "0.5s",
               "GROUPSCOPE_HISTORY__PATH": str(tmp_path / "history")}
        job = AdminJob(load_config(None, env=env), start_exporter=False).start()
        served = _Served(job)
        last: list = []

        def agree(sizes: dict[str, int]) -> bool:
            last[:] = [kafka_views(broker, members.describe, groups),
                       groupscope_views(served, groups)]
            return not differences(last[0], last[1], groups) and all(
                g in last[0] and len(last[0][g].members or {}) == n for g, n in sizes.items())

        def until_agreed(what: str, sizes: dict[str, int], also=lambda: True) -> None:
            try:
                until(what, lambda: agree(sizes) and also(), timeout_s=90, poll_s=0.5)
            except AssertionError:
                raise AssertionError(what + ":\n" + "\n".join(
                    differences(last[0], last[1], groups) if last else [])
                    + f"\n({job.polls} polls)") from None

        until_agreed("the admin source agreeing with Kafka's AdminClient", {classic: 2, modern: 2})
        kafka = last[0]
        assert kafka[committing].committed == {(topic, p): 5 + p for p in range(PARTITIONS)}
        assert last[1][committing].lag == {(topic, p): 15 - p for p in range(PARTITIONS)}
        rebalances_before = job.view.groups[classic].rebalances
        moved_before = job.view.groups[classic].partitions_moved

        members.stop("c2", wait=True)  # its partitions move to c1
        until_agreed("the classic group down to one member", {classic: 1, modern: 2},
                     lambda: job.view.groups[classic].rebalances > rebalances_before)
        rebalances = job.view.groups[classic].rebalances - rebalances_before
        moved = job.view.groups[classic].partitions_moved - moved_before
    finally:
        members.kill_all()
        if job is not None:
            job.stop()
        revoke(broker.bootstrap, principal)
    # One rebalance, which moved the partitions the member that left had (range: half of them).
    assert rebalances == 1 and moved == PARTITIONS // 2
    # The principal never read __consumer_offsets: nothing was granted on it.
    assert job.view.records_total == {}


@pytest.mark.timeout(300)
def test_a_log_job_serves_the_admin_view_from_launch(broker, tmp_path):
    """`groupscope run` on `__consumer_offsets` (source.admin_seed, on by default): the first
    scrape that shows a group is served from one Admin API look made while Spark starts
    (groupscope_seeded_groups, not ready), with Kafka's committed offsets; once the log is read
    the seed is gone and the group comes from the log (its coordinator partition known), still
    with Kafka's offsets."""
    from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    from coordinator.partitioning import partition_for

    tag = uuid.uuid4().hex[:8]
    topic, group = f"seed-data-{tag}", f"seed-{tag}"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    produce_raw(broker.bootstrap, topic, [(p, None, b"x", int(time.time() * 1000))
                                          for p in range(PARTITIONS) for _ in range(20)])
    committer = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=group,
                              enable_auto_commit=False)
    committer.commit({TopicPartition(topic, p): OffsetAndMetadata(3 + p, "", -1)
                      for p in range(PARTITIONS)})
    committer.close()
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        kafka = {str(tp.partition): o.offset
                 for tp, o in admin.list_group_offsets([group])[group].items()}
    finally:
        admin.close()
    assert kafka == {str(p): 3 + p for p in range(PARTITIONS)}
    key = frozenset({("cluster", CLUSTER)})

    def served(samples) -> dict[str, float]:
        return {dict(k)["partition"]: v
                for k, v in samples.get("kafka_consumergroup_committed_offset", {}).items()
                if dict(k)["group"] == group}

    def info(samples) -> dict[str, str]:
        return next((dict(k) for k in samples.get("kafka_consumergroup_info", {})
                     if dict(k)["group"] == group), {})

    job = start_groupscope_job(broker.bootstrap, tmp_path / "job")
    try:
        def when(ok):
            return lambda: (lambda samples: samples if ok(samples) else None)(job.scrape())

        first = until("the group served", when(served), timeout_s=120, poll_s=0.1)
        assert first["groupscope_ready"][key] == 0
        assert first["groupscope_seeded_groups"][key] >= 1
        assert served(first) == kafka and info(first)["coordinator_partition"] == ""
        assert "as the Admin API shows them" in job.log()
        # The job runs with its defaults (local mode, tuned): the seed has the machine first.
        until("the catch-up started after the seed",
              lambda: "the log's catch-up starts once the launch seed's" in job.log(), 60)

        last = until("the log read, the seed gone", when(
            lambda s: job.caught_up(s) and s["groupscope_seeded_groups"][key] == 0), 120)
        assert served(last) == kafka
        assert info(last)["coordinator_partition"] == str(partition_for(group, 50))
    finally:
        job.stop()
    # A restart serves the checkpoint's groups: its catch-up does not wait for a seed.
    job = start_groupscope_job(broker.bootstrap, tmp_path / "job")
    try:
        until("the group served from the checkpoint after a restart", when(
            lambda s: served(s) == kafka
            and info(s).get("coordinator_partition") == str(partition_for(group, 50))), 120)
        # Nothing new in the log: the checkpoint's progress makes it ready, no batch needed.
        until("the restarted job caught up", when(job.caught_up), 120)
        assert job.log().count("the log's catch-up starts once the launch seed's") == 1
    finally:
        job.stop()


def test_an_empty_group_is_polled_as_describing_it_shows(broker, monkeypatch):
    """Empty classic groups are not described (the listing says all there is): what the poll
    gives for one equals what Kafka's DescribeGroups answer gives, for a group that only ever
    committed and for one whose consumers all left. Offsets are asked a group a request here,
    so the poll keeps two requests in flight through many (the session broker's groups)."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    from streaming.kafka import admin_groups
    from streaming.kafka.admin_groups import AdminGroups

    monkeypatch.setattr(admin_groups, "OFFSET_FETCH_GROUPS", 1)

    tag = uuid.uuid4().hex[:8]
    topic, committing, left = f"empty-data-{tag}", f"empty-{tag}-simple", f"empty-{tag}-left"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    produce_raw(broker.bootstrap, topic, [(p, None, b"x", int(time.time() * 1000))
                                          for p in range(PARTITIONS)])
    simple = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=committing,
                           enable_auto_commit=False)
    simple.commit({TopicPartition(topic, p): OffsetAndMetadata(1, "", -1)
                   for p in range(PARTITIONS)})
    simple.close()
    member = assigned_member(broker.bootstrap, topic, left, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    member.commit({TopicPartition(topic, p): OffsetAndMetadata(1, "", -1)
                   for p in range(PARTITIONS)})  # as a member of the group's generation
    member.close()
    client = AdminGroups({"bootstrap_servers": [broker.bootstrap]}, timeout_s=30)
    try:
        until("both groups Empty", lambda: {g.group: g.state for g in client.poll()
                                            if g.group in (committing, left)}
              == {committing: "Empty", left: "Empty"}, timeout_s=60)
        polled = {g.group: g for g in client.poll() if g.group in (committing, left)}
        offsets = {name: group.offsets for name, group in polled.items()}
        described = {g.group: g for g in client._classic(
            {name: group.protocol_type for name, group in polled.items()}, offsets)}
        # the launch seed's two parts: the first group by name, then the rest, of one listing
        first, rest = client.poll_parts(1)
        everyone = {g.group for g in client.poll()}
    finally:
        client.close()
    assert [g.group for g in first] == [min(everyone)]
    assert {g.group for g in rest} | {first[0].group} == everyone
    assert polled == described
    assert polled[left].protocol_type == "consumer" and polled[committing].protocol_type == ""
    assert polled[committing].offsets == tuple((topic, p, 1, -1, "") for p in range(PARTITIONS))
    assert [(t, p, o) for t, p, o, _, _ in polled[left].offsets] == [
        (topic, p, 1) for p in range(PARTITIONS)]
    assert client.requests >= 2


@pytest.mark.timeout(300)
def test_the_admin_source_writes_the_history(broker, tmp_path, capsys):
    """source.type admin writes the history the log path writes: a classic member that leaves
    is in `groupscope history` (the member, and the rebalance it caused, whose start the
    polls date: admin-poll), and a restarted job's counters go on from the history."""
    from streaming.cli.main import main

    tag = uuid.uuid4().hex[:8]
    topic, group = f"adm-hist-data-{tag}", f"adm-hist-{tag}"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    history = tmp_path / "history"
    env = {"GROUPSCOPE_SOURCE__TYPE": "admin", "GROUPSCOPE_CLUSTER__NAME": CLUSTER,
           "GROUPSCOPE_SOURCE__BOOTSTRAP_SERVERS": broker.bootstrap,
           "GROUPSCOPE_SOURCE__ADMIN_INTERVAL": "0.5s", "GROUPSCOPE_HISTORY__PATH": str(history)}
    config = load_config(None, env=env)
    members = Members(broker, tmp_path)
    job = AdminJob(config, start_exporter=False, start_poller=False).start()
    try:
        def served(count: int) -> bool:
            record = job.view.groups.get(group)
            snapshot = record.snapshot if record is not None else None
            return (snapshot is not None and snapshot["state"] == "Stable"
                    and len(snapshot["members"]) == count
                    and all(m["assigned"] for m in snapshot["members"]))

        members.start("h1", group, topic, "classic", "range")
        members.start("h2", group, topic, "classic", "range")
        until("two members served", lambda: served(2), timeout_s=90)
        before = job.view.groups[group].rebalances
        members.stop("h2", wait=True)
        until("the member's leave counted", lambda: served(1)
              and job.view.groups[group].rebalances > before, timeout_s=90)
        counted = (job.view.groups[group].rebalances, job.view.groups[group].partitions_moved)
    finally:
        job.stop()
    capsys.readouterr()
    assert main(["history", "--group", group, "--path", str(history)]) == 0
    out = capsys.readouterr().out
    assert "start admin-poll" in out and "member left" in out, out
    assert "state Stable, classic group" in out, out
    job = AdminJob(config, start_exporter=False, start_poller=False).start()
    try:
        until("a poll after the restart", lambda: job.polls >= 2, timeout_s=60)
        record = job.view.groups[group]
        assert (record.rebalances, record.partitions_moved) == counted
        assert record.snapshot["generation"] >= 1  # the counted generation goes on
    finally:
        job.stop()
        members.kill_all()


@pytest.mark.timeout(300)
def test_kip848_partitions_moved_are_counted_when_they_change_hands(broker, tmp_path):
    """A KIP-848 group on 6 partitions, 3 s heartbeats: its members take seconds to hand
    partitions over after the epoch rises, while the admin source polls every 0.5 s. A member
    leaving, then another joining: each rebalance counts as moved every partition whose owner
    Kafka shows changed between the settled assignments before and after it (3 and 3), not
    what had changed hands at the poll that saw the epoch rise."""
    tag = uuid.uuid4().hex[:8]
    topic, group = f"adm-moved-data-{tag}", f"adm-moved-{tag}"
    create_topic(broker.bootstrap, topic, 6)
    done = broker.run_tool("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server",
                           broker.bootstrap, "--entity-type", "groups", "--entity-name", group,
                           "--alter", "--add-config", "consumer.heartbeat.interval.ms=3000")
    assert done.returncode == 0, done.stdout + done.stderr
    env = {"GROUPSCOPE_SOURCE__TYPE": "admin", "GROUPSCOPE_CLUSTER__NAME": CLUSTER,
           "GROUPSCOPE_SOURCE__BOOTSTRAP_SERVERS": broker.bootstrap,
           "GROUPSCOPE_SOURCE__ADMIN_INTERVAL": "0.5s",
           "GROUPSCOPE_HISTORY__PATH": str(tmp_path / "history")}
    members = Members(broker, tmp_path)
    job = AdminJob(load_config(None, env=env), start_exporter=False, start_poller=False).start()

    def kafka_settled(count: int) -> dict[str, set] | None:
        d = members.describe([group]).get(group) or {}
        if "members" not in d:
            return None  # not described yet
        owners = {m["id"]: set(map(tuple, m["assigned"] or ())) for m in d["members"]}
        settled = (len(owners) == count and d["group_epoch"] == d["target_epoch"]
                   and all(m["epoch"] == d["group_epoch"]
                           and owners[m["id"]] == set(map(tuple, m["target"] or ()))
                           for m in d["members"]))
        return (d["group_epoch"], owners) if settled else None

    def counted(epoch: int, rebalances: int) -> bool:
        """The job has seen the group settled at `epoch`, after `rebalances` rebalances."""
        record = job.view.groups.get(group)
        snapshot = record.snapshot if record is not None else None
        return (snapshot is not None and record.rebalances > rebalances
                and snapshot["generation"] == snapshot["assignment_epoch"] == epoch
                and all(m["member_epoch"] == epoch and sorted(m["assigned"]) == sorted(m["target"])
                        for m in snapshot["members"]))

    def moved(old: dict[str, set], new: dict[str, set]) -> int:
        owner = {tp: mid for mid, tps in old.items() for tp in tps}
        return sum(1 for mid, tps in new.items() for tp in tps if owner.get(tp) not in (None, mid))

    try:
        members.start("k1", group, topic, "consumer", "uniform")
        members.start("k2", group, topic, "consumer", "uniform")
        epoch, before = until("two members settled", lambda: kafka_settled(2), timeout_s=90)
        until("the two settled served", lambda: counted(epoch, -1), timeout_s=60)
        for change in ("k2 leaves", "k3 joins"):
            record = job.view.groups[group]
            rebalances, moved_before = record.rebalances, record.partitions_moved
            if change == "k2 leaves":
                members.stop("k2")
            else:
                members.start("k3", group, topic, "consumer", "uniform")
            epoch, after = until(f"{change}: settled", lambda: kafka_settled(
                1 if change == "k2 leaves" else 2), timeout_s=90)
            until(f"{change}: counted", lambda: counted(epoch, rebalances), timeout_s=60)
            assert moved(before, after) == 3
            assert (record.rebalances - rebalances,
                    record.partitions_moved - moved_before) == (1, 3), change
            before = after
    finally:
        job.stop()
        members.kill_all()


@pytest.mark.timeout(420)
def test_the_admin_source_serves_share_and_streams_groups(broker, tmp_path):
    """source.type admin serves the group types the log path serves: a share group (console
    share consumers; ShareGroupDescribe, DescribeShareGroupOffsets) and a streams group (Kafka
    Streams instances; StreamsGroupDescribe) as Kafka's own commands show them while members
    come and go, the share-partitions' start offsets and lag as kafka-share-groups.sh
    --offsets prints them, and no delivery-state series polling cannot know."""
    import subprocess

    from tests.broker.test_share_streams_groups import (
        SHARE_CONSUMER, _from_earliest, _kafka_share, _kafka_share_offsets, _kafka_streams,
        _our_share_offsets, _ours, _produce, _two_then_one)
    from tests.support.streams_app import compile_streams_app, start_streams_app

    run = uuid.uuid4().hex[:6]
    share_topic, share_group = f"adm-share-in-{run}", f"adm-share-{run}"
    source, sink, app_id = f"adm-streams-in-{run}", f"adm-streams-out-{run}", f"adm-streams-{run}"
    for topic in (share_topic, source, sink):
        create_topic(broker.bootstrap, topic, 3)
    _produce(broker.bootstrap, share_topic, 200)
    _produce(broker.bootstrap, source, 200)
    _from_earliest(broker, [share_group])
    classpath = compile_streams_app(broker, tmp_path / "classes")
    env = {"GROUPSCOPE_SOURCE__TYPE": "admin", "GROUPSCOPE_CLUSTER__NAME": CLUSTER,
           "GROUPSCOPE_SOURCE__BOOTSTRAP_SERVERS": broker.bootstrap,
           "GROUPSCOPE_SOURCE__ADMIN_INTERVAL": "0.5s", "GROUPSCOPE_LAG__POLL_INTERVAL": "0.5s",
           "GROUPSCOPE_HISTORY__PATH": str(tmp_path / "history")}
    job = AdminJob(load_config(None, env=env), start_exporter=False).start()
    served = _Served(job)
    try:
        consumers = [broker.start_tool(SHARE_CONSUMER, "--bootstrap-server", broker.bootstrap,
                                       "--topic", share_topic, "--group", share_group,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                     for _ in range(2)]
        _two_then_one(consumers, lambda: _kafka_share(broker, share_group),
                      lambda: _ours(served, share_group, "share"), "share consumers (admin)")
        last: list = []

        def offsets_agree() -> bool:
            kafka = _kafka_share_offsets(broker, share_group)
            samples = served.scrape()
            shown = {tp: figures for tp, figures in kafka.items() if figures != (None, None)}
            last[:] = [kafka, _our_share_offsets(samples, share_group), samples]
            return len(kafka) == 3 and last[1] == shown

        try:
            until("share offsets as Kafka prints them", offsets_agree, timeout_s=60, poll_s=1.0)
        except AssertionError:
            raise AssertionError(f"Kafka {last[0]}\ngroupscope {last[1]}") from None
        samples = last[2]
        for name in ("kafka_sharegroup_partition_records", "kafka_sharegroup_archived_records_total",
                     "kafka_sharegroup_partition_delivery_count_records"):
            assert not [k for k in samples.get(name, {}) if ("group", share_group) in k], name
        apps = [start_streams_app(broker, classpath, app_id, source, sink, tmp_path / f"state{i}")
                for i in range(2)]
        _two_then_one(apps, lambda: _kafka_streams(broker, app_id),
                      lambda: _ours(served, app_id, "streams"), "streams instances (admin)")
    finally:
        job.stop()
