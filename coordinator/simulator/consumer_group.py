"""The KIP-848 consumer group protocol: ConsumerGroupHeartbeat and server-side assignment.

The coordinator follows Kafka 4.1+: a heartbeat may (1) create or update the member (record 5) and
bump the group epoch (record 3), (2) recompute the target assignment with the server assignor when
the group epoch is ahead of it (record 7 for every member whose target changed, then record 6), and
(3) move the member one reconciliation step towards its target (record 8): revoke first, then hand
out partitions once their previous owner has released them. Since Kafka 4.3 (KIP-1263) step (2)
waits until `consumer_assignment_interval_ms` has passed since the previous computation: a heartbeat
before that gets the old target, and the first heartbeat after it (of any member) computes the new
one; a new group, or one whose members all left (4.4), computes at once. Leaving or being fenced writes the
member's tombstones (8, 7, 5) and bumps the group epoch. All records of one request share a batch.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from coordinator.simulator.client import Client, Member, TopicPartition
from coordinator.simulator.runtime import Runtime
from coordinator.simulator.truth import TrueRebalance

STABLE, UNREVOKED, UNRELEASED = 0, 1, 2
SERVER_ASSIGNORS = {"server-uniform": "uniform", "server-range": "range"}
Partitions = frozenset[TopicPartition]
EMPTY: Partitions = frozenset()


class ConsumerMemberClient(Member, Protocol):
    """The responses the coordinator sends a member (a `ConsumerProtocolClient`, which is not
    named here because consumer_client.py imports this module)."""

    def on_heartbeat_response(self, epoch: int, assigned: Partitions) -> None: ...

    def on_fenced(self) -> None: ...


@dataclass
class ModernMember:
    member_id: str
    client: ConsumerMemberClient
    epoch: int = 0
    previous_epoch: int = 0
    state: int = STABLE
    assigned: Partitions = EMPTY
    pending: Partitions = EMPTY

    def snapshot(self) -> tuple[int, int, Partitions, Partitions]:
        return self.epoch, self.state, self.assigned, self.pending


class ConsumerGroupCoordinator:
    def __init__(self, sim: Runtime) -> None:
        self.sim = sim
        self.group = sim.scenario.group
        self.exists = False
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.assigned_at: int | None = None   # sim ms of the last target computation; None: at once
        self.members: dict[str, ModernMember] = {}
        self.target: dict[str, Partitions] = {}
        self.owner: dict[TopicPartition, str] = {}
        self.last_converged_owner: dict[TopicPartition, str] = {}
        self.last_converged_members: list[str] = []

    # -- record builders -------------------------------------------------------------------------
    def _key(self, member_id: str | None = None) -> dict:
        return {"group_id": self.group} if member_id is None else {"group_id": self.group,
                                                                   "member_id": member_id}

    def _topic_partitions(self, partitions: Partitions) -> list[dict]:
        by_topic: dict[str, list[int]] = {}
        for topic, p in partitions:
            by_topic.setdefault(topic, []).append(p)
        return [{"topic_id": self.sim.topic_ids[t], "partitions": sorted(ps)}
                for t, ps in sorted(by_topic.items())]

    def _member_record(self, m: ModernMember) -> dict:
        c = m.client
        return {"type": 5, "type_name": "consumer_group_member_metadata", "key": self._key(m.member_id),
                "value": {"version": 0, "instance_id": c.instance_id, "rack_id": None,
                          "client_id": c.client_id, "client_host": c.host,
                          "subscribed_topic_names": sorted(c.spec.topics), "subscribed_topic_regex": None,
                          "rebalance_timeout_ms": c.spec.rebalance_timeout_ms,
                          "server_assignor": SERVER_ASSIGNORS[self.sim.strategy]}}

    def _epoch_record(self) -> dict:
        return {"type": 3, "type_name": "consumer_group_metadata", "key": self._key(),
                "value": {"version": 0, "epoch": self.group_epoch,
                          "metadata_hash": self.sim.metadata_hash()}}

    def _current_record(self, m: ModernMember) -> dict:
        return {"type": 8, "type_name": "consumer_group_current_member_assignment",
                "key": self._key(m.member_id),
                "value": {"version": 0, "member_epoch": m.epoch, "previous_member_epoch": m.previous_epoch,
                          "state": m.state, "assigned_partitions": self._topic_partitions(m.assigned),
                          "partitions_pending_revocation": self._topic_partitions(m.pending)}}

    @staticmethod
    def _tombstone(type_: int, type_name: str, key: dict) -> dict:
        return {"type": type_, "type_name": type_name, "key": key, "value": None}

    def _removal_records(self, member_id: str) -> list[dict]:
        key = self._key(member_id)
        return [self._tombstone(8, "consumer_group_current_member_assignment", key),
                self._tombstone(7, "consumer_group_target_assignment_member", key),
                self._tombstone(5, "consumer_group_member_metadata", key)]

    # -- ConsumerGroupHeartbeat ------------------------------------------------------------------
    def heartbeat(self, client: ConsumerMemberClient, member_id: str, member_epoch: int,
                  owned: Partitions) -> None:
        net = self.sim.scenario.network_ms
        records: list[dict] = []
        if member_epoch == -1:
            self._fence(member_id, "member_left", None)
            return
        if member_epoch == -2:
            self._static_leave(member_id)
            return
        member = self.members.get(member_id)
        if member is None:
            if member_epoch != 0:
                self.sim.after(net, client.on_fenced)
                return
            self.exists = True
            previous = self._static_member(client.instance_id)
            if previous is not None:
                member = self._replace(previous, member_id, client, records)
            else:
                member = ModernMember(member_id, client)
                self.members[member_id] = member
                records.append(self._member_record(member))
                self._bump(records, "member_joined", None)
        if self.group_epoch > self.assignment_epoch and self._may_assign():
            self._update_target(records)
        before = member.snapshot()
        self._reconcile(member, owned)
        if member.snapshot() != before or member_epoch == 0:
            records.append(self._current_record(member))
        offset = self.sim.write(records)[-1].offset if records else None
        if offset is not None:
            self._check_converged(offset)
        self.sim.after(net, client.on_heartbeat_response, member.epoch, member.assigned)

    def _bump(self, records: list[dict], trigger: str, trigger_ms: int | None) -> None:
        self.group_epoch += 1
        records.append(self._epoch_record())
        now = self.sim.abs_ms(self.sim.now)
        self.sim.truth.begin(TrueRebalance(
            protocol="consumer", trigger=trigger, start_ms=now, trigger_ms=trigger_ms or now,
            from_generation=self.group_epoch - 1, members_before=list(self.last_converged_members)))

    def _may_assign(self) -> bool:
        interval = self.sim.scenario.consumer_assignment_interval_ms
        return self.assigned_at is None or interval == 0 or self.sim.now >= self.assigned_at + interval

    def _update_target(self, records: list[dict]) -> None:
        subscriptions = {mid: list(m.client.spec.topics) for mid, m in self.members.items()}
        previous = {mid: sorted(self.target.get(mid, EMPTY)) for mid in self.members}
        result = self.sim.assign(subscriptions, previous, None)
        for mid in self.members:
            new = frozenset((t, int(p)) for t, p in result.get(mid, []))
            if mid not in self.target or self.target[mid] != new:
                self.target[mid] = new
                records.append({"type": 7, "type_name": "consumer_group_target_assignment_member",
                                "key": self._key(mid),
                                "value": {"version": 0, "topic_partitions": self._topic_partitions(new)}})
        self.assignment_epoch = self.group_epoch
        self.assigned_at = self.sim.now
        # dated as Kafka 4.3+ dates it (KIP-1263): when the computation finished
        records.append({"type": 6, "type_name": "consumer_group_target_assignment_metadata",
                        "key": self._key(), "value": {"version": 0, "assignment_epoch": self.assignment_epoch,
                                                      "assignment_timestamp": self.sim.abs_ms(self.sim.now)}})

    def _reconcile(self, m: ModernMember, owned: Partitions) -> None:
        if m.state == STABLE:
            if m.epoch != self.assignment_epoch:
                self._next_assignment(m, m.epoch, owned)
        elif m.state == UNREVOKED:
            if not (owned & m.pending):
                self._next_assignment(m, m.epoch, owned)
        else:
            self._next_assignment(m, m.epoch, owned)

    def _next_assignment(self, m: ModernMember, epoch: int, owned: Partitions) -> None:
        target = self.target.get(m.member_id, EMPTY)
        kept = m.assigned & target
        pending = m.assigned - kept
        wanted = target - kept
        free = frozenset(tp for tp in wanted if self.owner.get(tp) in (None, m.member_id))
        unreleased = bool(wanted - free)
        if pending and (owned & pending):
            new = (epoch, UNREVOKED, kept, pending)
        else:
            state = UNRELEASED if unreleased else STABLE
            new = (self.assignment_epoch, state, kept | free, EMPTY)
        self._set(m, *new)

    def _set(self, m: ModernMember, epoch: int, state: int, assigned: Partitions,
             pending: Partitions) -> None:
        for tp in m.assigned | m.pending:
            if self.owner.get(tp) == m.member_id:
                del self.owner[tp]
        for tp in assigned | pending:
            self.owner[tp] = m.member_id
        if epoch != m.epoch:
            m.previous_epoch = m.epoch
        m.epoch, m.state, m.assigned, m.pending = epoch, state, assigned, pending

    def _converged(self) -> bool:
        return (self.group_epoch == self.assignment_epoch
                and all(m.state == STABLE and m.epoch == self.assignment_epoch
                        for m in self.members.values()))

    def _check_converged(self, offset: int) -> None:
        if self.sim.truth.open is None or (self.members and not self._converged()):
            return
        owner = {tp: mid for mid, m in self.members.items() for tp in m.assigned}
        moved = sorted(tp for tp in set(owner) | set(self.last_converged_owner)
                       if owner.get(tp) != self.last_converged_owner.get(tp))
        self.last_converged_owner, self.last_converged_members = owner, sorted(self.members)
        self.sim.truth.finish(self.sim.abs_ms(self.sim.now), self.group_epoch, sorted(self.members),
                              moved, offset)

    # -- leaving and fencing ---------------------------------------------------------------------
    def _fence(self, member_id: str, trigger: str, trigger_ms: int | None) -> None:
        member = self.members.pop(member_id, None)
        if member is None:
            return
        self.target.pop(member_id, None)
        self._set(member, member.epoch, member.state, EMPTY, EMPTY)
        records = self._removal_records(member_id)
        self._bump(records, trigger, trigger_ms)
        offset = self.sim.write(records)[-1].offset
        if not self.members:
            self.assigned_at = None   # an emptied group assigns its next member at once, as a new one
            self.sim.truth.note("group_emptied", self.sim.abs_ms(self.sim.now),
                                generation=self.group_epoch, offset=offset)
            self._check_converged(offset)

    def _static_member(self, instance_id: str | None) -> ModernMember | None:
        if instance_id is None:
            return None
        return next((m for m in self.members.values() if m.client.instance_id == instance_id), None)

    def _static_leave(self, member_id: str) -> None:
        """A static member leaving temporarily keeps its partitions under member epoch -2 until it
        returns or its session times out; only its current assignment record changes."""
        member = self.members.get(member_id)
        if member is None:
            return
        previous = member.previous_epoch
        self._set(member, -2, member.state, member.assigned, EMPTY)
        member.previous_epoch = previous  # Kafka sets the epoch here without shifting the previous one
        self.sim.write([self._current_record(member)])
        timeout = member.client.spec.session_timeout_ms
        self.sim.after(timeout, self._static_expired, member_id, self.sim.abs_ms(self.sim.now))

    def _static_expired(self, member_id: str, left_ms: int) -> None:
        member = self.members.get(member_id)
        if member is not None and member.epoch == -2:
            self._fence(member_id, "session_expired", left_ms)

    def _replace(self, old: ModernMember, member_id: str, client: ConsumerMemberClient,
                 records: list[dict]) -> ModernMember:
        """A static member back under a new member id takes over the old one's assignment without
        a group epoch bump: tombstones for the old id, then the new id's 5, 7 and 8."""
        del self.members[old.member_id]
        records.extend(self._removal_records(old.member_id))
        member = ModernMember(member_id, client, epoch=0, previous_epoch=0, state=old.state)
        self.members[member_id] = member
        self._set(old, old.epoch, old.state, EMPTY, EMPTY)
        self._set(member, 0, old.state, old.assigned, EMPTY)
        self.target[member_id] = self.target.pop(old.member_id, EMPTY)
        records.append(self._member_record(member))
        records.append({"type": 7, "type_name": "consumer_group_target_assignment_member",
                        "key": self._key(member_id),
                        "value": {"version": 0, "topic_partitions": self._topic_partitions(self.target[member_id])}})
        records.append(self._current_record(member))
        self.sim.truth.note("static_member_replaced", self.sim.abs_ms(self.sim.now),
                            instance_id=client.instance_id, old_member_id=old.member_id,
                            new_member_id=member_id, generation=self.group_epoch)
        return member

    def leave(self, member_id: str) -> None:
        self._fence(member_id, "member_left", None)

    def session_expired(self, member_id: str, trigger_ms: int) -> None:
        self._fence(member_id, "session_expired", trigger_ms)

    def view(self) -> dict | None:
        """The group as its records describe it: epochs, members and their current assignments."""
        if not self.exists:
            return None
        server = SERVER_ASSIGNORS[self.sim.strategy]
        return {"generation": self.group_epoch, "assignment_epoch": self.assignment_epoch,
                "protocol": server if self.members else None,
                "members": {mid: sorted(m.assigned) for mid, m in self.members.items()},
                "member_epochs": {mid: m.epoch for mid, m in self.members.items()}}

    # -- offsets and deletion --------------------------------------------------------------------
    def offset_commit(self, client: Client, member_id: str | None,
                      offsets: dict[TopicPartition, int]) -> None:
        self.sim.write_commits(offsets, version=4, topic_ids=True)

    def delete(self) -> bool:
        """DeleteGroups on an empty consumer group: offset tombstones, then 6 and 3 tombstones."""
        if self.members or not self.exists:
            return False
        records = self.sim.offset_tombstones()
        records.append(self._tombstone(6, "consumer_group_target_assignment_metadata", self._key()))
        records.append(self._tombstone(3, "consumer_group_metadata", self._key()))
        self.sim.write(records)
        self.exists, self.group_epoch, self.assignment_epoch, self.assigned_at = False, 0, 0, None
        self.target, self.last_converged_owner, self.last_converged_members = {}, {}, []
        return True
