"""A discrete-event run of one consumer group against its group coordinator.

`Simulation(scenario, strategy, seed)` replays the scenario's steps; the coordinator model writes
the records Kafka would write into its `__consumer_offsets` partition (encoded with the codec),
producers fill the topics at their rates and consumers process what they own. Runs are
deterministic for a given scenario, strategy and seed.

    sim = Simulation(load_scenario("join-one"), "range", seed=1)
    result = sim.run()                 # all records, ground truth, summary
    for rec in Simulation(...).run_stream(speed=10.0):   # records as they happen, paced
        ...
"""
from __future__ import annotations

import base64
import dataclasses
import hashlib
import heapq
import random
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

from coordinator.assignors import assign
from coordinator.partitioning import partition_for
from coordinator.protocol import decode_sticky_user_data
from coordinator.records import encode
from coordinator.simulator.capture import CapturedRecord, OffsetsLog
from coordinator.simulator.classic import ClassicCoordinator
from coordinator.simulator.classic_client import ClassicClient
from coordinator.simulator.client import Client, TopicPartition
from coordinator.simulator.consumer_client import ConsumerProtocolClient
from coordinator.simulator.consumer_group import ConsumerGroupCoordinator
from coordinator.simulator.scenario import Scenario, Step, protocol_of
from coordinator.simulator.summary import Summary, summarize
from coordinator.simulator.traffic import PartitionFlow
from coordinator.simulator.truth import GroundTruth

LEADER_EPOCH = 0


@dataclass(frozen=True)
class SimulationResult:
    scenario: str
    strategy: str
    protocol: str
    seed: int
    records: list[CapturedRecord]
    truth: GroundTruth
    summary: Summary

    def truth_dict(self) -> dict[str, Any]:
        return {"scenario": self.scenario, "seed": self.seed, **self.truth.to_dict(),
                "summary": self.summary.to_dict()}


def _topic_id(group: str, topic: str) -> str:
    digest = hashlib.sha256(f"{group}/{topic}".encode()).digest()[:16]
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


class Simulation:
    """Runs one scenario. It implements `runtime.Runtime`, the part of it the coordinator and the
    clients use, and is the only module that builds them (none of them imports this one)."""

    def __init__(self, scenario: Scenario, strategy: str | None = None, seed: int = 0,
                 start_ms: int | None = None) -> None:
        """`start_ms` overrides the scenario's wall-clock origin (a live source passes "now")."""
        if start_ms is not None:
            scenario = dataclasses.replace(scenario, start_ms=start_ms)
        self.scenario = scenario
        self.strategy = strategy or scenario.strategies[0]
        self.protocol = protocol_of(self.strategy)
        self.seed = seed
        self.rng = random.Random(f"{scenario.name}/{self.strategy}/{seed}")
        self.now = 0
        self._queue: list[tuple[int, int, Callable[..., Any], tuple]] = []
        self._seq = 0
        self.partitions_per_topic = {t.name: t.partitions for t in scenario.topics}
        self.topic_ids = {t.name: _topic_id(scenario.group, t.name) for t in scenario.topics}
        budget = scenario.latency_budget_ms / 1000.0
        capacity = scenario.clients.processing_rate
        self.flows: dict[TopicPartition, PartitionFlow] = {
            (t.name, p): PartitionFlow(rate=t.rate / t.partitions, capacity=capacity, budget_s=budget)
            for t in scenario.topics for p in range(t.partitions)}
        self.committed: dict[TopicPartition, int] = {}
        self.owner: dict[TopicPartition, str] = {}
        self.log = OffsetsLog(partition_for(scenario.group, scenario.offsets_topic_partitions), encode)
        self.truth = GroundTruth(self.protocol, self.strategy)
        self.coordinator: ClassicCoordinator | ConsumerGroupCoordinator = (
            ClassicCoordinator(self) if self.protocol == "classic" else ConsumerGroupCoordinator(self))
        self.clients: list[Client] = []
        self.peak_backlog = 0.0
        # Figures cover what the steps cause, not the group forming (the same for every strategy).
        self.warmup_ms = min((step.at_ms for step in scenario.steps), default=0)
        self._finished = False
        for _ in range(scenario.clients.count):
            self._spawn()
        for step in scenario.steps:
            self.schedule(step.at_ms, self._run_step, step)
        self.schedule(0, self._sample_lag)
        self.late_before_warmup = 0.0
        self.schedule(self.warmup_ms, self._end_warmup)

    # -- clock -----------------------------------------------------------------------------------
    def schedule(self, at_ms: int, fn: Callable[..., Any], *args: Any) -> None:
        self._seq += 1
        heapq.heappush(self._queue, (max(at_ms, self.now), self._seq, fn, args))

    def after(self, delay_ms: int, fn: Callable[..., Any], *args: Any) -> None:
        self.schedule(self.now + max(0, int(delay_ms)), fn, *args)

    def abs_ms(self, t_ms: int) -> int:
        return self.scenario.start_ms + t_ms

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def kafka_uuid(self) -> str:
        raw = self.rng.getrandbits(128).to_bytes(16, "big")
        return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")

    def metadata_hash(self) -> int:
        digest = hashlib.sha256(repr(sorted(self.partitions_per_topic.items())).encode()).digest()
        return int.from_bytes(digest[:8], "big", signed=True)

    # -- records ---------------------------------------------------------------------------------
    def write(self, records: list[dict]) -> list[CapturedRecord]:
        return self.log.append(self.abs_ms(self.now), records)

    def write_commits(self, offsets: Mapping[TopicPartition, int], version: int, topic_ids: bool) -> None:
        records = []
        for (topic, partition), offset in sorted(offsets.items()):
            value: dict[str, Any] = {"version": version, "offset": offset, "leader_epoch": LEADER_EPOCH,
                                     "metadata": "", "commit_timestamp": self.abs_ms(self.now)}
            if topic_ids:
                value["topic_id"] = self.topic_ids[topic]
            records.append({"type": 1, "type_name": "offset_commit",
                            "key": {"group": self.scenario.group, "topic": topic, "partition": partition},
                            "value": value})
            self.committed[(topic, partition)] = offset
        self.write(records)

    def offset_tombstones(self) -> list[dict]:
        records = [{"type": 1, "type_name": "offset_commit",
                    "key": {"group": self.scenario.group, "topic": t, "partition": p}, "value": None}
                   for t, p in sorted(self.committed)]
        self.committed.clear()
        return records

    def assign(self, subscriptions: dict[str, list[str]], previous: dict[str, list[TopicPartition]],
               generations: dict[str, int] | None,
               sticky: dict[str, bytes | None] | None = None) -> dict[str, list[TopicPartition]]:
        if self.strategy == "sticky" and sticky is not None:
            previous = {}
            generations = {}
            for member, data in sticky.items():
                if data:
                    decoded = decode_sticky_user_data(data)
                    previous[member] = [(tp.topic, p) for tp in decoded.previous_assignment
                                        for p in tp.partitions]
                    generations[member] = -1 if decoded.generation is None else decoded.generation
        return assign(self.strategy, self.partitions_per_topic, subscriptions, previous=previous,
                      generations=generations, topic_ids=self.topic_ids)

    def group_view(self) -> dict[str, Any] | None:
        """The simulator's own view of the group as the log describes it so far (None once
        deleted): generation or group epoch, members with their assignments, committed offsets."""
        view = self.coordinator.view()
        if view is None:
            return None
        return {**view, "offsets": dict(sorted(self.committed.items()))}

    # -- processing ------------------------------------------------------------------------------
    def consumed_offset(self, tp: TopicPartition) -> int:
        return self.flows[tp].consumed_offset(self.now)

    def start_processing(self, owner: str, tp: TopicPartition) -> None:
        self.flows[tp].start(self.now, self.committed.get(tp))
        self.owner[tp] = owner
        self.truth.partition_resumed(tp, self.abs_ms(self.now), owner)
        self._track_backlog()

    def stop_processing(self, owner: str, tp: TopicPartition) -> None:
        self.flows[tp].stop(self.now)
        if self.owner.get(tp) == owner:
            del self.owner[tp]
        self.truth.partition_stopped(tp, self.abs_ms(self.now), owner)

    def _track_backlog(self) -> float:
        total = sum(f.backlog(self.now) for f in self.flows.values())
        if self.now >= self.warmup_ms:
            self.peak_backlog = max(self.peak_backlog, total)
        return total

    def _end_warmup(self) -> None:
        for flow in self.flows.values():
            flow.advance(self.now)
        self.late_before_warmup = sum(f.late for f in self.flows.values())

    def end_offsets_at(self, t_abs_ms: int) -> dict[TopicPartition, int]:
        """Log end offsets of every topic partition at wall-clock time t (produce side)."""
        t = t_abs_ms - self.scenario.start_ms
        return {tp: flow.end_offset(max(0, t)) for tp, flow in self.flows.items()}

    def _sample_lag(self) -> None:
        backlog = self._track_backlog()
        committed_lag = {f"{t}-{p}": flow.end_offset(self.now) - self.committed.get((t, p), 0)
                         for (t, p), flow in sorted(self.flows.items()) if (t, p) in self.committed}
        self.truth.lag.append({"timestamp_ms": self.abs_ms(self.now), "backlog": round(backlog, 3),
                               "committed_lag": committed_lag})
        if self.now + self.scenario.lag_sample_ms <= self.scenario.duration_ms:
            self.after(self.scenario.lag_sample_ms, self._sample_lag)

    # -- scenario steps --------------------------------------------------------------------------
    def _spawn(self, delay_ms: int = 0) -> Client:
        # Chosen by the coordinator's type (it is classic exactly when the protocol is) so each
        # client is handed the coordinator class it talks to.
        coordinator, index = self.coordinator, len(self.clients)
        client: Client = (ClassicClient(self, coordinator, index) if isinstance(coordinator, ClassicCoordinator)
                          else ConsumerProtocolClient(self, coordinator, index))
        self.clients.append(client)
        self.after(delay_ms, client.start)
        return client

    def _alive(self) -> list[Client]:
        return [c for c in self.clients if c.alive]

    def _run_step(self, step: Step) -> None:
        alive = self._alive()
        if step.action == "scale":
            if step.count > len(alive):
                for i in range(step.count - len(alive)):
                    self._spawn(i * step.stagger_ms)
            else:
                for i, client in enumerate(reversed(alive[step.count:])):
                    self.after(i * step.stagger_ms, client.stop)
        elif step.action in ("crash", "kill"):
            for i, client in enumerate(alive[:step.count]):
                self.after(i * step.stagger_ms, client.crash if step.action == "crash" else client.kill)
        elif step.action == "restart":
            for i, client in enumerate(alive[:step.count]):
                self.after(i * step.stagger_ms, client.stop)
                self.after(i * step.stagger_ms + step.down_ms, client.start)
        elif step.action == "leave_all":
            for i, client in enumerate(alive):
                self.after(i * step.stagger_ms, client.stop)
        elif step.action == "delete_group":
            if self.coordinator.delete():
                self.truth.note("group_deleted", self.abs_ms(self.now))

    # -- running ---------------------------------------------------------------------------------
    def step(self) -> bool:
        """Runs the next event; False once the scenario's duration is over."""
        if not self._queue or self._queue[0][0] > self.scenario.duration_ms:
            if not self._finished:
                self._finish()
            return False
        t, _, fn, args = heapq.heappop(self._queue)
        self.now = t
        fn(*args)
        return True

    def _finish(self) -> None:
        self._finished = True
        self.now = self.scenario.duration_ms
        self._track_backlog()
        for flow in self.flows.values():
            flow.finish(self.now)

    def run(self) -> SimulationResult:
        while self.step():
            pass
        return SimulationResult(self.scenario.name, self.strategy, self.protocol, self.seed,
                                list(self.log.records), self.truth, self._summarize())

    def _summarize(self) -> Summary:
        return summarize(strategy=self.strategy, protocol=self.protocol, truth=self.truth,
                         warmup_end_ms=self.abs_ms(self.warmup_ms), peak_backlog=self.peak_backlog,
                         late=sum(f.late for f in self.flows.values()),
                         late_before_warmup=self.late_before_warmup, records=len(self.log.records))

    def run_stream(self, speed: float | None = None,
                   sleep: Callable[[float], None] = time.sleep,
                   clock: Callable[[], float] = time.monotonic) -> Iterator[CapturedRecord]:
        """Yields records in simulated-time order as the run produces them.

        With `speed`, simulated time is paced against the wall clock (2.0 = twice as fast); the
        record timestamps stay those of the scenario (`start_ms` + simulated time), so a live
        source usually sets `start_ms` to the current time first.
        """
        started = clock()
        emitted = 0
        while True:
            more = self.step()
            fresh = self.log.records[emitted:]
            emitted = len(self.log.records)
            for rec in fresh:
                if speed:
                    wait = (rec.timestamp - self.scenario.start_ms) / 1000.0 / speed - (clock() - started)
                    if wait > 0:
                        sleep(wait)
                yield rec
            if not more:
                return
