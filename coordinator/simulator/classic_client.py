"""A Java-style consumer in a classic group: heartbeats, onJoinPrepare, JoinGroup, SyncGroup.

Eager assignors revoke everything before rejoining; cooperative-sticky revokes only what the new
assignment takes away and rejoins at once so the withheld partitions can be handed over.
"""
from __future__ import annotations

from coordinator.protocol import StickyUserData, encode_sticky_user_data, group_partitions
from coordinator.simulator.classic import COOPERATIVE, ClassicCoordinator, JoinMetadata
from coordinator.simulator.client import Client, TopicPartition
from coordinator.simulator.runtime import Runtime


class ClassicClient(Client):
    """A Java-style consumer with auto-commit, using one client-side assignor."""

    def __init__(self, sim: Runtime, coordinator: ClassicCoordinator, index: int) -> None:
        super().__init__(sim, coordinator, index)
        self.coordinator: ClassicCoordinator = coordinator  # the narrower type: joins, syncs, heartbeats
        self.phase = "idle"      # idle, joining, syncing, stable
        self.generation = -1
        self.hb_anchor = 0
        self.refreshed_at = 0    # the coordinator's last sight of a commit from this member
        self.sticky_previous: list[TopicPartition] = []

    @property
    def cooperative(self) -> bool:
        return self.sim.strategy in COOPERATIVE

    def begin(self) -> None:
        self.generation = -1
        self.refreshed_at = 0
        self._send_join()

    def _metadata(self) -> JoinMetadata:
        strategy = self.sim.strategy
        user_data = None
        if strategy == "sticky":
            user_data = encode_sticky_user_data(StickyUserData(
                group_partitions(self.sticky_previous), self.generation))
        elif strategy == "cooperative-sticky":
            user_data = self.generation.to_bytes(4, "big", signed=True)
        owned = tuple(sorted(self.owned)) if self.cooperative else ()
        return JoinMetadata(strategy, self.spec.topics, owned, self.generation, user_data)

    def _send_join(self) -> None:
        self.phase = "joining"
        # A first join carries no member id; since KIP-394 the coordinator answers MEMBER_ID_REQUIRED
        # and the client joins again with the id it was given: one more round trip.
        delay = self.net() if self.member_id is not None else 3 * self.net()
        self.later(delay, self.coordinator.join, self, self.member_id, [self._metadata()])

    def heartbeat_soon(self) -> None:
        """Schedules the next heartbeat on this member's grid; it reaches the coordinator one
        network delay later."""
        now, hb = self.sim.now, self.spec.heartbeat_interval_ms
        steps = max(0, -(-(now - self.hb_anchor) // hb))
        self.later(self.hb_anchor + steps * hb - now + self.net(), self.coordinator.heartbeat,
                   self, self.member_id)

    def last_heartbeat(self) -> int:
        """When the coordinator last heard from this member: its last heartbeat on the grid, or a
        later commit (which the coordinator takes as one)."""
        hb = self.spec.heartbeat_interval_ms
        beat = self.hb_anchor + max(0, (self.sim.now - self.hb_anchor) // hb) * hb
        return max(beat, self.refreshed_at)

    def session_refreshed(self) -> None:
        self.refreshed_at = self.sim.now

    def on_rebalance_error(self) -> None:
        """REBALANCE_IN_PROGRESS (heartbeat or SyncGroup): onJoinPrepare at the next poll."""
        if self.phase == "joining":
            return
        self.phase = "joining"
        self.later(self.poll_delay(), self._join_prepare)

    def on_unknown_member(self) -> None:
        self.member_id = None if self.instance_id is None else self.member_id
        self.release(self.owned)
        self.on_rebalance_error()

    def _join_prepare(self) -> None:
        # Auto-commit commits synchronously before rejoining; eager assignors then revoke all.
        self.sim.truth.member_reacted(self.sim.abs_ms(self.sim.now))
        owned = set(self.owned)
        if not self.cooperative:
            self.sticky_previous = sorted(owned) or self.sticky_previous
        self.commit(owned, then=self._send_join)
        if not self.cooperative:
            self.release(owned)

    def on_join_response(self, generation: int, leader: str | None, protocol: str | None,
                         members: dict[str, JoinMetadata] | None) -> None:
        self.generation = generation
        self.phase = "syncing"
        if self.member_id == leader and members is not None:
            assignments = self.sim.assign({mid: list(m.topics) for mid, m in members.items()},
                                          {mid: list(m.owned) for mid, m in members.items()},
                                          {mid: m.generation for mid, m in members.items()},
                                          sticky={mid: m.user_data for mid, m in members.items()})
            self.later(self.sim.scenario.assignment_ms + self.net(), self.coordinator.sync, self,
                       self.member_id, generation, assignments)
        else:
            self.later(self.net(), self.coordinator.sync, self, self.member_id, generation, None)

    def on_sync_response(self, generation: int, assigned: list[TopicPartition]) -> None:
        if self.phase == "joining" or generation != self.generation:
            return
        self.phase = "stable"
        # The heartbeat and auto-commit timers restart when a join completes (ConsumerCoordinator
        # onJoinComplete), so members that synced together commit and heartbeat in step.
        self.hb_anchor = self.sim.now
        self.reset_auto_commit()
        new = set(assigned)
        revoked = self.owned - new
        if revoked:
            # Cooperative: give up what moved, commit it, and rejoin so it can be handed over.
            self.commit(revoked)
            self.release(revoked)
        self.acquire(new)
        self.sticky_previous = sorted(new)
        if revoked and self.cooperative:
            self.phase = "joining"
            self.later(self.poll_delay(), self._join_prepare)

    def leave(self) -> None:
        if self.instance_id is not None:
            # Static members do not send LeaveGroup; the session timeout removes them if they do
            # not come back in time.
            self.on_crash()
            return
        self.sim.after(self.net(), self.coordinator.leave, self.member_id)

    def on_crash(self) -> None:
        if self.member_id is None:
            return
        expiry = self.last_heartbeat() + self.spec.session_timeout_ms
        self.sim.after(max(0, expiry - self.sim.now), self.coordinator.session_expired,
                       self.member_id, self.sim.abs_ms(self.sim.now))
