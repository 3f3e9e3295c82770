"""Logging a dependency that stops answering: one warning when it starts failing, a reminder
while it goes on, one line when it answers again.

The source asks a cluster for its end offsets at every trigger and the end-offset poller every
few seconds; with a warning per failed attempt, a cluster down for an hour wrote thousands of
identical lines, and the line that said when it came back was missing."""
from __future__ import annotations

import logging
import time
from typing import Callable

REMIND_S = 60.0


class OutageLog:
    """The log of one dependency's outages. `failed` after each failed attempt, `answered`
    after each one that worked."""

    def __init__(self, logger: logging.Logger, what: str, remind_s: float = REMIND_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger, self.what, self.remind_s, self.clock = logger, what, remind_s, clock
        self.since: float | None = None
        self._reminded = 0.0
        self._attempts = 0

    def failed(self, error: object, consequence: str) -> None:
        now = self.clock()
        self._attempts += 1
        if self.since is None:
            self.since = self._reminded = now
            self.logger.warning("%s failed (%s); %s", self.what, error, consequence)
        elif now - self._reminded >= self.remind_s:
            self._reminded = now
            self.logger.warning("%s still failing after %.0f s and %d attempts (%s); %s",
                                self.what, now - self.since, self._attempts, error, consequence)

    def answered(self) -> None:
        if self.since is not None:
            self.logger.warning("%s answers again after %.0f s", self.what,
                                self.clock() - self.since)
            self.since, self._attempts = None, 0
