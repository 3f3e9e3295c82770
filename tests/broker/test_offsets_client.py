"""The offsets/metadata client (streaming/kafka/offsets.py) against a real Kafka broker, both
implementations, and the job's progress target that counts the offsets topic's partitions."""
from __future__ import annotations

import uuid

import pytest

from tests.support.kafka_broker import create_topic, produce_raw
from streaming.config import load_config
from streaming.job.lifecycle import Job
from streaming.job.settings import offsets_client_factory
from streaming.kafka.offsets import offsets_client
from streaming.sources.kafka_options import KafkaSourceOptions

T0 = 1_700_000_000_000


@pytest.fixture(scope="module")
def topics(broker):
    """Two topics with known end offsets: {name: {partition: records}}."""
    suffix = uuid.uuid4().hex[:8]
    layout = {f"offsets-a-{suffix}": {0: 3, 1: 0, 2: 5}, f"offsets-b-{suffix}": {0: 2}}
    for topic, counts in layout.items():
        create_topic(broker.bootstrap, topic, len(counts))
        produce_raw(broker.bootstrap, topic, [(p, None, b"v", T0 + i)
                                              for p, n in counts.items() for i in range(n)])
    return layout


@pytest.fixture
def asked(monkeypatch):
    """The topic lists kafka-python's admin client is asked to describe (None: every topic)."""
    from kafka import KafkaAdminClient

    calls: list = []
    describe = KafkaAdminClient.describe_topics
    monkeypatch.setattr(KafkaAdminClient, "describe_topics",
                        lambda self, names=None: calls.append(names) or describe(self, names))
    return calls


@pytest.mark.parametrize("client", ["kafka-python", "confluent"])
def test_offsets_and_metadata(broker, topics, client):
    (a, a_counts), (b, b_counts) = topics.items()
    lookup = offsets_client(KafkaSourceOptions(bootstrap_servers=broker.bootstrap, client=client),
                            timeout_s=10.0)
    try:
        assert lookup.partitions(a) == [0, 1, 2]
        assert lookup.partitions(f"missing-{uuid.uuid4().hex[:8]}") == []
        wanted = [(a, 0), (a, 2), (b, 0)]
        assert lookup.end_offsets(wanted) == {(a, 0): 3, (a, 2): 5, (b, 0): 2}
        assert lookup.start_offsets(wanted) == {(a, 0): 0, (a, 2): 0, (b, 0): 0}
        assert lookup.end_offsets([]) == {}
        assert lookup.latest(a, [0, 1, 2]) == a_counts
        assert lookup.earliest(b, [0]) == {0: 0}
        names, counts = lookup.topic_metadata()
        assert counts[a] == 3 and counts[b] == 1
        assert sorted(name for name in names.values() if name in (a, b)) == sorted([a, b])
        assert all(len(topic_id) == 22 for topic_id in names)
    finally:
        lookup.close()


def test_both_clients_print_topic_ids_alike(broker, topics):
    ids = []
    for client in ("kafka-python", "confluent"):
        lookup = offsets_client(KafkaSourceOptions(bootstrap_servers=broker.bootstrap,
                                                   client=client))
        try:
            names, _counts = lookup.topic_metadata()
        finally:
            lookup.close()
        ids.append({name: topic_id for topic_id, name in names.items() if name in topics})
    assert ids[0] == ids[1] and len(ids[0]) == 2


def test_counting_partitions_describes_the_named_topic_only(broker, topics, asked):
    topic = next(iter(topics))
    lookup = offsets_client(KafkaSourceOptions(bootstrap_servers=broker.bootstrap))
    try:
        assert lookup.partitions(topic) == [0, 1, 2]
    finally:
        lookup.close()
    assert asked == [[topic]]  # None would describe every topic of the cluster


def test_job_progress_target_reads_the_source_topic(broker, asked):
    topic, counts = f"progress-{uuid.uuid4().hex[:8]}", {0: 4, 1: 1}
    create_topic(broker.bootstrap, topic, 2)
    produce_raw(broker.bootstrap, topic, [(p, None, b"v", T0) for p, n in counts.items()
                                          for _ in range(n)])
    asked.clear()  # create_topic describes the topic too
    config = load_config(None, env={"GROUPSCOPE_SOURCE__BOOTSTRAP_SERVERS": broker.bootstrap,
                                    "GROUPSCOPE_SOURCE__TOPIC": topic})
    job = Job(config, offsets_client_factory=offsets_client_factory(config), start_exporter=False,
              start_poller=False)
    target = job._kafka_progress_target()
    try:
        assert target() == counts
        produce_raw(broker.bootstrap, topic, [(1, None, b"late", T0)])
        assert target() == {**counts, 1: counts[1] + 1}
    finally:
        job.stop()
    assert asked == [[topic], [topic]]
    assert job._progress_client is None  # closed by stop()
