"""The end-offset poller: a driver thread that asks the cluster for the log end and log start
offsets of exactly the partitions known groups commit to, plus topic metadata (topic id -> name
for KIP-848 assignments, partition counts for unassigned partitions), and hands them to the view.

A slow or failed poll never blocks the stream: it runs in its own thread, every request has a
timeout, and on failure the view keeps the last values (their age is exported). The Kafka client
(streaming/kafka/offsets.py `OffsetsClient`; only log_end_offsets or else end_offsets,
start_offsets, topic_metadata and close are used) is injectable, so tests can feed values
without a broker.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterable

from coordinator.timelag import TIME_METHODS
from streaming.outage_log import OutageLog
from streaming.gc_pause import collector_paused
from streaming.exporter.view import MonitorView, TopicPartition
from streaming.kafka.offsets import (NotAuthorized, OffsetsClient, close_quietly,
                                     readable_partitions)
from streaming.kafka.refusals import Refused, refusal_of

log = logging.getLogger("groupscope.endoffsets")


@dataclass(frozen=True)
class PollerSettings:
    interval_s: float = 5.0            # lag.poll_interval
    timeout_s: float = 10.0            # lag.poll_timeout: per request
    metadata_interval_s: float = 60.0  # lag.metadata_interval
    time_method: str = "estimate"      # lag.time_method
    read_budget: int = 1000            # lag.read_budget: first records read per poll (auto)

    def __post_init__(self) -> None:
        if self.interval_s <= 0 or self.timeout_s <= 0 or self.metadata_interval_s <= 0:
            raise ValueError("lag.poll_interval, lag.poll_timeout and lag.metadata_interval "
                             "must be > 0")
        if self.time_method not in TIME_METHODS:
            raise ValueError(f"lag.time_method: {self.time_method!r} is not one of "
                             f"{', '.join(TIME_METHODS)}")
        if self.read_budget < 1:
            raise ValueError("lag.read_budget must be at least 1")


class EndOffsetPoller:
    """Polls in a daemon thread; `poll_once` does one round (used by the thread and by tests)."""

    def __init__(self, view: MonitorView, client_factory: Callable[[], OffsetsClient],
                 settings: PollerSettings | None = None,
                 clock: Callable[[], float] = time.time,
                 on_poll: Callable[[], None] | None = None,
                 source_topic: str | None = None,
                 poll_by: Callable[[], float | None] | None = None,
                 configs=None) -> None:
        self.view = view
        # The topics' retention settings (streaming/exporter/topic_configs_poller.py), read
        # after a poll when due: None reads none.
        self._configs = configs
        # When a poll should start for its render to be done as the next scrape comes (on
        # `clock`; None: no pace known), e.g. MetricsCache.poll_by: the poll before is moved to
        # that moment, never later than the interval would have it.
        self._poll_by = poll_by
        # The job's source topic: its access is checked with the metadata, so that a missing
        # ACL shows in /healthz and a metric even while the stream has nothing to run.
        self._source_topic = source_topic
        self._may_read = False  # a fetch was allowed once (a later refusal fails the query)
        self._on_poll = on_poll  # e.g. MetricsCache.refresh: re-evaluate lag off the scrape path
        self.settings = settings or PollerSettings()
        self._client_factory = client_factory
        self._client: OffsetsClient | None = None
        self._outage = OutageLog(log, f"end-offset poll of cluster {view.settings.cluster}")
        # Credentials or TLS refused: asked again seldom, said once (streaming/kafka/refusals.py)
        self._refused = Refused(log, f"cluster {view.settings.cluster}",
                                "keeping the previous values; trying again less and less often")
        # The source topic refused: checked again seldom, said once until it changes.
        self._source_check = Refused(log, "groupscope source", "reading it as soon as it is "
                                     "granted", level=logging.ERROR, repeat_s=None,
                                     answered=f"topic {source_topic} is granted now: reading it")
        with view.lock:
            if view.last_poll_s is None:  # unknown until a poll answers: not up
                view.source_up = False
        self._clock = clock
        self._metadata_at: float | None = None
        self._unknown_topics: set[str] = set()  # committed to, absent from the metadata
        # lag.time_method: first records read in this poll and the one before, by (topic,
        # partition, offset): another group committed at the same offset takes them as well
        self._first: dict[tuple[str, int, int], float] = {}
        self._first_before: dict[tuple[str, int, int], float] = {}
        self._cannot_read: str | None = None  # why first records are not read (logged once)
        self._first_asked: dict[TopicPartition, int] = {}  # log start when its first time was asked
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def poll_once(self) -> bool:
        """One poll. Returns False (and records a failure in the view) if anything went wrong."""
        started = time.monotonic()
        try:
            client = self._client_or_new()
            wanted_all = self.view.wanted_partitions()
            refreshed = self._metadata_due(wanted_all) or bool(self.view.source_refusal)
            if refreshed:
                self._refresh_metadata(client)
            try:
                ends, starts = self._offsets(client, wanted_all)
            except Exception as exc:
                if refusal_of(exc) is not None:
                    raise
                # A topic deleted since the last metadata, or one just made whose leader the
                # client does not know yet, fails the whole request (kafka-python names its
                # partition): look again with fresh metadata, then a topic at a time, so
                # that one topic does not keep every other's figures from moving.
                if not refreshed:
                    self._refresh_metadata(client)
                ends, starts = self._offsets_by_topic(client, wanted_all)
            with collector_paused():  # new samples for every partition, no cycles
                self.view.update_end_offsets(ends, starts, self._clock(),
                                             time.monotonic() - started)
            self._first_record_times(client, ends, starts)
            if self.settings.time_method != "estimate":
                self._read_first_records(client)
            if self._configs is not None:
                self._configs.poll_if_due()
            self._outage.answered()
            self._refused.answered()
            self.view.set_source_refusal("connect", None)
            ok = True
        except Exception as exc:
            refusal = refusal_of(exc)
            if refusal is None:
                self._outage.failed(exc, "keeping the previous values")
            else:
                self._refused.refused(refusal)
                self.view.set_source_refusal("connect", refusal)
            self.view.record_poll_failure(time.monotonic() - started)
            self._drop_client()  # the next poll starts from a fresh connection
            ok = False
        if self._on_poll is not None:
            try:
                self._on_poll()
            except Exception:  # a broken callback must not stop the polling thread
                log.exception("end-offset poll callback failed")
        return ok

    def _first_record_times(self, client: OffsetsClient, ends: dict[TopicPartition, int],
                            starts: dict[TopicPartition, int]) -> None:
        """When each polled partition's first record was written: no time lag on it is
        longer. Asked again when its log start moves (an empty partition: until it has one)."""
        ask_times = getattr(client, "first_record_times", None)
        self._first_asked = {tp: at for tp, at in self._first_asked.items() if tp in ends}
        ask = [tp for tp, end in ends.items()
               if tp in starts and end > starts[tp] and self._first_asked.get(tp) != starts[tp]]
        if ask_times is None or not ask:
            return
        try:
            times = ask_times(ask)
        except Exception:  # a refinement of the estimates: they stand without it
            log.debug("first record times not known", exc_info=True)
            return
        self.view.set_first_record_times(times)
        self._first_asked.update({tp: starts[tp] for tp in times})

    def _read_first_records(self, client: OffsetsClient) -> None:
        """lag.time_method: the first unconsumed record of each lagging partition, read at its
        committed offset (`auto`: at most lag.read_budget a poll, most lag first; the others
        keep the estimate). A refusal or a failure keeps the estimates and is logged once."""
        lagging = self.view.unread_lagging()
        known = {**self._first_before, **self._first}
        found = {key: known[key] for key in ((t, p, o) for t, p, o, _ in lagging) if key in known}
        unread = [(t, p, o) for t, p, o, _ in lagging if (t, p, o) not in found]
        if self.settings.time_method == "auto":
            unread = unread[:self.settings.read_budget]
        # A consumer has one position a partition: groups behind on one partition at different
        # offsets are read in rounds, each one fetch a broker.
        rounds: list[dict[TopicPartition, int]] = []
        turns: dict[TopicPartition, int] = {}
        for topic, partition, offset in unread:
            turn = turns.get((topic, partition), 0)
            turns[(topic, partition)] = turn + 1
            if turn == len(rounds):
                rounds.append({})
            rounds[turn][(topic, partition)] = offset
        read: dict[tuple[str, int, int], float] = {}
        deadline = time.monotonic() + self.settings.timeout_s
        try:
            for positions in rounds:
                left = deadline - time.monotonic()
                if left <= 0:
                    break  # the rest keep their estimate until a later poll
                answers = client.first_records(positions, left)
                read.update({(t, p, positions[(t, p)]): ts for (t, p), ts in answers.items()})
            self._cannot_read = None
        except Exception as exc:
            if str(exc) != self._cannot_read:
                log.warning("lag.time_method %s: first unconsumed records not read, time lag "
                            "stays estimated: %s", self.settings.time_method, exc)
                self._cannot_read = str(exc)
        self._first_before, self._first = self._first, read
        self.view.set_first_records({**found, **read})

    def _offsets(self, client: OffsetsClient, wanted: Iterable[TopicPartition]
                 ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
        """(end, start) offsets of the wanted partitions the last metadata shows: the end is
        the high watermark, where Kafka's tools take lag to, not the last stable offset."""
        existing = self._existing(wanted)
        ends = getattr(client, "log_end_offsets", client.end_offsets)
        return ends(existing), client.start_offsets(existing)

    def _offsets_by_topic(self, client: OffsetsClient, wanted: Iterable[TopicPartition]
                          ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
        """`_offsets` a topic at a time, leaving out the topics whose request fails (said
        once per outage by the caller's log only if every topic fails)."""
        by_topic: dict[str, list[TopicPartition]] = {}
        for tp in wanted:
            by_topic.setdefault(tp[0], []).append(tp)
        ends: dict[TopicPartition, int] = {}
        starts: dict[TopicPartition, int] = {}
        failed: Exception | None = None
        for topic, partitions in by_topic.items():
            try:
                topic_ends, topic_starts = self._offsets(client, partitions)
            except Exception as exc:  # noqa: BLE001 - this topic only; the others go on
                if refusal_of(exc) is not None:
                    raise
                log.debug("end offsets of topic %s: %s", topic, exc)
                failed = exc
                continue
            ends.update(topic_ends)
            starts.update(topic_starts)
        if failed is not None and not ends:
            raise failed
        return ends, starts

    def _refresh_metadata(self, client: OffsetsClient) -> None:
        self._check_source(client)
        names, counts = client.topic_metadata()
        self.view.update_topic_metadata(names, counts)
        self._metadata_at = self._clock()

    def _check_source(self, client: OffsetsClient) -> None:
        if self._source_topic is None or not self._source_check.due():
            return
        try:
            partitions = readable_partitions(client, self._source_topic, self._may_read)
            self._may_read = self._may_read or bool(partitions)
        except NotAuthorized as exc:
            self._source_check.refused(str(exc))
            self.view.set_source_refusal("describe", str(exc))
            return
        self._source_check.answered()
        self.view.set_source_refusal("describe", None)

    def _metadata_due(self, wanted: Iterable[TopicPartition]) -> bool:
        """Metadata is refreshed every metadata_interval, and sooner (but not more often than
        every 3 polls) when a group commits to a topic the last metadata did not have: a new
        topic should get lag figures quickly, a deleted one should not cost a request per poll."""
        if self._metadata_at is None:
            return True
        age = self._clock() - self._metadata_at
        if age >= self.settings.metadata_interval_s:
            return True
        if age < 3 * self.settings.interval_s:
            return False
        with self.view.lock:
            known = set(self.view.partition_counts)
        return any(topic not in known for topic, _ in wanted) or self.view.share_topics_unnamed()

    def _existing(self, wanted: Iterable[TopicPartition]) -> list[TopicPartition]:
        """Only partitions that exist: asking for a deleted topic would stall the whole request."""
        with self.view.lock:
            counts = dict(self.view.partition_counts)
        existing = sorted((t, p) for t, p in wanted if p < counts.get(t, 0))
        if self._metadata_at is not None:
            self._report_unknown({t for t, _ in wanted if t not in counts})
        return existing

    def _report_unknown(self, unknown: set[str]) -> None:
        """Says once, when it starts, that a topic's lag cannot be known: the groups' lag series
        for it are absent, which a dashboard alone would not explain."""
        new = sorted(unknown - self._unknown_topics)
        if new:
            log.warning("no metadata for %d topic(s) that groups commit to, so their lag is unknown "
                        "(deleted, or this principal may not DESCRIBE them): %s", len(new),
                        ", ".join(new[:20]) + (" ..." if len(new) > 20 else ""))
        self._unknown_topics = unknown
        with self.view.lock:
            self.view.topics_without_metadata = len(unknown)

    def _client_or_new(self) -> OffsetsClient:
        if self._client is None:
            self._client = self._client_factory()
        return self._client

    def _drop_client(self) -> None:
        client, self._client = self._client, None
        self._metadata_at = None
        close_quietly(client, "offsets client")

    def start(self) -> "EndOffsetPoller":
        if self._thread is not None:
            raise RuntimeError("the end-offset poller is already running")
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="groupscope-end-offsets",
                                        daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            self.poll_once()
            self._stop.wait(max(self._wait_s(time.monotonic() - started),
                                self._refused.wait_s()))

    def _wait_s(self, elapsed_s: float) -> float:
        """Until the next poll: the interval's rest, or less, to the moment `poll_by` names
        (or the last moment one interval after another before it)."""
        interval = self.settings.interval_s
        wait = max(0.0, interval - elapsed_s)
        target = self._poll_by() if self._poll_by is not None else None
        if target is None:
            return wait
        ahead = target - self._clock()
        if ahead < 0:
            return wait
        return min(wait, ahead % interval)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.settings.timeout_s * 3)
            self._thread = None
        self._drop_client()
        if self._configs is not None:
            self._configs.close()
