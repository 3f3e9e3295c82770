"""`source.type: admin`: groups, members, assignments and committed offsets polled through the
Kafka Admin API, for clusters whose `__consumer_offsets` this principal may not read (managed
Kafka). No Spark: a driver thread polls every `source.admin_interval` and feeds the same view,
end-offset poller and exporter as the log path, and writes the same history
(streaming/job/poll_history.py), from which a restart restores its counters. What polling
cannot know is said in coordinator/admin_groups.py.

The same interface as streaming.job.lifecycle.Job (`start`, `wait`, `stop`, `view`, `exporter`).
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from coordinator.admin_groups import Seen, gone, observe
from coordinator.state.share_partition import polled_share_partition
from streaming.config import Config
from streaming.exporter.view import MonitorView
from streaming.gc_pause import collector_paused
from streaming.job.settings import (admin_groups_factory, exporter_settings, poller_settings,
                                    topic_configs_poller, view_settings)
from streaming.kafka.admin_groups import AdminGroups
from streaming.job.poll_history import PollHistory
from streaming.kafka.offsets import close_quietly
from streaming.kafka.refusals import Refused, refusal_of

log = logging.getLogger("groupscope.admin")


class AdminJob:
    def __init__(self, config: Config, view: MonitorView | None = None,
                 start_exporter: bool = True, start_poller: bool = True,
                 client_factory: Callable[[], AdminGroups] | None = None,
                 metrics_cache=None) -> None:
        self.config = config
        self.view = view or MonitorView(view_settings(config))
        self._want_exporter, self._want_poller = start_exporter, start_poller
        self._metrics_cache = metrics_cache  # another exporter's cache of this view (fleet.py)
        # A bad setting fails here, named.
        self._client_factory = client_factory or admin_groups_factory(config)
        self._client: AdminGroups | None = None
        self.exporter = None
        self.poller = None
        self.query = None  # no Spark query
        self.polls = 0
        self.last_poll_s: float | None = None  # the last poll's duration
        self._seen: dict[str, Seen] = {}  # group -> what the last poll left of it
        self._last_ms: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failure_said: str | None = None
        # Credentials or TLS refused: polled again seldom, said once (streaming/kafka/refusals.py)
        self._refused = Refused(log, f"cluster {config.cluster.name}: admin poll",
                                "keeping the groups as last seen; trying again less and less "
                                "often")
        self._history: PollHistory | None = None
        self._first = 0  # the first poll's number (continues the history's)
        self._history_failure: str | None = None
        self._share_keys: set[tuple[str, str, int]] = set()  # share-partitions served

    def start(self) -> "AdminJob":
        from streaming.exporter.end_offset_poller import EndOffsetPoller
        from streaming.exporter.server import start_exporter as serve
        from streaming.job.settings import offsets_client_factory

        self.open_history()
        if self._want_exporter:
            self.exporter = serve(self.view, exporter_settings(self.config))
        if self._want_poller:
            cache = self.exporter.cache if self.exporter is not None else self._metrics_cache
            settings = poller_settings(self.config)
            self.poller = EndOffsetPoller(self.view, offsets_client_factory(self.config),
                                          settings, clock=self.view.clock,
                                          configs=topic_configs_poller(
                                              self.config, self.view,
                                              settings.metadata_interval_s),
                                          **(cache.poller_hooks(settings.interval_s)
                                             if cache is not None else {})).start()
        self._thread = threading.Thread(target=self._run, name="groupscope-admin-poll",
                                        daemon=True)
        self._thread.start()
        return self

    def open_history(self) -> None:
        """The history sink (history.path), and the counters and groups restored from it:
        the first poll continues where the last run's polls left (start does this)."""
        if self.config.history.path and self._history is None:
            self._history = PollHistory(self.config.history)
            self._first = self._history.first
            self._seen = self._history.restore(self.view)

    def _run(self) -> None:
        interval = self.config.source.admin_interval
        while not self._stop.is_set():
            started = time.monotonic()
            self.poll_once()
            self._stop.wait(max(0.0, interval - (time.monotonic() - started),
                                self._refused.wait_s()))

    def poll_once(self) -> bool:
        started = time.monotonic()
        try:
            if self._client is None:
                self._client = self._client_factory()
            polled = self._client.poll()
        except Exception as exc:  # the next poll tries again, on a new connection
            refusal = refusal_of(exc)
            if refusal is not None:
                self._refused.refused(refusal)
            elif str(exc) != self._failure_said:
                log.warning("admin poll failed, keeping the groups as last seen: %s", exc)
                self._failure_said = str(exc)
            self.view.set_source_refusal("admin", refusal)
            self._drop_client()
            return False
        self._failure_said = None
        self._refused.answered()
        self.view.set_source_refusal("admin", None)
        now_ms = int(self.view.clock() * 1000)
        self.polls += 1
        with collector_paused():  # a snapshot and a row per group-partition: see gc_pause
            self._apply(polled, now_ms)
        self.last_poll_s = time.monotonic() - started
        return True

    def _apply(self, polled: list, now_ms: int) -> None:
        snapshots, events = [], []
        sequence = self._first + self.polls
        for group in polled:
            seen, found = observe(group, self._seen.get(group.group), now_ms, self._last_ms,
                                  sequence)
            self._seen[group.group] = seen
            snapshots.append(seen.snapshot)
            events.extend(found)
        listed = {g.group for g in polled}
        for name in [n for n in self._seen if n not in listed]:
            snapshot, found = gone(name, self._seen.pop(name), now_ms, sequence)
            snapshots.append(snapshot)
            events.extend(found)
        self._last_ms = now_ms
        shares = self._share_partitions(polled)
        if self._history is not None:
            try:
                self._history.write(sequence, snapshots, events)
                self._history_failure = None
            except OSError as exc:  # the groups are still served; said once until it changes
                if str(exc) != self._history_failure:
                    log.error("history not written to %s: %s", self._history.path, exc)
                    self._history_failure = str(exc)
        with self.view.lock:
            self.view.update_groups(snapshots)
            self.view.apply_events(events)
            self.view.apply_share_state(shares, {}, {})
            self.view.set_offsets_topic_progress({}, True)  # every group is as of this poll

    def _share_partitions(self, polled: list) -> dict:
        """The share-partitions of the share groups polled (start offsets, Kafka's lag), and
        those gone since the last poll (None)."""
        now = {(g.group, topic_id, partition): polled_share_partition(
                   g.group, topic_id, partition, start, lag)
               for g in polled for _, topic_id, partition, start, lag in g.share_offsets}
        gone = {key: None for key in self._share_keys if key not in now}
        self._share_keys = set(now)
        return {**gone, **now}

    def _drop_client(self) -> None:
        client, self._client = self._client, None
        close_quietly(client, "admin client")

    def wait(self, stop_event: threading.Event | None = None, keep_running: bool = True) -> None:
        """Until stopped: a failed poll is retried at the next interval, whatever
        `keep_running` says."""
        stop_event = stop_event or threading.Event()
        while not self._stop.is_set() and not stop_event.wait(0.5):
            pass

    def stop(self) -> None:
        self.view.stopping = True
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.config.lag.timeout * 3)
            self._thread = None
        if self.poller is not None:
            self.poller.stop()
        if self.exporter is not None:
            self.exporter.stop()
        self._drop_client()
