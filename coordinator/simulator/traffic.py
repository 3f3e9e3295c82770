"""Produce and consume side of one topic partition, as a fluid model.

Producers append at a constant rate, so the log end offset at time t is `floor(rate * t)`. While a
consumer owns the partition it processes at `capacity` messages/s until it has caught up, then keeps
pace with the producers. Everything between events is linear, so positions and the number of
messages processed later than the latency budget are exact, with no time stepping.
"""
from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class PartitionFlow:
    rate: float          # messages/s produced
    capacity: float      # messages/s a consumer can process
    budget_s: float      # latency budget: produce-to-process time counted as late above it
    t_ms: int = 0
    position: float = 0.0   # next offset to process (fractional between whole messages)
    active: bool = False
    ever_started: bool = False
    late: float = 0.0       # messages processed (or left unprocessed at the end) later than the budget
    processed: float = 0.0  # messages processed, reprocessing included

    def end_offset(self, t_ms: int) -> int:
        return int(math.floor(self.rate * t_ms / 1000.0 + 1e-9))

    def _produced(self, t_ms: int) -> float:
        return self.rate * t_ms / 1000.0

    def advance(self, t_ms: int) -> None:
        if t_ms <= self.t_ms:
            return
        if self.active:
            self._consume(self.t_ms / 1000.0, t_ms / 1000.0)
        self.t_ms = t_ms

    def _consume(self, t0: float, t1: float) -> None:
        r, c = self.rate, self.capacity
        backlog = r * t0 - self.position
        if backlog <= 1e-9:
            self.processed += r * t1 - self.position
            self.position = r * t1
            return
        catch_up = backlog / (c - r) if c > r else math.inf
        tau = min(t1 - t0, catch_up)
        # The message processed at t0 + s was produced at position/r, so its latency is linear in s.
        latency0 = t0 - self.position / r
        slope = 1.0 - c / r
        if slope < 0:
            late_s = min(max((latency0 - self.budget_s) / -slope, 0.0), tau)
        elif slope == 0:
            late_s = tau if latency0 > self.budget_s else 0.0
        else:
            late_s = tau - min(max((self.budget_s - latency0) / slope, 0.0), tau)
        self.late += c * late_s
        if tau >= t1 - t0:
            self.position += c * tau
            self.processed += c * tau
        else:
            self.processed += r * t1 - self.position
            self.position = r * t1

    def start(self, t_ms: int, committed: int | None) -> None:
        """A consumer takes the partition, resuming from the committed offset (latest if none)."""
        self.advance(t_ms)
        if committed is not None:
            self.position = float(committed)
        elif not self.ever_started:
            self.position = self._produced(t_ms)  # auto.offset.reset=latest
        self.active = True
        self.ever_started = True

    def stop(self, t_ms: int) -> None:
        self.advance(t_ms)
        self.active = False

    def consumed_offset(self, t_ms: int) -> int:
        """Offset a commit at t_ms would carry: the next message to process."""
        self.advance(t_ms)
        return int(math.floor(self.position + 1e-9))

    def backlog(self, t_ms: int) -> float:
        """Messages waiting; none before the first assignment (they are skipped by the reset)."""
        self.advance(t_ms)
        if not self.ever_started:
            return 0.0
        return max(0.0, self._produced(t_ms) - self.position)

    def finish(self, t_ms: int) -> None:
        """Counts messages still waiting at the end whose budget has already run out."""
        self.advance(t_ms)
        if self.ever_started:
            overdue = self._produced(t_ms - self.budget_s * 1000.0) - self.position
            self.late += max(0.0, overdue)
