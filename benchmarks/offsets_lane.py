"""The offsets lane in the driver: what a micro-batch of commits costs the lane's table and the
view as the committed offsets held grow (prints figures; asserts nothing).

A table and a view are filled with `--groups` groups of `--partitions` partitions, then
`--batches` micro-batches each commit every partition of `--touched` groups drawn at random:
the CPU time of `OffsetsLane.apply_batch` and `MonitorView.apply_offsets` per batch and per
commit; then a look-up of 16 groups (the group lane's question per shard) and the whole table as
Arrow (what a base file of `streaming/offsets/store.py` writes).

Usage (from the repository root):
    python -m benchmarks.offsets_lane [--groups 100000] [--partitions 10] [--touched 5000]
        [--batches 3]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import pyarrow as pa

from benchmarks._stopping import stop_everything_at_exit

T0 = 1_763_000_000_000


def commits(groups: np.ndarray, partitions: int, at: int, ts: int) -> pa.Table:
    """A commit of each partition of `groups`, at offsets `at`.. of __consumer_offsets."""
    g = np.repeat(groups, partitions)
    p = np.tile(np.arange(partitions), len(groups))
    n = len(g)
    return pa.table({
        "group": pa.array([f"group-{x:06d}" for x in g.tolist()]),
        "ts_ms": pa.array(np.full(n, ts), pa.int64()),
        "o_partition": pa.array(g % 50, pa.int32()),
        "o_offset": pa.array(at + np.arange(n), pa.int64()),
        "c_topic": pa.array([f"topic-{x:06d}" for x in g.tolist()]),
        "c_partition": pa.array(p, pa.int32()), "c_offset": pa.array(np.full(n, at), pa.int64()),
        "c_epoch": pa.array(np.full(n, -1), pa.int32()), "c_metadata": pa.array([""] * n),
        "c_commit_ts": pa.array(np.full(n, ts), pa.int64()),
        "c_topic_id": pa.array([None] * n, pa.string())})


def main() -> None:
    from benchmarks.cluster import cpu_probe
    from streaming.exporter.view import MonitorView
    from streaming.offsets.lane import OffsetsLane

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--touched", type=int, default=5_000)
    parser.add_argument("--batches", type=int, default=3)
    args = parser.parse_args()
    print(f"CPU probe (benchmarks.cluster.CPU_PROBE): {cpu_probe()} s")
    lane, view = OffsetsLane(), MonitorView()
    held = args.groups * args.partitions
    started = time.process_time()
    batch = lane.apply_batch(commits(np.arange(args.groups), args.partitions, 0, T0), [], [])
    middle = time.process_time()
    view.apply_offsets(batch.applied)
    print(f"{held:,} new keys: lane {middle - started:.2f} CPU-s, view "
          f"{time.process_time() - middle:.2f} CPU-s")
    rng = np.random.default_rng(1)
    n = args.touched * args.partitions
    for k in range(args.batches):
        touched = rng.choice(args.groups, args.touched, replace=False)
        rows = commits(touched, args.partitions, 10_000_000 * (k + 1), T0 + 1000 * (k + 1))
        started = time.process_time()
        batch = lane.apply_batch(rows, [], [])
        middle = time.process_time()
        view.apply_offsets(batch.applied)
        done = time.process_time()
        print(f"a batch of {n:,} commits ({args.touched:,} groups) at {held:,} held: lane "
              f"{1000 * (middle - started):.0f} ms, view {1000 * (done - middle):.0f} ms = "
              f"{1e6 * (done - started) / n:.1f} us a commit")
    started = time.process_time()
    lane.lookup([f"group-{x:06d}" for x in range(16)])
    print(f"a look-up of 16 groups: {1000 * (time.process_time() - started):.2f} ms")
    started = time.process_time()
    lane.table.to_arrow()
    print(f"the table as Arrow (a base file's content): {time.process_time() - started:.2f} CPU-s")


if __name__ == "__main__":
    stop_everything_at_exit()
    main()
