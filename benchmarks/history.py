"""History benchmark: 30 days of history at the default 5 s trigger, 2,000 groups, a rebalance
an hour each; then `groupscope history --group G --since 1d` (the real CLI, as a subprocess) and
a restart's restore, against the same figures for one day of history.

Rows are what BatchSink writes: every group's snapshot every snapshot_interval (300 s: each 5 s
micro-batch carries the snapshots of a sixtieth of the groups), and per rebalance the rebalance
event, two partitions' downtime, a member leaving and one joining, and the group's snapshot after
the change. The last 24 hours (17,280 micro-batches) go through HistoryWriter, one file per
batch and kind, with the job's hourly maintenance run as each simulated hour ends. Writing 30
days that way would take most of an hour on the reference machine, so the 29 older days are
generated directly in the form their compaction gives them (one part per day, sorted by group,
written by history_compaction.write_slices) and maintenance then folds them into the running
totals as the job would at each day's end. The output says so.

Usage (from the repository root): python -m benchmarks.history [--groups 2000] [--days 30]
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pyarrow as pa

from benchmarks._stopping import stop_everything_at_exit
from benchmarks.cluster import cpu_probe
from streaming.exporter.view import MonitorView
from streaming.job.history import HistoryWriter
from streaming.job.history_compaction import write_slices
from streaming.job.history_files import SCHEMA, temp_name
from streaming.job.history_layout import day_folder, day_of, part_name
from streaming.job.history_maintenance import maintain
from streaming.job.lifecycle import restore_view

TRIGGER_S = 5
SNAPSHOT_S = 300
BATCHES_PER_DAY = 86400 // TRIGGER_S
SLOTS = SNAPSHOT_S // TRIGGER_S          # a group's snapshot every SLOTS batches
SLICE_GROUPS = 28                        # about 8,000 rows of a day per slice

_MEMBER = ('{"member_id":"%(g)s-m%(i)d","client_id":"consumer-%(i)d","client_host":"/10.1.%(i)d.7",'
           '"session_timeout_ms":45000,"assigned":[["%(g)s-in",%(a)d],["%(g)s-in",%(b)d]]}')
_OFFSET = '{"topic":"%(g)s-in","partition":%(p)d,"offset":%%d,"commit_timestamp_ms":%%d}'
PARTITIONS = 6
_templates: dict[int, str] = {}


def group_name(g: int) -> str:
    return f"consumer-group-{g:05d}"


def _template(g: int) -> str:
    """The group's snapshot JSON with what changes over time left as %d slots: one format per
    row keeps generating a month of snapshots within the benchmark's budget."""
    name = group_name(g)
    members = ",".join(_MEMBER % {"g": name, "i": i, "a": 2 * i, "b": 2 * i + 1} for i in range(3))
    offsets = ",".join(_OFFSET % {"g": name, "p": p} for p in range(PARTITIONS))
    return ('{"group":"%s","group_type":"classic","protocol_type":"consumer",'
            '"protocol":"cooperative-sticky","state":"Stable","generation":%%d,'
            '"assignment_epoch":null,"leader":"%s-m0","current_state_timestamp_ms":%%d,'
            '"coordinator_partition":%d,"members":[%s],"subscribed_topics":["%s-in"],'
            '"offsets":[%s],"last_rebalance":{"from_generation":%%d,"to_generation":%%d,'
            '"end_ms":%%d,"duration_seconds":1.25},"updated_ms":%%d}'
            % (name, name, g % 50, members, name, offsets))


def snapshot(g: int, ts: int) -> str:
    template = _templates.get(g)
    if template is None:
        template = _templates[g] = _template(g)
    gen, base = 1 + ts // 3_600_000, ts // 50
    offsets = sum(((base + p * 1000, ts - p * 40) for p in range(PARTITIONS)), ())
    return template % (gen, ts, *offsets, gen - 1, gen, ts - ts % 3_600_000, ts)


def rebalance_rows(g: int, ts: int, offset: int) -> list[tuple[str, int, str, str]]:
    name, gen = group_name(g), 1 + ts // 3_600_000
    common = f'"group":"{name}","partition":{g % 50},"offset":{offset},"timestamp_ms":{ts}'
    return [
        (name, ts, "rebalance", '{"event":"rebalance",%s,"from_generation":%d,"to_generation":%d,'
         '"protocol":"cooperative-sticky","start_method":"join_group","duration_seconds":%.3f,'
         '"sync_seconds":0.02,"end_ms":%d,"members_joined":["%s-m2-%d"],"members_left":'
         '["%s-m2-%d"],"partitions_moved":[["%s-in",4],["%s-in",5]]}'
         % (common, gen - 1, gen, 0.5 + (g % 40) * 0.25, ts, name, gen, name, gen - 1, name, name)),
        *((name, ts, "rebalance_downtime", '{"event":"rebalance_downtime",%s,"topic":"%s-in",'
           '"partition_id":%d,"downtime_seconds":%.3f}' % (common, name, p, 1.0 + p * 0.5))
          for p in (4, 5)),
        (name, ts, "member_left", '{"event":"member_left",%s,"member_id":"%s-m2-%d"}'
         % (common, name, gen - 1)),
        (name, ts, "member_joined", '{"event":"member_joined",%s,"member_id":"%s-m2-%d"}'
         % (common, name, gen)),
    ]


def batch_time(k: int, t0_ms: int) -> int:
    return t0_ms + k * TRIGGER_S * 1000


def rebalance_time(g: int, hour_start_ms: int, groups: int) -> int:
    """Group g rebalances every hour, g * 3600 / groups seconds into it."""
    return hour_start_ms + g * 3_600_000 // groups


def snapshot_time(g: int, k: int, t0_ms: int) -> int:
    return batch_time(k, t0_ms) + 1000 * (g % TRIGGER_S)


def batch_rows(k: int, t0_ms: int, groups: int) -> tuple[list, list]:
    """(events, snapshots) of micro-batch k, which covers [t0 + 5k s, t0 + 5(k+1) s)."""
    ts = batch_time(k, t0_ms)
    snaps = [(group_name(g), snapshot_time(g, k, t0_ms), "snapshot",
              snapshot(g, snapshot_time(g, k, t0_ms))) for g in range(k % SLOTS, groups, SLOTS)]
    events = []
    hour_start = ts - ts % 3_600_000
    low = max(0, (ts - hour_start) * groups // 3_600_000 - 1)
    for g in range(low, min(groups, low + TRIGGER_S * groups // 3600 + 3)):
        when = rebalance_time(g, hour_start, groups)
        if ts <= when < ts + TRIGGER_S * 1000:
            events += rebalance_rows(g, when, k * 16)
            snaps.append((group_name(g), when, "snapshot", snapshot(g, when)))
    return events, snaps


def group_rows(g: int, first_k: int, last_k: int, t0_ms: int, groups: int,
               snapshots: bool) -> tuple[list, list]:
    """(events, snapshots) of group g over micro-batches first_k..last_k, as (row, batch);
    without `snapshots`, the events only."""
    name = group_name(g)
    snaps = [((name, ts, "snapshot", snapshot(g, ts)), k)
             for k in range(first_k + (g % SLOTS - first_k) % SLOTS, last_k + 1, SLOTS)
             for ts in (snapshot_time(g, k, t0_ms),)] if snapshots else []
    events = []
    start, end = batch_time(first_k, t0_ms), batch_time(last_k + 1, t0_ms)
    for hour_start in range(start - start % 3_600_000, end, 3_600_000):
        when = rebalance_time(g, hour_start, groups)
        if start <= when < end:
            k = (when - t0_ms) // (TRIGGER_S * 1000)
            events += [(row, k) for row in rebalance_rows(g, when, k * 16)]
            if snapshots:
                snaps.append(((name, when, "snapshot", snapshot(g, when)), k))
    return events, snaps


def write_recent(path: str, first_k: int, t0_ms: int, groups: int) -> None:
    """The last 24 hours as the job writes them, with its hourly maintenance."""
    writer = HistoryWriter(path)
    hour = None
    for k in range(first_k, first_k + BATCHES_PER_DAY):
        now_s = batch_time(k, t0_ms) / 1000.0
        if hour is not None and int(now_s // 3600) != hour:
            maintain(path, "parquet", k, now_s, 30 * 86400)
        hour = int(now_s // 3600)
        events, snaps = batch_rows(k, t0_ms, groups)
        writer.write(k, "events", events)
        writer.write(k, "snapshots", snaps)


def write_older_day(path: str, first_k: int, last_k: int, t0_ms: int, groups: int) -> None:
    """Micro-batches first_k..last_k of one day, straight into the part compaction makes."""
    day = day_of(batch_time(first_k, t0_ms))
    for kind, index in (("events", 0), ("snapshots", 1)):
        folder = day_folder(path, kind, day)
        os.makedirs(folder, exist_ok=True)
        target = os.path.join(folder, part_name(first_k, last_k, "parquet"))
        write_slices(temp_name(target), _day_slices(first_k, last_k, t0_ms, groups, index))
        os.replace(temp_name(target), target)


def _day_slices(first_k: int, last_k: int, t0_ms: int, groups: int, index: int):
    for low in range(0, groups, SLICE_GROUPS):
        pairs = [pair for g in range(low, min(groups, low + SLICE_GROUPS))
                 for pair in group_rows(g, first_k, last_k, t0_ms, groups, index == 1)[index]]
        yield pa.table({"group": [r[0] for r, _ in pairs], "ts_ms": [r[1] for r, _ in pairs],
                        "kind": [r[2] for r, _ in pairs], "payload": [r[3] for r, _ in pairs],
                        "batch": [k for _, k in pairs]}, schema=SCHEMA)


def older_days(first_k: int, t0_ms: int) -> list[tuple[int, int]]:
    """(first, last) micro-batch of each UTC day before micro-batch first_k."""
    days, k = [], 0
    while k < first_k:
        day_end = (batch_time(k, t0_ms) // 86_400_000 + 1) * 86_400_000
        last = min(first_k, (day_end - t0_ms + TRIGGER_S * 1000 - 1) // (TRIGGER_S * 1000)) - 1
        days.append((k, last))
        k = last + 1
    return days


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def query_seconds(path: str, group: str, runs: int = 3) -> float:
    """The best of `runs` of the real CLI, a new process each."""
    command = [sys.executable, "-m", "streaming.cli.main", "history", "--group", group,
               "--since", "1d", "--path", path]
    best = None
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(done.stderr[-2000:])
        best = elapsed if best is None else min(best, elapsed)
    return best


def restore_seconds(path: str, snapshots: bool) -> tuple[float, int]:
    view = MonitorView()
    started = time.perf_counter()
    events = restore_view(view, path, snapshots=snapshots)
    return time.perf_counter() - started, events


def measure(one: str, many: str, args) -> None:
    group = group_name(args.groups // 2)
    for label, path in (("1 day", one), (f"{args.days} days", many)):
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)
        files = sum(len(fs) for _, _, fs in os.walk(path))
        query = query_seconds(path, group)
        restart, events = restore_seconds(path, snapshots=False)
        cold, _ = restore_seconds(path, snapshots=True)
        print(f"{label}: {size / 1e6:.0f} MB in {files} files; `groupscope history --group "
              f"{group} --since 1d` {query:.2f} s (best of 3); restart restore {restart:.2f} s "
              f"({events} events counted), with snapshots (no checkpoint state) {cold:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=2000)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--keep", help="write the histories here and keep them")
    parser.add_argument("--reuse", help="time the histories a --keep run left in this directory")
    args = parser.parse_args()
    print(f"history benchmark, {dt.date.today().isoformat()}, CPU probe {cpu_probe()} s")
    if args.reuse:
        measure(os.path.join(args.reuse, "one-day"),
                os.path.join(args.reuse, f"{args.days}-days"), args)
        return
    work = args.keep or tempfile.mkdtemp(prefix="groupscope-history-")
    one, many = os.path.join(work, "one-day"), os.path.join(work, f"{args.days}-days")
    now_ms = int(time.time() * 1000) // 5000 * 5000
    total = args.days * BATCHES_PER_DAY
    t0_ms = now_ms - total * TRIGGER_S * 1000
    first_recent = total - BATCHES_PER_DAY
    try:
        took = timed(lambda: write_recent(one, first_recent, t0_ms, args.groups))
        print(f"last 24 h through HistoryWriter ({BATCHES_PER_DAY} micro-batches, hourly "
              f"maintenance): {took:.0f} s")
        took = timed(lambda: maintain(one, "parquet", total, now_ms / 1000.0, 30 * 86400))
        print(f"maintenance at the end of the 24 h: {took:.1f} s")
        shutil.copytree(one, many)
        older = older_days(first_recent, t0_ms)
        took = timed(lambda: [write_older_day(many, a, b, t0_ms, args.groups) for a, b in older])
        print(f"the {len(older)} date folders before the last 24 h generated directly as compacted "
              f"parts (not through HistoryWriter: too slow to write for a run): {took:.0f} s")
        took = timed(lambda: maintain(many, "parquet", total, now_ms / 1000.0, 30 * 86400))
        print(f"maintenance folding them into the running totals: {took:.0f} s")
        measure(one, many, args)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    stop_everything_at_exit()
    main()
