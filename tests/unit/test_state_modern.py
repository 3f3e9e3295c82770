"""KIP-848 consumer groups (and share/streams groups) rebuilt from the record sequences Kafka's
new group coordinator writes: a join, a reconciliation with revocation, a leave, a conversion."""
from __future__ import annotations

import json
from pathlib import Path

from tests.support.paths import DATA
from coordinator.records import decode
from coordinator.state import GroupStore
from tests.support.state_timeline import (Timeline, cg_current, cg_epoch, cg_member, cg_partition_metadata, cg_target,
                            cg_target_epoch, group_metadata, group_tombstone, member, offset_commit, record,
                            tombstone)

G = "payments"
T1 = "AAAAAAAAAAAAAAAAAAAAAQ"     # the orders topic's id
T2 = "AAAAAAAAAAAAAAAAAAAAAg"
ORDERS = [(T1, p) for p in range(4)]


def join_and_leave() -> Timeline:
    tl = Timeline()
    # A creates the group and gets everything at once
    tl.add_all([cg_member(G, "A", ["orders"], client_id="ca"), cg_epoch(G, 1), cg_target(G, "A", ORDERS),
                cg_target_epoch(G, 1), cg_current(G, "A", 1, ORDERS)], 1_000)
    tl.add(offset_commit(G, "orders", 2, 50, 9_000), 9_000)
    # B joins: new epoch and target; B waits for partitions A still owns
    tl.add_all([cg_member(G, "B", ["orders"], client_id="cb"), cg_epoch(G, 2), cg_target(G, "A", ORDERS[:2]),
                cg_target(G, "B", ORDERS[2:]), cg_target_epoch(G, 2), cg_current(G, "B", 2, [], state=2)], 10_000)
    # A's heartbeat: it must revoke 2 and 3 first
    tl.add(cg_current(G, "A", 1, ORDERS[:2], previous=0, state=1, pending=ORDERS[2:]), 12_000)
    tl.add(cg_current(G, "A", 2, ORDERS[:2]), 13_000)            # A acknowledged the revocation
    tl.add(cg_current(G, "B", 2, ORDERS[2:]), 14_000)            # B gets 2 and 3: converged
    tl.add(offset_commit(G, "orders", 2, 60, 15_500), 15_500)    # B's first commit of orders-2
    # B leaves: its tombstones, then the epoch bump and the new target
    tl.add_all([tombstone(8, G, "B"), tombstone(7, G, "B"), tombstone(5, G, "B"), cg_epoch(G, 3),
                cg_target(G, "A", ORDERS), cg_target_epoch(G, 3)], 20_000)
    tl.add(cg_current(G, "A", 3, ORDERS), 21_000)
    return tl


def test_the_assignment_timestamp_dates_the_reconciliation():
    """Kafka 4.3+ dates each target assignment (KIP-1263): from that time to the convergence is
    the rebalance's sync phase; a target without it (4.2 and before) leaves the phase unknown."""
    tl = Timeline()
    tl.add_all([cg_member(G, "A", ["orders"]), cg_epoch(G, 1), cg_target(G, "A", ORDERS),
                cg_target_epoch(G, 1), cg_current(G, "A", 1, ORDERS)], 1_000)
    # B joins at 10.0 s; the coordinator computes the target at 10.4 s (an assignment interval)
    tl.add_all([cg_member(G, "B", ["orders"]), cg_epoch(G, 2)], 10_000)
    tl.add_all([cg_target(G, "A", ORDERS[:2]), cg_target(G, "B", ORDERS[2:]),
                cg_target_epoch(G, 2, timestamp_ms=10_400), cg_current(G, "B", 2, [], state=2)], 10_450)
    tl.add(cg_current(G, "A", 2, ORDERS[:2]), 12_000)
    tl.add(cg_current(G, "B", 2, ORDERS[2:]), 13_100)
    rebalances = [e.to_dict() for e in tl.replay(GroupStore(topic_names={T1: "orders"}))
                  if e.event == "rebalance"]
    assert [(r["start_ms"], r["end_ms"], r["sync_seconds"]) for r in rebalances] == [
        (1_000, 1_000, None), (10_000, 13_100, 2.7)]
    # dated before the epoch bump's own record (Kafka dates it before it appends both): the
    # phase is the whole rebalance, no longer
    tl.add_all([cg_member(G, "C", ["orders"]), cg_epoch(G, 3), cg_target(G, "C", []),
                cg_target_epoch(G, 3, timestamp_ms=19_990), cg_current(G, "C", 3, [])], 20_000)
    tl.add_all([cg_current(G, "A", 3, ORDERS[:2]), cg_current(G, "B", 3, ORDERS[2:])], 20_500)
    last = [e.to_dict() for e in tl.replay(GroupStore(topic_names={T1: "orders"})) if e.event == "rebalance"][-1]
    assert (last["duration_seconds"], last["sync_seconds"]) == (0.5, 0.5)


def states_along(tl: Timeline, store: GroupStore) -> list[str]:
    out = []
    for rec, partition, offset, ts in tl.entries:
        store.apply(rec, partition=partition, offset=offset, timestamp_ms=ts)
        out.append(store.groups()[G].to_dict()["state"])
    return out


def test_group_state_follows_the_epochs():
    tl = join_and_leave()
    states = states_along(tl, GroupStore(topic_names={T1: "orders"}))
    assert states[:5] == ["Reconciling", "Assigning", "Assigning", "Reconciling", "Stable"]
    assert states[6:15] == ["Reconciling", "Assigning", "Assigning", "Assigning", "Reconciling", "Reconciling",
                            "Reconciling", "Reconciling", "Stable"]


def test_join_with_revocation_is_one_exact_rebalance():
    store = GroupStore(topic_names={T1: "orders"}, partition_counts={"orders": 4})
    events = join_and_leave().replay(store)
    rebalances = [e.to_dict() for e in events if e.event == "rebalance"]
    assert [(r["from_generation"], r["to_generation"], r["start_ms"], r["end_ms"]) for r in rebalances] == [
        (0, 1, 1_000, 1_000), (1, 2, 10_000, 14_000), (2, 3, 20_000, 21_000)]
    join = rebalances[1]
    assert join["group_type"] == "consumer" and join["protocol"] == "uniform"
    assert (join["start_method"], join["sync_seconds"], join["duration_seconds"]) == ("exact", None, 4.0)
    assert (join["members_joined"], join["members_left"], join["members_kept"]) == (["B"], [], ["A"])
    assert join["partitions_moved"] == [["orders", 2], ["orders", 3]]
    assert join["partitions_kept"] == [["orders", 0], ["orders", 1]]
    assert join["quality"] == {"members": 2, "min_partitions": 2, "max_partitions": 2, "skew": 0,
                               "idle_members": 0, "unowned_partitions": {"orders": 0}}
    leave = rebalances[2]
    assert (leave["members_left"], leave["members_kept"]) == (["B"], ["A"])
    assert leave["partitions_moved"] == [["orders", 2], ["orders", 3]]
    assert leave["partitions_revoked"] == [["orders", 2], ["orders", 3]]
    downtime = [e.to_dict() for e in events if e.event == "rebalance_downtime"]
    # orders-2: last committed at 9.0 s (by A), B's assignment record at 14.0 s hands it over; back
    # to A at 21.0 s after B's last commit at 15.5 s. orders-3 was never committed: nothing to measure.
    assert [(d["to_generation"], d["partition_id"], d["downtime_seconds"]) for d in downtime] == [
        (2, 2, 5.0), (3, 2, 5.5)]
    # they follow their rebalance event, at the record that converged the group
    names = [e.event for e in events]
    assert names[names.index("rebalance_downtime") - 1] == "rebalance"
    assert [d["timestamp_ms"] for d in downtime] == [14_000, 21_000]


def test_member_view_during_reconciliation():
    store = GroupStore(topic_names={T1: "orders"})
    tl = join_and_leave()
    tl.entries = tl.entries[:13]     # up to A's UNREVOKED_PARTITIONS heartbeat
    tl.replay(store)
    state = store.groups()[G].to_dict()
    assert (state["state"], state["generation"], state["assignment_epoch"]) == ("Reconciling", 2, 2)
    a, b = state["members"]
    assert a == {
        "member_id": "A", "group_instance_id": None, "client_id": "ca", "client_host": "/10.0.0.2", "rack": None,
        "session_timeout_ms": None, "rebalance_timeout_ms": 300_000, "subscribed_topics": ["orders"],
        "subscribed_topic_regex": None, "assigned": [["orders", 0], ["orders", 1]], "member_epoch": 1,
        "member_state": "UNREVOKED_PARTITIONS", "target": [["orders", 0], ["orders", 1]],
        "pending_revocation": [["orders", 2], ["orders", 3]], "extra": {"server_assignor": "uniform"}}
    assert (b["member_state"], b["assigned"], b["target"]) == (
        "UNRELEASED_PARTITIONS", [], [["orders", 2], ["orders", 3]])
    assert state["protocol_type"] == "consumer" and state["protocol"] == "uniform"


def test_topic_ids_are_named_from_partition_metadata_then_the_caller_else_left_as_ids():
    store = GroupStore()
    join_and_leave().replay(store)
    assert store.groups()[G].to_dict()["members"][0]["assigned"][0] == [T1, 0]
    store.set_topic_names({T1: "orders"})
    assert store.groups()[G].to_dict()["members"][0]["assigned"][0] == ["orders", 0]

    store = GroupStore(topic_names={T1: "wrong-name"})
    store.apply(cg_partition_metadata(G, {T1: ("orders", 4), T2: ("refunds", 2)}), partition=0, offset=0,
                timestamp_ms=1)
    store.apply(cg_member(G, "A", ["orders", "refunds"]), partition=0, offset=1, timestamp_ms=1)
    store.apply(cg_current(G, "A", 1, [(T1, 0), (T2, 1)]), partition=0, offset=2, timestamp_ms=1)
    assert store.groups()[G].to_dict()["members"][0]["assigned"] == [["orders", 0], ["refunds", 1]]


def test_topic_ids_are_named_from_v4_offset_commits():
    store = GroupStore()
    tl = join_and_leave()
    tl.add(offset_commit(G, "orders", 1, 70, 30_000, version=4, topic_id=T1), 30_000)
    tl.replay(store)
    assert store.groups()[G].to_dict()["members"][0]["assigned"][0] == ["orders", 0]
    # a v3 commit carries no id, so the join-and-leave commits alone name nothing
    store = GroupStore()
    join_and_leave().replay(store)
    assert store.groups()[G].to_dict()["members"][0]["assigned"][0] == [T1, 0]


def test_regex_subscription_resolves_to_topics():
    store = GroupStore()
    store.apply(cg_member(G, "A", [], regex="ord.*"), partition=0, offset=0, timestamp_ms=1)
    store.apply(record(16, {"group_id": G, "regular_expression": "ord.*"},
                       {"version": 0, "topics": ["orders", "ordinals"], "metadata_version": 9, "timestamp": 5}),
                partition=0, offset=1, timestamp_ms=2)
    state = store.groups()[G].to_dict()
    assert state["members"][0]["subscribed_topic_regex"] == "ord.*"
    assert state["subscribed_topics"] == ["orders", "ordinals"]


def test_classic_to_consumer_conversion_keeps_offsets_and_is_not_a_rebalance():
    store = GroupStore(topic_names={T1: "orders"})
    tl = Timeline()
    tl.add(group_metadata(G, 5, [member("A", ["orders"], [("orders", p) for p in range(4)])], state_ts=90), 100)
    tl.add(offset_commit(G, "orders", 0, 42, 200), 200)
    tl.add_all([group_tombstone(G), cg_member(G, "A", ["orders"]), cg_epoch(G, 5), cg_target(G, "A", ORDERS),
                cg_target_epoch(G, 5), cg_current(G, "A", 5, ORDERS)], 300)
    events = tl.replay(store)
    # generation 5 was met mid-life (no rebalance); the conversion keeps epoch 5 (no rebalance either).
    # The classic group's tombstone is still reported as its deletion; A does not join again.
    assert [e.event for e in events] == ["member_joined", "offset_committed", "group_deleted"]
    state = store.groups()[G].to_dict()
    assert (state["group_type"], state["state"], state["generation"]) == ("consumer", "Stable", 5)
    assert [(o["topic"], o["partition"], o["offset"]) for o in state["offsets"]] == [("orders", 0, 42)]
    # the next join is measured against the converted assignment
    tl2 = Timeline()
    tl2._next = dict(tl._next)
    tl2.add_all([cg_member(G, "B", ["orders"]), cg_epoch(G, 6), cg_target(G, "A", ORDERS[:2]),
                 cg_target(G, "B", ORDERS[2:]), cg_target_epoch(G, 6), cg_current(G, "A", 6, ORDERS[:2]),
                 cg_current(G, "B", 6, ORDERS[2:])], 400)
    (reb,) = [e.to_dict() for e in tl2.replay(store) if e.event == "rebalance"]
    assert (reb["from_generation"], reb["to_generation"], reb["members_kept"], reb["partitions_moved"]) == (
        5, 6, ["A"], [["orders", 2], ["orders", 3]])


def test_consumer_group_deletion():
    store = GroupStore(topic_names={T1: "orders"})
    tl = join_and_leave()
    tl.add_all([offset_commit(G, "orders", 0, 1, 30_000)], 30_000)
    tl.add_all([record(1, {"group": G, "topic": "orders", "partition": p}, None) for p in (0, 2)]
               + [tombstone(8, G, "A"), tombstone(7, G, "A"), tombstone(6, G), tombstone(5, G, "A"),
                  tombstone(3, G)], 40_000)
    events = tl.replay(store)
    assert [e.event for e in events][-5:] == ["offset_deleted", "offset_deleted", "member_left", "group_emptied",
                                             "group_deleted"]
    state = store.groups()[G].to_dict()
    assert (state["state"], state["members"], state["offsets"]) == ("Dead", [], [])


def test_share_group():
    group = "share-app"
    store = GroupStore(topic_names={T1: "orders"})
    tl = Timeline()
    tl.add_all([
        record(10, {"group_id": group, "member_id": "S1"}, {"version": 0, "rack_id": "r1", "client_id": "sc",
                                                            "client_host": "/h", "subscribed_topic_names": ["orders"]}),
        record(11, {"group_id": group}, {"version": 0, "epoch": 1, "metadata_hash": 77}),
        record(13, {"group_id": group, "member_id": "S1"},
               {"version": 0, "topic_partitions": [{"topic_id": T1, "partitions": [0, 1]}]}),
        record(12, {"group_id": group}, {"version": 0, "assignment_epoch": 1}),
        record(14, {"group_id": group, "member_id": "S1"}, {
            "version": 0, "member_epoch": 1, "previous_member_epoch": 0, "state": 0,
            "assigned_partitions": [{"topic_id": T1, "partitions": [0, 1]}]}),
    ], 500)
    events = tl.replay(store)
    state = store.groups()[group].to_dict()
    assert (state["group_type"], state["state"], state["generation"], state["assignment_epoch"]) == (
        "share", "Stable", 1, 1)
    (m,) = state["members"]
    assert (m["rack"], m["assigned"], m["target"], m["pending_revocation"], m["member_state"]) == (
        "r1", [["orders", 0], ["orders", 1]], [["orders", 0], ["orders", 1]], None, "STABLE")
    assert [e.event for e in events] == ["member_joined", "rebalance"]


def test_streams_group_tasks_and_not_ready_without_topology():
    group = "streams-app"
    store = GroupStore()
    tl = Timeline()
    tl.add(record(19, {"group_id": group, "member_id": "K1"}, {
        "version": 0, "instance_id": None, "rack_id": None, "client_id": "kc", "client_host": "/h",
        "rebalance_timeout_ms": 1000, "topology_epoch": 0, "process_id": "p1", "user_endpoint": None,
        "client_tags": []}), 10)
    tl.add(record(17, {"group_id": group}, {"version": 0, "epoch": 1, "metadata_hash": 5}), 10)
    tl.replay(store)
    assert store.groups()[group].to_dict()["state"] == "NotReady"
    tl.entries = []
    tasks = [{"subtopology_id": "0", "partitions": [0, 1]}]
    tl.add_all([
        record(23, {"group_id": group}, {"version": 0, "epoch": 0, "subtopologies": [{
            "subtopology_id": "0", "source_topics": ["clicks"], "source_topic_regex": [],
            "state_changelog_topics": [], "repartition_sink_topics": [], "repartition_source_topics": [],
            "copartition_groups": []}]}),
        record(21, {"group_id": group, "member_id": "K1"},
               {"version": 0, "active_tasks": tasks, "standby_tasks": [], "warmup_tasks": []}),
        record(20, {"group_id": group}, {"version": 0, "assignment_epoch": 1}),
        record(22, {"group_id": group, "member_id": "K1"}, {
            "version": 0, "member_epoch": 1, "previous_member_epoch": 0, "state": 1, "active_tasks": tasks,
            "standby_tasks": [], "warmup_tasks": [], "active_tasks_pending_revocation": [],
            "standby_tasks_pending_revocation": [], "warmup_tasks_pending_revocation": []}),
    ], 20)
    events = tl.replay(store)
    state = store.groups()[group].to_dict()
    assert (state["group_type"], state["state"], state["subscribed_topics"]) == ("streams", "Stable", ["clicks"])
    (m,) = state["members"]
    assert (m["assigned"], m["member_state"], m["extra"]["process_id"]) == ([["0", 0], ["0", 1]], "STABLE", "p1")
    (reb,) = [e.to_dict() for e in events if e.event == "rebalance"]
    assert reb["partitions_assigned"] == [["0", 0], ["0", 1]] and reb["quality"]["unowned_partitions"] is None


def test_real_kip848_vectors_reconstruct_the_states_their_fields_imply():
    vectors = [json.loads(line) for line in
               (DATA / "real-vectors.jsonl").read_text().splitlines() if line.strip()]
    kafka = [v for v in vectors if "redpanda" in v["source"]]
    keys = {v["version"]: v["hex"] for v in kafka if v["kind"] == "key"}
    values = {}
    for v in kafka:
        if v["kind"] == "value":
            values.setdefault(v["record_type"], []).append(v)
    tid = "AQIDBAUGBwgJCgsMDQ4PEA"

    def apply_all(member_value):
        store = GroupStore()
        order = [(5, member_value), (3, values["ConsumerGroupMetadataValue"][1]),
                 (7, values["ConsumerGroupTargetAssignmentMemberValue"][0]),
                 (6, values["ConsumerGroupTargetAssignmentMetadataValue"][0]),
                 (8, values["ConsumerGroupCurrentMemberAssignmentValue"][0])]
        for offset, (rtype, vector) in enumerate(order):
            store.apply(decode(bytes.fromhex(keys[rtype]), bytes.fromhex(vector["hex"])), partition=0,
                        offset=offset, timestamp_ms=offset)
        return store

    store = apply_all(values["ConsumerGroupMemberMetadataValue"][0])
    state = store.groups()["g1"].to_dict()
    # epoch 7 is ahead of the target assignment's epoch 3: the group is assigning
    assert (state["group_type"], state["state"], state["generation"], state["assignment_epoch"]) == (
        "consumer", "Assigning", 7, 3)
    (m1,) = state["members"]
    assert (m1["member_id"], m1["client_id"], m1["client_host"], m1["subscribed_topics"],
            m1["rebalance_timeout_ms"], m1["session_timeout_ms"]) == ("m1", "c", "h", ["t"], 1000, None)
    assert (m1["assigned"], m1["target"], m1["member_epoch"], m1["member_state"]) == (
        [[tid, 0]], [[tid, 0]], 1, "STABLE")
    store.set_topic_names({tid: "t"})
    assert store.groups()["g1"].to_dict()["members"][0]["assigned"] == [["t", 0]]

    classic = apply_all(values["ConsumerGroupMemberMetadataValue"][1]).groups()["g1"].to_dict()["members"][0]
    assert (classic["session_timeout_ms"], classic["extra"]["classic_protocols"]) == (30_000, ["range"])
