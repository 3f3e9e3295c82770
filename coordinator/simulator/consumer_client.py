"""A consumer with group.protocol=consumer (KIP-848): periodic ConsumerGroupHeartbeats, and
reconciliation in poll(): commit and revoke first, then take new partitions, then acknowledge."""
from __future__ import annotations

from coordinator.simulator.client import Client
from coordinator.simulator.consumer_group import EMPTY, ConsumerGroupCoordinator, Partitions
from coordinator.simulator.runtime import Runtime


class ConsumerProtocolClient(Client):
    """A consumer with group.protocol=consumer: periodic heartbeats, reconciliation in poll()."""

    def __init__(self, sim: Runtime, coordinator: ConsumerGroupCoordinator, index: int) -> None:
        super().__init__(sim, coordinator, index)
        self.coordinator: ConsumerGroupCoordinator = coordinator  # the narrower type: heartbeats
        self.epoch = 0
        self._hb_token = 0
        self.last_hb = 0
        self.reconciling = False

    def begin(self) -> None:
        self.member_id = self.sim.kafka_uuid()  # 4.0+ clients choose their own member id
        self.epoch = 0
        self._heartbeat()

    def _heartbeat(self) -> None:
        self._hb_token += 1
        self.last_hb = self.sim.now
        self.later(self.net(), self.coordinator.heartbeat, self, self.member_id, self.epoch,
                   frozenset(self.owned))
        self.later(self.sim.scenario.consumer_heartbeat_interval_ms, self._regular, self._hb_token)

    def _regular(self, token: int) -> None:
        if token == self._hb_token:
            self._heartbeat()

    def on_heartbeat_response(self, epoch: int, assigned: Partitions) -> None:
        self.epoch = epoch
        if self.reconciling or assigned == self.owned:
            return
        self.reconciling = True
        revoked, added = self.owned - assigned, assigned - self.owned
        self.later(self.poll_delay(), self._reconcile, revoked, added)

    def _reconcile(self, revoked: Partitions, added: Partitions) -> None:
        def done() -> None:
            self.release(revoked)
            self.acquire(added)
            self.reconciling = False
            self._heartbeat()  # acknowledge at once rather than at the next interval
        if revoked:
            self.commit(revoked, then=done)
        else:
            done()

    def on_fenced(self) -> None:
        self.release(self.owned)
        self.epoch = 0
        self._heartbeat()

    def kill(self) -> None:
        """A dynamic member closed with REMAIN_IN_GROUP still left at once in the canary run on
        Kafka 4.4 (docs/simulator.md): the coordinator wrote its tombstones within 25 ms of the
        close. A static member stays until its session expires."""
        if self.instance_id is None:
            self.stop()
        else:
            super().kill()

    def leave(self) -> None:
        # Static members leave "temporarily" (epoch -2) and keep their partitions for a while.
        epoch = -2 if self.instance_id is not None else -1
        self.sim.after(self.net(), self.coordinator.heartbeat, self, self.member_id, epoch, EMPTY)

    def on_crash(self) -> None:
        if self.member_id is None:
            return
        expiry = self.last_hb + self.net() + self.spec.session_timeout_ms
        self.sim.after(max(0, expiry - self.sim.now), self.coordinator.session_expired,
                       self.member_id, self.sim.abs_ms(self.sim.now))
