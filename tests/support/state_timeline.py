"""Builds `__consumer_offsets` timelines for the state-reducer tests.

Records are written as canonical dicts, encoded to bytes with the codec and decoded back, so the
reducer sees exactly what the Spark job will hand it. The helpers mirror what Kafka's group
coordinator writes (classic and KIP-848 records, transactional commits).
"""
from __future__ import annotations

from typing import Any, Iterable

from coordinator import partition_for
from coordinator.protocol.consumer import encode_assignment, encode_subscription
from coordinator.records import decode, encode
from coordinator.records.layouts import TYPE_NAMES


def record(rtype: int, key: dict[str, Any], value: dict[str, Any] | None):
    """canonical dict -> bytes -> Record, through the real codec."""
    k, v = encode({"type": rtype, "type_name": TYPE_NAMES[rtype], "key": key, "value": value})
    return decode(k, v)


def _grouped(pairs: Iterable[tuple[str, int]], field: str = "topic") -> list[dict[str, Any]]:
    by: dict[str, list[int]] = {}
    for t, p in sorted(pairs):
        by.setdefault(t, []).append(p)
    return [{field: t, "partitions": ps} for t, ps in by.items()]


# ----- classic ----------------------------------------------------------------------------------

def offset_commit(group: str, topic: str, partition: int, offset: int, ts: int, *, version: int = 3,
                  leader_epoch: int = -1, metadata: str = "", topic_id: str | None = None):
    value: dict[str, Any] = {"version": version, "offset": offset}
    if version >= 3:
        value["leader_epoch"] = leader_epoch
    value["metadata"] = metadata
    value["commit_timestamp"] = ts
    if version == 1:
        value["expire_timestamp"] = ts + 86_400_000
    if topic_id is not None:
        value["topic_id"] = topic_id
    return record(1, {"group": group, "topic": topic, "partition": partition}, value)


def offset_tombstone(group: str, topic: str, partition: int):
    return record(1, {"group": group, "topic": topic, "partition": partition}, None)


def member(member_id: str, topics: list[str], assigned: Iterable[tuple[str, int]], *, client_id: str = "client",
           host: str = "/10.0.0.1", instance_id: str | None = None, rack: str | None = None,
           rebalance_timeout: int = 300_000, session_timeout: int = 45_000) -> dict[str, Any]:
    sub = {"version": 3, "topics": topics, "user_data": None, "owned_partitions": [], "generation_id": -1,
           "rack_id": rack}
    asg = {"version": 3, "assigned_partitions": _grouped(assigned), "user_data": None}
    return {"member_id": member_id, "group_instance_id": instance_id, "client_id": client_id, "client_host": host,
            "rebalance_timeout": rebalance_timeout, "session_timeout": session_timeout,
            "subscription": encode_subscription(sub).hex(), "assignment": encode_assignment(asg).hex()}


def group_metadata(group: str, generation: int, members: list[dict[str, Any]], *, protocol: str | None = "range",
                   state_ts: int = -1, protocol_type: str = "consumer"):
    leader = members[0]["member_id"] if members else None
    return record(2, {"group": group}, {
        "version": 3, "protocol_type": protocol_type, "generation": generation,
        "protocol": protocol if members else None, "leader": leader,
        "current_state_timestamp": state_ts, "members": members})


def group_tombstone(group: str):
    return record(2, {"group": group}, None)


# ----- KIP-848 consumer groups ------------------------------------------------------------------

def cg_member(group: str, member_id: str, topics: list[str], *, regex: str | None = None,
              assignor: str | None = "uniform", client_id: str = "client", host: str = "/10.0.0.2",
              instance_id: str | None = None, rack: str | None = None):
    return record(5, {"group_id": group, "member_id": member_id}, {
        "version": 0, "instance_id": instance_id, "rack_id": rack, "client_id": client_id, "client_host": host,
        "subscribed_topic_names": sorted(topics), "subscribed_topic_regex": regex, "rebalance_timeout_ms": 300_000,
        "server_assignor": assignor})


def cg_epoch(group: str, epoch: int):
    return record(3, {"group_id": group}, {"version": 0, "epoch": epoch})


def cg_target_epoch(group: str, epoch: int, timestamp_ms: int | None = None):
    """Target assignment metadata; `timestamp_ms`: KIP-1263's AssignmentTimestamp (4.3+)."""
    value = {"version": 0, "assignment_epoch": epoch}
    if timestamp_ms is not None:
        value["assignment_timestamp"] = timestamp_ms
    return record(6, {"group_id": group}, value)


def cg_target(group: str, member_id: str, assigned: Iterable[tuple[str, int]]):
    return record(7, {"group_id": group, "member_id": member_id},
                  {"version": 0, "topic_partitions": _grouped(assigned, "topic_id")})


def cg_current(group: str, member_id: str, epoch: int, assigned: Iterable[tuple[str, int]], *,
               previous: int | None = None, state: int = 0, pending: Iterable[tuple[str, int]] = ()):
    return record(8, {"group_id": group, "member_id": member_id}, {
        "version": 0, "member_epoch": epoch, "previous_member_epoch": epoch - 1 if previous is None else previous,
        "state": state, "assigned_partitions": _grouped(assigned, "topic_id"),
        "partitions_pending_revocation": _grouped(pending, "topic_id")})


def cg_partition_metadata(group: str, topics: dict[str, tuple[str, int]]):
    """topics: topic id -> (name, partition count)."""
    return record(4, {"group_id": group}, {"version": 0, "topics": [
        {"topic_id": tid, "topic_name": name, "num_partitions": n, "partition_metadata": []}
        for tid, (name, n) in topics.items()]})


def tombstone(rtype: int, group: str, member_id: str | None = None):
    key = {"group_id": group} if member_id is None else {"group_id": group, "member_id": member_id}
    return record(rtype, key, None)


class Timeline:
    """Records with positions: each group's records go to its coordinator partition, in order."""

    def __init__(self, num_partitions: int = 50) -> None:
        self.num_partitions = num_partitions
        self.entries: list[tuple[Any, int, int, int]] = []   # (record, partition, offset, timestamp)
        self._next: dict[int, int] = {}

    def add(self, rec: Any, ts: int) -> "Timeline":
        key = rec.key
        group = key.get("group", key.get("group_id"))
        partition = partition_for(group, self.num_partitions)
        offset = self._next.get(partition, 0)
        self._next[partition] = offset + 1
        self.entries.append((rec, partition, offset, ts))
        return self

    def add_all(self, recs: Iterable[Any], ts: int) -> "Timeline":
        for rec in recs:
            self.add(rec, ts)
        return self

    def replay(self, store) -> list:
        events = []
        for rec, partition, offset, ts in self.entries:
            events.extend(store.apply(rec, partition=partition, offset=offset, timestamp_ms=ts))
        return events


def _log_key(rec: Any) -> tuple:
    """A record's key as the log cleaner compares them (offset commit key versions 0 and 1 name
    the same partition)."""
    rtype, key = (rec["type"], rec["key"]) if isinstance(rec, dict) else (rec.type, rec.key)
    return (1 if rtype == 0 else rtype, tuple(sorted(key.items())))


def _is_tombstone(rec: Any) -> bool:
    return (rec["value"] if isinstance(rec, dict) else rec.value) is None


def compacted(log, *, drop_tombstones: bool = False):
    """What Kafka's log cleaner leaves of a log: the latest record of each key in each partition,
    at its own position; with `drop_tombstones`, also no tombstones (once delete.retention.ms has
    passed). `log` is a Timeline (a Timeline comes back) or a list of (record, partition, offset,
    ...) tuples with records as canonical dicts (None: a control marker, kept)."""
    entries = log.entries if isinstance(log, Timeline) else log
    latest: dict[tuple, int] = {}
    for rec, partition, offset, *_ in entries:
        if rec is not None:
            latest[(partition, _log_key(rec))] = offset
    kept = [entry for entry in entries if entry[0] is None or (
        latest[(entry[1], _log_key(entry[0]))] == entry[2] and not (drop_tombstones and _is_tombstone(entry[0])))]
    if not isinstance(log, Timeline):
        return kept
    out = Timeline(log.num_partitions)
    out.entries, out._next = kept, dict(log._next)
    return out
