"""End-to-end benchmark of the Spark job (prints figures; asserts nothing).

Starts a throw-away Apache Kafka broker (tests/support/kafka_broker.py: the test broker, its jars
from scripts/fetch-jvm-deps.sh) and preloads `__consumer_offsets` with the offset commits of
GROUPS groups x PARTITIONS partitions, made through Kafka's OffsetCommit API as standalone
consumers make them (benchmarks/commit_load.py): round by round, one request per group and round,
so the broker itself writes one record batch of PARTITIONS records per request. Then:

* start-up: building the SparkSession (JVM launch), reported on its own;
* throughput: `streaming.job.lifecycle.Job` from an empty checkpoint until every group's final offsets are
  in the driver's view (what the exporter serves), as records/s of wall time and per CPU-second
  (the JVM, its Python workers and this driver process; the Kafka broker's JVM is reported
  apart). Run `--runs` times in the same session, each on a fresh checkpoint: the first run pays
  for JIT compilation and Python worker start-up;
* latency: a job as users run it (the exporter on and scraped every `--scrape-interval` s, the
  end-offset poller on, the job's default trigger unless `--trigger` says otherwise; the trigger
  is printed next to the figures) reading from `latest` while a separate process commits at
  `--rate` commits/s
  through the OffsetCommit API (each group commits all its partitions in one request, groups
  spread evenly over the period); the latency of a commit is the moment its offset reaches the
  view minus its commit timestamp, which the broker sets when it writes the commit.
  It runs on a broker of its own (`--latency-broker`), measured after `--settle` seconds of load
  (default 60: the steady state, after the driver JVM's JIT has compiled what the job runs). The
  median of each 10 s of the measured load is printed too, so a job still warming up shows;
  `--settle 5` measures a new session's first minute. With `--latency-broker preloaded
  --latency-start earliest` the job first reads the preloaded commits, so every group has state
  before the load starts (state size: many groups, few partitions each).

Usage (from the repository root):
    python -m benchmarks.pipeline [--records N] [--groups N] [--client kafka-python|confluent]
        [--runs N] [--latency-seconds S] [--settle S] [--rate R] [--trigger S]
        [--scrape-interval S]
        [--latency-broker fresh|preloaded] [--latency-start latest|earliest]
        [--conf key=value ...]
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import statistics
import tempfile
import threading
import time
import urllib.request

from benchmarks import commit_load
from benchmarks._commit_watch import watch_commits
from benchmarks._process_cpu import CpuAccount, tree_cpu_seconds
from benchmarks.commit_load import final_offset, group_name, topic_of
from tests.support.jvm_children import children_of
from tests.support.kafka_broker import start_kafka
from benchmarks._stopping import stop_everything_at_exit


def base_config(args, workdir: str, name: str, bootstrap: str, starting: str,
                trigger_s: float | None, max_records: int | None):
    """The job's defaults but where it reads and keeps its state; `trigger_s` None keeps the
    default trigger."""
    from streaming.config import (CheckpointConfig, Config, ExporterConfig, HistoryConfig,
                                  SourceConfig, SparkConfig, TriggerConfig)

    return Config(
        spark=SparkConfig(master="local[2]", conf=dict(args.conf)),
        source=SourceConfig(type="kafka-python", bootstrap_servers=bootstrap,
                            client=args.client, starting_offsets=starting,
                            max_records_per_trigger=max_records),
        checkpoint=CheckpointConfig(path=os.path.join(workdir, name, "checkpoint")),
        history=HistoryConfig(path=os.path.join(workdir, name, "history")),
        exporter=ExporterConfig(listen="127.0.0.1:0"),
        trigger=TriggerConfig() if trigger_s is None else TriggerConfig(interval=trigger_s))


def zygote_pid() -> int | None:
    """The job's zygote (streaming/localmode/python_zygote.py), a child of this process: Spark's Python
    processes are forked from it, so their CPU counts under it, not under the JVM."""
    found = children_of(os.getpid(), "streaming.localmode.python_zygote")
    return min(found) if found else None


class Cpu:
    """CPU seconds of the JVM with its Python workers (those forked by the zygote included), of
    this driver process, and of the Kafka broker's JVM."""

    def __init__(self, jvm_pid: int, broker_pid: int) -> None:
        self.jvm_pid, self.broker_pid = jvm_pid, broker_pid
        self.zygote_pid = zygote_pid()
        # the Python workers a task forks are gone when it ends: a cgroup counts them
        self.account = CpuAccount("spark")
        self.account.adopt([jvm_pid] + ([self.zygote_pid] if self.zygote_pid else []))

    def sample(self) -> tuple[float, float, float]:
        driver = os.times()
        if self.account.exact:
            spark = self.account.seconds(self.jvm_pid)
        else:
            spark = tree_cpu_seconds(self.jvm_pid) + (
                tree_cpu_seconds(self.zygote_pid) if self.zygote_pid else 0.0)
        return spark, driver.user + driver.system, tree_cpu_seconds(self.broker_pid)

    def jvm_alone(self) -> float:
        """CPU seconds of the JVM process itself (without its Python workers)."""
        with open(f"/proc/{self.jvm_pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def complete_groups(view, groups: int, partitions: int, rounds: int) -> int:
    done = 0
    with view.lock:
        for g in range(groups):
            committed = view.committed(group_name(g))
            if len(committed) != partitions:
                continue
            topic = topic_of(g)
            if all(committed[(topic, p)] == final_offset(rounds, p)
                   for p in range(partitions) if (topic, p) in committed):
                done += 1
    return done


def throughput_run(spark, args, workdir: str, run: int, bootstrap: str, records: int, cpu: Cpu
                   ) -> None:
    from streaming.job.lifecycle import Job

    rounds = args.records // (args.groups * args.partitions)
    config = base_config(args, workdir, f"run-{run}", bootstrap, "earliest", args.catchup_trigger,
                         args.max_records_per_trigger)
    job = Job(config, spark=spark, start_exporter=False, start_poller=False)
    before, jvm_before = cpu.sample(), cpu.jvm_alone()
    started = time.perf_counter()
    job.start()
    try:
        while complete_groups(job.view, args.groups, args.partitions, rounds) < args.groups:
            if not job.query.isActive:
                raise RuntimeError(f"query stopped: {job.query.exception()}")
            time.sleep(0.05)
        elapsed = time.perf_counter() - started
        after, jvm_after = cpu.sample(), cpu.jvm_alone()
        deadline = time.monotonic() + 60
        while not job.query.recentProgress and time.monotonic() < deadline:
            time.sleep(0.1)  # the last batch's progress is reported after its sink returns
        batches = job.sink.batches
        progress = list(job.query.recentProgress)
    finally:
        job.stop()
    jvm, driver, kafka = (a - b for a, b in zip(after, before))
    jvm_alone = jvm_after - jvm_before  # `jvm` counts its Python workers too
    print(f"run {run}: {records:,} records -> {args.groups} groups complete in the view in "
          f"{elapsed:.2f}s = {records / elapsed:,.0f} records/s; {batches} micro-batches; CPU: "
          f"JVM {jvm_alone:.1f}s + Python workers {jvm - jvm_alone:.1f}s, driver {driver:.1f}s "
          f"(= {records / (jvm + driver):,.0f} records per CPU-second), Kafka broker {kafka:.1f}s")
    for p in progress:
        d = p.get("durationMs", {})
        print(f"    batch {p['batchId']}: {p['numInputRows']:>8} rows, addBatch "
              f"{d.get('addBatch', 0)} ms, latestOffset {d.get('latestOffset', 0)} ms, "
              f"queryPlanning {d.get('queryPlanning', 0)} ms, triggerExecution "
              f"{d.get('triggerExecution', 0)} ms")


def stage_runs(spark, args, workdir: str, bootstrap: str, cpu: Cpu) -> None:
    """The pipeline cut after each stage, each into Spark's no-op sink (trigger availableNow):
    the cost of each stage is the difference to the previous line."""
    from streaming.pipeline.decode_stage import decoded_stream
    from streaming.offsets.lane import OffsetsLane
    from streaming.offsets.lookup import LookupServer
    from streaming.pipeline.state_stage import GroupProcessor, stateful_stage
    from streaming.sources import build_source

    config = base_config(args, workdir, "stages", bootstrap, "earliest", 1.0, None)
    source = build_source(spark, config)
    in_task = build_source(spark, config, decoded=True)
    stages = [("source", source), ("source+decode mapInArrow", decoded_stream(source)),
              ("source decoding in task", in_task),
              ("... +state", stateful_stage(in_task, GroupProcessor(
                  LookupServer(OffsetsLane().lookup).client())))]
    for run, (label, frame) in enumerate(stages * 2):
        before, jvm_before = cpu.sample(), cpu.jvm_alone()
        started = time.perf_counter()
        query = (frame.writeStream.format("noop").trigger(availableNow=True)
                 .option("checkpointLocation", os.path.join(workdir, f"stage-{run}")).start())
        query.awaitTermination()
        elapsed = time.perf_counter() - started
        jvm, driver, _ = (a - b for a, b in zip(cpu.sample(), before))
        jvm_alone = cpu.jvm_alone() - jvm_before
        rows = sum(p["numInputRows"] for p in query.recentProgress)
        print(f"stage {label:<26s}: {rows:,} records in {elapsed:.2f}s = {rows / elapsed:,.0f} "
              f"records/s; CPU JVM {jvm_alone:.1f}s + Python workers {jvm - jvm_alone:.1f}s")


def latency_run(spark, args, workdir: str, bootstrap: str, cpu: Cpu) -> None:
    from streaming.job.lifecycle import Job

    config = base_config(args, workdir, "latency", bootstrap, args.latency_start, args.trigger,
                         args.steady_max_records)
    trigger_s = config.trigger.interval
    # As users run it: the exporter and the end-offset poller on, scraped like Prometheus does.
    job = Job(config, spark=spark)
    latencies: list[float] = []
    committed_at: list[int] = []

    def on_new(committed_ms: float, now_ms: float) -> None:
        if measuring.is_set():
            latencies.append(now_ms - committed_ms)
            committed_at.append(committed_ms)

    measuring = threading.Event()
    done = threading.Event()
    watch_commits(job.view, on_new)
    job.start()
    scrapes: list[float] = []

    def scrape() -> None:
        url = f"http://127.0.0.1:{job.exporter.port}/metrics"
        while not done.wait(args.scrape_interval):
            t0 = time.perf_counter()
            # Gzip, as Prometheus asks: the plain text of 10^6 group-partitions is a gigabyte,
            # which this thread (in the driver's process) would spend seconds of its CPU reading.
            request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
            with urllib.request.urlopen(request, timeout=60) as response:
                response.read()
            scrapes.append(time.perf_counter() - t0)

    scraper = threading.Thread(target=scrape, daemon=True)
    scraper.start()
    try:
        time.sleep(args.warmup)  # the first batches start the Python workers
        waiting_since = time.perf_counter()
        while args.latency_start == "earliest" and not job.sink.progress.ready():
            time.sleep(0.5)  # the preloaded commits first: only the load's commits are measured
        if args.latency_start == "earliest":
            print(f"read the preloaded commits {time.perf_counter() - waiting_since:.1f}s after "
                  "the warm-up")
        rounds = args.records // (args.groups * args.partitions)
        producer = multiprocessing.Process(target=commit_load.steady, args=(
            bootstrap, args.rate, args.settle + args.latency_seconds, args.groups,
            args.partitions, rounds + 1))
        producer.start()
        time.sleep(args.settle)  # under load before measuring: the JVM's JIT warms up
        before = cpu.sample()
        measuring.set()
        measured_from_ms = time.time() * 1000
        producer.join()
        time.sleep(trigger_s + 3.0)
        after = cpu.sample()
        batches = job.sink.batches
        progress = list(job.query.recentProgress)
    finally:
        done.set()
        job.stop()
    jvm, driver, kafka = (a - b for a, b in zip(after, before))
    if not latencies:
        print("latency: no commit reached the view")
        return
    # Whether the job is still warming up shows in the median of each 10 s of the load.
    windows: dict[int, list[float]] = {}
    for at, latency in zip(committed_at, latencies):
        windows.setdefault(max(0, int((at - measured_from_ms) // 10_000)), []).append(latency)
    latencies.sort()

    def pct(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] / 1000

    trigger = f"trigger {trigger_s:g}s" + (" (the default)" if args.trigger is None else "")
    print(f"latency at {args.rate:,.0f} commits/s, {trigger}, exporter scraped every "
          f"{args.scrape_interval:g}s (median scrape {statistics.median(scrapes or [0]):.2f}s), "
          f"end-offset poller on: p50 {pct(0.5):.2f}s, "
          f"p90 {pct(0.9):.2f}s, p99 {pct(0.99):.2f}s, max {latencies[-1] / 1000:.2f}s over "
          f"{len(latencies):,} commits; {batches} micro-batches; CPU over "
          f"{args.latency_seconds:.0f}s: JVM+workers {jvm:.1f}s, driver {driver:.1f}s, "
          f"Kafka broker {kafka:.1f}s")
    print("    p50 of each 10 s of the load: " + ", ".join(
        f"{statistics.median(windows[w]) / 1000:.2f}s" for w in sorted(windows)))
    print_batch_medians(progress)


def print_batch_medians(progress: list[dict]) -> None:
    """Median duration of each phase of the query's recent micro-batches."""
    if not progress:
        return
    phases: dict[str, list[int]] = {}
    for p in progress:
        for phase, ms in p.get("durationMs", {}).items():
            phases.setdefault(phase, []).append(ms)
    rows = statistics.median(p["numInputRows"] for p in progress)
    print(f"    median of the last {len(progress)} micro-batches: {rows:,.0f} rows; " + ", ".join(
        f"{phase} {statistics.median(ms):,.0f} ms" for phase, ms in sorted(phases.items())))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--groups", type=int, default=2_000)
    parser.add_argument("--partitions", type=int, default=25, help="partitions per group")
    parser.add_argument("--client", default="kafka-python", choices=("kafka-python", "confluent"),
                        help="the source's Kafka client (the job's default: kafka-python)")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--catchup-trigger", type=float, default=0.5,
                        help="trigger interval of the throughput runs, seconds")
    parser.add_argument("--max-records-per-trigger", type=int, default=None)
    parser.add_argument("--latency-seconds", type=float, default=60.0)
    parser.add_argument("--warmup", type=float, default=15.0,
                        help="seconds the latency job runs idle before the load starts")
    parser.add_argument("--settle", type=float, default=60.0,
                        help="seconds of load before latencies are measured")
    parser.add_argument("--rate", type=float, default=5_000.0)
    parser.add_argument("--trigger", type=float, default=None,
                        help="trigger interval of the latency run, seconds (default: the job's)")
    parser.add_argument("--scrape-interval", type=float, default=15.0,
                        help="seconds between scrapes of the latency run's exporter")
    parser.add_argument("--steady-max-records", type=int, default=None)
    parser.add_argument("--latency-start", choices=("latest", "earliest"), default="latest",
                        help="where the latency run's job starts reading")
    parser.add_argument("--latency-broker", choices=("fresh", "preloaded"), default="fresh",
                        help="run the latency phase on a new broker (default) or on the one "
                             "preloaded for the throughput runs")
    parser.add_argument("--stages", action="store_true",
                        help="also time the pipeline cut after each stage")
    parser.add_argument("--conf", action="append", default=[], type=lambda s: tuple(s.split("=", 1)),
                        help="extra Spark setting key=value (repeatable)")
    args = parser.parse_args()

    broker = start_kafka()
    workdir = tempfile.mkdtemp(prefix="groupscope-pipeline-")
    try:
        commit_load.create_topics(broker.bootstrap, args.groups, args.partitions)
        rounds = args.records // (args.groups * args.partitions)
        t0 = time.perf_counter()
        records = commit_load.preload(broker.bootstrap, args.groups, args.partitions, rounds)
        print(f"preloaded {records:,} commits ({args.groups} groups x {args.partitions} partitions "
              f"x {rounds} rounds) in {time.perf_counter() - t0:.1f}s; client {args.client}")
        from streaming.job.session import build_spark

        t0 = time.perf_counter()
        spark = build_spark(base_config(args, workdir, "session", broker.bootstrap, "earliest",
                                        1.0, None))
        print(f"session start-up (JVM launch, SparkSession): {time.perf_counter() - t0:.2f}s")
        jvm = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
        cpu = Cpu(jvm, broker.process.pid)
        try:
            if args.stages:
                stage_runs(spark, args, workdir, broker.bootstrap, cpu)
            for run in range(1, args.runs + 1):
                throughput_run(spark, args, workdir, run, broker.bootstrap, records, cpu)
            if args.latency_seconds > 0 and args.latency_broker == "fresh":
                # A broker holding only the load's commits: its CPU figure is the load's alone.
                latency_broker = start_kafka()
                try:
                    commit_load.create_topics(latency_broker.bootstrap, args.groups,
                                              args.partitions)
                    # its group coordinators loaded before the load starts committing
                    commit_load.wait_for_coordinators(latency_broker.bootstrap,
                                                      range(args.groups))
                    cpu.broker_pid = latency_broker.process.pid
                    latency_run(spark, args, workdir, latency_broker.bootstrap, cpu)
                finally:
                    latency_broker.stop()
            elif args.latency_seconds > 0:
                latency_run(spark, args, workdir, broker.bootstrap, cpu)
        finally:
            spark.stop()
    finally:
        broker.stop()
        shutil.rmtree(workdir, ignore_errors=True)  # checkpoints and history of every run


if __name__ == "__main__":
    stop_everything_at_exit()
    main()
