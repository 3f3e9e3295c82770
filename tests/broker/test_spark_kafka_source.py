"""Spark's own Kafka source (`source.type: kafka`) against a real Kafka 4.4 broker: the connector
jars come from the local folder scripts/fetch-jvm-deps.sh fills (`spark.jars`, no Maven
repository at run time), and the job must reach the same group state and series as with the
default source (`kafka-python`) from the same `__consumer_offsets`, which real consumer groups
(Kafka's VerifiableConsumer, one classic and one KIP-848) wrote.

Both sources connect over SASL_SSL (SCRAM-SHA-512) as a principal with only the grants the
Security section of docs/operations.md lists for them, with the same Java client settings (a JAAS line, a
PKCS12 truststore, secrets by reference).

`spark.jars` is read when the driver JVM starts, so the job runs in a new Python process with a
driver of its own (tests/support/driver_session.py); both sources run there, one after the other.
"""
from __future__ import annotations

import json
import subprocess
import time
import uuid

import pyspark
import pytest

from streaming.sources.builtin_kafka import SCALA_VERSION
from tests.support.driver_session import run_new_session
from tests.support.jvm_archives import user_class_sharing
from tests.support.kafka_broker import CACHE, create_topic, produce_raw
from tests.support.kafka_tools import parse_offsets, parse_state
from tests.support.secured_kafka import SCRAM_USER, STORE_PASSWORD, grant, revoke

CONNECTOR = CACHE / f"spark-kafka-{pyspark.__version__}" / "jars"
CLUSTER = "spark-kafka"
PARTITIONS = 3
RECORDS_PER_PARTITION = 40

# Runs the job over the same offsets topic with each source in turn; prints, per source, the
# latest snapshot of each group named in $CASE and every series that carries one of their names.
SCRIPT = """
import json, os, time
from streaming.config import load_config
from streaming.job.lifecycle import Job
from streaming.job.session import build_spark
from tests.support.scrape_support import parse, scrape

case = json.loads(os.environ["CASE"])
spark, out = None, {}
for source in ("kafka-python", "kafka"):
    folder = os.path.join(case["work"], source)
    config = load_config(None, env={**case["env"], "GROUPSCOPE_SOURCE__TYPE": source,
                                    "GROUPSCOPE_CHECKPOINT__PATH": os.path.join(folder, "checkpoint"),
                                    "GROUPSCOPE_HISTORY__PATH": os.path.join(folder, "history")})
    spark = spark or build_spark(config)
    job = Job(config, spark=spark)
    job.start()
    try:
        deadline = time.monotonic() + 120
        while True:
            job.query.processAllAvailable()
            samples = parse(scrape(job.exporter.port)[1])
            lags = {dict(k)["group"] for k in samples.get("kafka_consumergroup_lag", {})}
            ready = samples.get("groupscope_ready", {}).get(frozenset({("cluster", case["cluster"])}))
            if (ready == 1 and set(case["groups"]) <= lags) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        snapshots = {name: job.view.groups[name].snapshot for name in case["groups"]
                     if name in job.view.groups}
        every_group = sorted(job.view.groups)
    finally:
        job.stop()
    series = sorted([name, sorted(labels), value] for name, by_labels in samples.items()
                    for labels, value in by_labels.items()
                    if dict(labels).get("group") in case["groups"])
    out[source] = {"snapshots": snapshots, "series": series, "groups": every_group}
print(json.dumps(out, default=str))
"""


def _wait_for_commits(broker, group: str, total: int, timeout_s: float = 90.0) -> list:
    """Until Kafka's consumer-group command shows `group` committed `total` records, Stable;
    the offsets it showed then (one command less: each starts a JVM)."""
    deadline = time.monotonic() + timeout_s
    while True:
        rows = parse_offsets(broker.consumer_groups("--describe", "--group", group, "--offsets").stdout)
        states = parse_state(broker.consumer_groups("--describe", "--group", group, "--state").stdout)
        if (sum(r.current_offset or 0 for r in rows) == total
                and [s.state for s in states] == ["Stable"]):
            return rows
        assert time.monotonic() < deadline, f"{group} committed only {rows}, states {states}"
        time.sleep(1)


def _java_client(secured, tmp_path) -> dict[str, str]:
    """A Java client's SASL_SSL settings, its secrets in a file and in the environment."""
    (tmp_path / "password").write_text(secured.scram_password)
    return {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
                                f'username="{SCRAM_USER}" password="${{file:{tmp_path / "password"}}}";',
            "ssl.truststore.type": "PKCS12", "ssl.truststore.location": str(secured.tls.truststore),
            "ssl.truststore.password": "${env:GS_TEST_STORE_PASSWORD}"}


@pytest.fixture
def committed_groups(broker):
    """A topic read to its end by a classic and a KIP-848 group, each a live VerifiableConsumer:
    {group: (group protocol, {(topic, partition): committed offset})}, as Kafka's own command
    reports the offsets."""
    suffix = uuid.uuid4().hex[:8]
    topic = f"sk-{suffix}"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    now_ms = int(time.time() * 1000)  # a record older than the retention would be deleted at once
    produce_raw(broker.bootstrap, topic, [(p, b"k", b"v", now_ms) for p in range(PARTITIONS)
                                          for _ in range(RECORDS_PER_PARTITION)])
    groups = {f"sk-classic-{suffix}": "classic", f"sk-consumer-{suffix}": "consumer"}
    consumers = [broker.start_tool("org.apache.kafka.tools.VerifiableConsumer", "--bootstrap-server",
                                   broker.bootstrap, "--topic", topic, "--group-id", group,
                                   "--group-protocol", protocol, "--reset-policy", "earliest",
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                 for group, protocol in groups.items()]
    try:
        committed = {}
        for group in groups:
            rows = _wait_for_commits(broker, group, PARTITIONS * RECORDS_PER_PARTITION)
            committed[group] = (groups[group],
                                {(r.topic, r.partition): r.current_offset for r in rows})
        yield committed
    finally:
        for consumer in consumers:
            consumer.terminate()
            consumer.wait(timeout=30)


@pytest.mark.skipif(not CONNECTOR.is_dir(), reason=f"no spark-sql-kafka-0-10_{SCALA_VERSION} "
                    f"{pyspark.__version__} jars in {CONNECTOR} (scripts/fetch-jvm-deps.sh; Maven "
                    "Central may not serve that version)")
def test_spark_kafka_source_reaches_the_same_groups_as_the_default_source(
        broker, secured_broker, committed_groups, tmp_path):
    # A list, not a glob: Spark's driver resolves a glob but then fails to serve it to executors.
    jars = ",".join(str(jar) for jar in sorted(CONNECTOR.glob("*.jar")))
    # The class archive of a driver without the connector (tests/support/jvm_archives.py), as
    # the user's own choice: the job would otherwise write one for this set of jars on exit.
    spark_conf = {"spark.jars": jars, "spark.ui.enabled": "false",
                  "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                  "spark.driver.extraJavaOptions": user_class_sharing()}
    case = {"work": str(tmp_path), "cluster": CLUSTER, "groups": sorted(committed_groups),
            "env": {"GROUPSCOPE_CLUSTER__NAME": CLUSTER,
                    "GROUPSCOPE_SOURCE__BOOTSTRAP_SERVERS": secured_broker.sasl_ssl,
                    "GROUPSCOPE_SOURCE__KAFKA": json.dumps(_java_client(secured_broker, tmp_path)),
                    "GROUPSCOPE_SPARK__CONF": json.dumps(spark_conf),
                    "GROUPSCOPE_EXPORTER__LISTEN": "127.0.0.1:0",
                    "GROUPSCOPE_TRIGGER__INTERVAL": "0.5s",
                    "GROUPSCOPE_LAG__POLL_INTERVAL": "1s"}}
    principal = f"User:{SCRAM_USER}"
    topics = {topic for _, offsets in committed_groups.values() for topic, _ in offsets}
    grant(broker.bootstrap, principal, [
        ("TOPIC", "__consumer_offsets", "READ"), *(("TOPIC", t, "DESCRIBE") for t in topics),
        ("GROUP", "spark-kafka-source-", "READ", "PREFIXED")])  # Spark's source only
    try:
        runs = run_new_session(SCRIPT, tmp_path / "cache", CASE=json.dumps(case),
                               GS_TEST_STORE_PASSWORD=STORE_PASSWORD)
    finally:
        revoke(broker.bootstrap, principal)
    default, spark_kafka = runs["kafka-python"], runs["kafka"]

    for run in (default, spark_kafka):
        assert sorted(run["snapshots"]) == sorted(committed_groups)
        series = {(name, tuple(map(tuple, labels))): value for name, labels, value in run["series"]}
        for group, (protocol, offsets) in committed_groups.items():
            shown = {(dict(labels)["topic"], int(dict(labels)["partition"])): value
                     for (name, labels), value in series.items()
                     if name == "kafka_consumergroup_committed_offset" and dict(labels)["group"] == group}
            assert shown == offsets, group  # what Kafka's own command reports
            [info] = [dict(labels) for name, labels in series
                      if name == "kafka_consumergroup_info" and dict(labels)["group"] == group]
            assert info["state"] == "Stable" and info["group_type"] == protocol
    assert spark_kafka["snapshots"] == default["snapshots"]
    assert spark_kafka["series"] == default["series"]
    # Spark's offset lookup (builtin_kafka.CONSUMER_OFFSET_LOOKUP) joins a consumer group of its
    # own on the driver, whose records the second run reads too; nothing else is new.
    extra = set(spark_kafka["groups"]) - set(default["groups"])
    assert extra and all(name.startswith("spark-kafka-source-") for name in extra), extra
