"""Consumer-group offset commits made through Kafka's OffsetCommit API, so that the broker itself
writes `__consumer_offsets` (record format, batching, coordinator partition): the load of the
benchmarks that read the real topic.

Each group commits the way a standalone consumer commits explicit offsets (`assign()` + `commit(
offsets)`): generation -1, no member id, all of the group's partitions in one request, which the
broker writes as one record batch of `partitions` records. Group `g` commits for topic
`topic_of(g)`; `create_topics` makes those topics with enough partitions so that end-offset
lookups (the exporter's lag) find them.

The requests are encoded here with `struct` (OffsetCommit v7, request header v1) and sent over
plain sockets, several in flight per connection: kafka-python's request classes cost ~0.5 ms per
25-partition request on this machine, which was most of a preload's time; `_check_encoding`
compares the encoding with kafka-python's once per run. Measured on this 2-core machine against
confluent-kafka's `Consumer.commit(asynchronous=True)` (one Consumer per group.id, its threads
and connection each): see `python -m benchmarks.commit_load --compare`.

Usage (from the repository root): python -m benchmarks.commit_load [--groups N] [--partitions N]
    [--rounds N] [--rate R] [--seconds S] [--compare]
"""
from __future__ import annotations

import argparse
import math
import selectors
import socket
import struct
import threading
import time
from dataclasses import dataclass, field

from benchmarks._stopping import stop_everything_at_exit

API_OFFSET_COMMIT, VERSION = 8, 7  # OffsetCommit v7: KIP-896 (Kafka 4.0) removed only v0-v1
CLIENT_ID = b"groupscope-bench"
TOPICS = 100  # groups share 100 topics: topic_of


def group_name(g: int) -> str:
    return f"bench-group-{g:05d}"


def topic_of(g: int) -> str:
    return f"topic-{g % TOPICS:03d}"


def final_offset(rounds: int, partition: int) -> int:
    """The offset of `partition` after `rounds` rounds (round r commits 1000 * r + partition)."""
    return 1000 * rounds + partition


def create_topics(bootstrap: str, groups: int, partitions: int) -> None:
    """The topics the groups commit for, `partitions` partitions each."""
    from tests.support.kafka_broker import create_topic

    for t in range(min(groups, TOPICS)):
        create_topic(bootstrap, topic_of(t), partitions)


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


_PARTITION = struct.Struct(">iqih")  # partition_index, committed_offset, leader_epoch, metadata ""
_HEADER = struct.Struct(">ihhi")     # frame size, api key, api version, correlation id


@dataclass
class _Group:
    """The bytes of a group's request that do not change between commits."""
    body_head: bytes  # client id ... partition count
    partitions: int

    def request(self, correlation: int, offset_base: int) -> bytes:
        parts = b"".join(_PARTITION.pack(p, offset_base + p, -1, 0) for p in range(self.partitions))
        size = 8 + len(self.body_head) + len(parts)
        return _HEADER.pack(size, API_OFFSET_COMMIT, VERSION, correlation) + self.body_head + parts


def group_request(g: int, partitions: int) -> _Group:
    head = (_string(CLIENT_ID.decode()) + _string(group_name(g)) + struct.pack(">i", -1)
            + _string("") + struct.pack(">h", -1)  # member id "", group instance id null
            + struct.pack(">i", 1) + _string(topic_of(g)) + struct.pack(">i", partitions))
    return _Group(head, partitions)


def _check_encoding() -> None:
    """Our bytes equal kafka-python's encoding of the same OffsetCommit v7 request."""
    from kafka.protocol.consumer import OffsetCommitRequest

    topic = OffsetCommitRequest.OffsetCommitRequestTopic
    part = topic.OffsetCommitRequestPartition
    reference = OffsetCommitRequest(
        version=VERSION, group_id=group_name(7), generation_id_or_member_epoch=-1, member_id="",
        group_instance_id=None, topics=[topic(name=topic_of(7), partitions=[
            part(partition_index=p, committed_offset=3000 + p, committed_leader_epoch=-1,
                 committed_metadata="") for p in range(3)])])
    reference.with_header(correlation_id=42, client_id=CLIENT_ID.decode())
    expected = bytes(reference.encode(header=True, framed=True))
    ours = group_request(7, 3).request(42, 3000)
    assert ours == expected, (ours, expected)


def _errors(response: bytes) -> list[int]:
    """Non-zero error codes of an OffsetCommit v7 response body (after the correlation id)."""
    pos, found = 4, []  # throttle_time_ms
    (topics,) = struct.unpack_from(">i", response, pos)
    pos += 4
    for _ in range(topics):
        (name_len,) = struct.unpack_from(">h", response, pos)
        pos += 2 + name_len
        (count,) = struct.unpack_from(">i", response, pos)
        pos += 4
        for _ in range(count):
            _, error = struct.unpack_from(">ih", response, pos)
            pos += 6
            if error:
                found.append(error)
    return found


class Connection:
    """One socket to the broker with up to `window` OffsetCommit requests in flight; `on_done`
    is called with (correlation id, receive time) for each response, errors raise."""

    def __init__(self, bootstrap: str, window: int = 64) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.window, self.in_flight, self._buffer = window, 0, b""
        self.acked = 0
        self.on_done = None

    def send(self, request: bytes) -> None:
        while self.in_flight >= self.window:
            self.receive(block=True)
        self.sock.sendall(request)
        self.in_flight += 1

    def receive(self, block: bool) -> None:
        """Read what has arrived (waiting for at least one response when `block`)."""
        self.sock.setblocking(block)
        try:
            data = self.sock.recv(1 << 20)
        except BlockingIOError:
            return
        finally:
            self.sock.setblocking(True)
        if not data:
            raise ConnectionError("broker closed the connection")
        self._buffer += data
        now = time.time()
        while len(self._buffer) >= 4:
            (size,) = struct.unpack_from(">i", self._buffer)
            if len(self._buffer) < 4 + size:
                break
            frame, self._buffer = self._buffer[4:4 + size], self._buffer[4 + size:]
            (correlation,) = struct.unpack_from(">i", frame)
            errors = _errors(frame[4:])
            if errors:
                raise RuntimeError(f"OffsetCommit {correlation} failed: error codes {set(errors)}")
            self.in_flight -= 1
            self.acked += 1
            if self.on_done:
                self.on_done(correlation, now)

    def drain(self) -> None:
        while self.in_flight:
            self.receive(block=True)

    def close(self) -> None:
        self.sock.close()


def wait_for_coordinators(bootstrap: str, groups: range) -> None:
    """Create `__consumer_offsets` (its first FindCoordinator does) and wait until every group's
    coordinator partition is loaded: one synchronous commit per group's partition of the topic,
    retried while the broker answers COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR."""
    from coordinator import partition_for
    from tests.support.kafka_broker import OFFSETS_TOPIC_PARTITIONS

    first: dict[int, int] = {}
    for g in groups:
        first.setdefault(partition_for(group_name(g)), g)
        if len(first) == OFFSETS_TOPIC_PARTITIONS:
            break
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:  # a FindCoordinator, which creates the topic
        admin.describe_groups([group_name(0)])
    except Exception:  # noqa: BLE001  (coordinator not available yet: the retries below wait)
        pass
    finally:
        admin.close()
    conn = Connection(bootstrap, window=1)
    try:
        deadline = time.monotonic() + 60
        for g in first.values():
            while True:  # round 0 of partition 0, overwritten by the rounds that follow
                try:
                    conn.send(group_request(g, 1).request(0, 0))
                    conn.drain()
                    break
                except RuntimeError:
                    conn.in_flight = 0
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
    finally:
        conn.close()


def preload(bootstrap: str, groups: int, partitions: int, rounds: int,
            connections: int = 4, first_group: int = 0, first_round: int = 1) -> int:
    """Commit rounds `first_round` to `first_round + rounds - 1` (round r: offset 1000 * r + p
    for partition p) of the `partitions`
    partitions of groups `first_group` to `groups - 1`, as fast as the broker takes them; returns
    the commit count. The topics must exist (`create_topics`)."""
    _check_encoding()
    wait_for_coordinators(bootstrap, range(first_group, groups))
    shapes = [group_request(g, partitions) for g in range(first_group, groups)]
    links = [Connection(bootstrap) for _ in range(connections)]
    try:
        correlation = 0
        for r in range(first_round, first_round + rounds):
            for g, shape in enumerate(shapes):
                correlation += 1
                # a group's commits stay on one connection, so they are written in order
                links[g % connections].send(shape.request(correlation, 1000 * r))
        for link in links:
            link.drain()
    finally:
        for link in links:
            link.close()
    return len(shapes) * partitions * rounds


# Kafka 3.9's new group coordinator (which the test broker's `consumer` rebalance protocol turns
# on) holds each write up to group.coordinator.append.linger.ms (default 10 ms there) before it
# appends it, and a broker reads a connection's next request only once it has answered the one
# before: on one connection the broker answered ~90 OffsetCommit requests a second whatever the
# window (1, 4 and 32 connections: 89, 350 and 3,280 requests/s, the broker's CPU at 0.1-0.6 of
# a core; with linger 0, 3,581 on one). 10,000 commits/s of 10-partition groups is 1,000
# requests/s: on one connection it fell behind by 9 requests in 10, which read as a stall. Real
# groups commit over connections of their own; `steady` spreads its groups over enough
# connections that each carries at most this many requests a second.
STEADY_REQUESTS_PER_CONNECTION = 25


@dataclass
class SteadyResult:
    """What `steady` did: commit count, achieved rate, and each request's send time (epoch
    seconds) by (group, round), for latency from commit to exporter."""
    commits: int
    seconds: float
    sent_at: dict[tuple[int, int], float] = field(default_factory=dict)
    acked_at: dict[tuple[int, int], float] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.commits / self.seconds if self.seconds else 0.0


def steady(bootstrap: str, rate: float, seconds: float, groups: int = 2_000,
           partitions: int = 25, first_round: int = 1, stop: threading.Event | None = None
           ) -> SteadyResult:
    """Commit at `rate` commits/s for `seconds`: each group commits all its partitions in one
    request (round r: offset 1000 * r + p), groups spread evenly over each round's period, round
    after round from `first_round`. Sends are paced against the wall clock, so a late request is
    sent at once and the rate catches up. Group `g` commits over connection `g % connections`
    (STEADY_REQUESTS_PER_CONNECTION), so its commits are written in order."""
    _check_encoding()
    shapes = [group_request(g, partitions) for g in range(groups)]
    count = max(1, min(groups, math.ceil(rate / partitions / STEADY_REQUESTS_PER_CONNECTION)))
    links = [Connection(bootstrap, window=8) for _ in range(count)]
    poller = selectors.DefaultSelector()
    result = SteadyResult(0, 0.0)
    keys: dict[int, tuple[int, int]] = {}

    def acked(correlation: int, at: float) -> None:
        result.acked_at[keys.pop(correlation)] = at

    def read(timeout: float) -> None:
        """The responses that arrive within `timeout`, on whichever connection."""
        for key, _ in poller.select(timeout):
            key.data.receive(block=False)

    for link in links:
        link.on_done = acked
        poller.register(link.sock, selectors.EVENT_READ, link)
    period = groups * partitions / rate
    started = time.time()
    n = 0
    try:
        while not (stop and stop.is_set()):
            r, g = first_round + n // groups, n % groups
            due = started + n * period / groups
            if due - started >= seconds:
                break
            pause = due - time.time()
            if pause > 0.002:
                read(pause)
                continue
            link = links[g % count]
            while link.in_flight >= link.window:
                read(0.1)
            keys[n + 1] = (g, r)
            result.sent_at[(g, r)] = time.time()
            link.send(shapes[g].request(n + 1, 1000 * r))
            n += 1
        while any(link.in_flight for link in links):
            read(0.1)
    finally:
        poller.close()
        for link in links:
            link.close()
    result.commits, result.seconds = n * partitions, time.time() - started
    return result


def _compare_confluent(bootstrap: str, groups: int, partitions: int, rounds: int) -> float:
    """Commits/s of confluent-kafka: one Consumer per group, `commit(offsets, asynchronous=True)`."""
    from confluent_kafka import Consumer, TopicPartition

    pending = [0]

    def done(err, _partitions) -> None:
        if err:
            raise RuntimeError(err)
        pending[0] -= 1

    consumers = [Consumer({"bootstrap.servers": bootstrap, "group.id": group_name(g),
                           "enable.auto.commit": False, "on_commit": done})
                 for g in range(groups)]

    for c in consumers:
        c.poll(0)
    started = time.perf_counter()
    for r in range(1, rounds + 1):
        for g, c in enumerate(consumers):
            c.commit(offsets=[TopicPartition(topic_of(g), p, 1000 * r + p)
                              for p in range(partitions)], asynchronous=True)
            pending[0] += 1
    while pending[0] > 0:
        for c in consumers:
            c.poll(0)  # commit callbacks are served by poll
    elapsed = time.perf_counter() - started
    for c in consumers:
        c.close()
    return groups * partitions * rounds / elapsed


def answered_per_window(result: SteadyResult, window_s: float) -> list[int]:
    """How many of the load's requests the broker answered in each `window_s` since the first
    was sent: a broker falling behind shows as a falling count."""
    if not result.sent_at:
        return []
    start = min(result.sent_at.values())
    counts: dict[int, int] = {}
    for at in result.acked_at.values():
        slot = int((at - start) // window_s)
        counts[slot] = counts.get(slot, 0) + 1
    return [counts.get(slot, 0) for slot in range(max(counts, default=-1) + 1)]


def add_load_arguments(parser: argparse.ArgumentParser) -> None:
    """--groups, --partitions (per group) and --rate (steady commits/s), shared by the benchmarks
    that make this load."""
    parser.add_argument("--groups", type=int, default=2_000)
    parser.add_argument("--partitions", type=int, default=25, help="partitions per group")
    parser.add_argument("--rate", type=float, default=5_000.0, help="steady commits/s")


def main() -> None:
    parser = argparse.ArgumentParser()
    add_load_arguments(parser)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--compare", action="store_true",
                        help="also time confluent-kafka's asynchronous commits (200 groups)")
    parser.add_argument("--kafka-version", default=None, help="default: the test broker's")
    parser.add_argument("--heap", default=None, metavar="MAX",
                        help="the broker's maximum heap (e.g. 3g) instead of the test broker's")
    args = parser.parse_args()
    from tests.support.kafka_broker import DEFAULT_VERSION, start_kafka

    broker = start_kafka(args.kafka_version or DEFAULT_VERSION,
                         heap=("-Xms512m", f"-Xmx{args.heap}") if args.heap else None)
    try:
        create_topics(broker.bootstrap, args.groups, args.partitions)
        started = time.perf_counter()
        count = preload(broker.bootstrap, args.groups, args.partitions, args.rounds)
        elapsed = time.perf_counter() - started
        print(f"preload: {count:,} commits in {elapsed:.1f}s = {count / elapsed:,.0f} commits/s "
              f"(OffsetCommit v7, pipelined over 4 connections)")
        if args.compare:
            rate = _compare_confluent(broker.bootstrap, min(args.groups, 200), args.partitions, 4)
            print(f"confluent-kafka Consumer.commit(asynchronous=True): {rate:,.0f} commits/s")
        result = steady(broker.bootstrap, args.rate, args.seconds, args.groups, args.partitions,
                        first_round=args.rounds + 1)
        acks = sorted(result.acked_at[k] - result.sent_at[k] for k in result.acked_at)
        print(f"steady: {result.commits:,} commits in {result.seconds:.1f}s = {result.rate:,.0f} "
              f"commits/s (asked {args.rate:,.0f}); commit round trip p50 "
              f"{acks[len(acks) // 2] * 1000:.1f} ms, p99 {acks[int(len(acks) * .99)] * 1000:.1f} ms")
        print("requests answered per 10 s of the load: " + " ".join(
            str(n) for n in answered_per_window(result, 10.0)))
    finally:
        broker.stop()


if __name__ == "__main__":
    stop_everything_at_exit()
    main()
