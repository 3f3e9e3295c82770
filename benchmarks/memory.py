"""Where groupscope's memory sits: one catch-up on a real broker, then RSS and PSS per process.

`groupscope run` with its defaults reads `--groups` x `--partitions` groups' commits
(`--rounds` each, made through the OffsetCommit API by benchmarks/commit_load.py) until every
group's final offsets are served, waits `--settle` seconds, and prints each of its processes
(the driver, the JVM, the zygote and what Spark forked from it) with its RSS and PSS, then the
totals. `--spark-conf KEY=VALUE` adds Spark settings (an A/B against the defaults).

    python -m benchmarks.memory [--groups 2000] [--partitions 25] [--rounds 4] [--spark-conf K=V ...]
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from benchmarks._stopping import stop_everything_at_exit
from benchmarks.burrow import Groupscope, catch_up, cpu_probe, process_rss_pss, tree_pids
from benchmarks.commit_load import create_topics, preload
from tests.support.kafka_broker import start_kafka


def process_memory(pid: int) -> tuple[int, int, str] | None:
    """(RSS MB, PSS MB, command line) of a live process."""
    memory = process_rss_pss(pid)
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            command = fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return None
    return None if memory is None else (memory[0] // 1024, memory[1] // 1024, command)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--groups", type=int, default=2000)
    parser.add_argument("--partitions", type=int, default=25)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--settle", type=float, default=20.0)
    parser.add_argument("--kafka-version", default="3.9.2")
    parser.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    Groupscope.spark_conf = dict(item.split("=", 1) for item in args.spark_conf)
    print(f"CPU probe: {cpu_probe()} s")
    broker = start_kafka(args.kafka_version)
    workdir = Path(tempfile.mkdtemp(prefix="groupscope-memory-"))
    gs = None
    try:
        create_topics(broker.bootstrap, args.groups, args.partitions)
        commits = preload(broker.bootstrap, args.groups, args.partitions, args.rounds)
        gs = Groupscope(workdir, broker.bootstrap)
        result = catch_up(gs, args.groups, args.partitions, lambda g: args.rounds, args.settle, 900)
        print(f"{commits:,} commits of {args.groups:,} groups x {args.partitions} partitions served in "
              f"{result.seconds:.1f}s, CPU {result.cpu:.1f}s; {args.settle:.0f}s later:")
        print(f"{'pid':>8} {'RSS MB':>7} {'PSS MB':>7}  command")
        for pid in tree_pids(gs.process.pid):
            seen = process_memory(pid)
            if seen:
                print(f"{pid:>8} {seen[0]:>7} {seen[1]:>7}  {seen[2][:110]}")
        print(f"total: {result.memory}")
    finally:
        if gs is not None:
            gs.stop()
        broker.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    stop_everything_at_exit()
    main()
