"""Throughput of the groupscope-kafka source (prints figures; asserts nothing).

Starts a throw-away Apache Kafka broker (tests/support/kafka_broker.py: the test broker, its jars
from scripts/fetch-jvm-deps.sh), fills a topic with records shaped like `__consumer_offsets`
offset commits (~60-byte keys, ~40-byte values), then measures records/s for:

* one range read per client (kafka-python, confluent) in this process: the per-core ceiling,
* the whole Spark source (`trigger(availableNow=True)` into a no-op sink, local[2]) per client,
  twice each (the first queries of a JVM pay for JIT compilation),
  which adds Spark planning, Python worker start-up and Arrow transfer to the JVM.

Figures are given per wall-clock second and per CPU-second (CPU of this process, or of the JVM
and its Python workers), the latter being the fairer one on a shared machine.

Usage (from the repository root):
    python -m benchmarks.source_throughput [--records N] [--partitions N] [--no-spark]
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

from benchmarks._process_cpu import tree_cpu_seconds
from benchmarks._stopping import stop_everything_at_exit
from streaming.kafka.offset_ranges import OffsetRange
from streaming.kafka.range_reader import ReadSettings, read_range
from streaming.sources.kafka_options import KafkaSourceOptions
from streaming.sources.kafka_stream import offsets_client, partition_client
from tests.support.kafka_broker import create_topic, start_kafka


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


def single_range(bootstrap: str, topic: str, client: str) -> tuple[int, float, float]:
    options = KafkaSourceOptions(bootstrap_servers=bootstrap, topic=topic, client=client)
    lookup = offsets_client(options)
    end = lookup.latest(topic, [0])[0]
    lookup.close()
    started, cpu = time.perf_counter(), time.process_time()
    rows = sum(b.num_rows for b in read_range(lambda: partition_client(options, 0), topic,
                                              OffsetRange(0, 0, end), ReadSettings()))
    return rows, time.perf_counter() - started, time.process_time() - cpu


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

    broker = start_kafka()
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
        from tests.conftest import build_test_spark

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
    stop_everything_at_exit()
    main()
