"""A group tombstone removes the group, never its committed offsets: Kafka keeps offsets apart
from the group (the 4.x coordinator's OffsetMetadataManager; the 3.x loader attaches them after
loading both) and drops one only with its own tombstone, whatever record of the group comes next.
These are the record sequences Kafka's coordinator replays, as written and as the log cleaner
leaves them (the latest record of each key, in log order)."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.state import GroupStore
from coordinator.state.group import CLASSIC
from tests.support.state_timeline import (Timeline, cg_current, cg_epoch, cg_member, cg_target, cg_target_epoch,
                                          compacted, group_metadata, group_tombstone, member, offset_commit,
                                          offset_tombstone, tombstone)
from tests.unit.test_state_properties import GROUPS, IDS, streams

G = "billing"
T1 = "AAAAAAAAAAAAAAAAAAAAAQ"
ORDERS = [(T1, p) for p in range(4)]


def offsets_of(store: GroupStore, group: str = G) -> dict[tuple[str, int], int]:
    return {(o["topic"], o["partition"]): o["offset"] for o in store.groups()[group].to_dict()["offsets"]}


def replayed(tl: Timeline) -> GroupStore:
    store = GroupStore(topic_names={T1: "orders"})
    tl.replay(store)
    return store


def committed(tl: Timeline) -> Timeline:
    tl.add_all([offset_commit(G, "orders", p, 100 + p, 1_000) for p in range(3)], 1_000)
    return tl


def test_an_offset_commit_after_the_tombstone_keeps_the_older_offsets():
    tl = committed(Timeline())
    tl.add(group_tombstone(G), 2_000)
    tl.add(offset_commit(G, "orders", 3, 7, 3_000), 3_000)
    assert offsets_of(replayed(tl)) == {("orders", 0): 100, ("orders", 1): 101, ("orders", 2): 102,
                                        ("orders", 3): 7}


def test_new_metadata_of_the_same_kind_after_the_tombstone_keeps_the_offsets():
    tl = committed(Timeline())
    tl.add(group_metadata(G, 1, [member("A", ["orders"], [("orders", 0)])]), 1_500)
    tl.add(group_tombstone(G), 2_000)
    tl.add(group_metadata(G, 1, [member("B", ["orders"], [("orders", 0)])]), 3_000)
    store = replayed(tl)
    view = store.groups()[G].to_dict()
    assert (view["state"], [m["member_id"] for m in view["members"]]) == ("Stable", ["B"])
    assert offsets_of(store) == {("orders", 0): 100, ("orders", 1): 101, ("orders", 2): 102}


def test_a_dead_group_hides_its_offsets_and_their_own_tombstones_still_remove_them():
    tl = committed(Timeline())
    tl.add(group_tombstone(G), 2_000)
    store = replayed(tl)
    assert store.groups()[G].to_dict()["state"] == "Dead" and offsets_of(store) == {}
    tl.add(offset_tombstone(G, "orders", 1), 2_500)
    tl.add(group_metadata(G, 0, []), 3_000)
    assert offsets_of(replayed(tl)) == {("orders", 0): 100, ("orders", 2): 102}


def consumer_group_life(tl: Timeline, members: bool) -> Timeline:
    """A classic group upgraded to the consumer protocol, then downgraded back (the last
    consumer-protocol member left, or a classic member joined an empty group)."""
    tl.add(group_metadata(G, 3, [member("A", ["orders"], [("orders", p) for p in range(4)])]), 500)
    committed(tl)
    tl.add_all([group_tombstone(G), cg_member(G, "A", ["orders"]), cg_epoch(G, 3), cg_target(G, "A", ORDERS),
                cg_target_epoch(G, 3), cg_current(G, "A", 3, ORDERS)], 1_500)
    tl.add(offset_commit(G, "orders", 0, 200, 1_800), 1_800)
    tl.add_all([tombstone(8, G, "A"), tombstone(7, G, "A"), tombstone(6, G), tombstone(5, G, "A"),
                tombstone(3, G)], 2_000)
    back = [member("B", ["orders"], [("orders", p) for p in range(4)])] if members else []
    tl.add(group_metadata(G, 4, back), 2_000)
    return tl


def test_a_downgrade_keeps_the_offsets_as_written_and_compacted():
    for members in (True, False):
        for drop_tombstones in (False, True):
            tl = compacted(consumer_group_life(Timeline(), members), drop_tombstones=drop_tombstones)
            store = replayed(tl)
            view = store.groups()[G].to_dict()
            assert (view["group_type"], view["state"]) == (CLASSIC, "Stable" if members else "Empty")
            assert offsets_of(store) == {("orders", 0): 200, ("orders", 1): 101, ("orders", 2): 102}, (
                members, drop_tombstones)
        # as written, too
        assert offsets_of(replayed(consumer_group_life(Timeline(), members)))[("orders", 0)] == 200


def test_an_upgrade_keeps_the_offsets_as_written_and_compacted():
    for members in (True, False):
        tl = committed(Timeline())
        tl.add(group_metadata(G, 2, [member("A", ["orders"], [("orders", 0)])] if members else []), 1_200)
        tl.add_all([group_tombstone(G), cg_member(G, "A", ["orders"]), cg_epoch(G, 3), cg_target(G, "A", ORDERS),
                    cg_target_epoch(G, 3), cg_current(G, "A", 3, ORDERS)], 1_500)
        for drop_tombstones in (None, False, True):
            shown = tl if drop_tombstones is None else compacted(tl, drop_tombstones=drop_tombstones)
            store = replayed(shown)
            assert store.groups()[G].to_dict()["group_type"] == "consumer"
            assert offsets_of(store) == {("orders", 0): 100, ("orders", 1): 101, ("orders", 2): 102}


def kafka_offsets(stream) -> dict[str, dict[tuple[str, int], int]]:
    """Kafka's offsets model: per group and partition, the latest commit unless its tombstone
    came after it; group records play no part."""
    offsets: dict[str, dict[tuple[str, int], int]] = {}
    for rec, *_ in stream:
        if rec is None or rec["type"] not in (0, 1):
            continue
        key = rec["key"]
        group = offsets.setdefault(key["group"], {})
        if rec["value"] is None:
            group.pop((key["topic"], key["partition"]), None)
        else:
            group[(key["topic"], key["partition"])] = rec["value"]["offset"]
    return {g: o for g, o in offsets.items() if o}


def held_offsets(store: GroupStore) -> dict[str, dict[tuple[str, int], int]]:
    """What groupscope holds, shown or (for a Dead group) kept for the group's next record."""
    out = {}
    for name, state in store.groups().items():
        held = state.graveyard if state.dead else state.offsets
        if held:
            out[name] = {tp: entry[0] for tp, entry in held.items()}
    return out


@settings(max_examples=200, deadline=None)
@given(streams(), st.booleans())
def test_offsets_are_kafkas_whatever_the_group_records_and_the_compaction(stream, drop_tombstones):
    # read_committed delivery: no transactions, no markers
    stream = [(rec, partition, offset, ts) for rec, partition, offset, ts, pid, txn, control in stream
              if control is None and not txn]
    keyed = [(rec, p, o, ts) for rec, p, o, ts in stream]
    for shown in (keyed, compacted(keyed, drop_tombstones=drop_tombstones)):
        store = GroupStore(topic_names=IDS, partition_counts={"a": 4, "b": 4})
        for rec, partition, offset, ts in shown:
            store.apply(rec, partition=partition, offset=offset, timestamp_ms=ts)
        assert held_offsets(store) == kafka_offsets(keyed)
    assert set(held_offsets(store)) <= set(GROUPS)
