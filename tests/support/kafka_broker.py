"""Real Apache Kafka brokers for the tests: single-node KRaft (broker + controller in one JVM).

Jars come from `.cache/kafka-<version>/libs` (filled by `scripts/fetch-jvm-deps.sh`); nothing is
downloaded here. `KafkaBroker` has `process`, `bootstrap`, `workdir`, `log_path`, `stop()`,
`kill()`, `restart()`, `log()`; beside it `create_topic`, `produce_raw`, `end_offsets`.

Writing synthetic records into `__consumer_offsets`: real Kafka refuses Produce to an internal
topic (INVALID_TOPIC_EXCEPTION) unless the request's client.id is exactly "__admin_client"
(KafkaApis.handleProduceRequest: `internalTopicsAllowed = request.header.clientId ==
AdminUtils.ADMIN_CLIENT_ID`, in 3.9 and 4.4 alike). Do not do that against a live broker: its group
coordinator replays `__consumer_offsets` at load time and would take the synthetic records as real
group state (or fail on records it cannot parse). Tests that fed hand-made records should instead
produce them to an ordinary compacted topic and point the job's source topic at it, and use real
clients (VerifiableConsumer, kafka-python) when they need records the coordinator itself wrote.
`produce_internal` (confluent-kafka, client.id "__admin_client") exists for the rare test that
needs the real thing; kafka-python refuses to send to an internal topic on the client side.
"""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from tests.support.jvm_archives import SHARED_CLASS, dumping, ended, mapping
from tests.support.processes import stop_gracefully

REPO_ROOT = Path(__file__).resolve().parents[2]
CACHE = REPO_ROOT / ".cache"
DEFAULT_VERSION = "4.4.0"
KAFKA3_VERSION = "3.9.2"  # newest 3.9.x Maven Central serves
OFFSETS_TOPIC = "__consumer_offsets"
OFFSETS_TOPIC_PARTITIONS = 50
ADMIN_CLIENT_ID = "__admin_client"  # the one client.id allowed to produce to internal topics
CONSUMER_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"  # 3.9 and 4.x

# (partition, key, value or None for a tombstone, timestamp in ms)
RawRecord = tuple[int, bytes | None, bytes | None, int]

# Fast JVM start for short-lived processes: serial GC (no GC threads to spin up on 2 cores) and
# C1 only (most of a test broker's life is start-up; C2 compiles would compete for the 2 cores).
JVM_FAST = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]
BROKER_HEAP = ["-Xms64m", "-Xmx512m"]
TOOL_HEAP = ["-Xmx256m"]

# Log4j configurations. Everything goes to stdout/stderr, which the caller redirects: one file for
# the broker (JVM crashes land there too), and tool output stays on stdout for parsing.
LOG4J2_BROKER = """status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
"""
LOG4J2_TOOL = """status = error
appender.err.type = Console
appender.err.name = ERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = ERR
"""
LOG4J1_BROKER = """log4j.rootLogger=INFO, out
log4j.appender.out=org.apache.log4j.ConsoleAppender
log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern=[%d] %p %m (%c)%n
"""
LOG4J1_TOOL = """log4j.rootLogger=WARN, err
log4j.appender.err=org.apache.log4j.ConsoleAppender
log4j.appender.err.Target=System.err
log4j.appender.err.layout=org.apache.log4j.PatternLayout
log4j.appender.err.layout.ConversionPattern=[%d] %p %m (%c)%n
"""

# Broker settings that keep a one-node test cluster quick; merged under `extra_props`.
TEST_PROPS: dict[str, str] = {
    # One broker: internal topics cannot have the default replication factor 3.
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",  # 4.x share groups' state topic
    "share.coordinator.state.topic.min.isr": "1",
    # Classic groups: first join completes at once, not after the 3 s "more members may come" wait.
    "group.initial.rebalance.delay.ms": "0",
    # 50 partitions as in production: groupscope maps group -> partition by hash mod 50. Creating
    # them costs ~1 s at the first FindCoordinator, measured acceptable.
    "offsets.topic.num.partitions": str(OFFSETS_TOPIC_PARTITIONS),
    # Small segments so compaction of __consumer_offsets can be seen in a test. 1 MiB is the
    # smallest segment.bytes Kafka 4.x accepts for a topic (KIP-1030); 3.9 takes it too.
    "offsets.topic.segment.bytes": str(1024 * 1024),
    "log.cleaner.backoff.ms": "200",  # cleaner re-checks dirty logs every 0.2 s, not 15 s
    # Short session/heartbeat bounds, so tests may ask groups for fast failure detection (classic
    # clients pick their session.timeout.ms within [min, max]; KIP-848/share/streams groups take
    # the broker defaults below, or a per-group config within [min, max]).
    "group.min.session.timeout.ms": "1000",
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.session.timeout.ms": "10000",
    "group.consumer.min.heartbeat.interval.ms": "100",
    "group.consumer.heartbeat.interval.ms": "500",
    "group.share.min.session.timeout.ms": "1000",
    "group.share.session.timeout.ms": "10000",
    "group.share.min.heartbeat.interval.ms": "100",
    "group.share.heartbeat.interval.ms": "500",
    "group.streams.min.session.timeout.ms": "1000",
    "group.streams.session.timeout.ms": "10000",
    "group.streams.min.heartbeat.interval.ms": "100",
    "group.streams.heartbeat.interval.ms": "500",
    "num.partitions": "1",
    # Tests and benchmarks produce records with fixed timestamps years in the past; time-based
    # retention (7 days by default, checked 30 s after start and every 5 min) would delete them.
    "log.retention.ms": "-1",
    "log.flush.interval.messages": "9223372036854775807",  # never fsync per message (default)
}

# Per-version settings. 4.4: share (KIP-932) and streams (KIP-1071) groups are on by default
# (format's default release 4.4-IV2 finalizes share.version=2, streams.version=1, and
# group.coordinator.rebalance.protocols defaults to classic,consumer,streams; share groups are
# switched by the share.version feature, not that list), so nothing is
# needed. 3.9: the KIP-848 "consumer" protocol is opt-in; enable it so both protocols can be tested.
VERSION_PROPS: dict[str, dict[str, str]] = {
    "3": {"group.coordinator.rebalance.protocols": "classic,consumer"},
}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def java_major() -> int:
    """The major version of `java` on PATH; a RuntimeError naming the fix when absent or < 17."""
    java = shutil.which("java")
    if not java:
        raise RuntimeError("Kafka needs Java 17 or newer: no `java` on PATH "
                           "(apt-get install openjdk-17-jre-headless)")
    out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    match = re.search(r'version "(\d+)', out)
    major = int(match.group(1)) if match else 0
    if major < 17:
        raise RuntimeError(f"Kafka needs Java 17 or newer; `java -version` says: {out.splitlines()[:1]}")
    return major


def kafka_libs(version: str) -> Path:
    """`.cache/kafka-<version>/libs`, checked complete (stamp written by fetch-jvm-deps.sh)."""
    home = CACHE / f"kafka-{version}"
    if not (home / ".fetched").is_file():
        raise RuntimeError(f"Kafka {version} jars are missing from {home}/libs: "
                           f"run scripts/fetch-jvm-deps.sh (KAFKA_VERSIONS='{version}' for this one)")
    return home / "libs"


def _major(version: str) -> str:
    return version.split(".", 1)[0]


@dataclass
class KafkaBroker:
    """A running single-node KRaft Kafka; `bootstrap` is the `host:port` clients connect to."""

    process: subprocess.Popen
    bootstrap: str
    workdir: str
    log_path: str
    version: str
    libs: str  # classpath glob, `<libs>/*`
    port: int
    controller_port: int
    extra_props: dict[str, str] = field(default_factory=dict)
    # More listeners beside PLAINTEXT: name -> port, each named for its security protocol
    # (SASL_SSL, SSL); their settings come in extra_props.
    listeners: dict[str, int] = field(default_factory=dict)
    _tool_log_config: str = ""
    heap: tuple[str, ...] = tuple(BROKER_HEAP)  # the broker JVM's heap options
    _archive: list[str] = field(default_factory=list)  # the running broker's class archive options

    # -- lifecycle ---------------------------------------------------------------------------
    def _terminate(self, timeout: float = 30.0) -> None:
        """SIGTERM (Kafka's shutdown hook: controlled shutdown, flush, clean-shutdown marker), then
        SIGKILL if it has not exited within `timeout`."""
        stop_gracefully(self.process, timeout)
        ended(self.process, self._archive)

    def stop(self) -> None:
        """Stop the broker and delete its data and logs."""
        self._terminate()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def shut_down(self) -> None:
        """A clean stop (SIGTERM), data kept: down, and back in seconds with `restart()`."""
        self._terminate()

    def kill(self) -> None:
        """SIGKILL, data kept: a crash, for recovery tests (then `restart()`)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def restart(self, timeout_s: float = 60.0) -> None:
        """Stop (if running) and start again on the same ports with the same data."""
        self._terminate()
        self.process = _launch(self)
        _wait_ready(self, timeout_s)

    def log(self) -> str:
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as fh:
                return fh.read()
        except OSError:
            return ""

    # -- Kafka's own command-line tools ------------------------------------------------------
    def java_cmd(self, main_class: str, *args: str, archive: list[str] | None = None) -> list[str]:
        """`java` command line for a Kafka tool class, with quiet (WARN, stderr) logging; it maps
        a class archive (tests/support/jvm_archives.py) unless `archive` gives other options."""
        if archive is None:
            archive = mapping(self.libs, main_class)
        return ["java", *JVM_FAST, *archive, *TOOL_HEAP, self._tool_log_config, "-cp", self.libs,
                main_class, *map(str, args)]

    def run_tool(self, main_class: str, *args: str, timeout: float = 120.0,
                 check: bool = False) -> subprocess.CompletedProcess:
        """Run a tool to completion; stdout/stderr captured as text."""
        return _run_archived(self.java_cmd, self.libs, main_class, args, timeout=timeout, check=check)

    def start_tool(self, main_class: str, *args: str, **popen: object) -> subprocess.Popen:
        """Start a long-running client (VerifiableConsumer/Producer, TransactionalMessageCopier,
        ConsoleShareConsumer...); stdout is a text pipe unless `stdout=` is given."""
        popen.setdefault("stdout", subprocess.PIPE)
        popen.setdefault("stderr", subprocess.PIPE)
        popen.setdefault("text", True)
        popen.setdefault("stdin", subprocess.DEVNULL)
        return subprocess.Popen(self.java_cmd(main_class, *args), **popen)  # type: ignore[call-overload]

    def consumer_groups(self, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess:
        """kafka-consumer-groups.sh: ConsumerGroupCommand against this broker."""
        return self.run_tool(CONSUMER_GROUP_COMMAND, "--bootstrap-server", self.bootstrap, *args,
                             timeout=timeout)


def _write_config(broker: KafkaBroker) -> Path:
    work = Path(broker.workdir)
    served = {"PLAINTEXT": broker.port, **broker.listeners}
    advertised = ",".join(f"{name}://127.0.0.1:{port}" for name, port in served.items())
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "listeners": f"{advertised},CONTROLLER://127.0.0.1:{broker.controller_port}",
        "advertised.listeners": advertised,
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": ",".join(f"{name}:{name}" for name in served)
                                          + ",CONTROLLER:PLAINTEXT",
        # Dynamic quorum (KIP-853, 3.9+): bootstrap servers instead of static voters, which is
        # what `format --standalone` requires.
        "controller.quorum.bootstrap.servers": f"127.0.0.1:{broker.controller_port}",
        "log.dirs": str(work / "data"),
        **TEST_PROPS,
        **VERSION_PROPS.get(_major(broker.version), {}),
        **broker.extra_props,
    }
    path = work / "server.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return path


def _log_configs(workdir: Path, version: str) -> tuple[str, str]:
    """(broker, tool) JVM flags selecting the log config: log4j2 for 4.x, log4j 1.x (reload4j) for 3.x."""
    if _major(version) == "3":
        (workdir / "log4j-broker.properties").write_text(LOG4J1_BROKER)
        (workdir / "log4j-tool.properties").write_text(LOG4J1_TOOL)
        flag = "-Dlog4j.configuration=file:"
    else:
        (workdir / "log4j2-broker.properties").write_text(LOG4J2_BROKER)
        (workdir / "log4j2-tool.properties").write_text(LOG4J2_TOOL)
        flag = "-Dlog4j2.configurationFile="
    name = "log4j" if _major(version) == "3" else "log4j2"
    return f"{flag}{workdir / f'{name}-broker.properties'}", f"{flag}{workdir / f'{name}-tool.properties'}"


def _format_storage(broker: KafkaBroker, config: Path, broker_log: str,
                    format_args: Sequence[str] = ()) -> None:
    """kafka-storage.sh format: one dynamic-quorum voter (`--standalone`, KIP-853; 3.9 and 4.x)."""
    def cmd(main_class: str, *args: str, archive: list[str]) -> list[str]:
        return ["java", *JVM_FAST, *archive, *TOOL_HEAP, broker_log, "-cp", broker.libs, main_class, *args]

    done = _run_archived(cmd, broker.libs, "kafka.tools.StorageTool",
                         ("format", "--config", str(config), "--cluster-id", _cluster_id(),
                          "--standalone", *format_args), timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"kafka-storage format failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")


def _cluster_id() -> str:
    """A random cluster id in Kafka's form (base64url of a UUID, no padding), as `random-uuid` prints."""
    import base64
    while True:  # one starting with "-" would be taken for an option by the tool's argument parser
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cid.startswith("-"):
            return cid


def _run_archived(command, classpath: str, main_class: str, args: Sequence[str], timeout: float,
                  check: bool = False) -> subprocess.CompletedProcess:
    """`command(main_class, *args, archive=...)` run to completion, writing its class archive if
    there is none yet; a run cut short leaves no archive behind."""
    archive = dumping(classpath, main_class)
    process = None
    try:
        process = subprocess.run(command(main_class, *map(str, args), archive=archive),
                                 capture_output=True, text=True, timeout=timeout, check=check,
                                 stdin=subprocess.DEVNULL)
        return process
    finally:
        ended(process, archive)


def _launch(broker: KafkaBroker) -> subprocess.Popen:
    broker_log = _broker_log_flag(broker)
    broker._archive = dumping(broker.libs, "kafka.Kafka")
    cmd = ["java", *JVM_FAST, *broker._archive, *broker.heap, broker_log, f"-Dkafka.logs.dir={broker.workdir}",
           "-cp", broker.libs, "kafka.Kafka", str(Path(broker.workdir) / "server.properties")]
    with open(broker.log_path, "ab") as log:
        return subprocess.Popen(cmd, cwd=broker.workdir, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)


def _broker_log_flag(broker: KafkaBroker) -> str:
    return broker._tool_log_config.replace("-tool.properties", "-broker.properties")


def start_kafka(version: str = DEFAULT_VERSION, port: int | None = None,
                extra_props: dict[str, str] | None = None, timeout_s: float = 60.0,
                heap: tuple[str, ...] | None = None, listeners: Sequence[str] = (),
                format_args: Sequence[str] = ()) -> KafkaBroker:
    """Format and start a single-node KRaft Kafka on 127.0.0.1 (free ports unless `port` is given)
    and wait until it serves metadata. `extra_props` override the test settings above; `heap`
    replaces the test heap (BROKER_HEAP), e.g. for a benchmark's hundred thousand groups.
    `listeners` names more listeners (SASL_SSL, SSL) on free ports, configured by `extra_props`;
    `format_args` go to `kafka-storage format` (e.g. `--add-scram`)."""
    java_major()
    libs = kafka_libs(version)
    workdir = Path(tempfile.mkdtemp(prefix=f"groupscope-kafka-{version}-"))
    broker_log, tool_log = _log_configs(workdir, version)
    broker = KafkaBroker(
        process=None,  # type: ignore[arg-type]  # set by _launch below
        bootstrap="", workdir=str(workdir), log_path=str(workdir / "server.log"), version=version,
        libs=f"{libs}/*", port=port or free_port(), controller_port=free_port(),
        extra_props={k: str(v) for k, v in (extra_props or {}).items()}, _tool_log_config=tool_log,
        heap=tuple(heap or BROKER_HEAP), listeners={name: free_port() for name in listeners})
    broker.bootstrap = f"127.0.0.1:{broker.port}"
    try:
        config = _write_config(broker)
        _format_storage(broker, config, broker_log, format_args)
        broker.process = _launch(broker)
        _wait_ready(broker, timeout_s)
        if not mapping(broker.libs, SHARED_CLASS):
            # The class archive most tools map (their own until they have one, and always for a
            # backgrounded client), written once per checkout by a quick run of its class.
            broker.consumer_groups("--list", timeout=60)
    except BaseException:
        if broker.process is not None:
            broker.stop()
        else:
            shutil.rmtree(workdir, ignore_errors=True)
        raise
    return broker


def _wait_ready(broker: KafkaBroker, timeout_s: float) -> None:
    """Until the broker lists itself in a Metadata answer (it is then registered and unfenced)."""
    from kafka import KafkaAdminClient

    deadline = time.monotonic() + timeout_s
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        if broker.process.poll() is not None:
            raise RuntimeError(f"Kafka {broker.version} exited with code {broker.process.returncode}:\n"
                               f"{broker.log()[-5000:]}")
        try:
            # a cheap TCP probe first: a kafka-python client made before the port listens backs
            # off for seconds, which made restarts take ~8 s instead of ~2.5 s
            socket.create_connection(("127.0.0.1", broker.port), timeout=1).close()
            admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=3000)
            try:
                if admin.describe_cluster().get("brokers"):
                    return
            finally:
                admin.close()
        except Exception as exc:  # not listening yet
            last_error = exc
        time.sleep(0.05)
    log_tail = broker.log()[-3000:]
    raise RuntimeError(f"Kafka {broker.version} did not serve metadata within {timeout_s}s: "
                       f"{last_error}\n{log_tail}")


# -- topics, records and end offsets ---------------------------------------------------------------

def create_topic(bootstrap: str, name: str, partitions: int, configs: dict[str, str] | None = None) -> None:
    """Create a topic (a no-op if it already exists) and wait until metadata shows its leaders."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        try:
            admin.create_topics([NewTopic(name, partitions, 1, topic_configs=configs or {})])
        except TopicAlreadyExistsError:
            pass
        deadline = time.monotonic() + 15
        while True:
            meta = admin.describe_topics([name])
            parts = meta[0].get("partitions", []) if meta and meta[0].get("error_code") == 0 else []
            if len(parts) >= partitions and all(p.get("leader_id", -1) >= 0 for p in parts):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"topic {name} has no leaders 15 s after creation: {meta}")
            time.sleep(0.05)
    finally:
        admin.close()


def assigned_member(bootstrap: str, topic: str, group: str, timeout_s: float = 60, **settings):
    """A kafka-python member of `group`, subscribed to `topic`, once it owns partitions of it.

    It subscribes only once its own metadata lists the topic: a member that leads the group's
    first rebalance without it assigns nothing (the range assignor's "No partition metadata"),
    then keeps that empty assignment until its next metadata refresh, minutes later."""
    from kafka import KafkaConsumer

    from tests.support.waiting import until

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, **settings)
    try:
        until(f"{topic} in the member's metadata", lambda: consumer.partitions_for_topic(topic),
              timeout_s=timeout_s, poll_s=0.2)
        consumer.subscribe([topic])
        until(f"an assignment of {topic} for {group}",
              lambda: consumer.poll(timeout_ms=200) is not None and consumer.assignment(),
              timeout_s=timeout_s, poll_s=0)
    except BaseException:
        consumer.close(autocommit=False)
        raise
    return consumer


def produce_raw(bootstrap: str, topic: str, records: Iterable[RawRecord]) -> list[tuple[int, int]]:
    """Produce raw key/value bytes in order; return each record's (partition, offset).

    kafka-python will not send to an internal topic at all (its partitioner finds no partitions
    for one): see `produce_internal`.
    """
    from kafka import KafkaProducer

    records = list(records)
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5,
                             max_in_flight_requests_per_connection=1)
    try:
        futures = [producer.send(topic, key=key, value=value, partition=partition, timestamp_ms=ts)
                   for partition, key, value, ts in records]
        producer.flush()
        return [(meta.partition, meta.offset) for meta in (f.get(timeout=30) for f in futures)]
    finally:
        producer.close()


def produce_internal(bootstrap: str, topic: str, records: Iterable[RawRecord],
                     client_id: str = ADMIN_CLIENT_ID) -> list[tuple[int, int]]:
    """Produce to an internal topic (`__consumer_offsets`) with confluent-kafka (the test extra),
    which, unlike kafka-python, sends there; the broker accepts it only for client.id
    "__admin_client". Read the module docstring first. Raises KafkaException when refused."""
    from confluent_kafka import KafkaException, Producer

    results: list[tuple[int, int] | Exception] = []

    def on_delivery(err: object, msg: object) -> None:
        results.append(KafkaException(err) if err else (msg.partition(), msg.offset()))  # type: ignore[attr-defined]

    producer = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "acks": "all",
                         "enable.idempotence": False, "message.timeout.ms": 10000})
    for partition, key, value, ts in records:
        producer.produce(topic, key=key, value=value, partition=partition, timestamp=ts,
                         on_delivery=on_delivery)
    producer.flush(30)
    for result in results:
        if isinstance(result, Exception):
            raise result
    return results  # type: ignore[return-value]


def end_offsets(bootstrap: str, topic: str, partitions: Sequence[int]) -> dict[int, int]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in partitions])
        return {tp.partition: offset for tp, offset in ends.items()}
    finally:
        consumer.close()
