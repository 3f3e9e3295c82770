"""Committed offsets: versions, tombstones, transactions (read_committed and raw), idempotence."""
from __future__ import annotations

import pytest

from coordinator import partition_for
from coordinator.state import GroupStore, InvalidRecord
from tests.support.state_timeline import offset_commit, offset_tombstone

G = "billing"


def offsets(store: GroupStore, group: str = G) -> list[tuple]:
    return [(o["topic"], o["partition"], o["offset"]) for o in store.groups()[group].to_dict()["offsets"]]


def test_every_value_version_becomes_an_offset_with_the_fields_it_has():
    store = GroupStore()
    store.apply(offset_commit(G, "t", 0, 10, 1_000, version=1), partition=0, offset=0, timestamp_ms=1_000)
    store.apply(offset_commit(G, "t", 1, 11, 1_001, version=3, leader_epoch=7, metadata="m"), partition=0,
                offset=1, timestamp_ms=1_001)
    store.apply(offset_commit(G, "t", 2, 12, 1_002, version=4, leader_epoch=8, topic_id="AAAAAAAAAAAAAAAAAAAAAQ"),
                partition=0, offset=2, timestamp_ms=1_002)
    got = store.groups()[G].to_dict()["offsets"]
    assert got == [
        {"topic": "t", "partition": 0, "offset": 10, "leader_epoch": None, "metadata": "",
         "commit_timestamp_ms": 1_000, "topic_id": None},
        {"topic": "t", "partition": 1, "offset": 11, "leader_epoch": 7, "metadata": "m",
         "commit_timestamp_ms": 1_001, "topic_id": None},
        {"topic": "t", "partition": 2, "offset": 12, "leader_epoch": 8, "metadata": "",
         "commit_timestamp_ms": 1_002, "topic_id": "AAAAAAAAAAAAAAAAAAAAAQ"},
    ]


def test_offset_events_and_tombstones():
    store = GroupStore()
    (ev,) = store.apply(offset_commit(G, "t", 0, 10, 1_000), partition=3, offset=7, timestamp_ms=1_000)
    assert ev.to_dict() == {"event": "offset_committed", "group": G, "timestamp_ms": 1_000, "partition": 3,
                            "offset": 7, "topic": "t", "partition_id": 0, "committed_offset": 10,
                            "leader_epoch": None, "metadata": "", "commit_timestamp_ms": 1_000, "topic_id": None}
    (ev,) = store.apply(offset_tombstone(G, "t", 0), partition=3, offset=8, timestamp_ms=2_000)
    assert ev.to_dict() == {"event": "offset_deleted", "group": G, "timestamp_ms": 2_000, "partition": 3,
                            "offset": 8, "topic": "t", "partition_id": 0}
    assert offsets(store) == []
    # a tombstone for an offset (or a group) never seen changes nothing and creates nothing
    assert store.apply(offset_tombstone("ghost", "t", 0), partition=3, offset=9, timestamp_ms=2_000) == []
    assert "ghost" not in store.groups()


def test_offset_events_can_be_switched_off_for_the_hot_path():
    store = GroupStore(emit_offset_events=False)
    assert store.apply(offset_commit(G, "t", 0, 10, 1_000), partition=0, offset=0, timestamp_ms=1_000) == []
    assert offsets(store) == [("t", 0, 10)]


def test_records_at_or_below_the_applied_position_are_ignored():
    store = GroupStore()
    store.apply(offset_commit(G, "t", 0, 10, 1_000), partition=0, offset=5, timestamp_ms=1_000)
    assert store.apply(offset_commit(G, "t", 0, 99, 1_000), partition=0, offset=5, timestamp_ms=1_000) == []
    assert store.apply(offset_commit(G, "t", 0, 98, 1_000), partition=0, offset=4, timestamp_ms=1_000) == []
    assert offsets(store) == [("t", 0, 10)]
    # positions are per offsets-topic partition
    store.apply(offset_commit(G, "t", 1, 11, 1_000), partition=1, offset=0, timestamp_ms=1_000)
    assert offsets(store) == [("t", 0, 10), ("t", 1, 11)]


def test_read_committed_delivery_applies_records_in_log_order():
    # What a read_committed consumer delivers: aborted transactional records are simply absent, and a
    # committed transactional commit and a later plain one both apply where they sit.
    store = GroupStore()
    store.apply(offset_commit(G, "t", 0, 10, 1), partition=0, offset=0, timestamp_ms=1)
    store.apply(offset_commit(G, "t", 0, 20, 2), partition=0, offset=1, timestamp_ms=2)   # txn, committed
    store.apply(offset_commit(G, "t", 0, 15, 4), partition=0, offset=3, timestamp_ms=4)   # plain, later
    assert offsets(store) == [("t", 0, 15)]


class TestRawTransactions:
    """Records delivered with their batch's producer id, and the control markers (COMMIT / ABORT)."""

    def test_commit_marker_makes_pending_offsets_visible(self):
        store = GroupStore()
        assert store.apply(offset_commit(G, "t", 0, 20, 5), partition=0, offset=10, timestamp_ms=5,
                           producer_id=7, is_transactional=True) == []
        assert offsets(store) == []
        events = store.apply(None, partition=0, offset=11, timestamp_ms=6, producer_id=7, control="commit")
        assert [(e.event, e.offset, e.fields["committed_offset"]) for e in events] == [("offset_committed", 11, 20)]
        assert offsets(store) == [("t", 0, 20)]

    def test_abort_marker_drops_them(self):
        store = GroupStore()
        store.apply(offset_commit(G, "t", 0, 10, 1), partition=0, offset=9, timestamp_ms=1, producer_id=-1)
        store.apply(offset_commit(G, "t", 0, 20, 5), partition=0, offset=10, timestamp_ms=5, producer_id=7,
                    is_transactional=True)
        assert store.apply(None, partition=0, offset=11, timestamp_ms=6, producer_id=7, control="abort") == []
        assert offsets(store) == [("t", 0, 10)]
        # a second marker with nothing pending is ignored
        assert store.apply(None, partition=0, offset=12, timestamp_ms=7, producer_id=7, control="commit") == []

    @pytest.mark.parametrize("txn_first, expected", [(True, 30), (False, 20)])
    def test_the_commit_later_in_the_log_wins(self, txn_first, expected):
        store = GroupStore()
        txn = (offset_commit(G, "t", 0, 20, 5), dict(producer_id=7, is_transactional=True))
        plain = (offset_commit(G, "t", 0, 30, 6), dict(producer_id=-1))
        for log_offset, (rec, how) in enumerate([txn, plain] if txn_first else [plain, txn], start=10):
            store.apply(rec, partition=0, offset=log_offset, timestamp_ms=5, **how)
        store.apply(None, partition=0, offset=12, timestamp_ms=7, producer_id=7, control=1)
        assert offsets(store) == [("t", 0, expected)]

    def test_tombstone_removes_pending_entries_of_every_transaction(self):
        store = GroupStore()
        store.apply(offset_commit(G, "t", 0, 20, 5), partition=0, offset=10, timestamp_ms=5, producer_id=7,
                    is_transactional=True)
        store.apply(offset_commit(G, "t", 1, 21, 5), partition=0, offset=11, timestamp_ms=5, producer_id=8,
                    is_transactional=True)
        store.apply(offset_commit(G, "t", 1, 1, 5), partition=0, offset=12, timestamp_ms=5, producer_id=-1)
        store.apply(offset_tombstone(G, "t", 1), partition=0, offset=13, timestamp_ms=6, producer_id=-1)
        store.apply(None, partition=0, offset=14, timestamp_ms=7, producer_id=7, control="commit")
        store.apply(None, partition=0, offset=15, timestamp_ms=7, producer_id=8, control="commit")
        assert offsets(store) == [("t", 0, 20)]

    def test_a_marker_settles_only_commits_in_its_own_partition(self):
        store = GroupStore()
        store.apply(offset_commit("a", "t", 0, 20, 5), partition=1, offset=10, timestamp_ms=5, producer_id=7,
                    is_transactional=True)
        store.apply(offset_commit("b", "t", 0, 30, 5), partition=2, offset=10, timestamp_ms=5, producer_id=7,
                    is_transactional=True)
        store.apply(None, partition=1, offset=11, timestamp_ms=6, producer_id=7, control="commit")
        assert offsets(store, "a") == [("t", 0, 20)] and offsets(store, "b") == []
        store.apply(None, partition=2, offset=11, timestamp_ms=6, producer_id=7, control="commit")
        assert offsets(store, "b") == [("t", 0, 30)]

    def test_replayed_marker_is_ignored(self):
        store = GroupStore()
        store.apply(offset_commit(G, "t", 0, 20, 5), partition=0, offset=10, timestamp_ms=5, producer_id=7,
                    is_transactional=True)
        store.apply(None, partition=0, offset=11, timestamp_ms=6, producer_id=7, control="commit")
        store.apply(offset_commit(G, "t", 0, 25, 5), partition=0, offset=12, timestamp_ms=7, producer_id=7,
                    is_transactional=True)
        assert store.apply(None, partition=0, offset=11, timestamp_ms=6, producer_id=7, control="commit") == []
        assert offsets(store) == [("t", 0, 20)]


def test_bad_input_is_a_clear_error():
    store = GroupStore()
    with pytest.raises(InvalidRecord, match="not a decoded __consumer_offsets record"):
        store.apply({"type": 1}, partition=0, offset=0, timestamp_ms=0)
    with pytest.raises(ValueError, match="control marker needs producer_id"):
        store.apply(None, partition=0, offset=0, timestamp_ms=0, control="maybe")
    with pytest.raises(ValueError, match="num_partitions"):
        GroupStore(num_partitions=0)


def test_coordinator_partition_is_the_partition_the_records_land_in():
    # Kafka writes a group's records to partitionFor(group) of the topic's own partition count,
    # which the reducer need not know: the records say it.
    for partitions in (50, 10, 7):
        where = partition_for("testgroup", partitions)
        store = GroupStore()
        store.apply(offset_commit("testgroup", "t", 0, 1, 1), partition=where, offset=0, timestamp_ms=1)
        assert store.groups()["testgroup"].to_dict()["coordinator_partition"] == where
    assert len({partition_for("testgroup", n) for n in (50, 10, 7)}) == 3  # the counts tell apart
