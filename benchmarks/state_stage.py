"""The Spark state stage alone: what a micro-batch touching a fixed number of groups costs as the
groups held grow (prints figures; asserts nothing).

For each count of groups held (default 2,000, 20,000 and 100,000, each group committing
`--partitions` partitions of its own topic), a fresh query of the job's stateful stage
(`streaming.pipeline.state_stage.stateful_stage`, RocksDB state store, the job's Spark settings)
reads decoded rows (the decode stage's output schema) from Parquet files dropped one per
micro-batch: first a file that creates every group, then `--batches` files that each commit
every partition of `--touched` groups drawn at random from those held. Spark's own progress gives
each micro-batch's duration; the median over the touched batches is printed per count held, with
its ratio to the first count's (the target: within 1.5x from 2,000 to 100,000 groups held).

Usage (from the repository root):
    python -m benchmarks.state_stage [--held 2000,20000,100000] [--touched 1000] [--batches 5]
        [--partitions 10] [--conf key=value ...]
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks._records import T0, commit_key, commit_value


def group_name(g: int) -> str:
    return f"stage-group-{g:06d}"


def commit_rows(groups: list[int], partitions: int, round_: int) -> pa.Table:
    """Offset commits (one per partition of each group) as the decode stage hands them on."""
    names, parts, offsets, stamps, keys, values = [], [], [], [], [], []
    ts = T0 + round_ * 5_000
    position = 0
    for g in groups:
        name = group_name(g)
        for p in range(partitions):
            names.append(name)
            parts.append(0)
            offsets.append(round_ * 10_000_000 + position)
            stamps.append(ts)
            keys.append(commit_key(name, f"topic-{g}", p))
            values.append(commit_value(1000 * round_ + p, ts))
            position += 1
    from streaming.pipeline.stage_schema import STAGE_SCHEMA
    return pa.table([names, parts, offsets, stamps, keys, values], schema=STAGE_SCHEMA)


def run_held(spark, held: int, args, workdir: str) -> tuple[float, list[float]]:
    """(seconds of the batch creating `held` groups, seconds of each touched batch)."""
    from streaming.pipeline.shard_state import STATE_SHARDS
    from streaming.pipeline.stage_schema import STAGE_DDL
    from streaming.pipeline.state_stage import GroupProcessor, stateful_stage

    inbox = os.path.join(workdir, f"in-{held}")
    os.makedirs(inbox)
    stream = (spark.readStream.schema(STAGE_DDL).option("maxFilesPerTrigger", 1)
              .parquet(inbox))
    staged = stateful_stage(stream, GroupProcessor(layout=args.layout), STATE_SHARDS)
    query = (staged.writeStream.format("noop").outputMode("update")
             .option("checkpointLocation", os.path.join(workdir, f"cp-{held}")).start())
    durations: list[float] = []
    try:
        rng = random.Random(held)
        for round_ in range(args.batches + 1):
            groups = list(range(held)) if round_ == 0 else rng.sample(range(held), args.touched)
            table = commit_rows(groups, args.partitions, round_)
            staged_file = os.path.join(workdir, "_next.parquet")
            pq.write_table(table, staged_file)
            # into the source's folder whole: it must never list a file half written
            os.rename(staged_file, os.path.join(inbox, f"batch-{round_:03d}.parquet"))
            query.processAllAvailable()
            progress = query.lastProgress
            durations.append(progress["durationMs"]["triggerExecution"] / 1000.0)
    finally:
        query.stop()
    return durations[0], durations[1:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--held", default="2000,20000,100000",
                        help="comma-separated counts of groups held")
    parser.add_argument("--touched", type=int, default=1000, help="groups each batch commits to")
    parser.add_argument("--batches", type=int, default=5, help="touched batches per count held")
    parser.add_argument("--partitions", type=int, default=10, help="partitions per group")
    parser.add_argument("--layout", default="bucket-map",
                        choices=("bucket-map", "group-map", "shard-value"),
                        help="how each shard key keeps its groups (shard_state.STATE_LAYOUTS)")
    parser.add_argument("--conf", action="append", default=[],
                        help="extra Spark setting key=value (repeatable)")
    args = parser.parse_args()
    held_counts = [int(n) for n in args.held.split(",")]

    from streaming.config import Config
    from streaming.job.session import build_spark

    from benchmarks.cluster import cpu_probe

    print(f"CPU probe (benchmarks.cluster.CPU_PROBE): {cpu_probe()} s; layout {args.layout}")
    started = time.perf_counter()
    spark = build_spark(Config(), dict(item.split("=", 1) for item in args.conf))
    print(f"Spark session (the job's local-mode settings): {time.perf_counter() - started:.1f} s")
    rows = []
    with tempfile.TemporaryDirectory(prefix="groupscope-state-stage-") as workdir:
        for held in held_counts:
            seed, touched = run_held(spark, held, args, workdir)
            median = statistics.median(touched)
            rows.append((held, seed, median, touched))
            print(f"{held:>7} groups held: creating them {seed:.2f} s; a batch of {args.touched} "
                  f"touched groups: median {median:.2f} s ("
                  + ", ".join(f"{d:.2f}" for d in touched) + ")", flush=True)
    spark.stop()
    base = rows[0][2]
    print(f"groups held   batch of {args.touched} touched (median s)   ratio to {rows[0][0]} held")
    for held, _, median, _ in rows:
        print(f"{held:>11}{median:>38.2f}{median / base:>24.2f}x")


if __name__ == "__main__":
    main()
