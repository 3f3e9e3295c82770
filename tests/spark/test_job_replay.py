"""The whole job (decode -> state store -> driver view and history) on a capture file."""
from __future__ import annotations

import pytest

from tests.support.job_support import (bad_records, mixed_timeline, reference_groups, replay_config,
                         timeline_lines, write_capture)
from streaming.job.history import read_history
from streaming.job.lifecycle import Job


def _run(spark, config, max_records=None):
    job = Job(config, spark=spark, start_exporter=False, start_poller=False)
    query = job.start()
    try:
        query.processAllAvailable()
    finally:
        job.stop()
    assert query.exception() is None
    return job


@pytest.fixture(scope="module")
def replayed(spark, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("job-replay")
    tl = mixed_timeline()
    capture = write_capture(str(tmp / "capture.jsonl"), timeline_lines(tl, bad_records()))
    job = _run(spark, replay_config(tmp, capture))
    return tl, job, tmp


def test_groups_match_the_pure_reducer(replayed):
    tl, job, tmp = replayed
    expected = reference_groups(tl)
    assert set(job.view.groups) == set(expected)
    # The last snapshot each group's state key emitted is exactly the pure reducer's state.
    last = {r["group"]: r["payload"] for r in read_history(str(tmp / "history"), "snapshots")}
    for name in ("orders-app", "payments"):
        assert last[name] == expected[name]
        committed = {(o["topic"], o["partition"]): o["offset"] for o in expected[name]["offsets"]}
        in_view = job.view.committed(name)
        assert in_view == committed


def test_reconstructed_fields(replayed):
    _, job, _ = replayed
    orders = job.view.groups["orders-app"].snapshot
    assert orders["generation"] == 2 and orders["state"] == "Stable"
    assert [m["member_id"] for m in orders["members"]] == ["m1", "m2"]
    assert job.view.committed("orders-app") == {
        ("orders", p): 720 + p for p in range(4)}
    assert job.view.groups["tmp-group"].dead_since_s is not None  # deleted: series go after the grace
    payments = job.view.groups["payments"].snapshot
    assert payments["group_type"] == "consumer" and payments["state"] == "Stable"
    assert payments["generation"] == 1 and payments["assignment_epoch"] == 1


def test_counters_and_skips(replayed):
    tl, job, _ = replayed
    by_type: dict[str, int] = {}
    for rec, *_ in tl.entries:
        by_type[rec.type_name] = by_type.get(rec.type_name, 0) + 1
    assert job.view.records_total == by_type
    assert job.view.records_skipped == {"malformed": 1, "unknown_type": 1, "unsupported_version": 0,
                                        "control_record": 0}
    assert job.view.ready


def test_rebalance_in_view_and_history(replayed):
    _, job, tmp = replayed
    orders = job.view.groups["orders-app"]
    assert orders.rebalances == 2  # generation 1 (first assignment) and generation 2
    events = [r["payload"] for r in read_history(str(tmp / "history"), "events", group="orders-app")]
    rebalances = [e for e in events if e["event"] == "rebalance"]
    assert [e["to_generation"] for e in rebalances] == [1, 2]
    assert sorted(map(tuple, rebalances[-1]["partitions_moved"])) == [("orders", 2), ("orders", 3)]
    snapshots = read_history(str(tmp / "history"), "snapshots", group="orders-app")
    assert snapshots and snapshots[-1]["payload"]["generation"] == 2


def test_history_command(replayed, capsys):
    from tests.support.job_support import T0
    from streaming.cli.main import main

    _, _, tmp = replayed
    assert main(["history", "--group", "orders-app", "--path", str(tmp / "history")]) == 0
    out = capsys.readouterr().out
    assert "generation 2, 2 members" in out
    assert "rebalance gen 1 -> 2 (range)" in out and "moved 2 partitions" in out
    # As it was before the second generation: one member owning all four partitions.
    assert main(["history", "--group", "orders-app", "--path", str(tmp / "history"),
                 "--at", str(T0 + 5000)]) == 0
    out = capsys.readouterr().out
    assert "generation 1, 1 members" in out and "orders-0, orders-1, orders-2, orders-3" in out
    assert main(["history", "--group", "nope", "--path", str(tmp / "history")]) == 2
    assert "no history" in capsys.readouterr().err
