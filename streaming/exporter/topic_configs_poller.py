"""The polled topics' retention settings, read again every `interval_s` (lag.metadata_interval)
by the end-offset poller's thread, after its poll, and kept in the view (`TopicRetention`) for
the retention-risk figures (`streaming.exporter.risk_render`).

One DescribeConfigs request a read for every topic the view polls. Settings change seldom; a
minute's delay in seeing a new retention.ms is what a minute's metadata delay costs elsewhere.
Topics this principal may not DESCRIBE_CONFIGS get no risk figure (rather than one guessed from
Kafka's defaults): said once in the log, with what to grant, and counted in
`groupscope_topic_configs_refused`. A failed read keeps the last settings.

A topic the last read did not ask about (a group began committing to it) is read sooner, after
`NEW_TOPIC_GAP_S`: its risk would otherwise wait for the next interval, and a first read made
before any group committed asks for nothing.
"""
from __future__ import annotations

import logging
import time

import numpy as np
from typing import Callable

from streaming.exporter.ends_table import tp_parts
from streaming.exporter.record_sizes import record_bytes, size_limited_partitions
from streaming.kafka.offsets import close_quietly
from streaming.kafka.refusals import Refused
from streaming.kafka.topic_configs import TopicConfigReader, TopicConfigs
from streaming.outage_log import OutageLog

log = logging.getLogger("groupscope.topicconfigs")
NEW_TOPIC_GAP_S = 5.0  # the least time between two reads for topics not asked about yet


class TopicConfigsPoller:
    """`poll_if_due()` after each end-offset poll reads the settings when `interval_s` has
    passed since the last read (or the last refusal's back-off)."""

    def __init__(self, view, reader_factory: Callable[[], TopicConfigReader],
                 interval_s: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.view = view
        self._factory = reader_factory
        self._reader: TopicConfigReader | None = None
        self.interval_s = interval_s
        self._clock = clock
        self._next_at = 0.0
        self._read_at = -float("inf")
        self._asked: frozenset[str] = frozenset()  # the topics the last read asked about
        what = f"topic configs of cluster {view.settings.cluster}"
        # said once while the same topics are refused (repeat_s None): a refusal is lasting
        self._refused = Refused(log, what, "", repeat_s=None, answered="every topic's "
                                "configs are described now: retention risk served for all")
        self._outage = OutageLog(log, f"DescribeConfigs of {what}")
        self._sizes_outage = OutageLog(log, f"DescribeLogDirs of cluster {view.settings.cluster}")
        self._sizes_refused = Refused(log, f"log sizes of cluster {view.settings.cluster}", "",
                                      repeat_s=None, answered="log sizes are described now: "
                                      "size-based retention risk served")

    def poll_if_due(self) -> None:
        now = self._clock()
        topics = _polled_topics(self.view)
        new = not self._asked.issuperset(topics) and now >= self._read_at + NEW_TOPIC_GAP_S
        if now < self._next_at and not new:
            return
        self._next_at, self._read_at, self._asked = now + self.interval_s, now, frozenset(topics)
        try:
            if self._reader is None:
                self._reader = self._factory()
            answer = self._reader.read(topics)
        except Exception as exc:  # the figures keep the last settings
            self._outage.failed(exc, "retention risk keeps the settings read before")
            self._drop_reader()
            return
        self._outage.answered()
        self._take(answer)
        try:
            self._read_sizes(answer)
        except Exception as exc:  # as above: the last sizes stay
            self._sizes_outage.failed(exc, "size-based retention risk keeps the sizes read "
                                      "before")
            self._drop_reader()
            return
        self._sizes_outage.answered()

    def _take(self, answer: TopicConfigs) -> None:
        refusal = answer.refusal()
        if refusal is None:
            self._refused.answered()
        else:
            self._refused.refused(refusal)
        with self.view.lock:
            if self.view.retention.update(answer.retention, len(answer.refused)):
                self.view.ends_version += 1  # the lag part (where the figures are) renders again

    def _read_sizes(self, answer: TopicConfigs) -> None:
        """The size-limited partitions' average record size (DescribeLogDirs), read with the
        settings: it changes as slowly. A denial is said once and serves no size-based risk."""
        with self.view.lock:
            partitions = size_limited_partitions(self.view, answer.retention)
        sizes = self._reader.log_sizes(partitions)
        if sizes.refused:
            self._sizes_refused.refused(
                "this principal may not DESCRIBE the cluster (DescribeLogDirs): retention risk "
                "by retention.bytes is not served; grant DESCRIBE on the CLUSTER resource to "
                "have it")
        elif partitions:
            self._sizes_refused.answered()
        with self.view.lock:
            if self.view.retention.update_sizes(record_bytes(self.view, sizes.sizes),
                                                sizes.refused):
                self.view.ends_version += 1

    def _drop_reader(self) -> None:
        reader, self._reader = self._reader, None
        close_quietly(reader, "topic configs client")

    def close(self) -> None:
        self._drop_reader()


def _polled_topics(view) -> list[str]:
    """The names of the topics the view polls (asked every poll: by topic id, not by
    partition, which at 10^5 partitions would cost a set of tuples a poll)."""
    with view.lock:
        topic_ids, _ = tp_parts(np.fromiter(view.ends.index.keys(), dtype=np.int64,
                                            count=len(view.ends.index)))
        names = view.topics.names
        return sorted({names[t] for t in np.unique(topic_ids).tolist()})
