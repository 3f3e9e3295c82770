"""Classic groups rebuilt from timelines written the way Kafka's classic coordinator writes them."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.paths import DATA
from coordinator import partition_for
from coordinator.protocol.connect import encode_connect_assignment, encode_connect_metadata
from coordinator.records import decode
from coordinator.state import GroupState, GroupStore
from tests.support.state_timeline import (Timeline, group_metadata, group_tombstone, member, offset_commit,
                            offset_tombstone, record)

G = "orders-app"
ALL = [("orders", p) for p in range(4)]


def commits(ts: int, parts: list[int], offset: int = 100) -> list:
    return [offset_commit(G, "orders", p, offset + p, ts) for p in parts]


def lifecycle() -> Timeline:
    """One member, a second joins (burst, sync), the second leaves, the last leaves, deletion."""
    tl = Timeline()
    tl.add(group_metadata(G, 1, [member("A", ["orders"], ALL, client_id="ca")], state_ts=900), 1_000)
    tl.add_all(commits(5_000, [0, 1, 2, 3]), 5_000)
    tl.add_all(commits(8_000, [0, 1, 2, 3], 200), 8_000)
    tl.add_all(commits(12_500, [0, 1, 2, 3], 300), 12_500)           # A's pre-rebalance burst
    tl.add(group_metadata(G, 2, [member("A", ["orders"], ALL[:2], client_id="ca"),
                                 member("B", ["orders"], ALL[2:], client_id="cb", host="/10.0.0.9")],
                          state_ts=14_000), 14_100)
    tl.add(offset_commit(G, "orders", 2, 400, 20_000), 20_000)      # B's first commit of orders-2
    tl.add(offset_commit(G, "orders", 0, 401, 20_100), 20_100)      # A's partition was never moved
    tl.add_all(commits(30_000, [0, 1], 500), 30_000)
    tl.add_all(commits(30_500, [2, 3], 500), 30_500)
    tl.add(group_metadata(G, 3, [member("A", ["orders"], ALL, client_id="ca")], state_ts=31_000), 31_200)
    tl.add(group_metadata(G, 4, [], state_ts=40_000), 40_000)
    tl.add_all([offset_tombstone(G, "orders", p) for p in range(4)], 50_000)
    tl.add(group_tombstone(G), 50_000)
    return tl


def by_name(events, name):
    return [e.to_dict() for e in events if e.event == name]


def test_first_generation_is_a_rebalance_from_zero_estimated_from_the_state_timestamp():
    store = GroupStore(partition_counts={"orders": 4})
    tl = lifecycle()
    rec, partition, offset, ts = tl.entries[0]
    events = store.apply(rec, partition=partition, offset=offset, timestamp_ms=ts)
    assert [e.event for e in events] == ["member_joined", "rebalance"]
    reb = events[1].to_dict()
    assert reb == {
        "event": "rebalance", "group": G, "timestamp_ms": 1_000, "partition": partition_for(G), "offset": 0,
        "group_type": "classic", "protocol": "range", "from_generation": 0, "to_generation": 1,
        "start_ms": 900, "start_method": "state_timestamp", "end_ms": 1_000, "sync_seconds": 0.1,
        "duration_seconds": 0.1, "members_joined": ["A"], "members_left": [], "members_kept": [],
        "partitions_revoked": [], "partitions_assigned": [list(tp) for tp in ALL], "partitions_kept": [],
        "partitions_moved": [],
        "quality": {"members": 1, "min_partitions": 4, "max_partitions": 4, "skew": 0, "idle_members": 0,
                    "unowned_partitions": {"orders": 0}},
    }
    state = store.groups()[G].to_dict()
    assert state["state"] == "Stable" and state["generation"] == 1 and state["leader"] == "A"
    assert state["members"][0] == {
        "member_id": "A", "group_instance_id": None, "client_id": "ca", "client_host": "/10.0.0.1", "rack": None,
        "session_timeout_ms": 45_000, "rebalance_timeout_ms": 300_000, "subscribed_topics": ["orders"],
        "subscribed_topic_regex": None, "assigned": [list(tp) for tp in ALL], "member_epoch": None,
        "member_state": None, "target": None, "pending_revocation": None, "extra": {}}


def test_join_rebalance_uses_the_commit_burst_and_measures_downtime_of_moved_partitions():
    store = GroupStore(partition_counts={"orders": 4})
    events = lifecycle().replay(store)
    rebalances = by_name(events, "rebalance")
    assert [(r["from_generation"], r["to_generation"]) for r in rebalances] == [(0, 1), (1, 2), (2, 3)]
    join = rebalances[1]
    assert (join["start_ms"], join["start_method"], join["end_ms"]) == (12_500, "commit_burst", 14_100)
    assert join["sync_seconds"] == pytest.approx(0.1)
    assert join["duration_seconds"] == pytest.approx(1.6)
    assert join["members_joined"] == ["B"] and join["members_kept"] == ["A"] and join["members_left"] == []
    assert join["partitions_revoked"] == [["orders", 2], ["orders", 3]]
    assert join["partitions_assigned"] == [["orders", 2], ["orders", 3]]
    assert join["partitions_kept"] == [["orders", 0], ["orders", 1]]
    assert join["partitions_moved"] == [["orders", 2], ["orders", 3]]
    assert join["quality"] == {"members": 2, "min_partitions": 2, "max_partitions": 2, "skew": 0,
                               "idle_members": 0, "unowned_partitions": {"orders": 0}}
    leave = rebalances[2]
    # the burst spans both members' commits (500 ms apart) and not the commits of generation 1
    assert (leave["start_ms"], leave["start_method"]) == (30_000, "commit_burst")
    assert leave["duration_seconds"] == pytest.approx(1.2)
    assert leave["members_left"] == ["B"] and leave["partitions_moved"] == [["orders", 2], ["orders", 3]]

    # range is eager: kept partitions stall too and get their own downtime (estimator.py)
    downtime = [d for d in by_name(events, "rebalance_downtime") if d["partition_id"] in (2, 3)]
    # moved at generation 2: last commits 12.5 s (A's burst), handed over by the 14.1 s record;
    # moved back at generation 3: last commits 30.5 s (B's burst before leaving), record at 31.2 s
    assert downtime[0] == {"event": "rebalance_downtime", "group": G, "timestamp_ms": 14_100,
                           "partition": partition_for(G), "offset": 13, "to_generation": 2, "topic": "orders",
                           "partition_id": 2, "downtime_seconds": 1.6}
    assert [(d["to_generation"], d["partition_id"], d["downtime_seconds"]) for d in downtime] == [
        (2, 2, 1.6), (2, 3, 1.6), (3, 2, 0.7), (3, 3, 0.7)]


def test_empty_snapshot_then_tombstones_empty_and_delete_the_group():
    store = GroupStore()
    events = lifecycle().replay(store)
    names = [e.event for e in events]
    assert names[-7:] == ["member_left", "group_emptied", "offset_deleted", "offset_deleted", "offset_deleted",
                          "offset_deleted", "group_deleted"]
    assert by_name(events, "group_emptied")[0]["generation"] == 4
    assert by_name(events, "group_deleted")[0]["generation"] == 4
    state = store.groups()[G].to_dict()
    assert state["state"] == "Dead" and state["offsets"] == [] and state["members"] == []
    assert state["last_rebalance"]["to_generation"] == 3


def test_empty_group_keeps_its_offsets_and_generation():
    store = GroupStore()
    tl = lifecycle()
    tl.entries = tl.entries[:-5]   # up to the Empty snapshot
    tl.replay(store)
    state = store.groups()[G].to_dict()
    assert (state["state"], state["generation"], state["protocol"], state["leader"]) == ("Empty", 4, None, None)
    assert [(o["partition"], o["offset"], o["commit_timestamp_ms"]) for o in state["offsets"]] == [
        (0, 500, 30_000), (1, 501, 30_000), (2, 502, 30_500), (3, 503, 30_500)]
    assert state["current_state_timestamp_ms"] == 40_000


def test_member_events_carry_client_identity():
    events = lifecycle().replay(GroupStore())
    joined = by_name(events, "member_joined")
    left = by_name(events, "member_left")
    assert [(e["member_id"], e["client_id"], e["client_host"]) for e in joined] == [
        ("A", "ca", "/10.0.0.1"), ("B", "cb", "/10.0.0.9")]
    assert [(e["member_id"], e["timestamp_ms"]) for e in left] == [("B", 31_200), ("A", 40_000)]


def test_rewriting_the_same_generation_is_not_a_rebalance():
    store = GroupStore()
    store.apply(group_metadata(G, 5, [member("A", ["orders"], ALL)], state_ts=10), partition=0, offset=0,
                timestamp_ms=100)
    # a static member replaced: same generation, new member id
    events = store.apply(group_metadata(G, 5, [member("A2", ["orders"], ALL, instance_id="i1")], state_ts=10),
                         partition=0, offset=1, timestamp_ms=200)
    assert [e.event for e in events] == ["member_joined", "member_left"]
    assert store.groups()[G].to_dict()["members"][0]["group_instance_id"] == "i1"


def test_a_group_met_mid_life_emits_no_rebalance_until_its_next_generation():
    store = GroupStore()
    events = store.apply(group_metadata(G, 57, [member("A", ["orders"], ALL)], state_ts=10), partition=0,
                         offset=0, timestamp_ms=100)
    assert [e.event for e in events] == ["member_joined"]
    events = store.apply(group_metadata(G, 58, [member("A", ["orders"], ALL)], state_ts=150), partition=0,
                         offset=1, timestamp_ms=200)
    reb = [e.to_dict() for e in events if e.event == "rebalance"]
    assert [(r["from_generation"], r["to_generation"], r["partitions_kept"]) for r in reb] == [
        (57, 58, [list(tp) for tp in ALL])]


def test_skew_idle_members_and_unowned_partitions():
    store = GroupStore(partition_counts={"orders": 6, "audit": 2})
    events = store.apply(group_metadata(G, 1, [
        member("A", ["orders"], [("orders", 0), ("orders", 1), ("orders", 2)]),
        member("B", ["orders"], [("orders", 3)]),
        member("C", ["audit"], []),
    ]), partition=0, offset=0, timestamp_ms=100)
    quality = events[-1].to_dict()["quality"]
    assert quality == {"members": 3, "min_partitions": 0, "max_partitions": 3, "skew": 2, "idle_members": 1,
                       "unowned_partitions": {"audit": 2, "orders": 2}}


def test_connect_group_lists_workers_connectors_and_tasks():
    def worker(mid, url, tasks):
        sub = encode_connect_metadata({"version": 1, "url": url, "config_offset": 7, "allocation": None}).hex()
        asg = encode_connect_assignment({
            "version": 1, "error": 0, "leader": "w1", "leader_url": "http://w1:8083", "config_offset": 7,
            "assignment": tasks, "revoked": [], "scheduled_delay": 0}).hex()
        return {"member_id": mid, "group_instance_id": None, "client_id": "connect-1", "client_host": "/10.1.0.1",
                "rebalance_timeout": 60_000, "session_timeout": 10_000, "subscription": sub, "assignment": asg}

    rec = group_metadata("connect-cluster", 3, [
        worker("w1", "http://w1:8083", [{"connector": "jdbc", "tasks": [-1, 0]}]),
        worker("w2", "http://w2:8083", [{"connector": "jdbc", "tasks": [1]}]),
    ], protocol="sessioned", protocol_type="connect")
    store = GroupStore()
    store.apply(rec, partition=1, offset=0, timestamp_ms=10)
    state = store.groups()["connect-cluster"].to_dict()
    assert (state["protocol_type"], state["protocol"]) == ("connect", "sessioned")
    w1, w2 = state["members"]
    assert w1["assigned"] == [["jdbc", -1], ["jdbc", 0]] and w2["assigned"] == [["jdbc", 1]]
    assert w1["extra"]["url"] == "http://w1:8083" and w1["extra"]["connectors"] == ["jdbc"]
    assert w1["extra"]["tasks"] == [["jdbc", 0]] and w2["extra"]["connectors"] == []


def _real_vectors() -> list[dict]:
    path = DATA / "real-vectors.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_real_group_metadata_vectors_reconstruct_the_states_their_fields_imply():
    vectors = _real_vectors()
    key = next(v for v in vectors if v["record_type"] == "GroupMetadataKey"
               and v["expected"]["group"] == "kafkesc-devcluster-group-id")
    values = [v for v in vectors if v["record_type"] == "GroupMetadataValue" and "konsumer_offsets" in v["source"]]
    assert len(values) == 5
    for vector in values:
        rec = decode(bytes.fromhex(key["hex"]), bytes.fromhex(vector["hex"]))
        store = GroupStore()
        store.apply(rec, partition=46, offset=0, timestamp_ms=1)
        expected = vector["expected"]
        state = store.groups()["kafkesc-devcluster-group-id"].to_dict()
        assert state["generation"] == expected["generation"]
        assert state["protocol"] == expected["protocol"] and state["leader"] == expected["leader"]
        assert state["current_state_timestamp_ms"] == expected["currentStateTimestamp"]
        assert state["state"] == ("Stable" if expected["members"] else "Empty")
        assert state["coordinator_partition"] == 46
        assert [m["member_id"] for m in state["members"]] == sorted(m["memberId"] for m in expected["members"])
        for m in state["members"]:
            raw = next(x for x in expected["members"] if x["memberId"] == m["member_id"])
            assert (m["client_id"], m["client_host"], m["session_timeout_ms"], m["rebalance_timeout_ms"]) == (
                raw["clientId"], raw["clientHost"], raw["sessionTimeout"], raw["rebalanceTimeout"])
            assert m["subscribed_topics"] and m["assigned"]
    # the one-member v3 vector: rdkafka subscribed to t01 and owns t01 partitions 0-2
    first = decode(bytes.fromhex(key["hex"]), bytes.fromhex(values[0]["hex"]))
    store = GroupStore()
    store.apply(first, partition=46, offset=0, timestamp_ms=1)
    (only,) = store.groups()["kafkesc-devcluster-group-id"].to_dict()["members"]
    assert only["subscribed_topics"] == ["t01"] and only["assigned"] == [["t01", 0], ["t01", 1], ["t01", 2]]


def test_real_offset_commit_vectors_become_visible_offsets():
    vectors = _real_vectors()
    key = next(v for v in vectors if v["record_type"] == "OffsetCommitKey" and v["expected"].get("group") ==
               "ivan-experimental-consumer")
    value = next(v for v in vectors if v["record_type"] == "OffsetCommitValue" and v["version"] == 4)
    rec = decode(bytes.fromhex(key["hex"]), bytes.fromhex(value["hex"]))
    store = GroupStore()
    store.apply(rec, partition=46, offset=0, timestamp_ms=1)
    (entry,) = store.groups()["ivan-experimental-consumer"].to_dict()["offsets"]
    assert entry == {"topic": "__consumer_offsets", "partition": 46, "offset": 2217128, "leader_epoch": None,
                     "metadata": "", "commit_timestamp_ms": 1758335260726, "topic_id": None}


def test_state_round_trips_through_bytes():
    store = GroupStore()
    lifecycle().replay(store)
    state = store.groups()[G]
    again = GroupState.from_bytes(state.to_bytes())
    assert again == state and again.to_dict() == state.to_dict()


def test_value_v0_members_take_the_session_timeout_as_rebalance_timeout():
    m = member("A", ["orders"], ALL)
    v0_member = {k: m[k] for k in ("member_id", "client_id", "client_host", "session_timeout", "subscription",
                                   "assignment")}
    rec = record(2, {"group": G}, {"version": 0, "protocol_type": "consumer", "generation": 2,
                                   "protocol": "range", "leader": "A", "members": [v0_member]})
    store = GroupStore()
    store.apply(rec, partition=0, offset=0, timestamp_ms=10)
    state = store.groups()[G].to_dict()
    assert state["current_state_timestamp_ms"] is None
    (a,) = state["members"]
    assert (a["rebalance_timeout_ms"], a["session_timeout_ms"], a["group_instance_id"]) == (45_000, 45_000, None)
    assert a["assigned"] == [list(tp) for tp in ALL]


def test_kafka_streams_groups_are_read_through_the_consumer_envelope():
    store = GroupStore()
    store.apply(group_metadata("streams-app", 1, [member("A", ["clicks"], [("clicks", 0)])], protocol="stream"),
                partition=0, offset=0, timestamp_ms=10)
    (a,) = store.groups()["streams-app"].to_dict()["members"]
    assert (a["assigned"], a["subscribed_topics"], a["extra"]) == ([["clicks", 0]], ["clicks"], {"streams": True})
