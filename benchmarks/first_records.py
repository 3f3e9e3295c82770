"""What `lag.time_method: exact` costs a poll: reading the first unconsumed record of every
lagging partition, at 2,000 and 20,000 lagging group-partitions (`--groups` groups committed at
different offsets of each of `--partitions` partitions: 1 and 10 groups over 2,000 partitions by
default), through the end-offset poller and the job's kafka-python offsets client on a real
broker. Three polls each: the first read, a poll with nothing moved, and one after every group
committed one record further. Prints the reader's polls (each at most one fetch request a
broker), wall time, the CPU of this process and of the broker, and how many figures were read.

Usage (from the repository root): python -m benchmarks.first_records [--partitions 2000]
    [--groups 1,10]
"""
from __future__ import annotations

import argparse
import time

from benchmarks._process_cpu import tree_cpu_seconds
from benchmarks._stopping import stop_everything_at_exit

TOPICS = 20
TIMESTAMP_MS = 1_700_000_000_000
RECORDS = 12  # a partition's records: every group stays behind the end
STEPS = ("first read", "nothing moved", "every group committed again")


def _cpu_probe() -> float:
    started = time.perf_counter()
    sum(i * i for i in range(10 ** 7))
    return time.perf_counter() - started


def _commits(view, groups: int, partitions: list[tuple[str, int]], shift: int) -> None:
    """`groups` groups, group g committed at offset g + shift on every partition (all behind
    its end, RECORDS)."""
    now_ms = int(time.time() * 1000)
    view.update_groups([{
        "group": f"lagging-{g}", "group_type": "classic", "protocol_type": "consumer",
        "protocol": "range", "state": "Empty", "generation": 1, "assignment_epoch": None,
        "leader": None, "current_state_timestamp_ms": None, "coordinator_partition": 0,
        "members": [], "subscribed_topics": [], "last_rebalance": None, "updated_ms": now_ms,
        "offsets": [{"topic": t, "partition": p, "offset": g + shift, "leader_epoch": None,
                     "metadata": "", "commit_timestamp_ms": now_ms, "topic_id": None}
                    for t, p in partitions]} for g in range(groups)])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--partitions", type=int, default=2000)
    parser.add_argument("--groups", default="1,10", help="comma-separated groups per partition")
    args = parser.parse_args()
    from streaming.exporter.end_offset_poller import EndOffsetPoller, PollerSettings
    from streaming.exporter.view import MonitorView, ViewSettings
    from streaming.kafka.offsets import offsets_client
    from streaming.sources.kafka_options import KafkaSourceOptions
    from tests.support.kafka_broker import create_topic, produce_raw, start_kafka

    print(f"CPU probe: {_cpu_probe():.2f} s (sum of 10^7 squares)")
    broker = start_kafka(heap=("-Xms512m", "-Xmx2g"))
    try:
        per_topic = args.partitions // TOPICS
        partitions = [(f"lagging-{t:02d}", p) for t in range(TOPICS) for p in range(per_topic)]
        for t in range(TOPICS):
            create_topic(broker.bootstrap, f"lagging-{t:02d}", per_topic)
        for t in range(TOPICS):
            produce_raw(broker.bootstrap, f"lagging-{t:02d}",
                        [(p, None, b"x" * 100, TIMESTAMP_MS + i) for p in range(per_topic)
                         for i in range(RECORDS)])
        for groups in (int(n) for n in args.groups.split(",")):
            view = MonitorView(ViewSettings(cluster="bench"))
            _commits(view, groups, partitions, 0)
            client = offsets_client(KafkaSourceOptions(bootstrap_servers=broker.bootstrap),
                                    timeout_s=60.0)
            poller = EndOffsetPoller(view, lambda: client,
                                     PollerSettings(time_method="exact", timeout_s=60.0))
            lagging = len(partitions) * groups
            for n, step in enumerate(STEPS):
                if n == 2:  # every figure must be read again
                    _commits(view, groups, partitions, 1)
                polls, own = client.reader_polls, time.process_time()
                theirs, started = tree_cpu_seconds(broker.process.pid), time.perf_counter()
                assert poller.poll_once()
                wall = time.perf_counter() - started
                broker_cpu = tree_cpu_seconds(broker.process.pid) - theirs
                exact = int((view.table.first_at[view.table.live] ==
                             view.table.offset[view.table.live]).sum())
                print(f"{lagging:,} lagging group-partitions ({groups} a partition), {step}: "
                      f"{wall:.2f} s wall, {client.reader_polls - polls} reader polls, "
                      f"{time.process_time() - own:.2f} CPU-s here, broker {broker_cpu:.2f} CPU-s; "
                      f"{exact:,} figures read")
            client.close()
    finally:
        broker.stop()


if __name__ == "__main__":
    stop_everything_at_exit()
    main()
