"""KIP-848 consumer groups, KIP-932 share groups and KIP-1071 streams groups (record types 3-23).

The records are upserts keyed by their key (group metadata, member metadata, target assignment,
current assignment, ...), tombstones delete. The group's state is derived from the epochs exactly
as Kafka's `maybeUpdateGroupState` does (`GroupState.state_name`). A rebalance starts at the
record that bumps the group epoch past the last converged epoch and ends at the first record after
which every member's current assignment is at the group epoch with state STABLE: both exact.
"""
from __future__ import annotations

from typing import Any

from coordinator.state.completion import complete_rebalance, last_commit_ms
from coordinator.state.context import Context
from coordinator.state.estimator import downtime_seconds, leave_start
from coordinator.state.events import GROUP_EMPTIED, MEMBER_JOINED, MEMBER_LEFT, Event, Position
from coordinator.state.group import (CONSUMER, SHARE, STABLE, STREAMS, STREAMS_STABLE, GroupState,
                                     server_assignor)

GROUP_TYPE_OF = {t: CONSUMER for t in (3, 4, 5, 6, 7, 8, 16)}
GROUP_TYPE_OF.update({t: SHARE for t in range(9, 16)})
GROUP_TYPE_OF.update({t: STREAMS for t in range(17, 25)})
GROUP_TOMBSTONE_TYPES = frozenset({3, 11, 17})

_MEMBER_STATES = {0: "STABLE", 1: "UNREVOKED_PARTITIONS", 2: "UNRELEASED_PARTITIONS", 127: "UNKNOWN"}
_STREAMS_MEMBER_STATES = {1: "STABLE", 2: "UNREVOKED_TASKS", 3: "UNRELEASED_TASKS", 127: "UNKNOWN"}
_TASK_LISTS = ("active_tasks", "standby_tasks", "warmup_tasks")


def _stable_code(state: GroupState) -> int:
    return STREAMS_STABLE if state.group_type == STREAMS else STABLE


def _pairs(items: list[dict[str, Any]] | None, id_field: str) -> list[list]:
    return sorted([item[id_field], p] for item in items or () for p in item["partitions"])


# ----- one handler per record kind ---------------------------------------------------------------

def _created_here(state: GroupState) -> bool:
    """The group's first epoch record follows its first member's record in the same write, before
    any assignment (its epoch is not always 1: Kafka 4.4 starts at 2). A group met mid-life in a
    compacted log shows its members' assignments or several members first."""
    return (state.baseline is None and state.group_epoch == 0 and state.assignment_epoch is None
            and not state.current and not state.target and len(state.modern_members) <= 1)


def _group_metadata(state: GroupState, value: dict[str, Any]) -> None:
    if _created_here(state):
        state.baseline = {"epoch": 0, "owners": {}}   # the group is being created before our eyes
    state.group_epoch = value["epoch"]
    state.metadata_hash = value.get("metadata_hash")


def _topic_metadata(state: GroupState, value: dict[str, Any]) -> None:
    for topic in value.get("topics") or ():
        state.topic_names[topic["topic_id"]] = topic["topic_name"]
        state.partition_counts[topic["topic_name"]] = topic["num_partitions"]


def _share_state_metadata(state: GroupState, value: dict[str, Any]) -> None:
    summary = {}
    for name in ("initializing_topics", "initialized_topics", "deleting_topics"):
        topics = value.get(name) or ()
        for topic in topics:
            state.topic_names[topic["topic_id"]] = topic["topic_name"]
        summary[name] = sorted(t["topic_name"] for t in topics)
    state.share_topics = summary


def _member_metadata(state: GroupState, value: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {"group_instance_id": value.get("instance_id"), "client_id": value.get("client_id", ""),
                            "client_host": value.get("client_host", ""), "rack": value.get("rack_id"),
                            "rebalance_timeout_ms": value.get("rebalance_timeout_ms")}
    extra: dict[str, Any] = {}
    if state.group_type == STREAMS:
        source = (state.topology or {}).get("source_topics", [])
        meta["subscribed_topics"] = list(source)
        extra.update(topology_epoch=value.get("topology_epoch"), process_id=value.get("process_id"),
                     user_endpoint=value.get("user_endpoint"), client_tags=value.get("client_tags") or [])
    else:
        meta["subscribed_topics"] = sorted(value.get("subscribed_topic_names") or ())
        meta["subscribed_topic_regex"] = value.get("subscribed_topic_regex")
        extra["server_assignor"] = value.get("server_assignor")
        classic = value.get("classic_member_metadata")
        if classic:
            meta["session_timeout_ms"] = classic["session_timeout_ms"]
            extra["classic_protocols"] = [p["name"] for p in classic.get("supported_protocols") or ()]
    meta["extra"] = extra
    return meta


def _assignment(state: GroupState, value: dict[str, Any], current: bool) -> dict[str, Any]:
    if state.group_type == STREAMS:
        out: dict[str, Any] = {"assigned": _pairs(value.get("active_tasks"), "subtopology_id")}
        extra = {name: _pairs(value.get(name), "subtopology_id") for name in _TASK_LISTS[1:]}
        if current:
            out["pending"] = _pairs(value.get("active_tasks_pending_revocation"), "subtopology_id")
            for name in _TASK_LISTS[1:]:
                extra[f"{name}_pending_revocation"] = _pairs(value.get(f"{name}_pending_revocation"),
                                                            "subtopology_id")
        out["extra"] = extra
    else:
        field = "assigned_partitions" if current else "topic_partitions"
        out = {"assigned": _pairs(value.get(field), "topic_id")}
        if current and state.group_type == CONSUMER:
            out["pending"] = _pairs(value.get("partitions_pending_revocation"), "topic_id")
    if current:
        code = value.get("state")
        if code is None:   # 3.7 layout: no State; reconciled when nothing is pending
            pending = value.get("partitions_pending_revocation") or value.get("partitions_pending_assignment")
            code = _stable_code(state) if not pending else 1
        names = _STREAMS_MEMBER_STATES if state.group_type == STREAMS else _MEMBER_STATES
        out.update(member_epoch=value["member_epoch"], previous_member_epoch=value.get("previous_member_epoch"),
                   state=code, state_name=names.get(code, f"UNKNOWN({code})"))
    return out


def _topology(state: GroupState, value: dict[str, Any]) -> None:
    subs = value.get("subtopologies") or ()
    source = sorted({t for s in subs for t in s.get("source_topics") or ()}
                    | {t["name"] for s in subs for t in s.get("repartition_source_topics") or ()})
    state.topology = {"epoch": value["epoch"], "subtopologies": sorted(s["subtopology_id"] for s in subs),
                      "source_topics": source}
    for meta in state.modern_members.values():
        meta["subscribed_topics"] = list(source)


_KIND = {3: "group", 11: "group", 17: "group", 4: "topics", 9: "topics", 18: "topics", 15: "share_topics",
         5: "member", 10: "member", 19: "member", 6: "assignment_epoch", 12: "assignment_epoch",
         20: "assignment_epoch", 7: "target", 13: "target", 21: "target", 8: "current", 14: "current",
         22: "current", 16: "regex", 23: "topology"}


def _remember_topic_names(state: GroupState, ctx: Context, pairs: list[list]) -> None:
    for topic_id, _ in pairs:
        if topic_id not in state.topic_names and topic_id in ctx.topic_names:
            state.topic_names[topic_id] = ctx.topic_names[topic_id]


def apply_modern(state: GroupState, rtype: int, key: dict[str, Any], value: dict[str, Any] | None,
                 pos: Position, ctx: Context, events: list[Event]) -> None:
    """Applies one record of types 3-24 to a group of the matching type (the caller has checked it)."""
    kind = _KIND.get(rtype)
    member_id = key.get("member_id")
    had_members = bool(state.modern_members)
    if kind == "group":
        if value is not None:
            _group_metadata(state, value)
    elif kind == "topics":
        if value is not None:   # ids keep their names after 4.1+ retires the record
            _topic_metadata(state, value)
    elif kind == "share_topics":
        if value is not None:
            _share_state_metadata(state, value)
    elif kind == "member":
        _member_record(state, member_id, value, pos, events)
    elif kind == "assignment_epoch":
        state.assignment_epoch = None if value is None else value["assignment_epoch"]
        state.assignment_ts = None if value is None else value.get("assignment_timestamp")
    elif kind in ("target", "current"):
        book = state.target if kind == "target" else state.current
        old = book.pop(member_id, None)
        if value is not None:
            book[member_id] = _assignment(state, value, current=kind == "current")
            if state.group_type != STREAMS:
                _remember_topic_names(state, ctx, book[member_id]["assigned"] + book[member_id].get("pending", []))
        if kind == "current" and state.group_type == CONSUMER:
            if value is None and old is not None:   # a leave writes this tombstone first
                _note_leave(state, old, pos)
            _track_handovers(state, member_id, old, book.get(member_id), pos)
    elif kind == "regex":
        regex = key["regular_expression"]
        if value is None:
            state.regexes.pop(regex, None)
        else:
            state.regexes[regex] = sorted(value.get("topics") or ())
    elif kind == "topology":
        if value is None:
            state.topology = None
        else:
            _topology(state, value)
    if had_members and not state.modern_members:
        events.append(pos.event(GROUP_EMPTIED, state.group, generation=state.group_epoch))
    _track_rebalance(state, pos, ctx, events)


def _held(entry: dict[str, Any] | None) -> tuple[set[tuple[str, int]], set[tuple[str, int]]]:
    """(assigned, assigned or pending revocation) of a current-assignment entry, by topic id."""
    if entry is None:
        return set(), set()
    assigned = {(t, p) for t, p in entry["assigned"]}
    return assigned, assigned | {(t, p) for t, p in entry.get("pending", ())}


def _track_handovers(state: GroupState, member_id: str, old: dict[str, Any] | None, new: dict[str, Any] | None,
                     pos: Position) -> None:
    """A member's current assignment changed from `old` to `new` (record 8, or its tombstone):
    partitions it no longer holds are released; partitions it newly owns that another member
    released were handed over here, and their downtime counts for the rebalance in progress
    (estimator.py)."""
    old_assigned, old_held = _held(old)
    new_assigned, new_held = _held(new)
    for tp in old_held - new_held:
        state.released[tp] = member_id
    for tp in new_assigned - old_assigned:
        previous = state.released.pop(tp, None)
        if previous is None or previous == member_id or state.in_progress is None:
            continue
        topic = state.topic_name(tp[0])
        seconds = downtime_seconds(last_commit_ms(state, topic, tp[1]), pos.timestamp_ms)
        if seconds is not None:
            state.in_progress.setdefault("handovers", []).append([topic, tp[1], seconds])


def _member_record(state: GroupState, member_id: str, value: dict[str, Any] | None, pos: Position,
                   events: list[Event]) -> None:
    if value is None:
        meta = state.modern_members.pop(member_id, None)
        state.target.pop(member_id, None)
        current = state.current.pop(member_id, None)
        if current is not None and state.group_type == CONSUMER:
            _note_leave(state, current, pos)
        if current is not None and state.group_type == CONSUMER:
            _track_handovers(state, member_id, current, None, pos)
        if meta is not None:
            events.append(pos.event(MEMBER_LEFT, state.group, member_id=member_id, client_id=meta["client_id"],
                                    client_host=meta["client_host"], group_instance_id=meta["group_instance_id"]))
        return
    meta = _member_metadata(state, value)
    baseline = state.baseline
    # A classic member re-registered by a classic->consumer conversion has not joined anything.
    converted = (baseline is not None and member_id in baseline["owners"]
                 and state.group_epoch <= baseline["epoch"])
    if member_id not in state.modern_members and not converted:
        events.append(pos.event(MEMBER_JOINED, state.group, member_id=member_id, client_id=meta["client_id"],
                                client_host=meta["client_host"], group_instance_id=meta["group_instance_id"]))
    state.modern_members[member_id] = meta


def _note_leave(state: GroupState, current: dict[str, Any], pos: Position) -> None:
    """A member's assignment is removed: when it left gracefully, its closing commit is where the
    rebalance its leave causes starts (estimator.leave_start). A rebalance already under way
    started earlier."""
    if state.in_progress is not None:
        return
    _, held = _held(current)
    commits = [last_commit_ms(state, state.topic_name(t), p) for t, p in held]
    start = leave_start([ts for ts in commits if ts is not None], pos.timestamp_ms)
    if start is not None:
        state.leave_start_ms = start if state.leave_start_ms is None else min(state.leave_start_ms, start)


def _snapshot(state: GroupState) -> dict[str, Any]:
    # By topic id (or task id), as in the records: named when compared (GroupState.baseline_owners).
    return {"epoch": state.group_epoch,
            "owners": {mid: sorted(state.current[mid]["assigned"]) if mid in state.current else []
                       for mid in state.modern_members}}


def _track_rebalance(state: GroupState, pos: Position, ctx: Context, events: list[Event]) -> None:
    if not state.modern_members:
        # Nothing to converge; the next join starts a rebalance from this epoch, and the group's
        # partitions wait for no hand-over.
        state.in_progress = None
        state.baseline = {"epoch": state.group_epoch, "owners": {}}
        state.released = {}
        state.leave_start_ms = None
        return
    baseline = state.baseline
    if state.in_progress is None and baseline is not None and state.group_epoch > baseline["epoch"]:
        start = pos.timestamp_ms if state.leave_start_ms is None else min(pos.timestamp_ms, state.leave_start_ms)
        state.in_progress = {"start_ms": start, "from_epoch": baseline["epoch"]}
        state.leave_start_ms = None
    if not state.converged():
        return
    if state.in_progress is not None:
        old = state.baseline_owners()
        events.extend(complete_rebalance(state, pos, ctx, old, state.in_progress["from_epoch"],
                                         state.in_progress["start_ms"], "exact",
                                         _sync_seconds(state, state.in_progress["start_ms"], pos),
                                         server_assignor(state.member_views()),
                                         [tuple(h) for h in state.in_progress.get("handovers", ())]))
        state.in_progress = None
        state.baseline = _snapshot(state)
    elif baseline is None:
        # First convergence of a group met mid-life (a compacted log): nothing to compare with,
        # so no event, but the next rebalance is measured against this assignment. Convergence at
        # the baseline epoch does not move the baseline: a member leaving writes its tombstones
        # before the epoch bump, and the rebalance that follows must still see it leave.
        state.baseline = _snapshot(state)


def _sync_seconds(state: GroupState, start_ms: int, pos: Position) -> float | None:
    """From the coordinator's own time for the converged target assignment (KIP-1263's
    AssignmentTimestamp, Kafka 4.3+) to the convergence: the members' reconciliation, the KIP-848
    counterpart of a classic group's sync phase. None where the record has no timestamp. The
    coordinator dates the assignment before it appends the epoch bump written with it (by a few
    ms on Kafka 4.4), so the phase starts no earlier than the rebalance."""
    if not state.assignment_ts or state.assignment_epoch != state.group_epoch:
        return None
    return max(0.0, (pos.timestamp_ms - max(state.assignment_ts, start_ms)) / 1000.0)


def refresh_topic_names(state: GroupState, ctx: Context) -> None:
    """Names the topic ids this group references that were unmapped when their records arrived."""
    if state.group_type in (CONSUMER, SHARE):
        for book in (state.target, state.current):
            for entry in book.values():
                _remember_topic_names(state, ctx, entry["assigned"] + entry.get("pending", []))
