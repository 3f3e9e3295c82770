"""groupscope on a real Spark standalone cluster (a master and two workers on 127.0.0.1, from the
installed PySpark), run as users run it: `spark-submit --deploy-mode client deploy/groupscope/
launch.py run -c <config>`, against the real Kafka broker's `__consumer_offsets` written by real
consumer groups. One submitted job watches the broker twice, as two clusters of its config (one
query each): one through the default source, one through Spark's own Kafka source, whose
connector's jars go to the executors. One worker is SIGKILLed (with its executor) while commits
are still arriving and Spark reruns the lost tasks on the other worker: for the default source
groupscope plans those reads, for Spark's the rerun is Spark's. Once caught up, each cluster's
group series must equal those of a local-mode run (the same job in the test session's Spark,
local[2]) of the topic. One submission for both sources: a driver, its executors and their
first batches take most of a minute on a small machine.
"""
from __future__ import annotations

import time
import urllib.error
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyspark
import pytest
import yaml

from tests.support.groupscope_job import (CLUSTER, GroupscopeJob, Samples, _config,
                                          run_groupscope_job)
from tests.support.kafka_broker import (CACHE, REPO_ROOT, assigned_member, create_topic, free_port,
                                        produce_raw)
from tests.support.scrape_support import scrape
from tests.support.spark_cluster import (SparkCluster, spark_cluster, spark_submit_command,
                                         start_submitted, stop_submitted)

LAUNCH = REPO_ROOT / "deploy" / "groupscope" / "launch.py"
KAFKA_JARS = CACHE / f"spark-kafka-{pyspark.__version__}" / "jars"
PARTITIONS = 4
RECORDS = 40  # per partition of the consumed topic; every committed offset stays below
STANDALONE_GROUPS = 5
ROUNDS_BEFORE, ROUNDS_DURING = 3, 12
ROUND_PAUSE_S = 0.5
KILL_AFTER_ROUND = 4  # of the rounds made while the job runs
# The series of group state; process and timing series (batch durations, end-offset ages,
# lag in seconds) differ between any two runs and are left out.
GROUP_SERIES = ("kafka_consumergroup_info", "kafka_consumergroup_generation",
                "kafka_consumergroup_members", "kafka_consumergroup_member_assigned_partitions",
                "kafka_consumergroup_committed_offset", "kafka_consumergroup_commit_timestamp_seconds",
                "kafka_consumergroup_lag", "kafka_consumergroup_topic_lag",
                "kafka_consumergroup_group_lag", "kafka_consumergroup_group_max_lag")

PROGRESS_SERIES = ("groupscope_offsets_topic_lag", "groupscope_ready")


@pytest.fixture(scope="module")
def cluster():
    with spark_cluster(workers=2, cores=1, memory="1g") as running:
        yield running


@pytest.fixture(scope="module")
def local(spark, broker, tmp_path_factory):
    """The local-mode run every cluster run is compared with: one for the module, each test's
    groups its own."""
    job = run_groupscope_job(spark, broker.bootstrap, tmp_path_factory.mktemp("local"))
    yield job
    job.stop()


class Committers:
    """Real consumer groups on one topic: STANDALONE_GROUPS groups committing without membership
    (assign + commit) and one subscribed member, all through kafka-python, so every record in
    `__consumer_offsets` is one the group coordinator wrote."""

    def __init__(self, bootstrap: str, prefix: str) -> None:
        from kafka import KafkaConsumer, TopicPartition

        self.bootstrap, self.prefix = bootstrap, prefix
        self.topic = f"{prefix}-orders"
        create_topic(bootstrap, self.topic, PARTITIONS)
        produce_raw(bootstrap, self.topic, [(p, None, b"r%d" % i, int(time.time() * 1000))
                                            for p in range(PARTITIONS) for i in range(RECORDS)])
        self.tps = [TopicPartition(self.topic, p) for p in range(PARTITIONS)]
        self.standalone = []
        for g in range(STANDALONE_GROUPS):
            consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=f"{prefix}-solo-{g}",
                                     enable_auto_commit=False)
            consumer.assign(self.tps)
            self.standalone.append(consumer)
        self.member = assigned_member(bootstrap, self.topic, f"{prefix}-member",
                                      enable_auto_commit=False, client_id=f"{prefix}-member-client")
        self.rounds = 0

    @property
    def groups(self) -> list[str]:
        return [f"{self.prefix}-solo-{g}" for g in range(STANDALONE_GROUPS)] + [f"{self.prefix}-member"]

    def commit_round(self) -> None:
        """Every group commits a new offset on every partition (each group its own)."""
        from kafka.structs import OffsetAndMetadata

        self.rounds += 1
        for g, consumer in enumerate([*self.standalone, self.member]):
            offsets = {tp: OffsetAndMetadata(min(RECORDS, self.rounds + g + tp.partition), "", -1)
                       for tp in self.tps if g < STANDALONE_GROUPS or tp in self.member.assignment()}
            consumer.commit(offsets)

    def close(self) -> None:
        for consumer in [*self.standalone, self.member]:
            consumer.close(autocommit=False)


def group_series(samples: Samples, groups: list[str]) -> dict[str, dict[frozenset, float]]:
    wanted = set(groups)
    return {name: {labels: value for labels, value in samples.get(name, {}).items()
                   if dict(labels).get("group") in wanted}
            for name in GROUP_SERIES}


# source.type -> the name of the cluster (of the submitted job's config) that reads through it
SOURCES = {"kafka-python": "cl-python", "kafka": "cl-kafka"}


def submit_job(cluster: SparkCluster, bootstrap: str, workdir: Path, source_types: list[str],
               jars: list[Path]) -> GroupscopeJob:
    """`spark-submit` (client mode) of the job with the configuration the local run has, the
    broker watched once per source type (a cluster of the config each, SOURCES)."""
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = yaml.safe_load(_config(bootstrap, workdir, port))
    del config["cluster"]
    config["clusters"] = [{"name": SOURCES[t], "source": {"type": t}} for t in source_types]
    path = workdir / "groupscope.yaml"
    path.write_text(yaml.safe_dump(config))
    command = spark_submit_command(cluster, LAUNCH, ["run", "-c", str(path)], jars=jars,
                                   quick_jvms=True)
    process = start_submitted(command, cluster.env, workdir, workdir / "job.log")
    return GroupscopeJob(process, port, workdir)


def one_cluster(samples: Samples, name: str) -> Samples:
    """The series of cluster `name`, labelled as the local run labels its own (CLUSTER)."""
    out: Samples = {}
    for series, values in samples.items():
        for labels, value in values.items():
            if dict(labels).get("cluster") == name:
                relabelled = frozenset({*(kv for kv in labels if kv[0] != "cluster"), ("cluster", CLUSTER)})
                out.setdefault(series, {})[relabelled] = value
    return out


def caught_up(samples: Samples, name: str) -> bool:
    """Cluster `name` of the submitted job has read `__consumer_offsets` to the end it last saw
    (GroupscopeJob.caught_up, for one cluster of several)."""
    mine = one_cluster(samples, name)
    progress = mine.get("groupscope_offsets_topic_lag", {})
    ready = mine.get("groupscope_ready", {}).get(frozenset({("cluster", CLUSTER)}))
    return ready == 1 and bool(progress) and all(v == 0 for v in progress.values())


def wait_until(what: str, check, job: GroupscopeJob, timeout_s: float, cluster: SparkCluster):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if job.process.poll() is not None:
            raise AssertionError(f"the spark-submit job exited with {job.process.returncode} "
                                 f"while waiting for {what}:\n{job.log()[-4000:]}")
        try:
            result = check()
            if result:
                return result
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        time.sleep(0.5)
    raise AssertionError(f"{what}: not within {timeout_s}s\njob log:\n{job.log()[-4000:]}\n"
                         f"{cluster.logs()}")


def kafka_source_jars() -> list[Path]:
    if not KAFKA_JARS.is_dir():
        pytest.skip(f"Spark's Kafka connector for PySpark {pyspark.__version__} is not in "
                    f"{KAFKA_JARS} (Maven Central serves none for this version; "
                    f"scripts/fetch-jvm-deps.sh fetches it when it does)")
    return sorted(KAFKA_JARS.glob("*.jar"))


@dataclass
class Outcome:
    """What the module's one submitted job showed: problems common to both sources, the groups,
    and per source its last group series beside the local run's."""
    committers: "Committers"
    problems: list[str] = field(default_factory=list)
    final: dict[str, dict[str, Any]] = field(default_factory=dict)  # source type -> series
    local: dict[str, Any] = field(default_factory=dict)
    progress: dict[str, Any] = field(default_factory=dict)


@pytest.fixture(scope="module")
def outcome(cluster, broker, local, tmp_path_factory):
    jars = sorted(KAFKA_JARS.glob("*.jar")) if KAFKA_JARS.is_dir() else []
    sources = ["kafka-python"] + (["kafka"] if jars else [])
    workdir = tmp_path_factory.mktemp("cluster")
    prefix = f"cl-{uuid.uuid4().hex[:6]}"
    committers = Committers(broker.bootstrap, prefix)
    result = Outcome(committers)
    job = None
    try:
        for _ in range(ROUNDS_BEFORE):
            committers.commit_round()
        job = submit_job(cluster, broker.bootstrap, workdir, sources, jars)
        wait_until("the cluster job's /healthz", lambda: scrape(job.port, "/healthz")[0] == 200,
                   job, 180, cluster)
        if not all(cluster.executors_of(i) for i in range(2)):
            result.problems.append(f"the job should run an executor on each worker\n{cluster.logs()}")

        for done in range(1, ROUNDS_DURING + 1):
            committers.commit_round()
            if done == KILL_AFTER_ROUND:
                cluster.kill_worker(1)
            time.sleep(ROUND_PAUSE_S)
        wait_until("the master to drop the killed worker",
                   lambda: cluster.alive_workers() == 1, job, 60, cluster)
        if cluster.executors_of(1):
            result.problems.append("the killed worker's executor is still running")

        def every_source_caught_up_and_equal() -> bool:
            ours, theirs = job.scrape(), local.scrape()
            result.local = group_series(theirs, committers.groups)
            for source in sources:
                result.final[source] = group_series(one_cluster(ours, SOURCES[source]), committers.groups)
            result.progress = {name: {metric: sorted((dict(k).get("partition"), v)
                                                     for k, v in s.get(metric, {}).items() if v)
                                      for metric in PROGRESS_SERIES}
                               for name, s in (("cluster", ours), ("local", theirs))}
            return (all(caught_up(ours, SOURCES[s]) for s in sources) and local.caught_up(theirs)
                    and all(result.final[s] == result.local for s in sources))

        try:
            wait_until("every cluster's group series to equal the local run's",
                       every_source_caught_up_and_equal, job, 120, cluster)
        except AssertionError as failure:
            result.problems.append(f"{failure}\nprogress (non-zero): {result.progress}")
        yield result
    finally:
        if job is not None:
            stop_submitted(job.process)
        committers.close()


# The lost worker is tried with both sources: the default one, whose reads groupscope plans and
# reruns, and Spark's own Kafka source, where what is groupscope's is shipping the connector to
# the executors and a rerun of its tasks is Spark's.
@pytest.mark.timeout(420)
@pytest.mark.parametrize("source_type", ["kafka-python", "kafka"])
def test_cluster_job_survives_a_lost_worker_and_equals_local_mode(outcome: Outcome, source_type: str):
    if source_type == "kafka":
        kafka_source_jars()  # skips, saying why, when the connector is missing
    committers, prefix = outcome.committers, outcome.committers.prefix
    final = outcome.final.get(source_type, {})
    diff = {name: (final.get(name), outcome.local.get(name))
            for name in GROUP_SERIES if final.get(name) != outcome.local.get(name)}
    assert not outcome.problems and not diff, \
        "\n".join(outcome.problems) + f"\ndiffering series (cluster, local): {diff}"

    offsets = final["kafka_consumergroup_committed_offset"]
    # The last round, made after the worker was killed, is what both runs show.
    assert offsets[frozenset({("cluster", CLUSTER), ("group", f"{prefix}-solo-0"),
                              ("topic", committers.topic), ("partition", "0")})] == \
        min(RECORDS, committers.rounds)
    assert len(final["kafka_consumergroup_info"]) == len(committers.groups)
    members = final["kafka_consumergroup_members"]
    assert members[frozenset({("cluster", CLUSTER), ("group", f"{prefix}-member")})] == 1
