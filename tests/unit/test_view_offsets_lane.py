"""The view takes the offsets lane's changes a column at a time: commits of groups the group lane
did not show this batch, their deletions, offsets-only groups made as Kafka shows them, deleted
groups kept hidden until a commit finds them again."""
from __future__ import annotations

import pyarrow as pa

from coordinator.state.lanes import offsets_only_view
from streaming.exporter.view import MonitorView
from streaming.offsets.lane import OffsetsLane
from streaming.offsets.table import COMMIT_INPUT

T0 = 1_763_000_000_000


def _commits(rows: list[tuple]) -> pa.Table:
    """(group, o_offset, topic, partition, offset or None) rows of __consumer_offsets partition 4."""
    columns = {name: [] for name in COMMIT_INPUT}
    for group, o_offset, topic, partition, offset in rows:
        for name, value in zip(COMMIT_INPUT, (group, T0 + o_offset, 4, o_offset, topic, partition,
                                               offset, 0, "", T0 + o_offset, None)):
            columns[name].append(value)
    types = [pa.string(), pa.int64(), pa.int32(), pa.int64(), pa.string(), pa.int32(), pa.int64(),
             pa.int32(), pa.string(), pa.int64(), pa.string()]
    return pa.table({name: pa.array(columns[name], t) for name, t in zip(COMMIT_INPUT, types)})


def _batch(lane: OffsetsLane, view: MonitorView, rows, snapshots=(), events=()) -> list[dict]:
    batch = lane.apply_batch(_commits(rows), list(snapshots), list(events))
    view.update_groups(list(snapshots))
    view.apply_events(list(events) + batch.applied.events)
    view.apply_offsets(batch.applied, batch.by_group_lane, batch.revived)
    return batch.applied.events


def test_an_offsets_only_group_is_served_as_kafka_shows_it():
    lane, view = OffsetsLane(), MonitorView()
    _batch(lane, view, [("solo", 0, "orders", 0, 10), ("solo", 1, "orders", 1, 20),
                        ("solo", 2, "orders", 0, 11)])
    assert view.committed("solo") == {("orders", 0): 11, ("orders", 1): 20}
    expected = offsets_only_view("solo", 4, T0 + 2)
    served = view.groups["solo"].snapshot
    assert {k: served[k] for k in ("state", "group_type", "generation", "members")} == \
        {k: expected[k] for k in ("state", "group_type", "generation", "members")} == \
        {"state": "Empty", "group_type": "classic", "generation": 0, "members": []}
    assert view.groups["solo"].last_activity_s == (T0 + 2) / 1000.0
    events = _batch(lane, view, [("solo", 3, "orders", 1, None), ("solo", 4, "orders", 7, None)])
    assert view.committed("solo") == {("orders", 0): 11}
    # Only the tombstone of an offset the group held deletes anything.
    assert [(e["event"], e["partition_id"]) for e in events] == [("offset_deleted", 1)]
    # A replayed batch changes nothing and says nothing again.
    assert _batch(lane, view, [("solo", 3, "orders", 1, None), ("solo", 2, "orders", 0, 11)]) == []
    assert view.committed("solo") == {("orders", 0): 11}


def test_a_deleted_group_stays_hidden_until_a_commit_finds_it_again():
    lane, view = OffsetsLane(), MonitorView()
    _batch(lane, view, [("g", 0, "orders", 0, 10), ("g", 1, "orders", 1, 20)])
    dead = dict(offsets_only_view("g", 4, T0 + 2), state="Dead")
    deleted = {"event": "group_deleted", "group": "g", "timestamp_ms": T0 + 2, "partition": 4,
               "offset": 2, "group_type": "classic", "generation": 0}
    _batch(lane, view, [], snapshots=[dead], events=[deleted])
    assert view.committed("g") == {}
    assert view.groups["g"].dead_since_s is not None
    # A tombstone of a deleted group's offset deletes nothing visible: no event, still hidden.
    assert _batch(lane, view, [("g", 3, "orders", 1, None)]) == []
    assert view.committed("g") == {} and view.groups["g"].dead_since_s is not None
    # A commit finds it again, with the offsets it kept (orders-1 was deleted meanwhile).
    _batch(lane, view, [("g", 4, "payments", 0, 5)])
    assert view.groups["g"].dead_since_s is None
    assert view.committed("g") == {("orders", 0): 10, ("payments", 0): 5}
    assert view.groups["g"].snapshot["state"] == "Empty"


def test_groups_the_group_lane_showed_take_their_offsets_from_its_snapshot():
    lane, view = OffsetsLane(), MonitorView()
    snapshot = dict(offsets_only_view("busy", 4, T0 + 1), offsets=[
        {"topic": "orders", "partition": 0, "offset": 10, "leader_epoch": None, "metadata": "",
         "commit_timestamp_ms": T0, "topic_id": None}])
    _batch(lane, view, [("busy", 0, "orders", 0, 10), ("other", 1, "orders", 0, 3)],
           snapshots=[snapshot])
    assert view.committed("busy") == {("orders", 0): 10}
    assert view.committed("other") == {("orders", 0): 3}


def test_a_seeded_group_is_replaced_by_the_log():
    lane, view = OffsetsLane(), MonitorView()
    seeded = dict(offsets_only_view("s", 4, T0), offsets=[
        {"topic": "orders", "partition": 5, "offset": 99, "leader_epoch": None, "metadata": "",
         "commit_timestamp_ms": T0, "topic_id": None}])
    view.seed_groups([seeded])
    assert view.committed("s") == {("orders", 5): 99}
    _batch(lane, view, [("s", 0, "orders", 0, 10)])
    assert "s" not in view.seeded
    assert view.committed("s") == {("orders", 0): 10}


def test_a_v4_commit_names_the_topic_ids_of_the_groups_assignment():
    """A KIP-848 group's assignment records list topic ids; in a compacted log its first v4
    commit (which carries the id with the name) may come after them. Once it does, the
    members' partitions are served by name, as one reducer fed every record names them."""
    lane, view = OffsetsLane(), MonitorView()
    topic_id = "msmzlbe1QEGQME1tJ4c4Yw"
    member = {"member_id": "m1", "assigned": [[topic_id, 1], [topic_id, 0]], "target": None,
              "pending_revocation": None, "subscribed_topics": ["cmp-data"]}
    snapshot = dict(offsets_only_view("k", 4, T0), group_type="consumer", members=[member],
                    state="Stable", offsets=[])
    _batch(lane, view, [], snapshots=[snapshot])
    assert view.groups["k"].snapshot["members"][0]["assigned"] == [[topic_id, 1], [topic_id, 0]]
    rows = _commits([("k", 5, "cmp-data", 0, 10), ("k", 6, "cmp-data", 1, 11)])
    rows = rows.set_column(rows.schema.get_field_index("c_topic_id"), "c_topic_id",
                           pa.array([topic_id, topic_id], pa.string()))
    batch = lane.apply_batch(rows, [], [])
    view.apply_offsets(batch.applied, batch.by_group_lane, batch.revived)
    assert view.groups["k"].snapshot["members"][0]["assigned"] == [["cmp-data", 0], ["cmp-data", 1]]
    assert set(view.groups["k"].owners) == {("cmp-data", 0), ("cmp-data", 1)}


def test_a_restart_serves_every_entry_the_lane_holds():
    """`OffsetsLane.everything` (what a restart hands the view) lists each held entry once, with
    its last commit: a new view fed it serves what the running one served."""
    lane, view = OffsetsLane(), MonitorView()
    _batch(lane, view, [("a", 0, "orders", 0, 10), ("a", 1, "orders", 1, 20),
                        ("b", 2, "orders", 0, 5), ("a", 3, "orders", 0, 11),
                        ("b", 4, "orders", 0, None)])
    restarted = MonitorView()
    restarted.apply_offsets(lane.everything().applied)
    assert {g: restarted.committed(g) for g in ("a", "b")} == \
        {g: view.committed(g) for g in ("a", "b")} == {"a": {("orders", 0): 11, ("orders", 1): 20},
                                                       "b": {}}


def _served_groups(view: MonitorView) -> dict[str, dict]:
    """Each group's kafka_consumergroup_info labels as a scrape of the view shows them."""
    from streaming.exporter.metrics_cache import MetricsCache
    from tests.support.scrape_support import parse

    info = parse(MetricsCache(view).text()).get("kafka_consumergroup_info", {})
    return {dict(labels)["group"]: dict(labels) for labels in info}


def test_a_restart_serves_an_offsets_only_group_whose_offsets_were_all_deleted(tmp_path):
    """Kafka keeps a group that only commits once its offsets are deleted (an Empty classic
    group, until its offsets cleanup writes the group's tombstone): the running view serves it,
    and so does a view restarted from the lane's files. A group the group lane deleted is not
    made again."""
    from streaming.offsets.store import OffsetsStore

    def clock() -> float:  # a minute after the records: no group has expired
        return T0 / 1000.0 + 60

    lane, view = OffsetsLane(store=OffsetsStore(str(tmp_path))), MonitorView(clock=clock)
    rows = [[("solo", 0, "orders", 0, 10), ("solo", 1, "orders", 1, 20), ("kept", 2, "orders", 0, 5),
             ("gone", 3, "orders", 0, 7)],
            [("solo", 4, "orders", 0, None), ("solo", 5, "orders", 1, None), ("gone", 6, "orders", 0, None)]]
    for batch_id, batch in enumerate(rows):
        commits = lane.apply_batch(_commits(batch), [], [], batch_id)
        view.apply_events(commits.applied.events)
        view.apply_offsets(commits.applied, commits.by_group_lane, commits.revived)
    dead = dict(offsets_only_view("gone", 4, T0 + 7), state="Dead")
    deleted = {"event": "group_deleted", "group": "gone", "timestamp_ms": T0 + 7, "partition": 4,
               "offset": 7, "group_type": "classic", "generation": 0}
    _batch(lane, view, [], snapshots=[dead], events=[deleted])
    assert "solo" in _served_groups(view) and view.committed("solo") == {}

    restarted_lane = OffsetsLane(OffsetsStore(str(tmp_path)).load(len(rows) - 1))
    restarted_lane.table.note_deleted("gone", 7)  # as restored_lane notes the group lane's deaths
    restarted = MonitorView(clock=clock)
    restarted.apply_offsets(restarted_lane.everything().applied)
    restarted.serve_offsets_only(restarted_lane.without_entries())
    served = _served_groups(restarted)
    assert {g: served[g] for g in ("solo", "kept")} == {g: _served_groups(view)[g] for g in ("solo", "kept")}
    assert served["solo"]["state"] == "Empty" and "gone" not in served
    assert {g: restarted.committed(g) for g in ("solo", "kept")} == {"solo": {}, "kept": {("orders", 0): 5}}
    assert restarted.groups["solo"].last_activity_s == (T0 + 5) / 1000.0  # the last record's time
