"""What coordinators and clients may use of the run they take part in.

Coordinators and clients are handed a `Runtime`, not the `Simulation` itself: they only need the
clock, a way to schedule callbacks, somewhere to write `__consumer_offsets` records and the ground
truth log, plus the scenario's settings and a few services derived from them. Depending on this
protocol instead of the class keeps `simulation.py` the only module that knows every participant,
so none of them imports it back (no import cycle, none hidden under TYPE_CHECKING either).
`Simulation` satisfies the protocol structurally; it does not subclass it.

Members that are plain attributes of `Simulation` are declared as read-only properties: a
participant reads them and never assigns them.
"""
from __future__ import annotations

import random
from typing import Any, Callable, Mapping, Protocol

from coordinator.simulator.capture import CapturedRecord
from coordinator.simulator.scenario import Scenario
from coordinator.simulator.truth import GroundTruth, TopicPartition


class Clock(Protocol):
    @property
    def now(self) -> int:
        """Simulated ms since the scenario began."""

    def abs_ms(self, t_ms: int) -> int:
        """Wall-clock ms of simulated time `t_ms` (what records and the truth log carry)."""


class Scheduler(Protocol):
    def after(self, delay_ms: int, fn: Callable[..., Any], *args: Any) -> None:
        """Runs `fn(*args)` `delay_ms` of simulated time from now (negative delays count as 0)."""


class RecordWriter(Protocol):
    def write(self, records: list[dict]) -> list[CapturedRecord]:
        """Appends one batch to the group's `__consumer_offsets` partition, stamped now."""

    def write_commits(self, offsets: Mapping[TopicPartition, int], version: int, topic_ids: bool) -> None:
        """Writes one OffsetCommit batch (value `version`, with topic ids or not)."""

    def offset_tombstones(self) -> list[dict]:
        """Tombstones for every committed offset (not written: they lead a deletion's batch)."""


class Runtime(Clock, Scheduler, RecordWriter, Protocol):
    """The clock, scheduling, the record writer and the truth log, with the run's settings."""

    # -- settings of the run ---------------------------------------------------------------------
    @property
    def scenario(self) -> Scenario: ...

    @property
    def strategy(self) -> str: ...

    @property
    def topic_ids(self) -> Mapping[str, str]: ...

    def metadata_hash(self) -> int:
        """KIP-848's hash of the subscribed topics' metadata (constant over a run)."""

    # -- seeded randomness (runs are deterministic for a seed) -----------------------------------
    @property
    def rng(self) -> random.Random: ...

    def uuid(self) -> str: ...

    def kafka_uuid(self) -> str: ...

    # -- the truth log ---------------------------------------------------------------------------
    @property
    def truth(self) -> GroundTruth: ...

    # -- assignment and processing ---------------------------------------------------------------
    def assign(self, subscriptions: dict[str, list[str]], previous: dict[str, list[TopicPartition]],
               generations: dict[str, int] | None,
               sticky: dict[str, bytes | None] | None = None) -> dict[str, list[TopicPartition]]:
        """The run's strategy applied to the members' subscriptions."""

    def consumed_offset(self, tp: TopicPartition) -> int:
        """The offset a commit of `tp` would carry now: the next message to process."""

    def start_processing(self, owner: str, tp: TopicPartition) -> None: ...

    def stop_processing(self, owner: str, tp: TopicPartition) -> None: ...
