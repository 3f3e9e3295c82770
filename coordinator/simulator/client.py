"""What every simulated consumer does regardless of group protocol.

A client owns partitions, processes them while it owns them, commits their positions on its
auto-commit interval and before giving them up, and can be started, stopped cleanly or crashed.
Callbacks scheduled by a client are dropped once that client stops or restarts (its `life` changes),
as the requests of a dead process are.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Protocol

from coordinator.simulator.runtime import Runtime
from coordinator.simulator.scenario import ClientSpec

TopicPartition = tuple[str, int]


class Member(Protocol):
    """What a coordinator reads of the client behind a member (and the member id it hands out).
    The coordinators' own client protocols extend this with the responses they send."""
    instance_id: str | None
    client_id: str
    host: str
    spec: ClientSpec
    member_id: str | None


class OffsetCommitter(Protocol):
    """Either group coordinator, as far as committing offsets goes (all a plain `Client` sends)."""

    def offset_commit(self, client: Client, member_id: str | None,
                      offsets: dict[TopicPartition, int]) -> None: ...


class Client:
    def __init__(self, sim: Runtime, coordinator: OffsetCommitter, index: int) -> None:
        spec = sim.scenario.clients
        self.sim = sim
        self.coordinator = coordinator
        self.index = index
        self.name = f"consumer-{index}"
        self.client_id = spec.client_id.format(group=sim.scenario.group, index=index)
        self.host = f"/10.0.{index // 250}.{index % 250 + 1}"
        self.instance_id = f"{sim.scenario.group}-instance-{index}" if spec.static else None
        self.spec = spec
        self.alive = False
        self.life = 0
        self.member_id: str | None = None
        self.owned: set[TopicPartition] = set()
        self.processing: set[TopicPartition] = set()   # owned and fetched: messages flow
        self._grants: dict[TopicPartition, int] = {}
        self._auto_commit_token = 0

    # -- scheduling ------------------------------------------------------------------------------
    def later(self, delay_ms: int, fn: Callable[..., Any], *args: Any) -> None:
        life = self.life

        def fire() -> None:
            if self.alive and self.life == life:
                fn(*args)
        self.sim.after(delay_ms, fire)

    def net(self) -> int:
        return self.sim.scenario.network_ms

    def poll_delay(self) -> int:
        return self.sim.rng.randint(0, self.spec.poll_delay_ms)

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        self.alive = True
        self.life += 1
        self.owned = set()
        self.processing = set()
        self.member_id = None  # a new process; a static member is recognised by its instance id
        jitter = self.spec.startup_ms // 2 if self.spec.startup_jitter_ms is None else self.spec.startup_jitter_ms
        startup = self.spec.startup_ms + self.sim.rng.randint(0, max(1, jitter))
        self.later(startup, self.begin)
        self._auto_commit_token = 0
        self.reset_auto_commit()

    def stop(self) -> None:
        """Clean shutdown: commit what was processed, release the partitions, leave."""
        if not self.alive:
            return
        self.commit(self.owned, then=self._close)

    def _close(self) -> None:
        self.release(self.owned)
        self.leave()
        self.alive = False
        self.life += 1

    def kill(self) -> None:
        """Closed without leaving the group (Java's close with REMAIN_IN_GROUP): it commits what it
        processed, then goes silent; the coordinator notices only when its session expires."""
        if not self.alive:
            return
        self.commit(self.owned, then=self.crash)

    def crash(self) -> None:
        """The process dies: no commit, no LeaveGroup; the coordinator notices by session timeout."""
        if not self.alive:
            return
        self.release(self.owned)
        self.alive = False
        self.life += 1
        self.on_crash()

    # -- partitions ------------------------------------------------------------------------------
    def acquire(self, partitions: Iterable[TopicPartition]) -> None:
        """Owns the partitions now; messages flow `fetch_start_ms` later (the committed-offset
        lookup and the first fetch). A partition taken away before then was never consumed here,
        so its stall runs on to the next owner."""
        for tp in sorted(set(partitions) - self.owned):
            self.owned.add(tp)
            grant = self._grants[tp] = self._grants.get(tp, 0) + 1
            if self.spec.fetch_start_ms:
                self.later(self.spec.fetch_start_ms, self._fetched, tp, grant)
            else:
                self._fetched(tp, grant)

    def _fetched(self, tp: TopicPartition, grant: int) -> None:
        if tp in self.owned and self._grants.get(tp) == grant and tp not in self.processing:
            self.processing.add(tp)
            self.sim.start_processing(self.name, tp)

    def release(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in sorted(set(partitions) & self.owned):
            self.owned.discard(tp)
            if tp in self.processing:
                self.processing.discard(tp)
                self.sim.stop_processing(self.name, tp)

    def commit(self, partitions: Iterable[TopicPartition], then: Callable[[], None] | None = None) -> None:
        """OffsetCommit of the current positions; `then` runs when the response is back."""
        offsets = {tp: self.sim.consumed_offset(tp) for tp in sorted(partitions)}
        if offsets:
            member = self.member_id
            self.sim.after(self.net(), self.coordinator.offset_commit, self, member, offsets)
        if then is not None:
            self.later(2 * self.net() if offsets else 0, then)

    def reset_auto_commit(self) -> None:
        """(Re)starts the auto-commit timer; poll() notices its expiry up to a poll delay late."""
        self._auto_commit_token += 1
        self.later(self.spec.auto_commit_interval_ms + self.poll_delay(), self._auto_commit,
                   self._auto_commit_token)

    def _auto_commit(self, token: int) -> None:
        if token != self._auto_commit_token:
            return
        if self.owned:
            self.commit(self.owned)
        self.reset_auto_commit()

    # -- protocol hooks --------------------------------------------------------------------------
    def begin(self) -> None:
        raise NotImplementedError

    def leave(self) -> None:
        raise NotImplementedError

    def on_crash(self) -> None:
        raise NotImplementedError
