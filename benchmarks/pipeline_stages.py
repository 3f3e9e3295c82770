"""Each stage of the Spark job's Python code alone, in this process (prints figures).

The same records as benchmarks/pipeline.py (offset commits of GROUPS groups x PARTITIONS
partitions, ROUNDS rounds), cut the way the source cuts them (one Arrow batch per offsets-topic
partition and poll), then:

* decode: `decode_stage.decode_partition` over the source batches (mapInArrow's function);
* processor: `GroupProcessor.handleInputRows`, fed pandas frames as Spark's worker builds them,
  one group per call (the job hands it a shard of groups per call), with an in-memory value
  state (so without Spark's per-call state RPCs);
* sink: `BatchSink.handle_rows` on the processor's output (view update and history).

Spark's own costs (Arrow transfer, shuffle, the transformWithStateInPandas worker loop and state
RPCs) are what benchmarks/pipeline.py measures on top of these.

Usage (from the repository root):
    python -m benchmarks.pipeline_stages [--records N] [--groups N] [--partitions N]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import defaultdict

from coordinator import partition_for
from tests.support.memory_state import MemoryHandle
from benchmarks._records import T0, commit_key, commit_value
from benchmarks.commit_load import group_name, topic_of
from benchmarks._stopping import stop_everything_at_exit

POLL_RECORDS = 20_000   # records per Arrow batch, as the source's polls deliver them


def source_batches(groups: int, partitions: int, rounds: int):
    """Arrow batches in Spark's Kafka schema, per offsets-topic partition in log order."""
    from streaming.kafka.records import record_batch

    per_partition: dict[int, list] = defaultdict(list)
    keys = [[commit_key(group_name(g), topic_of(g), p) for p in range(partitions)]
            for g in range(groups)]
    homes = [partition_for(group_name(g)) for g in range(groups)]
    for r in range(1, rounds + 1):
        for g in range(groups):
            ts = T0 + r * 10_000 + g * 5
            for p in range(partitions):
                per_partition[homes[g]].append((keys[g][p], commit_value(1000 * r + p, ts), ts))
    batches = []
    for home, rows in sorted(per_partition.items()):
        for lo in range(0, len(rows), POLL_RECORDS):
            chunk = rows[lo:lo + POLL_RECORDS]
            batches.append(record_batch("__consumer_offsets", home, [k for k, _, _ in chunk],
                                        [v for _, v, _ in chunk], list(range(lo, lo + len(chunk))),
                                        [t for _, _, t in chunk]))
    return batches


def timed(label: str, records: int, call):
    cpu, wall = time.process_time(), time.perf_counter()
    result = call()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    print(f"{label:<44s} {wall:7.2f}s wall {cpu:7.2f}s CPU = {records / cpu:>12,.0f} records "
          "per CPU-second")
    return result


def main() -> None:
    import pandas as pd
    import pyarrow as pa

    from streaming.pipeline.decode_stage import decode_partition
    from streaming.offsets.lane import OffsetsLane, split_commits
    from streaming.pipeline.state_stage import GroupProcessor
    from streaming.job.lifecycle import BatchSink, OffsetsTopicProgress
    from streaming.job.history import HistoryWriter
    from streaming.exporter.view import MonitorView

    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=2_000)
    parser.add_argument("--partitions", type=int, default=25)
    args = parser.parse_args()
    rounds = args.records // (args.groups * args.partitions)
    records = rounds * args.groups * args.partitions

    batches = source_batches(args.groups, args.partitions, rounds)
    decoded = timed("decode (mapInArrow function)", records,
                    lambda: list(decode_partition(iter(batches))))
    table = pa.Table.from_batches(decoded)
    print(f"    {table.num_rows:,} rows leave the decode stage for {records:,} records")

    # Spark hands each key's rows to the processor as pandas frames (its worker goes through
    # pandas row tuples); here: one frame per group, built from the decode stage's columns.
    frame = table.to_pandas()
    by_group = {name: pd.DataFrame(list(part.itertuples(index=False)))
                for name, part in frame.groupby("group", sort=True)}
    lane = OffsetsLane()
    processor = GroupProcessor(lane)
    handle = MemoryHandle()
    processor.init(handle)

    def process():
        out = []
        for name, part in by_group.items():
            handle.state.key = name
            out.extend(processor.handleInputRows((name,), iter([part]), None))
        out.extend(processor.flush())
        return out

    outputs = timed(f"processor ({len(by_group)} keys, in-memory state)", records, process)
    rows = pd.concat(outputs, ignore_index=True)
    print(f"    {len(rows):,} output rows")
    commits, rest = split_commits(pa.Table.from_pandas(rows, preserve_index=False))
    with tempfile.TemporaryDirectory() as tmp:
        view = MonitorView()
        sink = BatchSink(view, HistoryWriter(os.path.join(tmp, "history"), "parquet"),
                         OffsetsTopicProgress(None), 300.0, lane=lane)
        timed("sink (offsets lane, view update, history)", records, lambda: sink.handle_rows(
            zip(*(rest.column(n).to_pylist() for n in ("group", "kind", "payload", "ts_ms"))), 0,
            commits))
        print(f"    {len(view.groups)} groups in the view")


if __name__ == "__main__":
    stop_everything_at_exit()
    main()
