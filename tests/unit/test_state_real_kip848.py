"""The reducer on real KIP-848 records: a Kafka 4.4 broker's `__consumer_offsets` for one group
(tests/data/kip848-uniform-join-leave.jsonl, uniform assignor, 10 partitions): four consumers
form the group, a fifth joins, one leaves gracefully. What the clients saw (jvm/harness) is in the
expectations."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from coordinator.records import decode
from coordinator.state import GroupStore

pytestmark = pytest.mark.unit

DATA = Path(__file__).resolve().parents[1] / "data" / "kip848-uniform-join-leave.jsonl"
TOPIC = "r-consumer-uniform-84f2"
JOIN_EPOCH, LEAVE_EPOCH = 6, 7
CLOSING_COMMIT_MS = 1795677009855   # the leaving member's commit of partitions 3 and 4, 27 ms before its tombstones


def _replay() -> list[dict]:
    store = GroupStore(emit_offset_events=False)
    events = []
    for line in DATA.read_text().splitlines():
        row = json.loads(line)
        value = None if row["value_hex"] is None else bytes.fromhex(row["value_hex"])
        record = decode(bytes.fromhex(row["key_hex"]), value)
        events += [e.to_dict() for e in store.apply(record, row["partition"], row["offset"], row["timestamp_ms"])]
    return events


def _rebalance(events: list[dict], to_epoch: int) -> dict:
    (event,) = [e for e in events if e["event"] == "rebalance" and e["to_generation"] == to_epoch]
    return event


def test_the_group_is_created_at_epoch_2_and_its_forming_moves_nothing() -> None:
    # Kafka 4.4 writes a new group's first epoch as 2; the assignment the first member held alone
    # before any commit named the topic is not a previous owner of anything.
    first = [e for e in _replay() if e["event"] == "rebalance"][0]
    assert first["from_generation"] == 0
    assert first["partitions_moved"] == [] and first["partitions_revoked"] == []


def test_a_fifth_consumer_joining_moves_what_the_clients_saw_move() -> None:
    event = _rebalance(_replay(), JOIN_EPOCH)
    assert event["partitions_moved"] == [[TOPIC, 2], [TOPIC, 9]]
    assert len(event["members_joined"]) == 1 and len(event["members_kept"]) == 4


def test_a_graceful_leave_starts_at_the_leaving_members_closing_commit() -> None:
    events = _replay()
    event = _rebalance(events, LEAVE_EPOCH)
    assert event["start_ms"] == CLOSING_COMMIT_MS
    assert event["partitions_moved"] == [[TOPIC, 3], [TOPIC, 4]]
    downtime = {e["partition_id"]: e["downtime_seconds"] for e in events
                if e["event"] == "rebalance_downtime" and e["to_generation"] == LEAVE_EPOCH}
    assert set(downtime) == {3, 4} and all(s > 0 for s in downtime.values())
