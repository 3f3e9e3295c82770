"""Throughput of the groupscope-kafka source (prints figures; asserts nothing).

Starts a throw-away tansu broker (the test broker, from the `test` extra), fills a topic with
records shaped like `__consumer_offsets` offset commits (~60-byte keys, ~40-byte values), then
measures records/s for:

* one range read per client (kafka-python, confluent) in this process: the per-core ceiling,
* the whole Spark source (`trigger(availableNow=True)` into a no-op sink, local[2]) per client,
  twice each (the first queries of a JVM pay for JIT compilation),
  which adds Spark planning, Python worker start-up and Arrow transfer to the JVM.

Figures are given per wall-clock second and per CPU-second (CPU of this process, or of the JVM
and its Python workers), the latter being the fairer one on a shared machine.

Usage: python benchmarks/source_throughput.py [--records N] [--partitions N] [--no-spark]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from tests.support.tansu import create_topic, start_broker  # noqa: E402
from streaming.sources.kafka_options import KafkaSourceOptions  # noqa: E402
from streaming.sources.kafka_stream import offsets_client, partition_client  # noqa: E402
from streaming.kafka.offset_ranges import OffsetRange  # noqa: E402
from streaming.kafka.range_reader import ReadSettings, read_range  # noqa: E402


def fill(bootstrap: str, topic: str, records: int, partitions: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20,
                         "batch.num.messages": 10000, "queue.buffering.max.messages": 1000000})
    value = bytes(range(40))
    for i in range(records):
        key = b"\x00\x01\x00\x0fgroup-%05d\x00\x10orders-topic-%04d\x00\x00\x00%c" % (
            i % 500, i % 200, i % partitions)
        producer.produce(topic, key=key, value=value, partition=i % partitions,
                         timestamp=1_700_000_000_000 + i)
        if i % 50000 == 0:
            producer.poll(0)
    producer.flush(120)
    # A last single-record batch per partition keeps tansu's end offsets right.
    for p in range(partitions):
        producer.produce(topic, key=b"tail", value=value, partition=p)
        producer.flush(30)


def single_range(bootstrap: str, topic: str, client: str) -> tuple[int, float, float]:
    options = KafkaSourceOptions(bootstrap_servers=bootstrap, topic=topic, client=client)
    lookup = offsets_client(options)
    end = lookup.latest(topic, [0])[0]
    lookup.close()
    started, cpu = time.perf_counter(), time.process_time()
    rows = sum(b.num_rows for b in read_range(lambda: partition_client(options, 0), topic,
                                              OffsetRange(0, 0, end), ReadSettings()))
    return rows, time.perf_counter() - started, time.process_time() - cpu


def tree_cpu_seconds(root: int) -> float:
    """CPU seconds used so far by `root` and its descendants (the JVM and its Python workers),
    so that figures can be read per CPU-second when other work shares the machine."""
    ticks = os.sysconf("SC_CLK_TCK")
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry)] = (int(fields[1]), sum(int(f) for f in fields[11:15]))
    wanted, total, frontier = {root}, 0, [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, _) in stats.items():
            if ppid == parent and pid not in wanted:
                wanted.add(pid)
                frontier.append(pid)
    for pid in wanted:
        total += stats.get(pid, (0, 0))[1]
    return total / ticks


def spark_source(spark, bootstrap: str, topic: str, client: str, checkpoint: str
                 ) -> tuple[int, float, float]:
    from streaming.sources import register_sources

    register_sources(spark)
    frame = (spark.readStream.format("groupscope-kafka")
             .option("kafka.bootstrap.servers", bootstrap).option("topic", topic)
             .option("client", client).load())
    jvm = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    cpu_before = tree_cpu_seconds(jvm)
    started = time.perf_counter()
    query = (frame.writeStream.format("noop").trigger(availableNow=True)
             .option("checkpointLocation", checkpoint).start())
    query.awaitTermination()
    elapsed = time.perf_counter() - started
    rows = sum(p["numInputRows"] for p in query.recentProgress)
    return rows, elapsed, tree_cpu_seconds(jvm) - cpu_before


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=400_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--no-spark", action="store_true")
    args = parser.parse_args()

    broker = start_broker()
    try:
        topic = "bench"
        create_topic(broker.bootstrap, topic, args.partitions)
        t0 = time.perf_counter()
        fill(broker.bootstrap, topic, args.records, args.partitions)
        print(f"filled {args.records} records in {time.perf_counter() - t0:.1f}s")
        for client in ("kafka-python", "confluent"):
            rows, seconds, cpu = single_range(broker.bootstrap, topic, client)
            print(f"one range, {client:12s}: {rows} records in {seconds:.2f}s = "
                  f"{rows / seconds:,.0f} records/s (one process); "
                  f"{rows / cpu:,.0f} records per CPU-second")
        if args.no_spark:
            return
        from conftest import build_test_spark
        import tempfile

        spark = build_test_spark()
        workdir = tempfile.mkdtemp(prefix="groupscope-bench-")
        try:
            # Twice each: the first queries of a JVM also pay for JIT compilation.
            for run, client in enumerate(("kafka-python", "confluent") * 2):
                rows, seconds, cpu = spark_source(spark, broker.bootstrap, topic, client,
                                                  os.path.join(workdir, f"ck-{run}"))
                print(f"Spark source, {client:12s} (run {run // 2 + 1}): {rows} records in "
                      f"{seconds:.2f}s = "
                      f"{rows / seconds:,.0f} records/s (local[2], incl. planning); "
                      f"{cpu:.1f} CPU-s = {rows / cpu:,.0f} records per CPU-second")
        finally:
            spark.stop()
            shutil.rmtree(workdir, ignore_errors=True)
    finally:
        broker.stop()


if __name__ == "__main__":
    main()
