"""Groups served from launch: one look through the Kafka Admin API (`source.admin_seed`) while
Spark starts and the first micro-batch reads the backlog of `__consumer_offsets`.

A first start otherwise serves nothing until that batch is done (tens of seconds at a million
commits, docs/performance.md); one admin look at 2,000 groups takes a fraction of a second. The
seeded groups carry committed offsets and members as Kafka shows them now, so lag is right from
the first end-offset poll; what the look cannot know (generations, rebalances, commit times:
coordinator/admin_groups.py) waits for the log. `groupscope_ready` stays 0 and
`groupscope_seeded_groups` counts them until the log brings each group (which then replaces its
seed whole) or has been read to the end (which drops the rest).
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from coordinator.admin_groups import observe
from coordinator.partitioning import partition_for
from streaming.exporter.view import MonitorView
from streaming.gc_pause import collector_paused
from streaming.kafka.offsets import close_quietly
from streaming.kafka.refusals import refusal_of

log = logging.getLogger("groupscope.seed")

_JOIN_STEP_S = 0.25  # how soon a wait for the look sees a stop asked for
# Groups of the look's first part, served while the rest is asked for: at 10^5 groups the whole
# look and its first render took 21-26 s, a thousand groups a fraction of a second
# (docs/performance.md). Only two parts: each part's render writes every group served so far.
FIRST_PART = 1_000


class AdminSeed:
    """One admin look in a thread of its own; gives up quietly (one line) when the cluster does
    not answer it: the log path serves the groups anyway, only later."""

    def __init__(self, view: MonitorView, client_factory: Callable[[], object],
                 offsets_client_factory: Callable[[], object] | None = None,
                 topic: str = "__consumer_offsets", shard: set[int] | None = None) -> None:
        self.view = view
        self._client_factory = client_factory
        # A job that reads some partitions of the topic (`source.partitions`) seeds only the
        # groups whose records are in them, which needs the topic's partition count.
        self._offsets_client_factory = offsets_client_factory
        self._topic, self._shard = topic, shard or set()
        self.seeded = 0
        self.seconds: float | None = None  # the look's duration, once it is done
        self.first_seconds: float | None = None  # until its first part was served
        self._thread = threading.Thread(target=self._run, name="groupscope-admin-seed",
                                        daemon=True)

    def start(self) -> "AdminSeed":
        self._thread.start()
        return self

    def join(self, timeout_s: float | None = None,
             stop_asked: threading.Event | None = None) -> None:
        """Until the look is done, `timeout_s` has passed, or `stop_asked` is set."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while self._thread.is_alive() and not (stop_asked is not None and stop_asked.is_set()):
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return
            self._thread.join(_JOIN_STEP_S if left is None else min(left, _JOIN_STEP_S))

    def _run(self) -> None:
        started = time.monotonic()
        client = None
        try:
            keep = self._in_shard()
            client = self._client_factory()
            for part in client.poll_parts(FIRST_PART):
                if not self._serve([group for group in part if keep(group.group)]):
                    return
                if self.first_seconds is None:
                    self.first_seconds = time.monotonic() - started
        except Exception as exc:  # noqa: BLE001 - an ACL missing, a timeout: the log serves all
            # one attempt only: refused credentials cost the broker one failed authentication
            log.info("no admin look at the groups at launch (%s): they are served once the log "
                     "is read%s", refusal_of(exc) or exc,
                     f" (the first {self.seeded} are served)" if self.seeded else "")
            return
        finally:
            close_quietly(client, "admin client")
        self.seconds = time.monotonic() - started
        log.info("serving %d groups as the Admin API shows them (%.1f s) until __consumer_offsets "
                 "is read", self.seeded, self.seconds)

    def _serve(self, polled: list) -> bool:
        """Seed the view with a part of the look; False when the log got there first."""
        now_ms = int(self.view.clock() * 1000)
        with collector_paused():  # a snapshot and a row per group-partition: see gc_pause
            snapshots = [observe(group, None, now_ms, None, 0)[0].snapshot for group in polled]
            with self.view.lock:
                if self.view.ready:
                    return False
                self.seeded = self.view.seed_groups(snapshots)
        return True

    def _in_shard(self) -> Callable[[str], bool]:
        if not self._shard:
            return lambda group: True
        client = self._offsets_client_factory()
        try:
            count = len(client.partitions(self._topic))
        finally:
            close_quietly(client, "offsets client")
        if not count:
            raise RuntimeError(f"{self._topic} shows no partitions")
        return lambda group: partition_for(group, count) in self._shard
