"""Exporter benchmark: 2,000 groups holding 100,000 committed partitions (`--topics` scales it).

1,000 topics of 50 partitions, each consumed by two groups of 5 members. The view is fed 30
end-offset polls (so every time-lag table is full and evicting) and 10 commits per partition
(so every status window is full); then /metrics is scraped over HTTP.

Prints: the view's feed costs, the cost of a refresh (evaluate + render everything; done by the
poller thread after each poll), the HTTP scrape time and size (served from the rendered cache),
the number of series, and the process's resident memory. Wall and CPU time are both printed:
on a shared machine CPU time is the steadier figure. Target: a full scrape in under 1 s.

It runs once per `metrics.granularity` (each in its own process, so memory figures do not mix),
then prints the series count and scrape size of each side by side.

Usage (from the repository root):
    python -m benchmarks.exporter [--granularity partition|topic] [--topics N]
"""
from __future__ import annotations

import argparse
import gc
import os
import re
import subprocess
import sys
import time
import urllib.request

from benchmarks._stopping import stop_everything_at_exit
from streaming.exporter.catalog import GRANULARITIES

from streaming.exporter.server import ExporterSettings, start_exporter
from streaming.exporter.metrics_cache import MetricsCache
from streaming.exporter.view import MonitorView, ViewSettings

TOPICS = 1000
PARTITIONS = 50
GROUPS_PER_TOPIC = 2
MEMBERS = 5
POLLS = 30
COMMITS = 10
START_S = 1_700_000_000.0


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def snapshot(group: str, topic: str, commit_round: int) -> dict:
    members = []
    for m in range(MEMBERS):
        assigned = [[topic, p] for p in range(PARTITIONS) if p % MEMBERS == m]
        members.append({"member_id": f"{group}-m{m}", "group_instance_id": None,
                        "client_id": f"client-{m}", "client_host": f"/10.0.0.{m}", "rack": None,
                        "session_timeout_ms": 45000, "rebalance_timeout_ms": 300000,
                        "subscribed_topics": [topic], "subscribed_topic_regex": None,
                        "assigned": assigned, "member_epoch": None, "member_state": None,
                        "target": None, "pending_revocation": None, "extra": {}})
    commit_ms = int((START_S + commit_round * 10) * 1000)
    offsets = [{"topic": topic, "partition": p, "offset": 1000 * commit_round + p,
                "leader_epoch": 0, "metadata": "", "commit_timestamp_ms": commit_ms,
                "topic_id": None} for p in range(PARTITIONS)]
    return {"group": group, "group_type": "classic", "protocol_type": "consumer",
            "protocol": "range", "state": "Stable", "generation": 7, "assignment_epoch": None,
            "leader": f"{group}-m0", "current_state_timestamp_ms": commit_ms,
            "coordinator_partition": hash(group) % 50, "members": members,
            "subscribed_topics": [topic], "offsets": offsets, "last_rebalance": None,
            "updated_ms": commit_ms}


def run(granularity: str, topics_count: int) -> None:
    print(f"== metrics.granularity: {granularity}")
    gc.collect()
    rss_before = rss_mb()
    clock = [START_S]
    view = MonitorView(ViewSettings(cluster="bench", granularity=granularity),
                       clock=lambda: clock[0])
    topics = [f"topic-{t:04d}" for t in range(topics_count)]
    groups = [(f"group-{t:04d}-{g}", topics[t]) for t in range(topics_count)
              for g in range(GROUPS_PER_TOPIC)]
    view.update_topic_metadata({}, {t: PARTITIONS for t in topics})

    feed_snapshots = 0.0
    feed_polls = 0.0
    poll = 0
    for commit_round in range(COMMITS):
        for _ in range(POLLS // COMMITS):
            ends = {(t, p): 1000 * (poll // 3 + 1) + p + 500 for t in topics
                    for p in range(PARTITIONS)}
            starts = {key: 0 for key in ends}
            started = time.process_time()
            view.update_end_offsets(ends, starts, START_S + poll * 3.3 - 100, 0.2)
            feed_polls += time.process_time() - started
            poll += 1
        snapshots = [snapshot(name, topic, commit_round) for name, topic in groups]
        started = time.process_time()
        view.update_groups(snapshots)
        feed_snapshots += time.process_time() - started
        del snapshots
    clock[0] = START_S + COMMITS * 10
    gc.collect()
    rss_filled = rss_mb()

    partitions = len(view.table)
    print(f"groups={len(view.groups)} committed partitions={partitions} "
          f"topic partitions={len(view.ends)}")
    print(f"feed (CPU): {COMMITS} snapshot rounds {feed_snapshots:.2f} s "
          f"({feed_snapshots / COMMITS * 1000:.0f} ms per round of {len(groups)} changed groups), "
          f"{POLLS} end-offset polls {feed_polls:.2f} s ({feed_polls / POLLS * 1000:.0f} ms each)")
    print(f"memory: RSS {rss_before:.0f} MB before, {rss_filled:.0f} MB with the view filled "
          f"(+{rss_filled - rss_before:.0f} MB)")

    cache = MetricsCache(view)
    active = groups[::100]  # 1% of the groups commit between two scrapes
    labels = ("full: state and lag of every group", "after a poll: the lag part",
              f"after commits of {len(active):,} groups",
              "the same, a scrape asking for the committed offsets only (name[])")
    for step, label in enumerate(labels):
        slots = None
        if step == 1:
            ends = {key: view.log_end(key)[0] + 100 for key in view.polled()}
            view.update_end_offsets(ends, {}, clock[0] - 1, 0.2)
        elif step > 1:
            view.update_groups([snapshot(name, topic, COMMITS + step) for name, topic in active])
        if step == 3:
            slots = cache.slots_named(["kafka_consumergroup_committed_offset"])
        started = time.perf_counter()
        cpu = time.process_time()
        if slots is None:
            cache.refresh()
        else:
            cache.refresh_if_stale(slots)
        print(f"refresh ({label}; runs in the poller thread): "
              f"{time.perf_counter() - started:.2f} s wall, {time.process_time() - cpu:.2f} s CPU, "
              f"{cache.lag_lines_written:,} lines of the lag part written")
    cache.refresh()  # every family written again for the scrapes below
    text = cache.text()
    series = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    print(f"{series} series, {len(text) / 1e6:.1f} MB of text")
    del text
    gc.collect()
    print(f"memory with the render cache: RSS {rss_mb():.0f} MB")

    exporter = start_exporter(view, ExporterSettings(listen="127.0.0.1:0"), cache)
    try:
        url = f"http://127.0.0.1:{exporter.port}/metrics"
        for label, headers in (("plain", {}), ("plain", {}), ("gzip", {"Accept-Encoding": "gzip"})):
            started = time.perf_counter()
            cpu = time.process_time()
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers)) as response:
                body = response.read()
            elapsed = time.perf_counter() - started
            print(f"HTTP scrape ({label}): {elapsed:.2f} s wall, "
                  f"{time.process_time() - cpu:.2f} s CPU (client included), "
                  f"{len(body) / 1e6:.1f} MB on the wire")
    finally:
        exporter.stop()
    gc.collect()
    print(f"memory after scrapes: RSS {rss_mb():.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--granularity", choices=GRANULARITIES,
                        help="one granularity in this process (default: each in its own)")
    parser.add_argument("--topics", type=int, default=TOPICS,
                        help=f"topics of {PARTITIONS} partitions, each consumed by "
                             f"{GROUPS_PER_TOPIC} groups (10,000: 1M group-partitions)")
    args = parser.parse_args()
    if args.granularity:
        run(args.granularity, args.topics)
        return
    summary = []
    for granularity in GRANULARITIES:
        out = subprocess.run([sys.executable, "-m", "benchmarks.exporter", "--granularity",
                              granularity, "--topics", str(args.topics)],
                             check=True, capture_output=True, text=True).stdout
        print(out, end="")
        series = re.search(r"^(\d+) series, ([\d.]+) MB of text", out, re.M)
        wire = re.findall(r"HTTP scrape \((\w+)\): ([\d.]+) s wall.*?([\d.]+) MB on the wire", out)
        summary.append((granularity, series.group(1), series.group(2), wire[-1][2], wire[-1][1]))
    print("granularity   series   text MB   gzip MB   gzip scrape s")
    for granularity, series, text_mb, gzip_mb, gzip_s in summary:
        print(f"{granularity:<12}{int(series):>8}{float(text_mb):>10.1f}{float(gzip_mb):>10.1f}"
              f"{float(gzip_s):>16.2f}")


if __name__ == "__main__":
    stop_everything_at_exit()
    main()
