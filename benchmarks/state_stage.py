"""The Spark state stage alone: what a micro-batch touching a fixed number of groups costs as the
groups held grow (prints figures; asserts nothing).

For each count of groups held (default 2,000, 20,000 and 100,000, each group committing
`--partitions` partitions of its own topic), a fresh query of the job's stateful stage
(`streaming.pipeline.state_stage.stateful_stage`, RocksDB state store, the job's Spark settings)
reads decoded rows (the decode stage's output schema) from Parquet files dropped one per
micro-batch: first a file that creates every group (a group record and a commit of every
partition each; the commits also go to the offsets lane the group lane looks up), then
`--batches` files that each bring `--touched` groups drawn at random from those held: with
`--records commits` (the default) a commit of each of their partitions, which pass through to
the offsets lane and touch no group state, with `--records groups` a group record each, which
the group lane applies (state read and written, offsets looked up). Spark's own progress gives
each micro-batch's duration; the median over the touched batches is printed per count held, with
its ratio to the first count's (the target: within 1.5x from 2,000 to 100,000 groups held).

Usage (from the repository root):
    python -m benchmarks.state_stage [--held 2000,20000,100000] [--touched 1000] [--batches 5]
        [--partitions 10] [--records commits|groups] [--conf key=value ...]
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time

import pyarrow as pa
import pyarrow.compute  # noqa: F401 (pa.compute)
import pyarrow.parquet as pq

from benchmarks._records import T0
from benchmarks._stopping import stop_everything_at_exit


def group_name(g: int) -> str:
    return f"stage-group-{g:06d}"


def stage_rows(groups: list[int], partitions: int, round_: int, commits: bool,
               records: bool) -> pa.Table:
    """The decode stage's rows for `groups`: with `commits` a commit of each of their
    partitions (the offsets lane's typed columns), with `records` a group record each (an Empty
    classic group's metadata of generation `round_ + 1`: the group lane's raw key and value)."""
    from coordinator.records import encode
    from streaming.pipeline.stage_schema import STAGE_SCHEMA

    rows: dict[str, list] = {name: [] for name in STAGE_SCHEMA.names}
    ts = T0 + round_ * 5_000
    position = 0

    def add(**values) -> None:
        nonlocal position
        for name in STAGE_SCHEMA.names:
            rows[name].append(values.get(name))
        position += 1

    for g in groups:
        name = group_name(g)
        if records:
            key, value = encode({"type": 2, "type_name": "group_metadata", "key": {"group": name},
                                 "value": {"version": 3, "protocol_type": "consumer",
                                           "generation": round_ + 1, "protocol": None,
                                           "leader": None, "current_state_timestamp": ts,
                                           "members": []}})
            add(group=name, o_partition=0, o_offset=round_ * 10_000_000 + position, ts_ms=ts,
                key=key, value=value)
        if commits:
            for p in range(partitions):
                add(group=name, o_partition=0, o_offset=round_ * 10_000_000 + position, ts_ms=ts,
                    c_topic=f"topic-{g}", c_partition=p, c_offset=1000 * round_ + p, c_epoch=-1,
                    c_metadata="", c_commit_ts=ts)
    return pa.table(rows, schema=STAGE_SCHEMA)


def run_held(spark, held: int, args, workdir: str) -> tuple[float, list[float]]:
    """(seconds of the batch creating `held` groups, seconds of each touched batch)."""
    from streaming.pipeline.shard_state import STATE_SHARDS
    from streaming.pipeline.stage_schema import STAGE_DDL
    from streaming.offsets.lane import OffsetsLane
    from streaming.offsets.lookup import LookupServer
    from streaming.pipeline.state_stage import GroupProcessor, stateful_stage

    inbox = os.path.join(workdir, f"in-{held}")
    os.makedirs(inbox)
    lane = OffsetsLane()
    lookups = LookupServer(lane.lookup)
    stream = (spark.readStream.schema(STAGE_DDL).option("maxFilesPerTrigger", 1)
              .parquet(inbox))
    staged = stateful_stage(stream, GroupProcessor(lookups.client(), layout=args.layout),
                            STATE_SHARDS)
    query = (staged.writeStream.format("noop").outputMode("update")
             .option("checkpointLocation", os.path.join(workdir, f"cp-{held}")).start())
    durations: list[float] = []
    try:
        rng = random.Random(held)
        for round_ in range(args.batches + 1):
            groups = list(range(held)) if round_ == 0 else rng.sample(range(held), args.touched)
            table = stage_rows(groups, args.partitions, round_,
                               commits=round_ == 0 or args.records == "commits",
                               records=round_ == 0 or args.records == "groups")
            if round_ == 0:
                from streaming.offsets.table import COMMIT_INPUT
                created = table.filter(pa.compute.is_valid(table.column("c_topic")))
                lane.table.apply(created.select(list(COMMIT_INPUT)))
            staged_file = os.path.join(workdir, "_next.parquet")
            pq.write_table(table, staged_file)
            # into the source's folder whole: it must never list a file half written
            os.rename(staged_file, os.path.join(inbox, f"batch-{round_:03d}.parquet"))
            query.processAllAvailable()
            progress = query.lastProgress
            durations.append(progress["durationMs"]["triggerExecution"] / 1000.0)
    finally:
        query.stop()
        lookups.close()
    return durations[0], durations[1:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--held", default="2000,20000,100000",
                        help="comma-separated counts of groups held")
    parser.add_argument("--touched", type=int, default=1000, help="groups each batch commits to")
    parser.add_argument("--batches", type=int, default=5, help="touched batches per count held")
    parser.add_argument("--partitions", type=int, default=10, help="partitions per group")
    parser.add_argument("--records", default="commits", choices=("commits", "groups"),
                        help="what each touched group brings: commits or a group record")
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

    print(f"CPU probe (benchmarks.cluster.CPU_PROBE): {cpu_probe()} s; layout {args.layout}; "
          f"touched groups bring {args.records}")
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
    stop_everything_at_exit()
    main()
