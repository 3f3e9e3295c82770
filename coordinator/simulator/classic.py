"""The classic group protocol: JoinGroup / SyncGroup / Heartbeat / LeaveGroup.

The coordinator keeps Kafka's group states (Empty, PreparingRebalance, CompletingRebalance,
Stable) and writes a GroupMetadataValue v3 only where Kafka does: when the leader's SyncGroup is
stored (a new generation with its members and assignments), when the group becomes Empty (bumped
generation, no members), when a static member replaces its member id, and a tombstone on deletion.
Nothing is written when a rebalance starts, which is why classic rebalance starts must be estimated.

Heartbeats are not simulated one by one: a member's heartbeats fall on a fixed grid from its last
SyncGroup, so the coordinator only evaluates the heartbeat that follows a change it must announce.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from coordinator.protocol import Assignment, Subscription, encode_assignment, encode_subscription, group_partitions
from coordinator.simulator.client import Client, Member, TopicPartition
from coordinator.simulator.runtime import Runtime
from coordinator.simulator.truth import TrueRebalance

SUBSCRIPTION_VERSION = 3
COOPERATIVE = ("cooperative-sticky",)


def _pairs(partitions: Any) -> list[TopicPartition]:
    return sorted((t, int(p)) for t, p in partitions)


@dataclass
class JoinMetadata:
    """What a member sends in JoinGroup for its one supported protocol."""
    protocol: str
    topics: tuple[str, ...]
    owned: tuple[TopicPartition, ...]
    generation: int
    user_data: bytes | None

    def encode(self) -> bytes:
        return encode_subscription(Subscription(
            version=SUBSCRIPTION_VERSION, topics=self.topics, user_data=self.user_data,
            owned_partitions=group_partitions(self.owned), generation_id=self.generation))


class ClassicMemberClient(Member, Protocol):
    """The responses the coordinator sends a member (a `ClassicClient`, which is not named here
    because classic_client.py imports this module)."""

    def on_join_response(self, generation: int, leader: str | None, protocol: str | None,
                         members: dict[str, JoinMetadata] | None) -> None: ...

    def on_sync_response(self, generation: int, assigned: list[TopicPartition]) -> None: ...

    def on_rebalance_error(self) -> None: ...

    def on_unknown_member(self) -> None: ...

    def heartbeat_soon(self) -> None: ...

    def session_refreshed(self) -> None: ...


@dataclass
class ClassicMember:
    member_id: str
    client: ClassicMemberClient
    protocols: list[JoinMetadata]   # in the member's order of preference
    awaiting_join: bool = False
    awaiting_sync: bool = False
    assigned: list[TopicPartition] = field(default_factory=list)
    selected: str | None = None

    @property
    def metadata(self) -> JoinMetadata:
        """The metadata of the protocol the group selected (what GroupMetadataValue stores)."""
        for meta in self.protocols:
            if meta.protocol == self.selected:
                return meta
        return self.protocols[0]


def select_protocol(members: list[list[str]]) -> str:
    """Kafka's vote: among the protocols every member supports, each member votes for the first
    one in its own preference order; the most votes wins (ties go to the smallest name here)."""
    candidates = set(members[0]).intersection(*members[1:])
    if not candidates:
        raise ValueError("no protocol is supported by every member")
    votes: dict[str, int] = {}
    for preferences in members:
        choice = next(name for name in preferences if name in candidates)
        votes[choice] = votes.get(choice, 0) + 1
    return max(sorted(votes), key=lambda name: votes[name])


class ClassicCoordinator:
    def __init__(self, sim: Runtime) -> None:
        self.sim = sim
        self.group = sim.scenario.group
        self.state = "Empty"
        self.exists = False
        self.generation = 0
        self.stored_generation = 0
        self.protocol: str | None = None
        self.leader: str | None = None
        self.current_state_timestamp = -1
        self.members: dict[str, ClassicMember] = {}
        self.static: dict[str, str] = {}          # group.instance.id -> member id
        self.stored_owner: dict[TopicPartition, str] = {}
        self._timer = 0                           # invalidates stale join-phase timers
        self._initial_remaining = 0
        self._new_member_added = False
        self._in_initial_delay = False
        self.stored_members: list[str] = []
        self.stored_view: dict | None = None

    # -- helpers ---------------------------------------------------------------------------------
    def _now(self) -> int:
        return self.sim.now

    def _new_member_id(self, client: ClassicMemberClient) -> str:
        return f"{client.client_id}-{self.sim.uuid()}"

    def _transition(self, state: str) -> None:
        self.state = state
        self.current_state_timestamp = self.sim.abs_ms(self._now())

    def _store(self) -> int:
        members = [{
            "member_id": m.member_id, "group_instance_id": m.client.instance_id,
            "client_id": m.client.client_id, "client_host": m.client.host,
            "rebalance_timeout": m.client.spec.rebalance_timeout_ms,
            "session_timeout": m.client.spec.session_timeout_ms,
            "subscription": m.metadata.encode().hex(),
            "assignment": encode_assignment(Assignment(
                version=SUBSCRIPTION_VERSION,
                assigned_partitions=group_partitions(m.assigned, sort=False))).hex(),
        } for m in self.members.values()]
        value = {"version": 3, "protocol_type": "consumer", "generation": self.generation,
                 "protocol": self.protocol, "leader": self.leader,
                 "current_state_timestamp": self.current_state_timestamp, "members": members}
        written = self.sim.write([{"type": 2, "type_name": "group_metadata",
                                   "key": {"group": self.group}, "value": value}])
        self.stored_generation = self.generation
        self.stored_members = list(self.members)
        self.stored_view = {"generation": self.generation, "protocol": self.protocol, "leader": self.leader,
                            "members": {m.member_id: sorted(m.assigned) for m in self.members.values()}}
        return written[-1].offset

    def _max_rebalance_timeout(self) -> int:
        return max((m.client.spec.rebalance_timeout_ms for m in self.members.values()), default=0)

    # -- JoinGroup -------------------------------------------------------------------------------
    def join(self, client: ClassicMemberClient, member_id: str | None, metadata: list[JoinMetadata]) -> None:
        self.exists = True
        if member_id is not None and member_id in self.members:
            member = self.members[member_id]
            member.protocols, member.awaiting_join = metadata, True
            self._after_join(member, "member_rejoined")
            return
        if client.instance_id is not None and client.instance_id in self.static:
            self._static_rejoin(client, metadata)
            return
        member = ClassicMember(self._new_member_id(client), client, metadata, awaiting_join=True)
        self.members[member.member_id] = member
        if client.instance_id is not None:
            self.static[client.instance_id] = member.member_id
        self._new_member_added = True
        self._after_join(member, "member_joined")

    def _after_join(self, member: ClassicMember, trigger: str) -> None:
        member.client.member_id = member.member_id
        if self.state in ("Empty", "Stable", "CompletingRebalance"):
            self._prepare_rebalance(trigger)
        self._maybe_complete_join()

    def _static_rejoin(self, client: ClassicMemberClient, metadata: list[JoinMetadata]) -> None:
        """KIP-345: a known group.instance.id gets a new member id and, if the group is Stable,
        its old assignment back without a rebalance (the coordinator persists the new id)."""
        old_id = self.static[client.instance_id]
        member = self.members.pop(old_id)
        member.member_id, member.client = self._new_member_id(client), client
        self.members[member.member_id] = member
        self.static[client.instance_id] = member.member_id
        client.member_id = member.member_id
        if self.leader == old_id:
            self.leader = member.member_id
        for tp, owner in self.stored_owner.items():
            if owner == old_id:
                self.stored_owner[tp] = member.member_id
        if self.state == "Stable" and [m.protocol for m in metadata] == [m.protocol for m in member.protocols]:
            member.protocols = metadata
            offset = self._store()
            self.sim.truth.note("static_member_replaced", self.sim.abs_ms(self._now()),
                                instance_id=client.instance_id, old_member_id=old_id,
                                new_member_id=member.member_id, generation=self.generation,
                                offset=offset)
            self.sim.after(self.sim.scenario.network_ms, client.on_join_response,
                           self.generation, self.leader, self.protocol, None)
            return
        member.protocols, member.awaiting_join = metadata, True
        self._after_join(member, "member_rejoined")

    def _prepare_rebalance(self, trigger: str, trigger_ms: int | None = None) -> None:
        now = self._now()
        if self.state == "CompletingRebalance":
            for m in self.members.values():
                if m.awaiting_sync:
                    m.awaiting_sync = False
                    self.sim.after(self.sim.scenario.network_ms, m.client.on_rebalance_error)
        was_empty = self.state == "Empty"
        self._transition("PreparingRebalance")
        self.sim.truth.begin(TrueRebalance(
            protocol="classic", trigger=trigger, start_ms=self.sim.abs_ms(now),
            trigger_ms=trigger_ms if trigger_ms is not None else self.sim.abs_ms(now),
            from_generation=self.stored_generation, members_before=sorted(self.stored_members)))
        self._timer += 1
        if was_empty:
            delay = min(self.sim.scenario.initial_rebalance_delay_ms, self._max_rebalance_timeout())
            self._initial_remaining = max(self._max_rebalance_timeout() - delay, 0)
            self._in_initial_delay, self._new_member_added = True, False
        else:
            delay = self._max_rebalance_timeout()
            self._in_initial_delay = False
        self.sim.after(delay, self._join_deadline, self._timer)
        for m in self.members.values():
            if not m.awaiting_join:
                m.client.heartbeat_soon()

    def _join_deadline(self, timer: int) -> None:
        if timer != self._timer or self.state != "PreparingRebalance":
            return
        if self._in_initial_delay and self._new_member_added and self._initial_remaining > 0:
            delay = min(self.sim.scenario.initial_rebalance_delay_ms, self._initial_remaining)
            self._initial_remaining -= delay
            self._new_member_added = False
            self.sim.after(delay, self._join_deadline, timer)
            return
        self._in_initial_delay = False
        self._complete_join()

    def _maybe_complete_join(self) -> None:
        if (self.state == "PreparingRebalance" and not self._in_initial_delay
                and all(m.awaiting_join for m in self.members.values())):
            self._complete_join()

    def _complete_join(self) -> None:
        self._timer += 1
        for m in [m for m in self.members.values() if not m.awaiting_join]:
            self._remove(m.member_id)
        self.generation += 1
        if not self.members:
            self.protocol = self.leader = None
            self._transition("Empty")
            offset = self._store()
            self._finish_truth(offset)
            self.sim.truth.note("group_emptied", self.sim.abs_ms(self._now()),
                                generation=self.generation, offset=offset)
            return
        self.protocol = select_protocol([[p.protocol for p in m.protocols] for m in self.members.values()])
        if self.leader not in self.members:
            self.leader = next(iter(self.members))
        self._transition("CompletingRebalance")
        if self.sim.truth.open is not None:
            self.sim.truth.open.join_end_ms = self.current_state_timestamp
        for m in self.members.values():
            m.awaiting_join, m.selected = False, self.protocol
            view = ({mid: x.metadata for mid, x in self.members.items()}
                    if m.member_id == self.leader else None)
            self.sim.after(self.sim.scenario.network_ms, m.client.on_join_response,
                           self.generation, self.leader, self.protocol, view)

    def _remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is not None and member.client.instance_id is not None:
            if self.static.get(member.client.instance_id) == member_id:
                del self.static[member.client.instance_id]

    def _finish_truth(self, end_offset: int) -> None:
        new_owner = {tp: m.member_id for m in self.members.values() for tp in m.assigned}
        moved = sorted(tp for tp in set(new_owner) | set(self.stored_owner)
                       if new_owner.get(tp) != self.stored_owner.get(tp))
        self.stored_owner = new_owner
        self.sim.truth.finish(self.sim.abs_ms(self._now()), self.generation, sorted(self.members),
                              moved, end_offset)

    # -- SyncGroup -------------------------------------------------------------------------------
    def sync(self, client: ClassicMemberClient, member_id: str, generation: int,
             assignments: dict[str, list[TopicPartition]] | None) -> None:
        member = self.members.get(member_id)
        net = self.sim.scenario.network_ms
        if member is None or generation != self.generation or self.state == "PreparingRebalance":
            self.sim.after(net, client.on_rebalance_error)
            return
        if self.state == "Stable":
            self.sim.after(net, client.on_sync_response, self.generation, list(member.assigned))
            return
        member.awaiting_sync = True
        if member_id != self.leader or assignments is None:
            return
        for m in self.members.values():
            m.assigned = _pairs(assignments.get(m.member_id, []))
        offset = self._store()
        self._transition("Stable")
        self._finish_truth(offset)
        for m in self.members.values():
            if m.awaiting_sync:
                m.awaiting_sync = False
                self.sim.after(net, m.client.on_sync_response, self.generation, list(m.assigned))

    # -- Heartbeat / LeaveGroup / session expiry -------------------------------------------------
    def heartbeat(self, client: ClassicMemberClient, member_id: str | None) -> None:
        net = self.sim.scenario.network_ms
        member = self.members.get(member_id) if member_id is not None else None
        if member is None:
            self.sim.after(net, client.on_unknown_member)
        elif self.state == "PreparingRebalance" and not member.awaiting_join:
            self.sim.after(net, client.on_rebalance_error)

    def leave(self, member_id: str | None) -> None:
        if member_id not in self.members:
            return
        self._remove(member_id)
        if self.state in ("Stable", "CompletingRebalance"):
            self._prepare_rebalance("member_left")
        self._maybe_complete_join()

    def session_expired(self, member_id: str, trigger_ms: int) -> None:
        if member_id not in self.members:
            return
        self._remove(member_id)
        if self.state in ("Stable", "CompletingRebalance"):
            self._prepare_rebalance("session_expired", trigger_ms)
        self._maybe_complete_join()

    # -- offsets and deletion --------------------------------------------------------------------
    def offset_commit(self, client: Client, member_id: str | None,
                      offsets: dict[TopicPartition, int]) -> None:
        # A member's commit counts as a heartbeat while the group is Stable or PreparingRebalance
        # (OffsetMetadataManager reschedules the member's session timeout).
        member = self.members.get(member_id) if member_id is not None else None
        if member is not None and self.state in ("Stable", "PreparingRebalance"):
            member.client.session_refreshed()
        self.sim.write_commits(offsets, version=3, topic_ids=False)

    def delete(self) -> bool:
        """DeleteGroups: only an Empty group; offset tombstones, then the group tombstone."""
        if self.state != "Empty" or not self.exists:
            return False
        records = self.sim.offset_tombstones()
        records.append({"type": 2, "type_name": "group_metadata", "key": {"group": self.group},
                        "value": None})
        self.sim.write(records)
        self.state, self.exists, self.generation, self.stored_generation = "Dead", False, 0, 0
        self.stored_owner, self.stored_members, self.stored_view = {}, [], None
        return True

    def view(self) -> dict | None:
        """The group as last written to the log (what a reader of the log can know)."""
        return self.stored_view
