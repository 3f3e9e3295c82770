"""Classic groups: GroupMetadataValue records (type 2, with the embedded member protocols).

Kafka writes a group's metadata when a rebalance completes (the leader's SyncGroup is stored),
an Empty snapshot (no members, generation bumped) when the last member leaves, and a tombstone
when the group is deleted, expires or is converted to a KIP-848 consumer group.
"""
from __future__ import annotations

from typing import Any

from coordinator.errors import DecodeError
from coordinator.protocol import decode_assignment, decode_subscription
from coordinator.protocol.connect import decode_connect_assignment, decode_connect_metadata
from coordinator.state.completion import complete_rebalance
from coordinator.state.context import Context
from coordinator.state.estimator import estimate_start
from coordinator.state.events import GROUP_EMPTIED, MEMBER_JOINED, MEMBER_LEFT, Event, Position
from coordinator.state.group import CLASSIC, COMMIT_TS, GroupState


def _partition_pairs(topic_partitions: list[dict[str, Any]] | None) -> list[list]:
    return sorted([tp["topic"], p] for tp in topic_partitions or () for p in tp["partitions"])


def _embedded(raw: dict[str, Any], name: str, decoder: Any) -> dict[str, Any]:
    """A member's decoded subscription or assignment: the decoder's `*_decoded` key, else decoded
    here from the hex (a canonical dict built by hand, e.g. by the simulator, has only the bytes);
    {} when the bytes do not decode."""
    decoded = raw.get(f"{name}_decoded")
    if decoded is not None:
        return decoded
    try:
        return decoder(bytes.fromhex(raw.get(name) or "")).to_dict()
    except (DecodeError, ValueError):
        return {}


def _consumer_fields(raw: dict[str, Any], protocol: str | None) -> dict[str, Any]:
    sub = _embedded(raw, "subscription", decode_subscription)
    asg = _embedded(raw, "assignment", decode_assignment)
    extra: dict[str, Any] = {}
    if sub.get("owned_partitions"):
        extra["owned_partitions"] = _partition_pairs(sub["owned_partitions"])
    if sub.get("generation_id", -1) != -1:
        extra["subscription_generation"] = sub["generation_id"]
    if protocol == "stream":
        extra["streams"] = True   # Kafka Streams: the tasks ride in UserData; partitions are above
    return {"rack": sub.get("rack_id"), "subscribed_topics": sorted(sub.get("topics") or ()),
            "assigned": _partition_pairs(asg.get("assigned_partitions")), "extra": extra}


def _connect_fields(raw: dict[str, Any], protocol: str | None) -> dict[str, Any]:
    """Connect workers: `assigned` lists [connector, task] pairs (task -1 = the connector itself)."""
    extra: dict[str, Any] = {}
    assigned: list[list] = []
    try:
        meta = decode_connect_metadata(bytes.fromhex(raw.get("subscription") or ""), protocol)
        extra.update(url=meta.url, config_offset=meta.config_offset)
        asg = decode_connect_assignment(bytes.fromhex(raw.get("assignment") or ""), protocol)
    except (DecodeError, ValueError):
        return {"rack": None, "subscribed_topics": [], "assigned": [], "extra": {"undecodable": True}}
    if asg.version is not None:
        tasks = [ct.to_dict() for ct in asg.assignment or ()]
        assigned = sorted([t["connector"], task] for t in tasks for task in t["tasks"])
        extra.update(connectors=sorted(t["connector"] for t in tasks if -1 in t["tasks"]),
                     tasks=[[c, task] for c, task in assigned if task != -1],
                     revoked=[ct.to_dict() for ct in asg.revoked or ()], leader_url=asg.leader_url)
    return {"rack": None, "subscribed_topics": [], "assigned": assigned, "extra": extra}


def member_view(raw: dict[str, Any], protocol_type: str, protocol: str | None) -> dict[str, Any]:
    """One GroupMetadataValue member in the contract's member shape."""
    if protocol_type == "consumer":
        embedded = _consumer_fields(raw, protocol)
    elif protocol_type == "connect":
        embedded = _connect_fields(raw, protocol)
    else:
        embedded = {"rack": None, "subscribed_topics": [], "assigned": [], "extra": {}}
    session = raw.get("session_timeout")
    return {
        "member_id": raw["member_id"], "group_instance_id": raw.get("group_instance_id"),
        "client_id": raw.get("client_id", ""), "client_host": raw.get("client_host", ""),
        "rack": embedded["rack"], "session_timeout_ms": session,
        # v0 has no rebalance timeout; Kafka's own readers take the session timeout instead
        "rebalance_timeout_ms": raw.get("rebalance_timeout", session),
        "subscribed_topics": embedded["subscribed_topics"], "subscribed_topic_regex": None,
        "assigned": embedded["assigned"], "member_epoch": None, "member_state": None, "target": None,
        "pending_revocation": None, "extra": embedded["extra"],
    }


def _previous_generation(state: GroupState) -> tuple[int | None, dict[str, Any]]:
    """(generation, owners) before this record; generation None when the group is new to us."""
    if state.group_type == CLASSIC:
        known = state.generation_ts is not None
        return (state.generation if known else None), state.owners()
    baseline = state.baseline   # converted from a KIP-848 group: its last converged assignment
    if baseline is None:
        return None, {}
    return baseline["epoch"], state.baseline_owners()


def apply_group_metadata(state: GroupState, value: dict[str, Any], pos: Position, ctx: Context,
                         events: list[Event]) -> None:
    protocol_type = value.get("protocol_type") or ""
    protocol = value.get("protocol")
    members = {}
    for raw in value.get("members") or ():
        view = member_view(raw, protocol_type, protocol)
        members[view["member_id"]] = view
    prev_generation, old_owners = _previous_generation(state)
    old_members = state.member_views()
    prev_end = state.generation_ts if state.group_type == CLASSIC else None
    if state.group_type != CLASSIC:
        state.released = {}   # a converted KIP-848 group's entries are by topic id

    state.group_type = CLASSIC
    state.protocol_type, state.protocol = protocol_type, protocol
    state.generation, state.leader = value["generation"], value.get("leader")
    cst = value.get("current_state_timestamp", -1)
    state.current_state_ts = None if cst is None or cst < 0 else cst
    state.members = members
    state.generation_ts = pos.timestamp_ms

    for mid in sorted(set(members) - set(old_members)):
        m = members[mid]
        events.append(pos.event(MEMBER_JOINED, state.group, member_id=mid, client_id=m["client_id"],
                                client_host=m["client_host"], group_instance_id=m["group_instance_id"]))
    for mid in sorted(set(old_members) - set(members)):
        m = old_members[mid]
        events.append(pos.event(MEMBER_LEFT, state.group, member_id=mid, client_id=m["client_id"],
                                client_host=m["client_host"], group_instance_id=m["group_instance_id"]))
    if not members:
        # The group stopped: its partitions wait for no hand-over.
        state.released = {}
        if old_members:
            events.append(pos.event(GROUP_EMPTIED, state.group, generation=state.generation))
        return
    new_group = prev_generation is None and state.generation == 1
    if state.generation == prev_generation or (prev_generation is None and not new_group):
        return
    timeouts = [m["rebalance_timeout_ms"] for m in members.values() if m["rebalance_timeout_ms"]]
    start, method = estimate_start((entry[COMMIT_TS] for entry in state.offsets.values()), pos.timestamp_ms,
                                   state.current_state_ts, prev_end, max(timeouts, default=None))
    sync = None if state.current_state_ts is None else (pos.timestamp_ms - state.current_state_ts) / 1000.0
    events.extend(complete_rebalance(state, pos, ctx, old_owners, prev_generation or 0, start, method, sync,
                                     protocol, all_stalled=_eager(protocol_type, members)))
    _track_released(state, old_owners)


def _eager(protocol_type: str, members: dict[str, Any]) -> bool:
    """An eager consumer rebalance: members revoke everything before rejoining, so none lists owned
    partitions in its subscription (cooperative members list what they keep; KIP-429)."""
    return protocol_type == "consumer" and not any(m["extra"].get("owned_partitions") for m in members.values())


def _track_released(state: GroupState, old_owners: dict[str, Any]) -> None:
    """Partitions revoked without a new owner (cooperative assignors hand them over in the next
    rebalance) are remembered with the member that gave them up; owned ones are forgotten."""
    owned = {tp for tps in state.owners().values() for tp in tps}
    for mid, tps in old_owners.items():
        for tp in tps:
            if tp not in owned:
                state.released[tuple(tp)] = mid
    for tp in owned:
        state.released.pop(tp, None)
