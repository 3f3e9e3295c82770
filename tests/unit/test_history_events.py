"""The history keeps every event once: a rebalance's group-metadata record says at once that
several members joined and left, and each of those events survives reading the history back,
while a micro-batch written twice (cut differently after a crash) still counts once."""
from __future__ import annotations

import collections

from coordinator import compact_json
from coordinator.state import GroupStore
from streaming.cli.main import main
from streaming.exporter.view import MonitorView
from streaming.job.history import HistoryWriter, read_history, unique_events
from streaming.job.lifecycle import BatchSink, OffsetsTopicProgress, restore_view
from tests.support.state_timeline import Timeline, group_metadata, member

T0 = 1_763_000_000_000


def _rebalance_events() -> list[dict]:
    """Generation 1 of three members, then generation 2: two of them leave and three join, all
    in one record."""
    first = [member(f"m{i}", ["orders"], [("orders", i)]) for i in range(3)]
    second = [member(name, ["orders"], [("orders", i)])
              for i, name in enumerate(["m0", "m3", "m4", "m5"])]
    tl = Timeline()
    tl.add(group_metadata("app", 1, first, state_ts=T0 - 100), T0)
    tl.add(group_metadata("app", 2, second, state_ts=T0 + 900), T0 + 1000)
    return [e.to_dict() for e in tl.replay(GroupStore())]


def _write(history: str, batches: list[tuple[int, list[dict]]]) -> None:
    sink = BatchSink(MonitorView(), HistoryWriter(history), OffsetsTopicProgress(None), 60.0)
    for batch_id, events in batches:
        sink.handle_rows([(e["group"], "event", compact_json.dumps(e), e["timestamp_ms"])
                          for e in events], batch_id)


def test_every_member_event_of_one_record_survives_and_a_rewritten_batch_counts_once(tmp_path):
    events = _rebalance_events()
    per_record = collections.Counter((e["partition"], e["offset"]) for e in events
                                     if e["event"] in ("member_joined", "member_left"))
    assert max(per_record.values()) >= 5, per_record  # m1, m2 left; m3, m4, m5 joined
    history = str(tmp_path / "history")
    # Batch 1 ran, the job crashed, and after the restart the same records came in one batch
    # of another id (and the first generation once more in a third).
    _write(history, [(0, events[:3]), (1, events), (2, events[:3])])

    rows = read_history(history, "events")
    kept = unique_events(rows)
    assert len(rows) > len(events)
    assert sorted(compact_json.dumps(e) for e in kept) == sorted(
        compact_json.dumps(e) for e in events)
    assert restore_view(MonitorView(), history) == len(events)


def test_groupscope_history_lists_every_member_that_joined_and_left(tmp_path, capsys):
    history = str(tmp_path / "history")
    _write(history, [(0, _rebalance_events())])
    assert main(["history", "--group", "app", "--path", history]) == 0
    out = capsys.readouterr().out
    for name in ("m0", "m1", "m2"):
        assert f"member joined {name}" in out
    for name in ("m1", "m2"):
        assert f"member left {name}" in out
    for name in ("m3", "m4", "m5"):
        assert f"member joined {name}" in out
