"""Fault isolation in one job watching several clusters: do dead brokers slow the other
clusters' commit-to-served latency?

`--clusters` Kafka 4.4 brokers (2: "a" and "b"), each with `--groups` groups of `--partitions`
partitions committing `--rate` offsets a second through the OffsetCommit API
(benchmarks.commit_load), and one groupscope job with all of them in `clusters` (one streaming
query each, the default trigger, the exporter scraped with gzip every 15 s as Prometheus does).
Three phases:
  1. all up;
  2. the last `--kill` brokers (1: b's) killed (SIGKILL) while their load runs: the job's reads
     of them die mid-read;
  3. those brokers restarted and their load resumed.
For each phase and cluster it prints the latency from each commit (the broker's commit
timestamp) to the moment it reached the cluster's view, as benchmarks.pipeline measures it:
p50, p99 and the count (a killed cluster's commits written just before the kill are served after
the restart: phase 3 "(before)"). Then how long the job took to report the killed clusters down
(`/healthz`) and to serve their commits again after the restart.

Usage (from the repository root):
    python -m benchmarks.fleet [--groups 200] [--partitions 10] [--rate 1000]
        [--up 30] [--down 90] [--back 60] [--clusters 2] [--kill 1]
"""
from __future__ import annotations

import argparse
import logging
import multiprocessing
import os
import statistics
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml

from benchmarks import commit_load
from benchmarks._commit_watch import watch_commits
from benchmarks._stopping import stop_everything_at_exit
from benchmarks.burrow import cpu_probe
from benchmarks.cluster import percentile
from benchmarks.commit_load import create_topics, preload

RESTARTED = "3 restarted"
SCRAPE_INTERVAL_S = 15.0


def _load(bootstrap: str, rate: float, seconds: float, groups: int, partitions: int,
          first_round: int) -> None:
    """One cluster's commits (a process of its own), once every group's coordinator answers (a
    restarted broker loads its groups first); the broker dying ends it with one line."""
    try:
        commit_load.wait_for_coordinators(bootstrap, range(groups))
        commit_load.steady(bootstrap, rate, seconds, groups, partitions, first_round)
    except Exception as error:  # noqa: BLE001 - the broker was killed on purpose
        print(f"  load on {bootstrap} ended: {type(error).__name__}", flush=True)


class Latencies:
    """Each cluster's commit-to-view latencies, tagged with the phase they arrived in."""

    def __init__(self, fleet) -> None:
        self.phase = ""
        # When each killed cluster was killed: its commits from before are told apart.
        self.killed_ms: dict[str, float] = {}
        self.by_phase: dict[tuple[str, str], list[float]] = {}
        self.first_at: dict[tuple[str, str], float] = {}
        for job in fleet.jobs:
            self._wrap(job.config.cluster.name, job.view)

    def _wrap(self, cluster: str, view) -> None:
        def on_new(committed_ms: float, now_ms: float) -> None:
            if not self.phase:
                return
            phase = self.phase + (" (before)" if self.phase == RESTARTED and committed_ms
                                  < self.killed_ms.get(cluster, float("-inf")) else "")
            self.by_phase.setdefault((phase, cluster), []).append(now_ms - committed_ms)
            self.first_at.setdefault((phase, cluster), time.time())

        watch_commits(view, on_new)


def _healthz(port: int) -> dict[str, bool]:
    """Each cluster's line of /healthz: whether it says ok."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as answer:
            text = answer.read().decode()
    except urllib.error.HTTPError as answer:  # 503 when a cluster is not ready: still an answer
        text = answer.read().decode()
    return {line.split(":", 1)[0]: line.endswith(": ok") for line in text.splitlines() if line}


def _scrape(port: int, done: threading.Event, took: list[float]) -> None:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics",
                                     headers={"Accept-Encoding": "gzip"})
    while not done.wait(SCRAPE_INTERVAL_S):
        started = time.perf_counter()
        with urllib.request.urlopen(request, timeout=60) as answer:
            answer.read()
        took.append(time.perf_counter() - started)


def _wait_for(what: str, check, timeout_s: float) -> float:
    """Seconds until `check()` holds (polled every 0.25 s); inf past `timeout_s`."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if check():
            return time.monotonic() - started
        time.sleep(0.25)
    print(f"  {what}: not within {timeout_s:.0f} s")
    return float("inf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=200, help="groups per cluster")
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--rate", type=float, default=1000.0, help="commits/s per cluster")
    parser.add_argument("--up", type=float, default=30.0, help="seconds of phase 1")
    parser.add_argument("--down", type=float, default=90.0, help="seconds of phase 2")
    parser.add_argument("--back", type=float, default=60.0, help="seconds of phase 3")
    parser.add_argument("--clusters", type=int, default=2, help="clusters, one broker each")
    parser.add_argument("--kill", type=int, default=1, help="brokers killed (the last ones)")
    args = parser.parse_args()
    if not 0 < args.kill < args.clusters <= 26:
        parser.error("--kill must be at least 1 and below --clusters (at most 26)")
    names = [chr(ord("a") + i) for i in range(args.clusters)]
    killed, kept = names[len(names) - args.kill:], names[:len(names) - args.kill]
    # A dead broker is the point here: kafka-python's reconnect errors would bury the figures.
    logging.getLogger("kafka").setLevel(logging.CRITICAL)

    from streaming.config import load_fleet
    from streaming.job.fleet import Fleet
    from tests.support.kafka_broker import start_kafka

    print(f"CPU probe: {cpu_probe()}; machine: {os.cpu_count()} cores")
    brokers = {name: start_kafka() for name in names}
    workdir = Path(tempfile.mkdtemp(prefix="groupscope-fleet-"))
    fleet = None
    loads: dict[str, multiprocessing.Process] = {}
    done = threading.Event()
    try:
        for broker in brokers.values():
            create_topics(broker.bootstrap, args.groups, args.partitions)
            preload(broker.bootstrap, args.groups, args.partitions, 1)
        config = workdir / "groupscope.yaml"
        config.write_text(yaml.safe_dump({
            "checkpoint": {"path": str(workdir / "checkpoint")},
            "history": {"path": str(workdir / "history")},
            "exporter": {"listen": "127.0.0.1:0"},
            "clusters": [{"name": name, "source": {"bootstrap_servers": b.bootstrap}}
                         for name, b in brokers.items()]}))
        started = time.monotonic()
        fleet = Fleet(load_fleet(str(config), env={})).start()
        waiter = threading.Thread(target=fleet.wait, args=(done,), daemon=True)
        waiter.start()
        port = fleet.exporter.port
        everyone_ok = {name: True for name in names}
        ready = _wait_for("every cluster ready", lambda: _healthz(port) == everyone_ok, 300)
        print(f"launch to every cluster ready: {time.monotonic() - started:.1f} s "
              f"(ready after {ready:.1f} s of waiting)")
        latencies = Latencies(fleet)
        scrapes: list[float] = []
        threading.Thread(target=_scrape, args=(port, done, scrapes), daemon=True).start()
        total = args.up + args.down + args.back + 60
        for name, broker in brokers.items():
            loads[name] = multiprocessing.Process(target=_load, args=(
                broker.bootstrap, args.rate, total, args.groups, args.partitions, 2))
            loads[name].start()
        time.sleep(10)  # under load before measuring
        latencies.phase = "1 all up"
        time.sleep(args.up)

        latencies.phase = "2 killed"
        killed_at = time.monotonic()
        for name in killed:
            brokers[name].kill()
            latencies.killed_ms[name] = time.time() * 1000
        down_s = _wait_for("the killed reported down", lambda: _healthz(port) == {
            name: name in kept for name in names}, args.down)
        time.sleep(max(0.0, args.down - (time.monotonic() - killed_at)))

        latencies.phase = RESTARTED
        restarted_at = time.monotonic()
        for name in killed:
            brokers[name].restart()
        restart_s = time.monotonic() - restarted_at
        for name in killed:
            loads[name].join(timeout=5)
            loads[name] = multiprocessing.Process(target=_load, args=(
                brokers[name].bootstrap, args.rate, args.back + 30, args.groups, args.partitions,
                10_000))
            loads[name].start()
        back_s = _wait_for("the restarted clusters' new commits served", lambda: all(
            (RESTARTED, name) in latencies.first_at for name in killed), args.back)
        ok_s = _wait_for("every cluster reported ok", lambda: _healthz(port) == everyone_ok,
                         args.back)
        time.sleep(max(0.0, args.back - (time.monotonic() - restarted_at)))
        latencies.phase = ""
    finally:
        done.set()
        for load in loads.values():
            load.terminate()
        if fleet is not None:
            fleet.stop()
        for broker in brokers.values():
            broker.stop()

    print(f"{args.groups} groups x {args.partitions} partitions per cluster, {args.rate:,.0f} "
          f"commits/s per cluster, default trigger, gzip scrape every {SCRAPE_INTERVAL_S:g} s "
          f"(median {statistics.median(scrapes or [0]):.2f} s)")
    print("phase                       cluster   commits   p50 s   p99 s")
    for (phase, cluster), values in sorted(latencies.by_phase.items()):
        seconds = [v / 1000 for v in values]
        print(f"{phase:<28}{cluster:<10}{len(values):>7}{percentile(seconds, 0.5):>8.2f}"
              f"{percentile(seconds, 0.99):>8.2f}")
    if any(phase.endswith("(before)") for phase, _ in latencies.by_phase):
        print("(before): the killed clusters' commits written before the kill, read once back")
    print(f"{', '.join(killed)} killed, {', '.join(kept)} kept: reported down after {down_s:.1f} s; "
          f"restarted (brokers ready in {restart_s:.1f} s): their new commits served "
          f"{back_s:.1f} s after that (each load resumed once its group coordinators answered), "
          f"reported ok {ok_s:.1f} s later")


if __name__ == "__main__":
    stop_everything_at_exit()
    main()
