"""The share-state records: their codec, and the share-partition state rebuilt from them (the
batch combination against a per-offset reference; snapshots, updates, tombstones; the lag)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from coordinator.errors import DecodeError
from coordinator.records.codec import decode_share_state, encode_share_state
from coordinator.records.record import make_record
from coordinator.state.share_partition import (
    ACKNOWLEDGED, ARCHIVED, AVAILABLE, UNKNOWN, SharePartition, StateBatch, apply_share_record,
    combine_batches, records_by_delivery_count, records_by_state, share_lag)

KEY = {"group_id": "g", "topic_id": "AAAAAAAAAAAAAAAAAAAAAQ", "partition": 2}


def _batch(first: int, last: int, state: int, count: int) -> dict:
    return {"first_offset": first, "last_offset": last, "delivery_state": state, "delivery_count": count}


def _snapshot(start: int, batches: list[dict], complete: int | None = None, state_epoch: int = 0,
              snapshot_epoch: int = 0) -> dict:
    value = {"version": 0, "snapshot_epoch": snapshot_epoch, "state_epoch": state_epoch,
             "leader_epoch": 0, "start_offset": start, "create_timestamp": 1, "write_timestamp": 1,
             "state_batches": batches}
    if complete is not None:
        value["delivery_complete_count"] = complete
    return value


def _update(start: int, batches: list[dict], complete: int | None = None) -> dict:
    value = {"version": 0, "snapshot_epoch": 0, "leader_epoch": -1, "start_offset": start,
             "state_batches": batches}
    if complete is not None:
        value["delivery_complete_count"] = complete
    return value


def test_snapshot_bytes_as_kafka_lays_them_out() -> None:
    # ShareSnapshotKey: int16 type 0, GroupId string, TopicId uuid (16 bytes), Partition int32;
    # the value: int16 version 0, then flexible (a tag buffer per struct; the delivery-complete
    # count is tag 0, written only when it is not -1)
    key = bytes.fromhex("0000" "000167" + "00" * 15 + "01" + "00000002")
    value = bytes.fromhex("0000" "00000001" "00000000" "00000003" "000000000000000a"
                          "0000000000000005" "0000000000000006"
                          "02" "000000000000000a" "000000000000000c" "02" "0001" "00"
                          "01" "00" "04" "00000003")
    rec = decode_share_state(key, value)
    assert (rec.type, rec.type_name, rec.key) == (0, "share_snapshot", KEY)
    assert rec.value == {**_snapshot(10, [_batch(10, 12, ACKNOWLEDGED, 1)], complete=3,
                                     snapshot_epoch=1), "leader_epoch": 3,
                         "create_timestamp": 5, "write_timestamp": 6}
    assert encode_share_state(rec) == (key, value)


def test_update_round_trip_and_tombstone() -> None:
    rec = make_record(1, "share_update", KEY, _update(-1, [_batch(4, 9, ARCHIVED, 5)]))
    key, value = encode_share_state(rec)
    assert decode_share_state(key, value) == rec
    assert decode_share_state(key, None).value is None


@pytest.mark.parametrize("key, value, reason", [
    (b"\x00", None, "truncated"),
    (bytes.fromhex("0000000167") + b"\x00" * 10, None, "truncated"),
])
def test_malformed_share_records_raise_decode_errors(key: bytes, value, reason: str) -> None:
    with pytest.raises(DecodeError) as error:
        decode_share_state(key, value)
    assert error.value.reason == reason


def test_unknown_share_record_type() -> None:
    with pytest.raises(DecodeError):
        decode_share_state(bytes.fromhex("0005") + b"\x00" * 24, None)


def _per_offset(so_far: list[StateBatch], new: list[StateBatch], start: int) -> dict[int, tuple[int, int]]:
    """The reference: every offset's winning (count, state), one offset at a time."""
    out: dict[int, tuple[int, int]] = {}
    for b in (*so_far, *new):
        for offset in range(b.first_offset, b.last_offset + 1):
            if start != UNKNOWN and offset < start:
                continue
            rank = (b.delivery_count, b.delivery_state)
            out[offset] = max(out.get(offset, rank), rank)
    return out


_batches = st.lists(st.builds(lambda first, length, state, count: StateBatch(first, first + length, state, count),
                              st.integers(0, 40), st.integers(0, 8), st.sampled_from([AVAILABLE, ACKNOWLEDGED, ARCHIVED]),
                              st.integers(0, 4)), max_size=6)


@settings(max_examples=300, deadline=None)
@given(_batches, _batches, st.integers(-1, 30))
def test_combined_batches_equal_the_per_offset_reference(so_far, new, start) -> None:
    combined = combine_batches(so_far, new, start)
    got = {offset: (b.delivery_count, b.delivery_state)
           for b in combined for offset in range(b.first_offset, b.last_offset + 1)}
    assert got == _per_offset(so_far, new, start)
    for a, b in zip(combined, combined[1:]):  # sorted, disjoint, and neighbours differ
        assert a.last_offset < b.first_offset
        assert a.last_offset + 1 < b.first_offset or \
            (a.delivery_count, a.delivery_state) != (b.delivery_count, b.delivery_state)


def test_snapshot_update_tombstone() -> None:
    sp = apply_share_record(None, "share_snapshot", KEY,
                            _snapshot(10, [_batch(10, 11, ACKNOWLEDGED, 1), _batch(12, 14, AVAILABLE, 1)],
                                      complete=2), 1000)
    assert (sp.start_offset, sp.delivery_complete_count) == (10, 2)
    assert records_by_state(sp) == {"available": 3, "acknowledged": 2, "archived": 0}
    # offsets 12-13 delivered again and archived; 14 redelivered; the start offset unchanged (-1)
    sp = apply_share_record(sp, "share_update", KEY,
                            _update(-1, [_batch(12, 13, ARCHIVED, 2), _batch(14, 14, AVAILABLE, 2)],
                                    complete=4), 2000)
    assert sp.start_offset == 10 and sp.delivery_complete_count == 4 and sp.updated_ms == 2000
    assert records_by_state(sp) == {"available": 1, "acknowledged": 2, "archived": 2}
    assert records_by_delivery_count(sp) == {1: 2, 2: 3}
    assert sp.archived_seen == 2
    assert share_lag(sp, 20) == 20 - 10 - 4
    # the start offset moves past 10-13: what was below it goes, archived offsets stay counted
    sp = apply_share_record(sp, "share_update", KEY, _update(14, [_batch(14, 14, ACKNOWLEDGED, 2)],
                                                             complete=1), 3000)
    assert sp.batches == (StateBatch(14, 14, ACKNOWLEDGED, 2),)
    assert sp.archived_seen == 2 and share_lag(sp, 20) == 5
    # the same archived offsets written again are not counted twice
    again = apply_share_record(sp, "share_update", KEY, _update(-1, [_batch(14, 14, ARCHIVED, 2)]), 4000)
    again = apply_share_record(again, "share_update", KEY, _update(-1, [_batch(14, 14, ARCHIVED, 2)]), 5000)
    assert again.archived_seen == 3
    assert share_lag(again, 20) is None  # no delivery-complete count in the last update: unknown
    assert apply_share_record(sp, "share_snapshot", KEY, None, 6000) is None


def test_lag_unknown_until_initialised() -> None:
    sp = SharePartition("g", "t", 0, UNKNOWN, UNKNOWN, ())
    assert share_lag(sp, 10) is None
    assert share_lag(SharePartition("g", "t", 0, 3, 0, ()), None) is None
    assert share_lag(SharePartition("g", "t", 0, 3, 0, ()), 10) == 7


def test_lag_is_never_negative() -> None:
    """An end offset polled before the group received more records (or the last stable offset
    of an open transaction the group already has) is below the start offset: lag 0, as Kafka's
    share-group command shows."""
    assert share_lag(SharePartition("g", "t", 0, 20, 0, ()), 5) == 0
    assert share_lag(SharePartition("g", "t", 0, 10, 4, ()), 12) == 0


def test_the_sink_applies_a_batch_in_log_order_and_counts_what_it_skips() -> None:
    """ShareStateSink.apply: rows of several partitions in any order, applied per partition in
    offset order; undecodable ones counted by reason; other shards' groups and groups not served
    (groups.exclude) left out; a tombstone removes the share-partition from the view."""
    import threading

    from streaming.exporter.selection import Selection
    from streaming.exporter.view import MonitorView, ViewSettings
    from streaming.job.share_state import ShareStateSink

    view = MonitorView(ViewSettings(groups=Selection(exclude=("hidden",))))
    sink = ShareStateSink(view, keep_group=lambda g: g != "elsewhere", stopping=threading.Event())

    def row(group: str, record_type: str, value: dict | None, partition: int, offset: int):
        key = {**KEY, "group_id": group}
        rec = make_record(0 if record_type == "share_snapshot" else 1, record_type, key, value)
        return (*encode_share_state(rec), partition, offset, None)

    snapshot = _snapshot(0, [], complete=0)
    rows = [row("g", "share_update", _update(-1, [_batch(0, 2, ACKNOWLEDGED, 1)], complete=3), 1, 11),
            row("g", "share_snapshot", snapshot, 1, 10),
            row("elsewhere", "share_snapshot", snapshot, 0, 5),
            row("hidden", "share_snapshot", snapshot, 0, 6),
            (b"\x00\x00\x00", b"", 0, 7, None)]
    sink.apply(rows)
    assert list(view.share_partitions) == [("g", KEY["topic_id"], 2)]
    sp = view.share_partitions[("g", KEY["topic_id"], 2)]
    assert sp.start_offset == 0 and sp.delivery_complete_count == 3  # the update came after
    assert view.share_records == {"share_snapshot": 3, "share_update": 1}
    assert view.share_skipped == {"truncated": 1}
    sink.apply([row("g", "share_snapshot", None, 1, 12)])
    assert view.share_partitions == {}


def test_archives_from_before_the_start_are_state_not_news() -> None:
    """Records below the topic's end offset at the job's start (`backlog`) build the state but
    add nothing to the archived counter: a restarted job's counter starts from 0 again instead
    of counting old archives as new ones."""
    import threading

    from streaming.exporter.view import MonitorView
    from streaming.job.share_state import ShareStateSink

    def row(value: dict, offset: int):
        rec = make_record(1, "share_update", KEY, value)
        return (*encode_share_state(rec), 0, offset, None)

    first = _snapshot(0, [], complete=0)
    archive = _update(-1, [_batch(0, 3, ARCHIVED, 5)], complete=4)
    archive_more = _update(-1, [_batch(4, 5, ARCHIVED, 1)], complete=6)
    view = MonitorView()
    sink = ShareStateSink(view, lambda g: True, threading.Event(), backlog={0: 2})
    snapshot_row = (*encode_share_state(make_record(0, "share_snapshot", KEY, first)), 0, 0, None)
    sink.apply([snapshot_row, row(archive, 1), row(archive_more, 2)])
    (sp,) = view.share_partitions.values()
    assert records_by_state(sp)["archived"] == 6 and sp.archived_seen == 2


def test_offsets_that_hold_no_record_are_not_counted_as_archived() -> None:
    """A share consumer acknowledges a transaction marker's offset as a gap, which Kafka
    stores as archived, delivery count and all: the sink asks the topic's batches which of the
    offsets a batch archived hold no record and counts the rest. Another group's ranges of the
    same partition are asked together; a topic the metadata has not named keeps its count."""
    import threading

    from streaming.exporter.view import MonitorView
    from streaming.job.share_state import ShareStateSink

    def row(group: str, value: dict, offset: int, record_type: str = "share_update"):
        rec = make_record(0 if record_type == "share_snapshot" else 1, record_type,
                          {**KEY, "group_id": group}, value)
        return (*encode_share_state(rec), 0, offset, None)

    asked = []

    def gaps(wanted):
        asked.append(wanted)
        return {tp: {3, 7} for tp in wanted}  # the markers of two transactions

    view = MonitorView()
    view.update_topic_metadata({KEY["topic_id"]: "orders"}, {"orders": 3})
    sink = ShareStateSink(view, lambda g: True, threading.Event(), gaps=gaps)
    start = _snapshot(0, [], complete=0)
    sink.apply([row("g", start, 0, "share_snapshot"), row("h", start, 1, "share_snapshot"),
                # g: a record rejected at 2, the marker at 3 a gap; then 5-7, 7 a marker
                row("g", _update(-1, [_batch(2, 3, ARCHIVED, 1)], complete=2), 2),
                row("g", _update(-1, [_batch(5, 7, ARCHIVED, 1)], complete=5), 3),
                # h: only the marker at 3
                row("h", _update(-1, [_batch(3, 3, ARCHIVED, 1)], complete=1), 4)])
    assert asked == [{("orders", 2): [(2, 3), (5, 7), (3, 3)]}]
    sps = {group: sp for (group, _, _), sp in view.share_partitions.items()}
    assert (sps["g"].archived_seen, sps["h"].archived_seen) == (3, 0)
    assert records_by_state(sps["g"])["archived"] == 5  # Kafka's state itself is as written
    assert sps["g"].archived_new == ()
    # the same offsets written again are not new: nothing to ask
    sink.apply([row("g", _update(-1, [_batch(5, 7, ARCHIVED, 1)], complete=5), 5)])
    assert len(asked) == 1 and view.share_partitions[("g", KEY["topic_id"], 2)].archived_seen == 3
    # a topic the metadata does not name: not asked, counted whole
    other = dict(KEY, topic_id="AAAAAAAAAAAAAAAAAAAAAg")
    rec = make_record(0, "share_snapshot", other, start)
    sink.apply([(*encode_share_state(rec), 0, 6, None),
                (*encode_share_state(make_record(1, "share_update", other, _update(
                    -1, [_batch(3, 3, ARCHIVED, 1)], complete=1))), 0, 7, None)])
    assert len(asked) == 1
    assert view.share_partitions[("g", other["topic_id"], 2)].archived_seen == 1


def test_archived_counters_go_on_across_a_restart(tmp_path) -> None:
    """What a run counted is kept beside the checkpoint: the next run reads the topic from its
    start again, counts nothing of that backlog, and each share-partition's counter goes on from
    where it was instead of starting again from 0 (a reset to Prometheus)."""
    import threading

    from streaming.exporter.view import MonitorView
    from streaming.job.share_state import ArchivedCounts, ShareStateSink

    def row(value: dict, offset: int, kind: str = "share_update", rtype: int = 1):
        return (*encode_share_state(make_record(rtype, kind, KEY, value)), 0, offset, None)

    log = [row(_snapshot(0, [], complete=0), 0, "share_snapshot", 0),
           row(_update(-1, [_batch(0, 3, ARCHIVED, 5)], complete=4), 1),
           row(_update(-1, [_batch(4, 5, ARCHIVED, 1)], complete=6), 2)]
    counted = ArchivedCounts(str(tmp_path / "share-archived.json"))
    first = MonitorView()
    ShareStateSink(first, lambda g: True, threading.Event(), {}, counted=counted).apply(log)
    (sp,) = first.share_partitions.values()
    assert sp.archived_seen == 6
    # The restart: the whole log is backlog now, and one more archive follows it.
    log.append(row(_update(-1, [_batch(6, 6, ARCHIVED, 1)], complete=7), 3))
    again = MonitorView()
    ShareStateSink(again, lambda g: True, threading.Event(), {0: 3}, counted=counted).apply(log)
    (sp,) = again.share_partitions.values()
    assert sp.archived_seen == 7
    assert ArchivedCounts(str(tmp_path / "share-archived.json")).load() == {
        (sp.group, sp.topic_id, sp.partition): 7}
