"""A million consumer groups served by groupscope split over several jobs, each on its own slice
of `__consumer_offsets` (`source.partitions`, docs/operations.md, Shards), on one real Kafka
broker and commits made through the OffsetCommit API (benchmarks/commit_load.py). Prints
figures; asserts nothing.

`--groups` x `--partitions` (1,000,000 x 2) are preloaded, one commit each, onto a broker that
keeps the whole backlog uncompacted (benchmarks/burrow.py's BENCH_BROKER, BENCH_HEAP). Then
`--jobs` jobs (2) start together, job j on the topic's partitions p with p % jobs == j, each
with its own checkpoint and exporter port and otherwise the job's defaults (`groupscope run`).
Kafka keeps every record of a group in one partition (`coordinator.partitioning.partition_for`),
so each group is served by exactly one job, and each job is judged on its own groups only.

Per job: launch to the first group served and to every sampled group served (its share of
benchmarks/burrow.py's `sample_groups`), launch to its own reading of the log done
(`groupscope_ready`), CPU-seconds of that catch-up, PSS of its process tree once settled. Then
`--rate` commits/s for `--steady-seconds`: CPU-seconds per minute per job, and commit-to-served
latency over a fifth of the sample, each watched group read from the job that serves it, every
second, committed offsets only (`name[]`); those reads are part of the jobs' CPU. A table at the
end, with the CPU probe at the start and at the end (docs/performance.md, How to read the
figures).

Usage (from the repository root; never at full size on a machine others share, a quick run:
--groups 20000 --steady-seconds 15 --rate 2000):
    python -m benchmarks.million_groups [--groups N] [--partitions N] [--jobs J] [--rate R]
        [--steady-seconds S] [--kafka-version V] [--timeout S]
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.burrow import (BENCH_BROKER, BENCH_HEAP, CatchUp, Groupscope, catch_up,
                               cpu_probe, sample_groups, steady_phase)
from benchmarks.cluster import percentile
from benchmarks.commit_load import create_topics, group_name, preload
from benchmarks._stopping import stop_everything_at_exit
from coordinator import partition_for
from tests.support.kafka_broker import DEFAULT_VERSION, OFFSETS_TOPIC_PARTITIONS, start_kafka

# Seconds after a job's log is read before its memory is taken, as benchmarks.burrow settles.
SETTLE_S = 20.0
# Seconds between rounds of reads of the jobs under the load: every second, as benchmarks.burrow
# times its latency, so that the reads, not their pace, bound what is measured.
SCRAPE_INTERVAL_S = 1.0
# Reads go on this long after the load, so that its last commits can reach the jobs' views.
TAIL_S = 30.0
# A group commits all its partitions in one request, so at 2 partitions a group the preload is
# bound by requests a second: 4 connections took 5,800-7,800 requests/s here (Kafka 4.4),
# 16 took 10,000, which brings 10^6 groups' preload from about 150 s to about 100 s.
PRELOAD_CONNECTIONS = 16


def shard_partitions(job: int, jobs: int, topic_partitions: int = OFFSETS_TOPIC_PARTITIONS
                     ) -> list[int]:
    """The partitions of `__consumer_offsets` that job `job` of `jobs` reads."""
    return [p for p in range(topic_partitions) if p % jobs == job]


def job_of(group: int, jobs: int) -> int:
    """The job that serves group number `group`: the one whose partitions hold its records."""
    return partition_for(group_name(group), OFFSETS_TOPIC_PARTITIONS) % jobs


class ShardJob(Groupscope):
    """One of the jobs: a groupscope reading its slice of the topic, named apart from the others
    so that their CPU figures (keyed by name) stay apart."""

    def __init__(self, workdir: Path, bootstrap: str, job: int, jobs: int) -> None:
        super().__init__(workdir, bootstrap)
        self.name = f"groupscope-{job}"
        self.source_partitions = shard_partitions(job, jobs)


def catch_up_together(jobs: list[ShardJob], samples: list[list[int]], groups: int,
                      partitions: int, rounds: int, timeout: float) -> list[CatchUp]:
    """Launch every job at once (a sharded estate starts its shards together, and they share the
    cores) and wait for each to serve its own sampled groups' final offsets and read its log."""
    results: list[CatchUp | None] = [None] * len(jobs)
    errors: list[BaseException] = []

    def wait(n: int) -> None:
        try:
            results[n] = catch_up(jobs[n], groups, partitions, lambda g: rounds, SETTLE_S,
                                  timeout, only=samples[n])
        except BaseException as exc:  # reported by the main thread, which owns the run
            errors.append(exc)

    # daemon threads: on SIGTERM the main thread unwinds and stops the jobs, and a thread still
    # waiting on a stopped job must not hold the exit
    threads = [threading.Thread(target=wait, args=(n,), daemon=True) for n in range(len(jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        while thread.is_alive():  # join with a timeout, so that a signal is taken at once
            thread.join(0.5)
    if errors:
        raise errors[0]
    return results


def _cells(values: list[float | None], form: str, total: str) -> str:
    """A row's cells: each job's figure (formatted by `form`), then their `total` ("max" or
    "sum")."""
    def cell(v: float | None) -> str:
        return "-" if v is None else form.format(v)
    known = [v for v in values if v is not None]
    overall = (max(known) if total == "max" else sum(known)) if known else None
    return " ".join(f"{cell(v):>16s}" for v in values) + f" {cell(overall):>16s}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--groups", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=2, help="partitions per group")
    parser.add_argument("--jobs", type=int, default=2,
                        help=f"jobs, each on a slice of the {OFFSETS_TOPIC_PARTITIONS} partitions")
    parser.add_argument("--rate", type=float, default=10_000.0, help="steady commits/s")
    parser.add_argument("--steady-seconds", type=float, default=60.0)
    parser.add_argument("--kafka-version", default=DEFAULT_VERSION)
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="seconds a job may take to serve its groups and read its log")
    args = parser.parse_args()
    probe_start = cpu_probe()
    print(f"CPU probe at start: {probe_start} s")
    shape = f"{args.groups:,} groups x {args.partitions}"
    workdir = Path(tempfile.mkdtemp(prefix="groupscope-million-"))
    broker = start_kafka(args.kafka_version, extra_props=BENCH_BROKER, heap=BENCH_HEAP)
    jobs: list[ShardJob] = []
    try:
        # groups share commit_load's 100 topics (topic_of), so the topics stay few at any count
        create_topics(broker.bootstrap, args.groups, args.partitions)
        started = time.perf_counter()
        commits = preload(broker.bootstrap, args.groups, args.partitions, 1,
                          connections=PRELOAD_CONNECTIONS)
        preload_s = time.perf_counter() - started
        print(f"preloaded {commits:,} commits ({shape} partitions) in {preload_s:.1f}s "
              f"({commits / preload_s:,.0f} commits/s)")

        sample = sample_groups(args.groups)
        samples = [[g for g in sample if job_of(g, args.jobs) == j] for j in range(args.jobs)]
        jobs = [ShardJob(workdir / f"job-{j}", broker.bootstrap, j, args.jobs)
                for j in range(args.jobs)]
        print(f"{args.jobs} jobs launched together; sampled groups per job: "
              + ", ".join(f"{len(s):,}" for s in samples))
        results = catch_up_together(jobs, samples, args.groups, args.partitions, 1, args.timeout)
        for job, result in zip(jobs, results):
            print(f"  {job.name} ({len(job.source_partitions)} of {OFFSETS_TOPIC_PARTITIONS} "
                  f"partitions): sampled groups served after {result.seconds:.1f}s (first after "
                  f"{result.first_visible:.1f}s), log read after {result.log_read:.1f}s, "
                  f"CPU {result.cpu:.1f}s; settled: {result.memory}")

        watched = sample[::5]  # as benchmarks.burrow's many-groups phase watches its sample
        load = steady_phase(jobs, jobs, broker.bootstrap, args, 2, SCRAPE_INTERVAL_S,
                            watched=watched, tail=TAIL_S, may_stall=True, by_group=True)
        latencies = load.latencies
        if load.stalled:
            print("steady: the load stalled (the broker did not take it in time); no latency")
        else:
            print(f"steady: {load.rate:,.0f} commits/s achieved (asked {args.rate:,.0f}); "
                  f"{len(latencies):,} of {load.watched_sent:,} commits of {len(watched):,} "
                  f"watched groups served within {TAIL_S:.0f}s of the load's end")
    finally:
        for job in jobs:
            job.stop()
        broker.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    probe_end = cpu_probe()

    names = [job.name for job in jobs]
    print(f"\n{shape} over {args.jobs} jobs (Kafka {args.kafka_version})")
    print(f"{'':<44s} " + " ".join(f"{n:>16s}" for n in names) + f" {'all':>16s}")
    seconds, whole = "{:,.1f}s", "{:,.0f}"
    rows = [("launch to first group served", [r.first_visible for r in results], seconds, "max"),
            ("launch to every sampled group served", [r.seconds for r in results], seconds, "max"),
            ("launch to log read (groupscope_ready)", [r.log_read for r in results], seconds,
             "max"),
            ("CPU-seconds of catch-up", [r.cpu for r in results], seconds, "sum"),
            ("settled PSS, MB", [r.memory.pss_mb for r in results], whole, "sum"),
            ("settled processes", [r.memory.processes for r in results], whole, "sum"),
            (f"steady {load.rate:,.0f}/s: CPU-s per minute",
             [load.cpu_per_minute.get(n) for n in names], seconds, "sum")]
    for label, values, form, total in rows:
        print(f"{label:<44s} {_cells(values, form, total)}")
    # the figures of every job at once sit in the last column, under "all"
    overall = [(f"steady: commit-to-served latency p{round(q * 100)}",
                f"{percentile(latencies, q):.2f}s" if latencies else "-") for q in (.5, .99)]
    overall += [("steady: watched commits served / made",
                 f"{len(latencies):,} / {load.watched_sent:,}"),
                ("preload", f"{preload_s:.1f}s ({commits / preload_s:,.0f}/s)"),
                ("CPU probe at start / end", f"{probe_start} / {probe_end} s")]
    pad = " ".join(f"{'':>16s}" for _ in names)
    for label, value in overall:
        print(f"{label:<44s} {pad} {value:>16s}")


if __name__ == "__main__":
    stop_everything_at_exit()
    main()
