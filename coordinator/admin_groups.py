"""Groups as the Kafka Admin API shows them at one moment (classic, KIP-848 consumer, share and
streams groups), and what changed between two such looks: each group's state in the shape the log
path gives (`GroupState.to_dict()`) and the events it would have emitted.

Polling sees less than the log does, and says so:

- a commit's time is not in OffsetFetch's answer: an offset that changed between two polls is
  dated at the later poll (`commit_timestamp_ms`), so time lag and status lean late by up to one
  interval;
- DescribeGroups has no generation: a classic group's `generation` counts the assignment changes
  seen since the monitor started, each one rebalance: a Stable assignment that differs from the
  last Stable one (a poll during the rebalance sees members without partitions, which is neither
  the old assignment nor the new);
- a KIP-848 group's epoch is reported, and each member's epoch and target assignment: a
  rebalance is counted once the group's epoch has risen past the one it last converged at and
  every member has reached it (its assignment the target), as the log path counts it; its moved
  partitions are those whose owner then differs from the owner at that last convergence, so
  partitions revoked and handed over across several polls are all counted;
- a rebalance's start and duration are unknown (`start_method: admin-poll`, the previous poll's
  time as its earliest start, no duration): every generation between two polls is one;
- a share group is described without a target assignment (Kafka hands partitions out at once)
  and its share-partitions by start offset and Kafka's lag only: their records' delivery state
  (available, acknowledged, archived, delivery counts) is in `__share_group_state` alone;
- a streams group's members show their tasks (subtopology, partition), as in the log.
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
    member_epoch: int | None = None                      # KIP-848, share, streams groups
    target: tuple[tuple[str, int], ...] | None = None    # KIP-848 and streams groups
    extra: tuple[tuple[str, Any], ...] = ()              # e.g. a streams member's standby tasks


@dataclass(frozen=True)
class PolledGroup:
    group: str
    group_type: str            # classic | consumer | share | streams
    protocol_type: str
    protocol: str | None       # classic: the chosen assignor; the others: the server assignor
    state: str
    group_epoch: int | None    # all but classic
    assignment_epoch: int | None
    members: tuple[PolledMember, ...]
    offsets: tuple[tuple[str, int, int, int, str], ...]  # (topic, partition, offset, epoch, metadata)
    # share groups: (topic, topic id as Kafka prints it, partition, start offset, Kafka's lag),
    # -1 where Kafka reports either unknown
    share_offsets: tuple[tuple[str, str, int, int, int], ...] = ()


Owners = dict[str, set[tuple[str, int]]]


@dataclass(frozen=True)
class Seen:
    """What a poll leaves for the next: the group's snapshot, and the owners of its partitions
    when its assignment was last settled (classic: Stable or Empty; KIP-848: every poll). A
    KIP-848 group also keeps its last convergence ({"epoch", "owners"}: None until one is seen)
    and, from the poll that saw its epoch rise past it until it converges again, the rebalance
    under way ({"from_epoch", "start_ms"})."""
    snapshot: dict[str, Any]
    settled: Owners
    baseline: dict[str, Any] | None = None
    pending: dict[str, Any] | None = None


def observe(polled: PolledGroup, before: Seen | None, now_ms: int, previous_ms: int | None,
            sequence: int) -> tuple[Seen, list[dict[str, Any]]]:
    """The group after this poll and the events since `before` (which the poll at
    `previous_ms` left). `sequence` numbers the poll: events are named by it as log events are
    by their record's position."""
    previous = before.snapshot if before is not None else None
    members = [_member(m) for m in polled.members]
    owners = {m["member_id"]: {tuple(tp) for tp in m["assigned"]} for m in members}
    current = ({m["member_id"]: {tuple(tp) for tp in m["assigned"]}
                for m in previous.get("members") or ()} if previous else None)
    if polled.group_type == "classic":
        settles = polled.state in ("Stable", "Empty")
        old_owners = before.settled if before is not None else None
        generation = previous.get("generation", 0) if previous else 0
        changed = (polled.state == "Stable" and old_owners is not None and old_owners != owners)
        settled = owners if settles else (old_owners if old_owners is not None else {})
        from_generation, generation = generation, generation + 1 if changed else generation
        start_ms = previous_ms
    else:
        settled = owners
        generation = polled.group_epoch or 0
        baseline, pending, ended = _reconcile(polled, owners, before, previous_ms)
        changed = ended is not None
        old_owners, from_generation, start_ms = ended if changed else (None, None, None)
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
        for member_id in sorted(set(owners) - set(current or {})):
            events.append(_event("member_joined", polled.group, now_ms, sequence,
                                 member_id=member_id))
        for member_id in sorted(set(current or {}) - set(owners)):
            events.append(_event("member_left", polled.group, now_ms, sequence,
                                 member_id=member_id))
    if changed:
        subscriptions = {m["member_id"]: m["subscribed_topics"] for m in members}
        rebalance = _event("rebalance", polled.group, now_ms, sequence,
                           group_type=polled.group_type, protocol=polled.protocol,
                           from_generation=from_generation, to_generation=generation,
                           start_ms=start_ms, start_method=START_METHOD, end_ms=now_ms,
                           sync_seconds=None, duration_seconds=None,
                           **diff_assignments(old_owners or {}, owners),
                           quality=assignment_quality(owners, subscriptions, None))
        snapshot["last_rebalance"] = rebalance
        events.append(rebalance)
    if polled.group_type == "classic":
        return Seen(snapshot, settled), events
    return Seen(snapshot, settled, baseline, pending), events


def _converged(polled: PolledGroup) -> bool:
    """Every member at the group's epoch with its target assignment (a share group has none to
    reach: its members take what they are given at once)."""
    epoch = polled.group_epoch
    return polled.assignment_epoch == epoch and all(
        m.member_epoch == epoch and (set(m.assigned) == set(m.target) if m.target is not None
                                     else polled.group_type == "share")
        for m in polled.members)


def _reconcile(polled: PolledGroup, owners: Owners, before: Seen | None, previous_ms: int | None
               ) -> tuple[dict | None, dict | None, tuple[Owners, int, int | None] | None]:
    """A KIP-848 group's (baseline, pending) after this poll, and the rebalance it ended, as
    (owners at the last convergence, its epoch, the rebalance's earliest start), if it did."""
    epoch = polled.group_epoch or 0
    baseline = before.baseline if before is not None else None
    pending = before.pending if before is not None else None
    if not polled.members:  # nothing to converge: the next join starts from here
        return {"epoch": epoch, "owners": {}}, None, None
    if pending is None and baseline is not None and epoch > baseline["epoch"]:
        pending = {"from_epoch": baseline["epoch"], "start_ms": previous_ms}
    if not _converged(polled):
        return baseline, pending, None
    converged = {"epoch": epoch, "owners": owners}
    if pending is not None:
        return converged, None, (baseline["owners"], pending["from_epoch"], pending["start_ms"])
    # A member's leave shows before its epoch bump: a convergence at the same epoch keeps the
    # owners it is compared with, so the leaver's partitions count as moved.
    return (converged if baseline is None else baseline), None, None


def resumed(snapshot: Mapping[str, Any]) -> Seen:
    """What a poll would have left of a group whose snapshot the history kept (a restart):
    the next poll continues from it, so its generation, members and assignment carry on
    instead of starting again."""
    members = snapshot.get("members") or ()
    owners = {m["member_id"]: {tuple(tp) for tp in m.get("assigned") or ()} for m in members}
    if snapshot.get("group_type") == "classic":
        return Seen(dict(snapshot), owners if snapshot.get("state") in ("Stable", "Empty") else {})
    epoch = snapshot.get("generation")
    share = snapshot.get("group_type") == "share"
    converged = all(m.get("member_epoch") == epoch and (
        {tuple(tp) for tp in m["target"]} == owners[m["member_id"]] if m.get("target") is not None
        else share) for m in members)
    return Seen(dict(snapshot), owners, {"epoch": epoch, "owners": owners} if converged else None)


def gone(name: str, before: Seen, now_ms: int,
         sequence: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A group no longer listed: deleted (or expired), as the log's tombstone says."""
    snapshot = {**before.snapshot, "state": "Dead", "members": [], "offsets": [],
                "updated_ms": now_ms}
    return snapshot, [_event("group_deleted", name, now_ms, sequence)]


def _member(m: PolledMember) -> dict[str, Any]:
    return {
        "member_id": m.member_id, "group_instance_id": m.group_instance_id,
        "client_id": m.client_id, "client_host": m.client_host, "rack": m.rack,
        "session_timeout_ms": None, "rebalance_timeout_ms": None,
        "subscribed_topics": list(m.subscribed_topics), "subscribed_topic_regex": None,
        "assigned": [list(tp) for tp in m.assigned], "member_epoch": m.member_epoch,
        "member_state": None, "target": [list(tp) for tp in m.target] if m.target is not None
        else None, "pending_revocation": None, "extra": dict(m.extra),
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
