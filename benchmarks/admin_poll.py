"""What one poll of `source.type: admin` costs: requests, wall time and CPU (groupscope's process
and the broker's) to describe every group and fetch its offsets, at 2,000 and 20,000 groups
(each with `--partitions` committed partitions, written through the OffsetCommit API by
benchmarks.commit_load). Then the poll's output through the view, as the job does it.

Usage (from the repository root): python -m benchmarks.admin_poll [--groups 2000,20000]
    [--partitions 10] [--polls 3]
"""
from __future__ import annotations

import argparse
import os
import time

from benchmarks._process_cpu import tree_cpu_seconds
from benchmarks._stopping import stop_everything_at_exit
from benchmarks.commit_load import create_topics, preload


def _cpu_probe() -> float:
    started = time.perf_counter()
    sum(i * i for i in range(10 ** 7))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", default="2000,20000", help="comma-separated group counts")
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--polls", type=int, default=3)
    args = parser.parse_args()
    from coordinator.admin_groups import observe
    from streaming.exporter.view import MonitorView
    from streaming.gc_pause import collector_paused
    from streaming.kafka.admin_groups import AdminGroups
    from tests.support.kafka_broker import start_kafka

    print(f"CPU probe: {_cpu_probe():.2f} s (sum of 10^7 squares)")
    broker = start_kafka(heap=("-Xms512m", "-Xmx2g"))
    try:
        done = 0
        for count in (int(n) for n in args.groups.split(",")):
            create_topics(broker.bootstrap, count, args.partitions)
            preload(broker.bootstrap, count, args.partitions, 1, first_group=done)
            done = count
            client = AdminGroups({"bootstrap_servers": [broker.bootstrap]}, timeout_s=120)
            seen: dict = {}
            for n in range(args.polls):
                requests, own = client.requests, time.process_time()
                theirs, started = tree_cpu_seconds(broker.process.pid), time.perf_counter()
                polled = client.poll()
                wall = time.perf_counter() - started
                broker_cpu = tree_cpu_seconds(broker.process.pid) - theirs
                poll_cpu = time.process_time() - own
                view, at = MonitorView(), time.process_time()
                now_ms = int(time.time() * 1000)
                snapshots = []
                with collector_paused():  # as the job's admin source and launch seed do
                    for group in polled:
                        seen[group.group], _ = observe(group, seen.get(group.group), now_ms,
                                                       None, n + 1)
                        snapshots.append(seen[group.group].snapshot)
                    view.update_groups(snapshots)
                feed_cpu = time.process_time() - at
                print(f"{count:,} groups x {args.partitions} partitions, poll {n + 1}: "
                      f"{len(polled):,} groups described in {wall:.2f} s wall; API calls "
                      f"{client.requests - requests} (ListGroups, DescribeGroups, "
                      f"ConsumerGroupDescribe when needed, OffsetFetch: one request each per "
                      f"coordinator); CPU: groupscope {poll_cpu:.2f} s to poll + {feed_cpu:.2f} s "
                      f"into the view, broker {broker_cpu:.2f} s")
            client.close()
    finally:
        broker.stop()
    print(f"machine: {os.cpu_count()} cores")


if __name__ == "__main__":
    stop_everything_at_exit()
    main()
