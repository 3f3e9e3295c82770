"""Consumer groups as the Kafka Admin API shows them at one moment, and what changed between two
such looks: each group's state in the shape the log path gives (`GroupState.to_dict()`) and the
events it would have emitted.

Polling sees less than the log does, and says so:

- a commit's time is not in OffsetFetch's answer: an offset that changed between two polls is
  dated at the later poll (`commit_timestamp_ms`), so time lag and status lean late by up to one
  interval;
- DescribeGroups has no generation: a classic group's `generation` counts the assignment changes
  seen since the monitor started, and each such change is one rebalance;
- a KIP-848 group's epoch is reported: one rebalance per poll in which it rose;
- a rebalance's start and duration are unknown (`start_method: admin-poll`, the previous poll's
  time as its earliest start, no duration): every generation between two polls is one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from coordinator.state.rebalance import assignment_quality, diff_assignments

START_METHOD = "admin-poll"


@dataclass(frozen=True)
class PolledMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rack: str | None
    subscribed_topics: tuple[str, ...]
    assigned: tuple[tuple[str, int], ...]
    member_epoch: int | None = None                      # KIP-848 only
    target: tuple[tuple[str, int], ...] | None = None    # KIP-848 only


@dataclass(frozen=True)
class PolledGroup:
    group: str
    group_type: str            # classic | consumer
    protocol_type: str
    protocol: str | None       # classic: the chosen assignor; KIP-848: the server assignor
    state: str
    group_epoch: int | None    # KIP-848 only
    assignment_epoch: int | None
    members: tuple[PolledMember, ...]
    offsets: tuple[tuple[str, int, int, int, str], ...]  # (topic, partition, offset, epoch, metadata)


def observe(polled: PolledGroup, previous: Mapping[str, Any] | None, now_ms: int,
            previous_ms: int | None, sequence: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the group's snapshot after this poll, the events since `previous`, the snapshot the poll
    at `previous_ms` left). `sequence` numbers the poll: events are named by it as log events
    are by their record's position."""
    members = [_member(m) for m in polled.members]
    owners = {m["member_id"]: {tuple(tp) for tp in m["assigned"]} for m in members}
    old_owners = ({m["member_id"]: {tuple(tp) for tp in m["assigned"]}
                   for m in previous.get("members") or ()} if previous else None)
    if polled.group_type == "classic":
        before = previous.get("generation", 0) if previous else 0
        changed = old_owners is not None and old_owners != owners
        generation = before + 1 if changed else before
    else:
        before = previous.get("generation") if previous else None
        generation = polled.group_epoch or 0
        changed = before is not None and generation > before
    snapshot: dict[str, Any] = {
        "group": polled.group,
        "group_type": polled.group_type,
        "protocol_type": polled.protocol_type,
        "protocol": polled.protocol,
        "state": polled.state,
        "generation": generation,
        "assignment_epoch": polled.assignment_epoch,
        "leader": None,
        "current_state_timestamp_ms": None,
        "coordinator_partition": None,
        "members": members,
        "subscribed_topics": sorted({t for m in members for t in m["subscribed_topics"]}),
        "offsets": _offsets(polled, previous, now_ms),
        "last_rebalance": previous.get("last_rebalance") if previous else None,
        "updated_ms": now_ms,
    }
    events: list[dict[str, Any]] = []
    if previous is not None:
        for member_id in sorted(set(owners) - set(old_owners or {})):
            events.append(_event("member_joined", polled.group, now_ms, sequence,
                                 member_id=member_id))
        for member_id in sorted(set(old_owners or {}) - set(owners)):
            events.append(_event("member_left", polled.group, now_ms, sequence,
                                 member_id=member_id))
    if changed:
        subscriptions = {m["member_id"]: m["subscribed_topics"] for m in members}
        rebalance = _event("rebalance", polled.group, now_ms, sequence,
                           group_type=polled.group_type, protocol=polled.protocol,
                           from_generation=before, to_generation=generation,
                           start_ms=previous_ms, start_method=START_METHOD, end_ms=now_ms,
                           sync_seconds=None, duration_seconds=None,
                           **diff_assignments(old_owners or {}, owners),
                           quality=assignment_quality(owners, subscriptions, None))
        snapshot["last_rebalance"] = rebalance
        events.append(rebalance)
    return snapshot, events


def gone(name: str, previous: Mapping[str, Any], now_ms: int,
         sequence: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A group no longer listed: deleted (or expired), as the log's tombstone says."""
    snapshot = {**previous, "state": "Dead", "members": [], "offsets": [], "updated_ms": now_ms}
    return snapshot, [_event("group_deleted", name, now_ms, sequence)]


def _member(m: PolledMember) -> dict[str, Any]:
    return {
        "member_id": m.member_id, "group_instance_id": m.group_instance_id,
        "client_id": m.client_id, "client_host": m.client_host, "rack": m.rack,
        "session_timeout_ms": None, "rebalance_timeout_ms": None,
        "subscribed_topics": list(m.subscribed_topics), "subscribed_topic_regex": None,
        "assigned": [list(tp) for tp in m.assigned], "member_epoch": m.member_epoch,
        "member_state": None, "target": [list(tp) for tp in m.target] if m.target is not None
        else None, "pending_revocation": None, "extra": {},
    }


def _offsets(polled: PolledGroup, previous: Mapping[str, Any] | None,
             now_ms: int) -> list[dict[str, Any]]:
    before = {(o["topic"], o["partition"]): o for o in (previous or {}).get("offsets") or ()}
    out = []
    for topic, partition, offset, epoch, metadata in polled.offsets:
        old = before.get((topic, partition))
        # Unchanged since the last poll: committed no later than then (keep that time).
        when = old["commit_timestamp_ms"] if old is not None and old["offset"] == offset else now_ms
        out.append({"topic": topic, "partition": partition, "offset": offset,
                    "leader_epoch": epoch, "metadata": metadata, "commit_timestamp_ms": when,
                    "topic_id": None})
    return out


def _event(name: str, group: str, now_ms: int, sequence: int, **fields: Any) -> dict[str, Any]:
    return {"event": name, "group": group, "timestamp_ms": now_ms, "partition": -1,
            "offset": sequence, **fields}
