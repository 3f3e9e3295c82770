"""The history as a store kept for months: compaction, retention, pruned reads, a compaction
killed at each step, and a restart that rebuilds the exporter's counters from running totals
exactly as replaying every event would."""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys

import pyarrow.dataset as ds
import pytest

from streaming.config import load_config
from streaming.errors import UserError
from streaming.exporter.evaluation import build_families
from streaming.exporter.exposition import render_text
from streaming.exporter.view import MonitorView
from streaming.job import history_compaction, history_files, history_layout
from streaming.job.history import HistoryWriter, batch_base, latest_snapshots, read_history, unique_events
from streaming.job.history_compaction import CRASH_POINT_VARIABLE
from streaming.job.history_layout import day_files, days
from streaming.job.history_maintenance import HistoryMaintenance, maintain
from streaming.job.history_totals import restore, totals_days

pytestmark = pytest.mark.unit

DAY_MS = 86_400_000
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
GROUPS = [f"group-{i:02d}" for i in range(12)]


def _event(kind: str, group: str, ts: int, offset: int, rng: random.Random, **extra) -> tuple:
    payload = {"event": kind, "group": group, "partition": offset % 50, "offset": offset,
               "timestamp_ms": ts, **extra}
    if kind == "rebalance":
        payload.update(duration_seconds=rng.random() * 40, sync_seconds=rng.random(),
                       end_ms=ts, partitions_moved=[["t", p] for p in range(rng.randrange(4))])
    elif kind == "rebalance_downtime":
        payload.update(topic="t", partition_id=rng.randrange(8), downtime_seconds=rng.random() * 9)
    return (group, ts, kind, json.dumps(payload))


def _snapshot(group: str, ts: int, generation: int) -> tuple:
    payload = {"group": group, "group_type": "classic", "protocol_type": "consumer",
               "protocol": "range", "state": "Stable", "generation": generation,
               "members": [], "subscribed_topics": ["t"],
               "offsets": [{"topic": "t", "partition": 0, "offset": generation,
                            "commit_timestamp_ms": ts}],
               "last_rebalance": None, "updated_ms": ts}
    return (group, ts, "snapshot", json.dumps(payload))


def write_days(history: str, first_batch: int, start_ms: int, batches: int, step_ms: int,
               seed: int = 1, fmt: str = "parquet") -> int:
    """`batches` micro-batches `step_ms` apart from `start_ms`, each with a few events and
    snapshots; returns the next batch id."""
    rng = random.Random(seed)
    writer = HistoryWriter(history, fmt)
    for i in range(batches):
        batch_id = first_batch + i
        ts = start_ms + i * step_ms
        events, snaps = [], []
        for group in rng.sample(GROUPS, 3):
            kind = rng.choice(["rebalance", "rebalance", "rebalance_downtime", "member_joined",
                               "member_left", "group_deleted"])
            events.append(_event(kind, group, ts + rng.randrange(step_ms), batch_id * 10 + len(events),
                                 rng, member_id=f"m{rng.randrange(5)}"))
            snaps.append(_snapshot(group, ts, batch_id))
        writer.write(batch_id, "events", events)
        writer.write(batch_id, "snapshots", snaps)
    return first_batch + batches


def everything(history: str) -> tuple[list, list]:
    return read_history(history, "events"), read_history(history, "snapshots")


def replayed_view(history: str) -> MonitorView:
    """The view as restarts built it before totals: every snapshot and every event read back."""
    view = MonitorView(clock=lambda: T0 / 1000.0)
    view.update_groups(latest_snapshots(read_history(history, "snapshots")).values())
    view.apply_events(unique_events(read_history(history, "events")))
    return view


def exposition(view: MonitorView) -> str:
    return render_text(build_families(view, now_s=T0 / 1000.0))


def test_compaction_leaves_one_part_per_closed_day_and_the_same_rows(tmp_path):
    history = str(tmp_path)
    write_days(history, 0, T0, 90, 3_000_000)  # about 3 days
    before = everything(history)
    now_s = (T0 + 2 * DAY_MS + 1000) / 1000.0
    report = maintain(history, "parquet", bound=10**9, now_s=now_s, retention_s=0)
    assert report.compacted > 0
    for kind in ("events", "snapshots"):
        for day in days(history, kind):
            names = sorted(os.listdir(os.path.join(history, kind, f"date={day}")))
            assert len(names) == 1 and names[0].startswith("part-"), (day, names)
    assert everything(history) == before
    assert report.folded == ["2026-01-01", "2026-01-02"]


def test_only_committed_batches_are_compacted_and_later_writes_join_the_next_part(tmp_path):
    history = str(tmp_path)
    end = write_days(history, 0, T0, 20, 60_000)
    maintain(history, "parquet", bound=15, now_s=(T0 + DAY_MS) / 1000.0, retention_s=0)
    files = day_files(history, "events", "2026-01-01")
    assert [p[:2] for p in files.parts] == [(0, 14)]
    assert [b for b, _ in files.batches] == [15, 16, 17, 18, 19]
    # A late write to the closed day (a catch-up's batch dated yesterday) is read, then merged.
    write_days(history, end, T0 + 3_600_000, 3, 60_000, seed=7)
    before = everything(history)
    maintain(history, "parquet", bound=10**9, now_s=(T0 + DAY_MS) / 1000.0, retention_s=0)
    files = day_files(history, "events", "2026-01-01")
    assert [p[:2] for p in files.parts] == [(0, end + 2)] and not files.batches
    assert everything(history) == before


def test_a_batch_run_again_inside_a_compacted_range_adds_nothing(tmp_path):
    history = str(tmp_path)
    write_days(history, 0, T0, 10, 60_000)
    maintain(history, "parquet", bound=10**9, now_s=(T0 + DAY_MS) / 1000.0, retention_s=0)
    before = everything(history)
    write_days(history, 4, T0 + 4 * 60_000, 1, 60_000, seed=99)  # batch 4 again, other rows
    assert everything(history) == before


def test_a_new_checkpoint_numbers_its_batches_above_the_history(tmp_path):
    # A deleted checkpoint starts again at micro-batch 0: its rows must not fall inside the old
    # checkpoint's compacted parts, nor overwrite its batch files of the same day.
    history = str(tmp_path)
    assert batch_base(history, "first") == 0
    end = write_days(history, 0, T0, 10, 60_000)
    maintain(history, "parquet", bound=10**9, now_s=(T0 + DAY_MS) / 1000.0, retention_s=0)
    write_days(history, end, T0 + 20 * 60_000, 2, 60_000, seed=3)  # batch files beside the part
    old_events, old_snapshots = everything(history)
    base = batch_base(history, "second")
    assert base == end + 2 and batch_base(history, "second") == base and batch_base(history, "first") == 0
    rng = random.Random(5)
    new_row = _event("rebalance", "group-new", T0 + 30 * 60_000, 5, rng)
    writer = HistoryWriter(history, "parquet", batch_base=base)
    writer.write(0, "events", [new_row])
    writer.write(0, "snapshots", [_snapshot("group-new", T0 + 30 * 60_000, 1)])
    events, snapshots = everything(history)
    assert [r for r in events if r["group"] == "group-new"] != []
    assert [r for r in events if r["group"] != "group-new"] == old_events
    assert [r for r in snapshots if r["group"] != "group-new"] == old_snapshots
    maintain(history, "parquet", bound=base + 1, now_s=(T0 + DAY_MS) / 1000.0, retention_s=0)
    assert everything(history) == (events, snapshots)


def test_retention_deletes_whole_old_days_and_the_counters_keep_them(tmp_path):
    history = str(tmp_path)
    write_days(history, 0, T0, 100, 4_000_000)  # about 4.6 days
    now_s = (T0 + 4 * DAY_MS + 1000) / 1000.0
    maintain(history, "parquet", bound=10**9, now_s=now_s, retention_s=0)
    expected = exposition(replayed_view(history))
    report = maintain(history, "parquet", bound=10**9, now_s=now_s, retention_s=2 * 86400)
    assert report.expired == ["2026-01-01", "2026-01-02"]
    assert days(history, "events")[0] == "2026-01-03" and days(history, "snapshots")[0] == "2026-01-03"
    assert totals_days(history)[0] == "2026-01-02"  # the newest expired totals stays
    restored = MonitorView(clock=lambda: T0 / 1000.0)
    restore(restored, history)
    assert exposition(restored) == expected


def test_retention_counts_back_from_the_newest_day_of_a_replayed_past(tmp_path):
    history = str(tmp_path)
    write_days(history, 0, T0, 100, 4_000_000)  # January 2026, maintained a year later
    report = maintain(history, "parquet", bound=10**9, now_s=(T0 + 400 * DAY_MS) / 1000.0,
                      retention_s=2 * 86400)
    # Two days back from the end of the newest day (2026-01-05), not from a year later.
    assert report.expired == ["2026-01-01", "2026-01-02", "2026-01-03"]
    assert days(history, "events") == ["2026-01-04", "2026-01-05"]


def test_reads_open_only_the_days_and_row_groups_they_need(tmp_path, monkeypatch):
    history = str(tmp_path)
    monkeypatch.setattr(history_compaction, "ROW_GROUP_ROWS", 16)
    write_days(history, 0, T0, 120, 2_000_000)
    maintain(history, "parquet", bound=10**9, now_s=(T0 + 3 * DAY_MS) / 1000.0, retention_s=0)
    listed, opened = [], []
    real_listdir, real_dataset = os.listdir, history_files.ds.dataset
    monkeypatch.setattr(history_layout.os, "listdir",
                        lambda p: listed.append(p) or real_listdir(p))
    monkeypatch.setattr(history_files.ds, "dataset",
                        lambda files, **kw: opened.extend(files) or real_dataset(files, **kw))
    since = T0 + 2 * DAY_MS + 3_600_000
    rows = read_history(history, "events", group="group-03", since_ms=since)
    assert rows and all(r["group"] == "group-03" and r["ts_ms"] >= since for r in rows)
    assert not any("date=2026-01-01" in p or "date=2026-01-02" in p for p in listed + opened)
    assert {os.path.basename(os.path.dirname(f)) for f in opened} == {"date=2026-01-03"}
    # In the compacted day, the group filter keeps a few of the part's row groups.
    part = day_files(history, "snapshots", "2026-01-02").visible()[0]
    fragment = next(iter(real_dataset(part, format="parquet").get_fragments()))
    wanted = fragment.split_by_row_group(ds.field("group") == "group-03")
    assert fragment.num_row_groups >= 6 and 1 <= len(wanted) <= 2


@pytest.mark.parametrize("step", ["part-written", "part-renamed", "half-deleted"])
def test_a_compaction_killed_at_each_step_loses_and_repeats_nothing(tmp_path, step):
    history = str(tmp_path)
    write_days(history, 0, T0, 60, 3_000_000)
    before = everything(history)
    expected = exposition(replayed_view(history))
    now_s = (T0 + 2 * DAY_MS + 1000) / 1000.0
    code = (f"from streaming.job.history_maintenance import maintain; "
            f"maintain({history!r}, 'parquet', 10**9, {now_s}, 0)")
    killed = subprocess.run([sys.executable, "-c", code], cwd=os.getcwd(), timeout=120,
                            env={**os.environ, CRASH_POINT_VARIABLE: step})
    assert killed.returncode == -9
    assert everything(history) == before
    restored = MonitorView(clock=lambda: T0 / 1000.0)
    restore(restored, history)
    assert exposition(restored) == expected
    maintain(history, "parquet", bound=10**9, now_s=now_s, retention_s=0)
    for kind in ("events", "snapshots"):
        for day in days(history, kind):
            names = [n for n in os.listdir(os.path.join(history, kind, f"date={day}"))]
            assert len(names) == 1 and names[0].startswith("part-"), (step, day, names)
    assert everything(history) == before


def test_a_restart_from_totals_and_recent_rows_equals_replaying_every_event(tmp_path):
    history = str(tmp_path)
    end = write_days(history, 0, T0, 150, 1_700_000)  # about 3 days, today uncompacted
    maintain(history, "parquet", bound=100, now_s=(T0 + 2 * DAY_MS + 1000) / 1000.0,
             retention_s=0)
    write_days(history, end, T0 + 5_000_000, 4, 60_000, seed=3)  # late rows for a folded day
    write_days(history, end + 4, T0 + 2 * DAY_MS + 9_000_000, 4, 60_000, seed=4)
    assert totals_days(history) == ["2026-01-01", "2026-01-02"]
    events = len(unique_events(read_history(history, "events")))
    expected = exposition(replayed_view(history))
    assert "kafka_consumergroup_rebalances_total{" in expected
    restored = MonitorView(clock=lambda: T0 / 1000.0)
    assert restore(restored, history) == events
    assert exposition(restored) == expected
    maintain(history, "parquet", bound=10**9, now_s=(T0 + 2 * DAY_MS + 1000) / 1000.0,
             retention_s=0)
    again = MonitorView(clock=lambda: T0 / 1000.0)
    assert restore(again, history) == events
    assert exposition(again) == expected


def test_json_days_compact_to_json_lines(tmp_path):
    history = str(tmp_path)
    write_days(history, 0, T0, 40, 3_000_000, fmt="json")
    before = everything(history)
    maintain(history, "json", bound=10**9, now_s=(T0 + DAY_MS + 1000) / 1000.0, retention_s=0)
    part = day_files(history, "events", "2026-01-01").visible()
    assert len(part) == 1 and part[0].endswith(".jsonl")
    assert everything(history) == before


def test_maintenance_runs_once_an_hour_on_its_own_thread(tmp_path):
    history = str(tmp_path)
    write_days(history, 0, T0, 10, 60_000)
    clock = [T0 / 1000.0 + 7200]
    maintenance = HistoryMaintenance(history, "parquet", 0, clock=lambda: clock[0])
    maintenance.after_batch(5)
    maintenance.join(60)
    assert [p[:2] for p in day_files(history, "events", "2026-01-01").parts] == [(0, 4)]
    maintenance.after_batch(10)  # same hour: nothing
    maintenance.join(60)
    assert [p[:2] for p in day_files(history, "events", "2026-01-01").parts] == [(0, 4)]
    clock[0] += 3600
    maintenance.after_batch(10)
    maintenance.join(60)
    assert [p[:2] for p in day_files(history, "events", "2026-01-01").parts] == [(0, 4), (5, 9)]


def test_history_retention_is_a_duration_of_at_least_a_day(tmp_path):
    assert load_config(env={}).history.retention == 30 * 86400
    assert load_config(env={"GROUPSCOPE_HISTORY__RETENTION": "0"}).history.retention == 0
    with pytest.raises(UserError, match="history.retention"):
        load_config(env={"GROUPSCOPE_HISTORY__RETENTION": "6h"})


def test_duckdb_reads_a_groups_rows_as_read_history_does(tmp_path):
    # What a user runs against the folder with no groupscope at hand: hive partitioning gives
    # the date column, and compacted parts and batch files alike are read once each.
    import duckdb

    history = str(tmp_path)
    end = write_days(history, 0, T0, 90, 3_000_000)
    maintain(history, "parquet", bound=80, now_s=(T0 + 2 * DAY_MS + 1000) / 1000.0, retention_s=0)
    write_days(history, end, T0 + 2 * DAY_MS + 5_000, 3, 60_000, seed=5)
    since = T0 + DAY_MS
    for kind in ("events", "snapshots"):
        got = duckdb.sql(
            f"SELECT \"group\", ts_ms, kind, payload, CAST(date AS VARCHAR) AS date "
            f"FROM read_parquet('{history}/{kind}/*/*.parquet', hive_partitioning = true) "
            f"WHERE \"group\" = 'group-03' AND ts_ms >= {since}").fetchall()
        expected = read_history(history, kind, group="group-03", since_ms=since)
        assert len(got) == len(expected) > 0
        assert sorted(row[:4] for row in got) == sorted(
            (r["group"], r["ts_ms"], r["kind"], json.dumps(r["payload"])) for r in expected)
        assert all(row[4] == history_layout.day_of(row[1]) for row in got)
