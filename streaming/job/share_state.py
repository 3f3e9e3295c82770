"""Share groups' delivery state: `__share_group_state` read beside `__consumer_offsets`, by a
second streaming query of the same job, through the same source.

Kafka's share coordinator rebuilds its state by replaying this topic when it loads a partition,
and keeps the topic short for that: it deletes the records below each share-partition's latest
snapshot (`share.coordinator.state.topic.prune.interval.ms`). This query does the same at each
launch: it reads the topic from its start, with a checkpoint of its own that no launch reuses,
and keeps the share-partitions in the driver's view (one small object each). Nothing is lost
across a restart, and no state is stored twice.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import threading
from typing import Any, Callable, Mapping

from coordinator.errors import DecodeError
from coordinator.records.codec import decode_share_state
from coordinator.state.share_partition import SharePartition, apply_share_record, without_gaps
from streaming.exporter.view import MonitorView
from streaming.kafka.offsets import NotAuthorized
from streaming.kafka.record_gaps import RecordGaps

log = logging.getLogger("groupscope.share_state")

SHARE_STATE_TOPIC = "__share_group_state"
RETRY_S, RETRY_MAX_S = 10.0, 300.0

Key = tuple[str, str, int]


class ShareStateSink:
    """foreachBatch: decodes a batch of `__share_group_state` records in log order and hands the
    share-partitions it changed to the view. `keep_group` leaves out other shards' groups;
    `gaps` (streaming/kafka/record_gaps.py) names the offsets newly archived that hold no
    record, which are not counted as archived records."""

    def __init__(self, view: MonitorView, keep_group: Callable[[str], bool],
                 stopping: threading.Event, backlog: Mapping[int, int] | None = None,
                 gaps: Callable[[Mapping[tuple[str, int], list]], Mapping] | None = None,
                 counted: ArchivedCounts | None = None) -> None:
        self.view = view
        # The archived counters an earlier run left (the backlog above is not counted again):
        # each share-partition goes on from its own, and the counters are kept after each batch.
        self.counted = counted
        self._counted_before = counted.load() if counted is not None else {}
        self.keep_group = keep_group
        self.stopping = stopping
        # partition -> its end offset when the job started reading: archives written before it
        # are state, not news (SharePartition.archived_seen)
        self.backlog = dict(backlog or {})
        self.gaps = gaps

    def __call__(self, batch_df, batch_id: int) -> None:
        from streaming.job.lifecycle import collect_output

        table = collect_output(batch_df.select("key", "value", "partition", "offset", "timestamp"),
                               self.stopping)
        self.apply(zip(*(table.column(name).to_pylist()
                         for name in ("key", "value", "partition", "offset", "timestamp"))))

    def apply(self, rows) -> None:
        """(key, value, partition, offset, timestamp) rows, in any order."""
        changed: dict[Key, SharePartition | None] = {}
        archived: dict[Key, list[tuple[int, int]]] = {}  # counted this batch, to be checked
        records: dict[str, int] = {}
        skipped: dict[str, int] = {}
        for key, value, partition, offset, timestamp in sorted(rows, key=lambda r: (r[2], r[3])):
            if key is None:
                skipped["no_key"] = skipped.get("no_key", 0) + 1
                continue
            try:
                record = decode_share_state(key, value)
            except DecodeError as exc:
                skipped[exc.reason] = skipped.get(exc.reason, 0) + 1
                continue
            records[record.type_name] = records.get(record.type_name, 0) + 1
            k = record.key
            if not (self.keep_group(k["group_id"]) and k["group_id"] in self.view.settings.groups):
                continue
            part = (k["group_id"], k["topic_id"], int(k["partition"]))
            # the view holds what earlier batches built (only this sink writes it)
            before = changed[part] if part in changed else self.view.share_partitions.get(part)
            after = changed[part] = apply_share_record(
                before, record.type_name, k, record.value, _millis(timestamp),
                counted=offset >= self.backlog.get(partition, 0),
                archived_before=self._counted_before.pop(part, 0) if before is None else 0)
            if after is None:
                archived.pop(part, None)
            elif after.archived_new:
                archived.setdefault(part, []).extend(after.archived_new)
        self._take_out_gaps(changed, archived)
        self.view.apply_share_state(changed, records, skipped)
        if self.counted is not None and changed:
            with self.view.lock:
                held = {part: sp.archived_seen for part, sp in self.view.share_partitions.items()}
            self.counted.keep({**self._counted_before, **held})

    def _take_out_gaps(self, changed: dict[Key, SharePartition | None],
                       archived: Mapping[Key, list[tuple[int, int]]]) -> None:
        """The offsets this batch archived that hold no record (transaction markers a share
        consumer acknowledged as gaps) are taken out of the archived counts; a topic not named
        by the metadata yet, or not read, keeps its count."""
        names = self.view.topic_names
        wanted: dict[tuple[str, int], list[tuple[int, int]]] = {}
        for (_, topic_id, partition), ranges in archived.items():
            if topic_id in names:
                wanted.setdefault((names[topic_id], partition), []).extend(ranges)
        found = self.gaps(wanted) if self.gaps is not None and wanted else {}
        for part, ranges in archived.items():
            gaps = found.get((names.get(part[1]), part[2]))
            sp = changed[part]
            if sp is not None:
                changed[part] = without_gaps(dataclasses.replace(sp, archived_new=tuple(ranges)),
                                             gaps or ())


def _record_gaps(config) -> RecordGaps:
    """The reader of the consumed topics' batches, with the source's connection settings."""
    from streaming.sources.kafka_options import KafkaSourceOptions

    options = KafkaSourceOptions(bootstrap_servers=config.source.bootstrap_servers,
                                 client_options=dict(config.source.kafka))
    return RecordGaps(options.kafka_python_config(), config.lag.timeout)


def _millis(timestamp: Any) -> int:
    return int(timestamp.timestamp() * 1000) if timestamp is not None else 0


class ArchivedCounts:
    """Each share-partition's archived counter, kept beside the checkpoint (a JSON file written
    whole, then renamed): `__share_group_state` is read from its start at each launch, and what
    it held then is state, not news, so without it the counters would start from 0 again."""

    def __init__(self, path: str) -> None:
        self.path = path

    def load(self) -> dict[Key, int]:
        try:
            with open(self.path, encoding="utf-8") as handle:
                rows = json.load(handle)
            return {(str(g), str(t), int(p)): int(n) for g, t, p, n in rows}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, TypeError) as exc:
            log.warning("%s cannot be read (%s): share groups' archived counters start again",
                        self.path, exc)
            return {}

    def keep(self, counts: Mapping[Key, int]) -> None:
        rows = [[g, t, p, n] for (g, t, p), n in sorted(counts.items())]
        temporary = f"{self.path}.tmp"
        try:
            os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
            with open(temporary, "w", encoding="utf-8") as handle:
                json.dump(rows, handle)
            os.replace(temporary, self.path)
        except OSError as exc:
            log.warning("cannot keep share groups' archived counters in %s: %s", self.path, exc)


class ShareStateQuery:
    """The second query: started after the job's main query, stopped with it. A failure (the
    topic refused to this principal, the cluster gone) is said in one line and the query starts
    again from the topic's start, after a pause that doubles up to RETRY_MAX_S."""

    def __init__(self, spark, config, view: MonitorView, keep_group: Callable[[str], bool],
                 query_name: str, backlog: Callable[[], Mapping[int, int]] = dict) -> None:
        from streaming.sources import build_source

        self.spark = spark
        self.view = view
        self.keep_group = keep_group
        self.query_name = query_name
        self._backlog = backlog  # the topic's end offsets now (streaming.job.lifecycle.Job)
        source = dataclasses.replace(config.source, topic=SHARE_STATE_TOPIC, partitions=[],
                                     starting_offsets="earliest")
        self._config = dataclasses.replace(config, source=source)
        self._build_source = build_source
        self._gaps = _record_gaps(config)
        self.checkpoint = os.path.join(config.checkpoint.path, "share-state")
        # Kept as a local file: a checkpoint on a Hadoop file system keeps no such counters.
        local = "://" not in config.checkpoint.path or config.checkpoint.path.startswith("file:")
        self._counted = ArchivedCounts(os.path.join(config.checkpoint.path.removeprefix("file:"),
                                                    "share-archived.json")) if local else None
        self._trigger = f"{int(config.trigger.interval * 1000)} milliseconds"
        self.query = None
        self._refusal_said: str | None = None
        self._stopped = threading.Event()
        self._watcher: threading.Thread | None = None

    def start(self) -> "ShareStateQuery":
        self._start_query()
        self._watcher = threading.Thread(target=self._watch, name="share-state-query", daemon=True)
        self._watcher.start()
        return self

    def _start_query(self) -> None:
        # a new checkpoint each time: the topic is read from its start (see the module's note)
        shutil.rmtree(self.checkpoint, ignore_errors=True)
        try:
            backlog = self._backlog()
        except NotAuthorized as exc:
            # No one else says it: the source, refused, waits for the grant and asks again
            # seldom (streaming/sources/kafka_stream.py).
            if str(exc) != self._refusal_said:
                log.warning("share groups' delivery state is not read: %s; it is read once "
                            "granted (or set source.share_state: false)", exc)
                self._refusal_said = str(exc)
            backlog = {}
        except Exception as exc:  # noqa: BLE001 - unreachable or refused: the query says so
            log.info("%s: end offsets unknown (%s): its archives are counted from its start",
                     SHARE_STATE_TOPIC, exc)
            backlog = {}
        sink = ShareStateSink(self.view, self.keep_group, self._stopped, backlog,
                              self._gaps.gaps, self._counted)
        with self.view.lock:  # what the last run held goes: it is read again
            stale = {key: None for key in self.view.share_partitions}
        self.view.apply_share_state(stale, {}, {})
        stream = self._build_source(self.spark, self._config)
        self.query = (stream.writeStream.foreachBatch(sink)
                      .option("checkpointLocation", self.checkpoint)
                      .trigger(processingTime=self._trigger)
                      .queryName(self.query_name).start())

    def _watch(self) -> None:
        retry_s = RETRY_S
        while not self._stopped.is_set():
            query = self.query
            try:
                if query.isActive:
                    query.awaitTermination(1.0)
                    continue
                error = query.exception()
            except Exception:  # the JVM is going: the job is stopping
                return
            if self._stopped.is_set():
                return
            reason = str(error).strip().splitlines()[0] if error is not None else "it stopped"
            log.error("reading %s failed (%s); share groups' delivery state is not served; "
                      "trying again in %.0f s", SHARE_STATE_TOPIC, reason, retry_s)
            if self._stopped.wait(retry_s):
                return
            retry_s = min(retry_s * 2, RETRY_MAX_S)
            try:
                self._start_query()
            except Exception as exc:  # noqa: BLE001 - said, then tried again
                log.error("starting the %s query failed: %s", SHARE_STATE_TOPIC, exc)

    def stop(self) -> None:
        self._stopped.set()
        if self.query is not None:
            try:
                self.query.stop()
            except Exception:  # the JVM died first, from the same signal as this stop
                log.debug("stopping the share-state query failed", exc_info=True)
        if self._watcher is not None:
            self._watcher.join(timeout=5.0)
        self._gaps.close()
