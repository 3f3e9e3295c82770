"""The end-offset poller: with an injected client (failures, timeouts, deleted topics) and against
a real Kafka broker (tests/support/kafka_broker.py) through both offsets clients."""
from __future__ import annotations

import threading
import time
import uuid

import pytest

from tests.support.kafka_broker import create_topic, produce_raw
from streaming.config import load_config
from streaming.exporter.end_offset_poller import EndOffsetPoller, PollerSettings
from streaming.exporter.evaluation import build_families
from streaming.exporter.view import MonitorView, ViewSettings
from streaming.job.settings import offsets_client_factory, poller_settings
from streaming.kafka.offsets import kafka_topic_id, offsets_client
from streaming.sources.kafka_options import KafkaSourceOptions


def committed_group(view: MonitorView, group: str, offsets: dict[tuple[str, int], int]) -> None:
    commit_ms = int(view.clock() * 1000)
    view.update_groups([{
        "group": group, "group_type": "classic", "protocol_type": "consumer", "protocol": "range",
        "state": "Empty", "generation": 1, "assignment_epoch": None, "leader": None,
        "current_state_timestamp_ms": None, "coordinator_partition": 0, "members": [],
        "subscribed_topics": [], "last_rebalance": None, "updated_ms": 0,
        "offsets": [{"topic": t, "partition": p, "offset": o, "leader_epoch": None,
                     "metadata": "", "commit_timestamp_ms": commit_ms, "topic_id": None}
                    for (t, p), o in offsets.items()]}])


class FakeClient:
    def __init__(self, ends, starts, counts, names=None):
        self.ends, self.starts, self.counts, self.names = ends, starts, counts, names or {}
        self.asked: list[list] = []
        self.fail = False
        self.closed = 0

    def end_offsets(self, partitions):
        self.asked.append(list(partitions))
        if self.fail:
            raise TimeoutError("ListOffsets timed out")
        return {tp: self.ends[tp] for tp in partitions}

    def start_offsets(self, partitions):
        return {tp: self.starts[tp] for tp in partitions}

    def topic_metadata(self):
        return self.names, self.counts

    def close(self):
        self.closed += 1


def gauge(view, name, **labels):
    for family in build_families(view):
        if family.name != name:
            continue
        for values, number in family.samples:
            if dict(zip(family.label_names, values)) == dict(cluster="default", **labels):
                return number
    raise KeyError((name, labels))


def test_polls_exactly_the_committed_partitions_that_exist():
    view = MonitorView()
    committed_group(view, "g", {("a", 0): 1, ("a", 1): 2, ("gone", 0): 3, ("a", 7): 0})
    client = FakeClient({("a", 0): 10, ("a", 1): 20}, {("a", 0): 0, ("a", 1): 5}, {"a": 2})
    poller = EndOffsetPoller(view, lambda: client, clock=lambda: 100.0)
    assert poller.poll_once()
    # "gone" is not in the metadata and a/7 does not exist: neither is asked for.
    assert client.asked == [[("a", 0), ("a", 1)]]
    assert view.log_end(("a", 1)) == (20, 100.0)
    assert view.log_start(("a", 1)) == 5
    assert view.partition_counts == {"a": 2}


def test_failed_poll_keeps_values_and_age_grows():
    now = [100.0]
    view = MonitorView(clock=lambda: now[0])
    committed_group(view, "g", {("a", 0): 1})
    client = FakeClient({("a", 0): 10}, {("a", 0): 0}, {"a": 1})
    refreshed = []
    poller = EndOffsetPoller(view, lambda: client, clock=lambda: now[0],
                             on_poll=lambda: refreshed.append(now[0]))
    assert poller.poll_once()
    client.fail = True
    now[0] = 160.0
    assert not poller.poll_once()
    assert client.closed == 1  # the broken client is dropped; a new one is made next time
    assert view.log_end(("a", 0)) == (10, 100.0)
    assert gauge(view, "groupscope_end_offsets_age_seconds") == 60.0
    assert view.poll_failures == 1
    assert refreshed == [100.0, 160.0]
    client.fail = False
    client.ends[("a", 0)] = 15
    now[0] = 170.0
    assert poller.poll_once()
    assert view.end_samples(("a", 0)) == [(10, 100.0), (15, 170.0)]


def test_slow_poll_never_blocks_the_view():
    view = MonitorView()
    committed_group(view, "g", {("a", 0): 1})
    release = threading.Event()

    class Slow(FakeClient):
        def end_offsets(self, partitions):
            release.wait(10)
            return super().end_offsets(partitions)

    poller = EndOffsetPoller(view, lambda: Slow({("a", 0): 4}, {("a", 0): 0}, {"a": 1}),
                             PollerSettings(interval_s=0.05))
    poller.start()
    try:
        time.sleep(0.2)
        started = time.monotonic()
        committed_group(view, "g", {("a", 0): 2})  # the job keeps feeding while a poll hangs
        build_families(view)
        assert time.monotonic() - started < 5
    finally:
        release.set()
        poller.stop()


def test_first_record_times_are_asked_again_only_when_the_log_start_moves():
    now = [100.0]
    view = MonitorView(clock=lambda: now[0])
    committed_group(view, "g", {("a", 0): 1, ("a", 1): 0})
    client = FakeClient({("a", 0): 10, ("a", 1): 0}, {("a", 0): 0, ("a", 1): 0}, {"a": 2})
    asked = []
    client.first_record_times = lambda tps: asked.append(sorted(tps)) or {tp: now[0] - 50
                                                                           for tp in tps}
    poller = EndOffsetPoller(view, lambda: client, clock=lambda: now[0])
    assert poller.poll_once()
    now[0] = 105.0
    assert poller.poll_once()
    assert asked == [[("a", 0)]]  # a/1 holds no record: nothing to ask
    client.starts[("a", 0)] = 4  # retention removed the first records: a younger first one
    now[0] = 110.0
    assert poller.poll_once()
    assert asked == [[("a", 0)], [("a", 0)]]
    with view.lock:
        key = view._tp(("a", 0))
        assert view.ends.first_time(key) == 60.0


def test_topic_id_in_kafka_form():
    value = "01a200a0-5531-7130-903e-e8feb06ea2f7"
    encoded = kafka_topic_id(value)
    assert len(encoded) == 22 and "=" not in encoded
    import base64
    assert uuid.UUID(bytes=base64.urlsafe_b64decode(encoded + "==")) == uuid.UUID(value)
    assert kafka_topic_id(uuid.UUID(value)) == kafka_topic_id(uuid.UUID(value).bytes) == encoded


def test_bad_poller_settings():
    with pytest.raises(ValueError):
        PollerSettings(interval_s=0)


@pytest.mark.parametrize("client", ["kafka-python", "confluent"])
def test_poller_against_a_real_broker(broker, client):
    topic = f"endoffsets-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 3)
    counts = {0: 5, 1: 2, 2: 0}
    records = [(p, None, f"v{i}".encode(), 1_700_000_000_000 + i)
               for p, n in counts.items() for i in range(n)]
    produce_raw(broker.bootstrap, topic, records)

    view = MonitorView(ViewSettings(cluster="default"))
    committed_group(view, "g", {(topic, 0): 1, (topic, 1): 2, (topic, 2): 0})
    options = KafkaSourceOptions(bootstrap_servers=broker.bootstrap, client=client)
    poller = EndOffsetPoller(view, lambda: offsets_client(options, timeout_s=10.0))
    try:
        assert poller.poll_once(), f"poll through {client} failed"
        assert {key[1]: view.log_end(key)[0] for key in view.polled()} == counts
        assert {key[1]: view.log_start(key) for key in view.polled()} == {0: 0, 1: 0, 2: 0}
        assert view.partition_counts[topic] == 3
        assert topic in view.topic_names.values()
        assert all(len(topic_id) == 22 for topic_id in view.topic_names)
        assert gauge(view, "kafka_consumergroup_lag", group="g", topic=topic, partition="0") == 4

        produce_raw(broker.bootstrap, topic, [(0, None, b"late", 1_700_000_001_000)])
        assert poller.poll_once()
        assert view.log_end((topic, 0))[0] == 6
        assert gauge(view, "kafka_consumergroup_lag", group="g", topic=topic, partition="0") == 5
    finally:
        poller.stop()


def test_metadata_is_refreshed_early_for_a_new_topic():
    now = [100.0]
    view = MonitorView(clock=lambda: now[0])
    committed_group(view, "g", {("a", 0): 1})
    client = FakeClient({("a", 0): 10, ("b", 0): 7}, {("a", 0): 0, ("b", 0): 0}, {"a": 1})
    calls = []
    original = client.topic_metadata
    client.topic_metadata = lambda: calls.append(now[0]) or original()
    poller = EndOffsetPoller(view, lambda: client, PollerSettings(interval_s=5.0),
                             clock=lambda: now[0])
    assert poller.poll_once()
    now[0] = 105.0
    committed_group(view, "g", {("a", 0): 1, ("b", 0): 2})  # a topic the metadata lacks
    client.counts = {"a": 1, "b": 1}
    assert poller.poll_once()
    assert calls == [100.0] and ("b", 0) not in view.polled()  # too soon: at most every 3 polls
    now[0] = 115.0
    assert poller.poll_once()
    assert calls == [100.0, 115.0]
    assert view.log_end(("b", 0)) == (7, 115.0)
    now[0] = 130.0
    assert poller.poll_once()
    assert calls == [100.0, 115.0]  # every topic known: back to metadata_interval


def test_poller_wired_from_the_config(broker):
    """offsets_client_factory + poller_settings as the job wires them (source.bootstrap_servers,
    source.kafka passed through, lag.poll_interval)."""
    topic = f"wired-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 2)
    produce_raw(broker.bootstrap, topic, [(0, None, b"x", 1_700_000_000_000 + i) for i in range(7)])
    config = load_config(None, env={"GROUPSCOPE_SOURCE__BOOTSTRAP_SERVERS": broker.bootstrap,
                                    "GROUPSCOPE_SOURCE__KAFKA": '{"client.id": "groupscope-wired"}',
                                    "GROUPSCOPE_CLUSTER__NAME": "wired",
                                    "GROUPSCOPE_LAG__POLL_INTERVAL": "200ms"})
    view = MonitorView(ViewSettings(cluster="wired"))
    committed_group(view, "wired-group", {(topic, 0): 3})
    poller = EndOffsetPoller(view, offsets_client_factory(config), poller_settings(config))
    assert poller.settings.interval_s == 0.2
    try:
        assert poller.poll_once()
        assert poller._client._consumer.config["client_id"] == "groupscope-wired"
        labels = dict(cluster="wired", group="wired-group", topic=topic, partition="0")
        lags = [number for family in build_families(view) if family.name == "kafka_consumergroup_lag"
                for values, number in family.samples
                if dict(zip(family.label_names, values)) == labels]
        assert lags == [4]
    finally:
        poller.stop()


def test_a_bad_passthrough_setting_fails_when_wired():
    config = load_config(None, env={"GROUPSCOPE_SOURCE__KAFKA": '{"no.such.setting": "1"}'})
    with pytest.raises(ValueError, match="kafka.no.such.setting: neither a Kafka client setting "
                                         "kafka-python has"):
        offsets_client_factory(config)


def test_a_group_whose_end_offsets_are_unknown_has_no_lag_roll_ups(broker, caplog):
    """Committed offsets of a topic the poller cannot get end offsets for (here: absent from the
    metadata, as a deleted topic or one the principal may not describe is): no lag for those
    partitions, roll-ups over the known ones only, none at all for a group with no known one,
    and the unknown partitions counted."""
    known, missing = f"known-{uuid.uuid4().hex[:8]}", f"missing-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, known, 1)
    produce_raw(broker.bootstrap, known, [(0, None, b"x", 1_700_000_000_000 + i) for i in range(10)])
    view = MonitorView(ViewSettings(cluster="default"))
    committed_group(view, "mixed", {(known, 0): 4, (missing, 0): 1, (missing, 1): 1})
    committed_group(view, "blind", {(missing, 0): 3, (missing, 1): 2})
    options = KafkaSourceOptions(bootstrap_servers=broker.bootstrap)
    poller = EndOffsetPoller(view, lambda: offsets_client(options, timeout_s=10.0))
    try:
        with caplog.at_level("WARNING", logger="groupscope.endoffsets"):
            assert poller.poll_once()
            assert poller.poll_once()
    finally:
        poller.stop()
    assert [r.getMessage() for r in caplog.records if missing in r.getMessage()] == [
        f"no metadata for 1 topic(s) that groups commit to, so their lag is unknown (deleted, or this "
        f"principal may not DESCRIBE them): {missing}"]  # once, not every poll
    assert gauge(view, "kafka_consumergroup_group_lag", group="mixed") == 6
    assert gauge(view, "kafka_consumergroup_group_max_lag", group="mixed") == 6
    assert gauge(view, "kafka_consumergroup_lag_unknown_partitions", group="mixed") == 2
    assert gauge(view, "kafka_consumergroup_lag_unknown_partitions", group="blind") == 2
    assert gauge(view, "kafka_consumergroup_status", group="blind") == 0  # NOTFOUND
    for name in ("kafka_consumergroup_group_lag", "kafka_consumergroup_group_max_lag",
                 "kafka_consumergroup_group_max_lag_seconds", "kafka_consumergroup_lag"):
        with pytest.raises(KeyError):
            gauge(view, name, group="blind")
    with pytest.raises(KeyError):
        gauge(view, "kafka_consumergroup_topic_lag", group="mixed", topic=missing)


def test_a_topic_deleted_between_metadata_refreshes_costs_no_failed_poll(broker):
    """A group keeps its offsets of a topic that is deleted: the next poll finds the request
    for that topic refused, looks at the metadata again and polls the rest, so the cluster is
    not reported down and the other topics' lag stays fresh."""
    from kafka import KafkaAdminClient

    kept, gone = (f"deleted-{name}-{uuid.uuid4().hex[:8]}" for name in ("kept", "gone"))
    for topic in (kept, gone):
        create_topic(broker.bootstrap, topic, 2)
        produce_raw(broker.bootstrap, topic, [(p, None, b"v", 1_700_000_000_000)
                                              for p in range(2) for _ in range(4)])
    view = MonitorView(ViewSettings(cluster="default"))
    committed_group(view, "g", {(kept, 0): 1, (kept, 1): 1, (gone, 0): 1, (gone, 1): 1})
    options = KafkaSourceOptions(bootstrap_servers=broker.bootstrap)
    # A metadata refresh every hour: only a failed request makes the poller look again. The
    # request for the deleted topic fails after the client's timeout.
    poller = EndOffsetPoller(view, lambda: offsets_client(options, timeout_s=3.0),
                             PollerSettings(interval_s=1.0, metadata_interval_s=3600.0))
    try:
        assert poller.poll_once()
        assert {t for t, _ in view.polled()} == {kept, gone}
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            admin.delete_topics([gone], timeout_ms=30000)
        finally:
            admin.close()
        produce_raw(broker.bootstrap, kept, [(0, None, b"late", 1_700_000_001_000)])
        assert poller.poll_once()
        assert view.poll_failures == 0 and view.source_up
        assert gone not in view.partition_counts
        assert view.log_end((kept, 0))[0] == 5
        assert gauge(view, "kafka_consumergroup_lag", group="g", topic=kept, partition="0") == 4
    finally:
        poller.stop()


def _seconds_and_method(view, group, topic, partition):
    return (gauge(view, "kafka_consumergroup_lag_seconds", group=group, topic=topic,
                  partition=str(partition)),
            gauge(view, "kafka_consumergroup_lag_seconds_method", group=group, topic=topic,
                  partition=str(partition)))


@pytest.mark.parametrize("client", ["kafka-python", "confluent"])
def test_exact_time_lag_is_the_age_of_the_first_unconsumed_record(broker, client):
    """lag.time_method exact: the record at each lagging partition's committed offset is read
    and its own timestamp gives the time lag (method 4), for every group committed there."""
    topic = f"exact-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 3)
    base_ms = 1_700_000_000_000
    written = {p: [base_ms + 1000 * (10 * p + i) for i in range(6)] for p in range(3)}
    produce_raw(broker.bootstrap, topic, [(p, None, b"v", ts) for p, stamps in written.items()
                                          for ts in stamps])
    now = base_ms / 1000.0 + 3600.0
    view = MonitorView(ViewSettings(cluster="default"), clock=lambda: now)
    committed_group(view, "a", {(topic, 0): 2, (topic, 1): 5, (topic, 2): 6})
    committed_group(view, "b", {(topic, 0): 4, (topic, 1): 0})
    options = KafkaSourceOptions(bootstrap_servers=broker.bootstrap, client=client)
    poller = EndOffsetPoller(view, lambda: offsets_client(options, timeout_s=10.0),
                             PollerSettings(time_method="exact"), clock=lambda: now)
    try:
        assert poller.poll_once()
        for group, partition, offset in (("a", 0, 2), ("a", 1, 5), ("b", 0, 4), ("b", 1, 0)):
            assert _seconds_and_method(view, group, topic, partition) == \
                (now - written[partition][offset] / 1000.0, 4), (group, partition)
        assert _seconds_and_method(view, "a", topic, 2) == (0.0, 0)  # caught up
    finally:
        poller.stop()


def test_auto_time_lag_reads_within_its_budget_most_lag_first(broker):
    topic = f"auto-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 2)
    base_ms = 1_700_000_000_000
    produce_raw(broker.bootstrap, topic, [(p, None, b"v", base_ms + 1000 * i)
                                          for p in range(2) for i in range(8)])
    now = base_ms / 1000.0 + 600.0
    view = MonitorView(ViewSettings(cluster="default"), clock=lambda: now)
    committed_group(view, "g", {(topic, 0): 1, (topic, 1): 6})  # lags 7 and 2
    options = KafkaSourceOptions(bootstrap_servers=broker.bootstrap)
    poller = EndOffsetPoller(view, lambda: offsets_client(options, timeout_s=10.0),
                             PollerSettings(time_method="auto", read_budget=1), clock=lambda: now)
    try:
        assert poller.poll_once()
        assert _seconds_and_method(view, "g", topic, 0) == (now - (base_ms + 1000) / 1000.0, 4)
        assert _seconds_and_method(view, "g", topic, 1)[1] != 4  # beyond the budget: estimated
        assert poller.poll_once()  # the next poll reads what the budget left
        assert _seconds_and_method(view, "g", topic, 1) == (now - (base_ms + 6000) / 1000.0, 4)
        committed_group(view, "g", {(topic, 0): 3, (topic, 1): 6})  # a commit moves on
        assert _seconds_and_method(view, "g", topic, 0)[1] != 4
        assert poller.poll_once()
        assert _seconds_and_method(view, "g", topic, 0) == (now - (base_ms + 3000) / 1000.0, 4)
    finally:
        poller.stop()


def test_a_refused_read_keeps_the_estimate_and_is_logged_once(caplog):
    from streaming.kafka.offsets import not_authorized_to_read

    class Refusing(FakeClient):
        def first_records(self, positions, timeout_s):
            raise not_authorized_to_read("a")

    view = MonitorView(clock=lambda: 100.0)
    committed_group(view, "g", {("a", 0): 1})
    client = Refusing({("a", 0): 10}, {("a", 0): 0}, {"a": 1})
    poller = EndOffsetPoller(view, lambda: client, PollerSettings(time_method="exact"),
                             clock=lambda: 100.0)
    with caplog.at_level("WARNING", logger="groupscope.endoffsets"):
        assert poller.poll_once() and poller.poll_once()
    refusals = [r for r in caplog.records if "may not READ topic a" in r.getMessage()]
    assert len(refusals) == 1 and "stays estimated" in refusals[0].getMessage()
    assert gauge(view, "kafka_consumergroup_lag", group="g", topic="a", partition="0") == 9
    assert gauge(view, "kafka_consumergroup_lag_seconds_method", group="g", topic="a",
                 partition="0") != 4


def _get_offset_shell(broker, topic: str) -> dict[int, int]:
    """Kafka's GetOffsetShell: each partition's latest offset, as Kafka's tools print it."""
    out = broker.run_tool("org.apache.kafka.tools.GetOffsetShell", "--bootstrap-server",
                          broker.bootstrap, "--topic", topic).stdout
    return {int(p): int(o) for p, o in (line.rsplit(":", 2)[1:] for line in out.split()
                                        if line.startswith(f"{topic}:"))}


@pytest.mark.parametrize("client", ["kafka-python", "confluent"])
def test_lag_is_taken_to_the_high_watermark_while_a_transaction_is_open(broker, client):
    """A transaction left open past 5 plain records: the log end offset served is what
    GetOffsetShell says (the high watermark, not the last stable offset where the transaction
    begins), so a group that read the open records (read_uncommitted) has lag 0, not a
    negative lag shown as 0, and a group behind has its lag to the log's end."""
    from confluent_kafka import Producer

    topic = f"open-txn-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 2)
    produce_raw(broker.bootstrap, topic, [(0, None, b"plain", 1_700_000_000_000 + i)
                                          for i in range(5)])
    producer = Producer({"bootstrap.servers": broker.bootstrap,
                         "transactional.id": f"open-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(60)
    producer.begin_transaction()
    try:
        for i in range(20):
            producer.produce(topic, value=b"open", partition=0)
        assert producer.flush(30) == 0
        kafka = _get_offset_shell(broker, topic)
        assert kafka == {0: 25, 1: 0}
        view = MonitorView(ViewSettings(cluster="default"))
        committed_group(view, "uncommitted-reader", {(topic, 0): 25, (topic, 1): 0})
        committed_group(view, "behind", {(topic, 0): 2})
        options = KafkaSourceOptions(bootstrap_servers=broker.bootstrap, client=client)
        poller = EndOffsetPoller(view, lambda: offsets_client(options, timeout_s=10.0))
        try:
            assert poller.poll_once()
            assert {p: view.log_end((topic, p))[0] for p in (0, 1)} == kafka
            assert gauge(view, "kafka_consumergroup_lag", group="uncommitted-reader",
                         topic=topic, partition="0") == 0
            assert view.negative_lag_total == 0
            assert gauge(view, "kafka_consumergroup_lag", group="behind", topic=topic,
                         partition="0") == 23
            assert gauge(view, "kafka_partition_log_end_offset", topic=topic, partition="0") == 25
        finally:
            poller.stop()
    finally:
        producer.abort_transaction(60)


def _record_times(bootstrap: str, topic: str, offsets: list[int]) -> dict[int, float]:
    """Kafka's own timestamps (seconds) of partition 0's records at `offsets`."""
    from kafka import KafkaConsumer, TopicPartition

    tp = TopicPartition(topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        consumer.assign([tp])
        consumer.seek(tp, 0)
        found: dict[int, float] = {}
        deadline = time.monotonic() + 30
        while len(found) < len(offsets) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                found.update({r.offset: r.timestamp / 1000.0 for r in records
                              if r.offset in offsets})
        return found
    finally:
        consumer.close()


@pytest.mark.parametrize("client", ["kafka-python", "confluent"])
def test_time_lag_is_never_older_than_the_log(broker, client):
    """100 records written at once, then one every 2 s as the poller watches: the slow trend,
    drawn back to the committed offset, would put its record minutes before the topic existed.
    The time lag served (and its kafka-lag-exporter name) never exceeds the age of the log's
    first record; where the trend would, the lower bound is served (method 3: unknown)."""
    topic = f"young-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 1)
    produce_raw(broker.bootstrap, topic, [(0, None, b"burst", None) for _ in range(100)])
    start = time.time()
    now = [start]
    view = MonitorView(ViewSettings(cluster="default", compat=("kafka_lag_exporter",)),
                       clock=lambda: now[0])
    committed_group(view, "g", {(topic, 0): 10})
    options = KafkaSourceOptions(bootstrap_servers=broker.bootstrap, client=client)
    poller = EndOffsetPoller(view, lambda: offsets_client(options, timeout_s=10.0),
                             clock=lambda: now[0])
    try:
        for _ in range(4):  # one record every 2 s of the poller's clock
            assert poller.poll_once()
            produce_raw(broker.bootstrap, topic, [(0, None, b"slow", None)])
            now[0] += 2.0
        assert poller.poll_once()
        first, committed = (_record_times(broker.bootstrap, topic, [0, 10])[o] for o in (0, 10))
        seconds, method = _seconds_and_method(view, "g", topic, 0)
        assert seconds <= now[0] - first, (seconds, now[0] - first)
        assert seconds <= now[0] - committed  # a lower bound: never more than the truth
        assert (seconds, method) == (now[0] - start, 3)
        assert gauge(view, "kafka_consumergroup_group_lag_seconds", cluster_name="default",
                     group="g", topic=topic, partition="0", member_host="", consumer_id="",
                     client_id="") == seconds
    finally:
        poller.stop()
