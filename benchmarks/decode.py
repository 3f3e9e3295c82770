"""Decode throughput on a realistic `__consumer_offsets` mix (prints figures; asserts nothing).

The mix: 95% offset commits (v3 and v4, a quarter of the v4s carrying a topicId) and 5% classic
group-metadata snapshots (v3) of 5-200 members, each member with real ConsumerProtocol v3
subscription and assignment bytes. Prints records/s of CPU time (one core) for:

* the per-record path (`coordinator.records.decode`) on the mix,
* the Arrow batch path (`coordinator.batch_decode.decode_batch`) on offset commits only,
* the batch path on the mix.

Usage (from the repository root): python -m benchmarks.decode [--records N] [--batch-size N]
"""
from __future__ import annotations

import argparse
import random
import time
from typing import Callable

import pyarrow as pa

from benchmarks._stopping import stop_everything_at_exit
from coordinator.batch_decode import decode_batch
from coordinator.protocol import (
    Assignment, Subscription, encode_assignment, encode_subscription, group_partitions)
from coordinator.records import decode, encode

TOPICS = [f"orders.events.{i}" for i in range(40)]
GROUPS = [f"app-{i}-consumer" for i in range(200)]
TOPIC_ID = "MKXx1fIkQy2J9jXHhK8m1w"


def offset_commit(rng: random.Random, i: int) -> tuple[bytes, bytes | None]:
    version = rng.choice((3, 4))
    value = {"version": version, "offset": rng.randrange(1 << 40), "leader_epoch": rng.randrange(50),
             "metadata": "", "commit_timestamp": 1_700_000_000_000 + i}
    if version == 4 and rng.random() < 0.25:
        value["topic_id"] = TOPIC_ID
    return encode({"type": 1, "key": {"group": rng.choice(GROUPS), "topic": rng.choice(TOPICS),
                                      "partition": rng.randrange(64)}, "value": value})


def group_metadata(rng: random.Random, i: int) -> tuple[bytes, bytes | None]:
    members = rng.randint(5, 200)
    topics = rng.sample(TOPICS, rng.randint(1, 4))
    partitions = [(t, p) for t in topics for p in range(32)]
    rng.shuffle(partitions)
    member_ids = [f"consumer-{i}-{m}-{rng.getrandbits(64):016x}" for m in range(members)]
    rows = []
    for m, member_id in enumerate(member_ids):
        mine = partitions[m::members]
        subscription = Subscription(3, tuple(topics), None, group_partitions(mine), 11, None)
        assignment = Assignment(3, group_partitions(mine, sort=False), None)
        rows.append({"member_id": member_id, "group_instance_id": None, "client_id": f"client-{m}",
                     "client_host": f"/10.0.{m // 250}.{m % 250}", "rebalance_timeout": 300000,
                     "session_timeout": 45000, "subscription": encode_subscription(subscription).hex(),
                     "assignment": encode_assignment(assignment).hex()})
    value = {"version": 3, "protocol_type": "consumer", "generation": 12, "protocol": "cooperative-sticky",
             "leader": member_ids[0], "current_state_timestamp": 1_700_000_000_000 + i, "members": rows}
    return encode({"type": 2, "key": {"group": rng.choice(GROUPS)}, "value": value})


def build(records: int, metadata_share: float, seed: int = 1) -> list[tuple[bytes, bytes | None]]:
    rng = random.Random(seed)
    return [group_metadata(rng, i) if rng.random() < metadata_share else offset_commit(rng, i)
            for i in range(records)]


def cpu_rate(records: int, work: Callable[[], object], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        work()
        best = min(best, time.process_time() - start)
    return records / best


def batched(data: list[tuple[bytes, bytes | None]], size: int) -> list[tuple[pa.Array, pa.Array]]:
    return [(pa.array([k for k, _ in data[i:i + size]], pa.binary()),
             pa.array([v for _, v in data[i:i + size]], pa.binary())) for i in range(0, len(data), size)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--batch-size", type=int, default=10_000, help="rows per Arrow batch (Spark's "
                        "spark.sql.execution.arrow.maxRecordsPerBatch defaults to 10,000)")
    args = parser.parse_args()

    commits = build(args.records, 0.0)
    mix = build(args.records, 0.05)
    gm = sum(1 for k, _ in mix if k[1] == 2)
    members = sum(len(decode(k, v).value["members"]) for k, v in mix if k[1] == 2)
    print(f"mix: {len(mix):,} records, {gm:,} group-metadata snapshots with {members:,} members "
          f"({sum(len(k) + len(v or b'') for k, v in mix) / 1e6:.1f} MB)")

    def per_record(data):
        return lambda: [decode(k, v) for k, v in data]

    def batch(batches):
        return lambda: [decode_batch(k, v) for k, v in batches]

    commit_batches, mix_batches = batched(commits, args.batch_size), batched(mix, args.batch_size)
    figures = [
        ("per-record decode, offset commits only", len(commits), per_record(commits)),
        ("per-record decode, mix", len(mix), per_record(mix)),
        ("batch decode, offset commits only", len(commits), batch(commit_batches)),
        ("batch decode, mix", len(mix), batch(mix_batches)),
    ]
    for name, count, work in figures:
        print(f"{name:40s} {cpu_rate(count, work):>12,.0f} records/s per core")


if __name__ == "__main__":
    stop_everything_at_exit()
    main()
