"""The coordinator simulator as a live source (`source.type: simulator`, `groupscope demo`).

The driver runs one simulation per strategy, each as its own group (`<scenario>-<strategy>`), in
one background thread paced to a simulated clock. Their records are merged into one
`__consumer_offsets` log: every record stays in its group's partition (`partition_for(group)`)
and gets the next offset of that partition, so the groups interleave exactly as several groups
on one cluster do. The log is appended to a capture file, which the replay source follows. Only
the driver simulates: executors read the file, so there is one consistent log however many tasks
read it.

The groups consume the same topics (one cluster, one `orders` topic read by six groups); the
produce side is the same in every simulation of a scenario, so any one of them answers the
end-offset poller.

Time: record timestamps are simulated time (`start_ms` + scenario time). The view and the poller
must run on the same clock (`SimulatedClock`), so lag in seconds, status windows and rebalance
durations are all in simulated seconds whatever the speed.
"""
from __future__ import annotations

import dataclasses
import heapq
import logging
import os
import threading
import time
from typing import Callable, Iterator, Mapping, Sequence

from coordinator.simulator import Scenario, ScenarioError, Simulation, load_scenario
from coordinator.simulator.capture import CapturedRecord as SimulatedRecord
from streaming.sources.capture_file import CapturedRecord, encode_line
from streaming.errors import UserError

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
FLUSH_RECORDS = 500


class SimulatedClock:
    """Wall-clock time sped up: reads `start_ms` (default: the real time) until `run()`, then
    runs `speed` times as fast. Held still until the job is up, so the scenario does not play
    to an empty room while Spark starts."""

    def __init__(self, speed: float, start_ms: int | None = None,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        if speed <= 0:
            raise ValueError("the simulator's speed must be above zero")
        self.speed = speed
        self.start_ms = int(time.time() * 1000) if start_ms is None else start_ms
        self._monotonic = monotonic
        self._origin: float | None = None

    def run(self) -> None:
        if self._origin is None:
            self._origin = self._monotonic()

    def elapsed_ms(self) -> float:
        """Simulated milliseconds since `run()`."""
        if self._origin is None:
            return 0.0
        return (self._monotonic() - self._origin) * 1000.0 * self.speed

    def ms(self) -> int:
        return self.start_ms + int(self.elapsed_ms())

    def __call__(self) -> float:
        """Epoch seconds of simulated time (the MonitorView's clock)."""
        return self.start_ms / 1000.0 + self.elapsed_ms() / 1000.0


def group_for(scenario: Scenario, strategy: str) -> str:
    return f"{scenario.name}-{strategy}"


def build_simulations(scenario: Scenario, strategies: Sequence[str], seed: int,
                      start_ms: int) -> dict[str, Simulation]:
    """One simulation per strategy, each its own group, sharing the scenario's topics."""
    if not strategies:
        raise ValueError("the simulator needs at least one strategy")
    sims = {s: Simulation(dataclasses.replace(scenario, group=group_for(scenario, s)), s,
                          seed=seed, start_ms=start_ms) for s in strategies}
    # One cluster: a topic has a single id, whichever group reads it (the simulator derives ids
    # from the group name, which would give each KIP-848 group its own id for `orders`).
    shared = dict(next(iter(sims.values())).topic_ids)
    for sim in sims.values():
        sim.topic_ids = dict(shared)
    return sims


def merged_log(sims: Mapping[str, Simulation]) -> Iterator[CapturedRecord]:
    """The simulations' records in timestamp order, as one `__consumer_offsets` log: each record
    keeps its group's partition and takes that partition's next offset. Unpaced."""
    streams = [sim.run_stream(speed=None) for sim in sims.values()]
    next_offset: dict[int, int] = {}
    rec: SimulatedRecord
    for rec in heapq.merge(*streams, key=lambda r: r.timestamp):
        offset = next_offset.get(rec.partition, 0)
        next_offset[rec.partition] = offset + 1
        yield CapturedRecord(rec.partition, offset, rec.timestamp, rec.key, rec.value)


class SimulatorFeed:
    """Runs the simulations in a driver thread and appends their merged log to `path`, each
    record once the simulated clock has reached its timestamp."""

    def __init__(self, scenario: Scenario, strategies: Sequence[str], path: str, speed: float,
                 seed: int = 0, clock: SimulatedClock | None = None) -> None:
        self.scenario = scenario
        self.path = path
        self.clock = clock or SimulatedClock(speed)
        self.sims = build_simulations(scenario, strategies, seed, self.clock.start_ms)
        self.groups = [sim.scenario.group for sim in self.sims.values()]
        self.offsets_topic_partitions = scenario.offsets_topic_partitions
        self._produce_side = next(iter(self.sims.values()))
        self._lock = threading.Lock()
        self._written: dict[int, int] = {}  # partition -> next offset, for what is in the file
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._drained = False  # every record written
        self.error: BaseException | None = None
        # The replay source needs the file to exist before the first record.
        with open(path, "a", encoding="utf-8"):
            pass

    # -- the thread -------------------------------------------------------------------------

    def start(self) -> "SimulatorFeed":
        if self._thread is not None:
            raise RuntimeError("the simulator feed is already running")
        self._thread = threading.Thread(target=self._run, name="groupscope-simulator",
                                        daemon=True)
        self.clock.run()
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=timeout_s)
            self._thread = None

    def _run(self) -> None:
        try:
            with open(self.path, "a", encoding="utf-8") as fh:
                self._write(fh, merged_log(self.sims))
            self._drained = True
        except BaseException as exc:  # reported by the demo; the thread must not die silently
            log.exception("the simulator failed")
            self.error = exc

    def _write(self, fh, records: Iterator[CapturedRecord]) -> None:
        pending: list[CapturedRecord] = []
        for rec in records:
            wait_s = (rec.timestamp_ms - self.clock.ms()) / 1000.0 / self.clock.speed
            if wait_s > 0:
                self._flush(fh, pending)
                pending = []
                if self._stop.wait(wait_s):
                    return
            elif self._stop.is_set():
                return
            pending.append(rec)
            if len(pending) >= FLUSH_RECORDS:  # behind the clock: do not hold the file back
                self._flush(fh, pending)
                pending = []
        self._flush(fh, pending)

    def _flush(self, fh, records: list[CapturedRecord]) -> None:
        if not records:
            return
        fh.write("".join(encode_line(rec) + "\n" for rec in records))
        fh.flush()
        with self._lock:
            for rec in records:
                self._written[rec.partition] = rec.offset + 1

    # -- what the job asks -------------------------------------------------------------------

    def progress_target(self) -> dict[int, int]:
        """End offsets of the simulated `__consumer_offsets` (what the file holds)."""
        with self._lock:
            written = dict(self._written)
        return {p: written.get(p, 0) for p in range(self.offsets_topic_partitions)}

    @property
    def finished(self) -> bool:
        """Every record written and the scenario's time is up."""
        return self._drained and self.simulated_ms() >= self.scenario.duration_ms

    def simulated_ms(self) -> int:
        """Scenario time reached, capped at the scenario's end."""
        return min(int(self.clock.elapsed_ms()), self.scenario.duration_ms)

    def end_offsets(self) -> dict[TopicPartition, int]:
        """The produce side now; frozen once the scenario is over (the world stops with it)."""
        return self._produce_side.end_offsets_at(self.clock.start_ms + self.simulated_ms())

    def topic_metadata(self) -> tuple[dict[str, str], dict[str, int]]:
        sim = self._produce_side
        return ({tid: name for name, tid in sim.topic_ids.items()},
                dict(sim.partitions_per_topic))

    def offsets_client(self) -> "SimulatedOffsetsClient":
        return SimulatedOffsetsClient(self)


class SimulatedOffsetsClient:
    """streaming.exporter.end_offset_poller.OffsetsClient over the simulations' produce side."""

    def __init__(self, feed: SimulatorFeed) -> None:
        self._feed = feed

    def end_offsets(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        ends = self._feed.end_offsets()
        return {tp: ends[tp] for tp in partitions if tp in ends}

    def start_offsets(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        ends = self._feed.end_offsets()
        return {tp: 0 for tp in partitions if tp in ends}  # nothing is deleted by retention

    def topic_metadata(self) -> tuple[dict[str, str], dict[str, int]]:
        return self._feed.topic_metadata()

    def close(self) -> None:
        pass


def feed_from_config(config, work_dir: str) -> SimulatorFeed:
    """A (not yet started) feed for `config.simulator`, writing under `work_dir`."""
    settings = config.simulator
    try:
        scenario = load_scenario(settings.scenario)
    except ScenarioError as exc:
        raise UserError(f"config key simulator.scenario: {exc}") from None
    strategies = list(settings.strategies) or list(scenario.strategies)
    path = os.path.join(work_dir, "simulated-consumer-offsets.jsonl")
    return SimulatorFeed(scenario, strategies, path, settings.speed, settings.seed)


def feed_dataframe(spark, config, feed: SimulatorFeed):
    """The streaming DataFrame of the feed: the replay source following its file."""
    from streaming.sources import build_source

    source = dataclasses.replace(config.source, type="replay", replay_path=feed.path)
    return build_source(spark, dataclasses.replace(config, source=source))
