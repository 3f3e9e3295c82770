"""The groupscope job: source -> decode (in the source's read tasks, or a mapInArrow) -> group
state (transformWithStateInPandas) -> driver (exporter view + history sink).

Exactly-once where it matters: group state and the job's counters live in Spark's state store
and advance atomically with the checkpointed source offsets; the history sink names its files
after the micro-batch, so a batch that runs again after a crash overwrites its own output; and
the exporter's counters (rebalances, moved partitions, histograms) are rebuilt from the history
when the job starts.
"""
from __future__ import annotations

import logging
import os
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from coordinator import compact_json, partition_for
from coordinator.state.group import offset_view
from coordinator.state.lanes import offsets_only_view
from streaming.config import Config
from streaming.job.batch_timing import BatchDurations
from streaming.job.checkpoint_layout import StateLayout, checkpoint_lineage, state_layout
from streaming.errors import UserError
from streaming.pipeline.decode_stage import MONITOR_KEY, SKIP_LABELS, decoded_stream
from streaming.gc_pause import collector_paused
from streaming.job.state_restore import checkpoint_is_new, committed_state
from streaming.job.history import HISTORY_EVENTS, HistoryWriter, batch_base
from streaming.job.history_layout import highest_batch
from streaming.kafka.offsets import OFFSETS_TOPIC, READ_REFUSED, NotAuthorized
from streaming.kafka.refusals import refusal_of
from streaming.job.history_maintenance import HistoryMaintenance
from streaming.job.history_totals import StoredHistory, apply_restore, read_restore
from streaming.job.admin_seed import AdminSeed
from streaming.job.settings import (admin_groups_factory, exporter_settings, offsets_client_factory,
                                    poller_settings, topic_configs_poller, view_settings)
from streaming.exporter.view import MonitorView
from streaming.offsets.lane import LaneBatch, OffsetsLane, split_commits
from streaming.offsets.lookup import LookupServer, driver_host
from streaming.offsets.restore import MissingLane, restored_lane
from streaming.job.session import build_spark, local_tuning_applies

log = logging.getLogger("groupscope.job")

# How often the offsets topic's end offsets are read for groupscope_offsets_topic_lag (seconds).
OFFSETS_TOPIC_REFRESH_S = 5.0
# A query the broker refused to let READ its topic starts again after this long, doubling up to
# the maximum: the grant may come while the job runs, and exiting would only have a service
# manager restart it into the same refusal.
REFUSED_RETRY_S = 10.0
REFUSED_RETRY_MAX_S = 300.0
# In local mode the catch-up waits at most this long for the launch seed (see _seed_first).
SEED_FIRST_S = 30.0
_READ_REFUSAL = re.compile(rf"this principal {READ_REFUSED} .*")


def build_pipeline(spark, config: Config, layout: StateLayout, lane, source_df=None):
    """The decoded, stateful stream: the group lane's rows (group, kind, payload, ts_ms) and the
    offsets lane's commits (streaming.pipeline.state_stage.OUTPUT_SCHEMA), the groups kept in
    the checkpoint's state `layout`; `lane` answers the group lane's look-ups of offsets.
    `source_df` (rows in Spark's Kafka schema) replaces the configured source."""
    from streaming.pipeline.state_stage import GroupProcessor, stateful_stage
    from streaming.sources import build_source

    if source_df is None:
        decoded = build_source(spark, config, decoded=True)
    else:
        decoded = decoded_stream(source_df)
    return stateful_stage(decoded, GroupProcessor(lane, layout=layout.groups), layout.shards)


@dataclass
class OffsetsTopicProgress:
    """How far the job is behind on `__consumer_offsets`.

    `target` gives the topic's end offsets (next offset to be written) per partition; the first
    answer is the end seen at start, which decides `groupscope_ready`. After a successful answer
    the target is asked again only once `min_interval_s` has passed: the sink refreshes after
    every micro-batch, and a broker round trip there delays every batch.
    """

    target: Callable[[], Mapping[int, int]] | None
    start_ends: dict[int, int] | None = None
    latest_ends: dict[int, int] = field(default_factory=dict)
    read: dict[int, int] = field(default_factory=dict)   # highest offset processed per partition
    min_interval_s: float = 0.0
    clock: Callable[[], float] = time.monotonic
    _answered_at: float | None = None

    def refresh_target(self) -> None:
        if self.target is None:
            return
        now = self.clock()
        if self._answered_at is not None and now - self._answered_at < self.min_interval_s:
            return
        try:
            ends = {int(p): int(e) for p, e in self.target().items()}
        except NotAuthorized as exc:  # the end-offset poller says it, once
            log.debug("could not read the end offsets of the offsets topic: %s", exc)
            return
        except Exception as exc:  # the poll is retried next batch; the stream goes on
            if refusal_of(exc) is not None:  # credentials or TLS: the poller says it, once
                log.debug("could not read the end offsets of the offsets topic: %s", exc)
            else:
                log.warning("could not read the end offsets of the offsets topic: %s", exc)
            return
        self._answered_at = now
        self.latest_ends = ends
        if self.start_ends is None:
            self.start_ends = dict(ends)

    def lag(self) -> dict[int, int]:
        return {p: max(0, end - (self.read.get(p, -1) + 1)) for p, end in self.latest_ends.items()}

    def backlog(self) -> tuple[int, int]:
        """(offsets read, offsets to read) of the backlog that existed at start."""
        ends = self.start_ends or {}
        done = sum(min(self.read.get(p, -1) + 1, end) for p, end in ends.items())
        return done, sum(ends.values())

    def ready(self) -> bool:
        if self.target is None:
            return True
        if self.start_ends is None:
            return False
        return all(self.read.get(p, -1) + 1 >= end for p, end in self.start_ends.items() if end > 0)


class QueryStopping(Exception):
    """The job's own stop interrupted the sink while it collected a micro-batch."""


# Spark tells a stop that interrupts foreachBatch's Python function from a failure of that
# function only by this text in its error (StreamExecution.PROXY_ERROR). Its pattern also
# overflows the stream thread's stack on a long error such as the Java stack trace of a cancelled
# collect: the thread then died with a StackOverflowError printed to stderr, on every stop that
# came during a catch-up batch.
STOPPING_MESSAGE = ("py4j.protocol.Py4JJavaError: An error occurred while calling toArrow: "
                    "java.lang.InterruptedException (groupscope stopped the query)")


def _not_the_stop(record: logging.LogRecord) -> bool:
    """py4j logs every error a Python callback raises, with its traceback; the stop's own
    interruption of the sink is no error."""
    return not (record.exc_info and isinstance(record.exc_info[1], QueryStopping))


def collect_output(batch_df, stopping: threading.Event):
    """`batch_df` as an Arrow table; once `stopping` is set, a failure is the stop's own
    interruption and raises QueryStopping, short and worded for Spark (STOPPING_MESSAGE)."""
    try:
        return batch_df.toArrow()
    except Exception:
        if stopping.is_set():
            raise QueryStopping(STOPPING_MESSAGE) from None
        raise


# How long a stop waits for the micro-batch in flight before it cancels it. Cancelling a batch
# loses nothing (it runs again at the next start), but Spark 4.2's state server prints an
# uncaught ClosedByInterruptException to stderr when the cancel finds a task whose Python worker
# has not connected yet (SPARK-58977, fixed in later Spark); a batch that ends first leaves no task
# to cancel. systemd waits 90 s (TimeoutStopSec) before it kills.
STOP_GRACE_S = 30.0


class BatchSink:
    """foreachBatch: hands the stateful stage's output to the view and the history.

    A stop drains it (`drain`): the batch in flight ends and is committed; a batch that starts
    once the stop has begun does no work and ends as interrupted by the stop, so Spark commits
    nothing for it and runs it again at the next start."""

    def __init__(self, view: MonitorView, history: HistoryWriter | None,
                 progress: OffsetsTopicProgress, snapshot_interval_s: float,
                 counted_through: int = -1, lane: OffsetsLane | None = None) -> None:
        self.view = view
        self.lane = lane or OffsetsLane()
        self.history = history
        # The history is written before Spark commits a batch. A stop or crash in between leaves
        # in it the events of a batch that runs again at the next start, and the view counted
        # them when it restored its counters: batches up to this id count none of them again.
        self.counted_through = counted_through
        self.progress = progress
        self.snapshot_interval_s = snapshot_interval_s
        self._snapshot_written: dict[str, float] = {}
        self._caught_up = False
        self.batches = 0
        self.stopping = threading.Event()  # set by Job.stop before it stops the query
        self.query_active: Callable[[], bool] = lambda: False  # Job.start sets the query's
        self._idle = threading.Condition()
        self._busy = False

    def __call__(self, batch_df, batch_id: int) -> None:
        with self._idle:
            stopping = self.stopping.is_set()
            self._busy = not stopping
        if stopping:
            self._end_as_stopped()
        try:
            # Through Arrow, column by column: cheaper than one Row object per output row.
            table = collect_output(batch_df, self.stopping)
            commits, rest = split_commits(table)
            with collector_paused():  # a catch-up batch adds 10^5 long-lived objects to the view
                self.handle_rows(zip(*(rest.column(name).to_pylist()
                                       for name in ("group", "kind", "payload", "ts_ms"))), batch_id,
                                 commits)
            self.batches += 1
            self.view.set_source_refusal("read", None)  # whatever it read, it may read
        finally:
            with self._idle:
                self._busy = False
                self._idle.notify_all()

    def drain(self, timeout_s: float) -> bool:
        """Mark the sink stopping and wait up to `timeout_s` for the batch in flight to end;
        False when it is still running."""
        with self._idle:
            self.stopping.set()
            return self._idle.wait_for(lambda: not self._busy, timeout_s)

    def _end_as_stopped(self) -> None:
        """A batch that began after the stop: wait until the query is stopped, then fail as
        Spark's stop expects (STOPPING_MESSAGE). Raising earlier would fail the query instead;
        returning would commit a batch that did nothing."""
        deadline = time.monotonic() + STOP_GRACE_S + 60.0
        try:
            while self.query_active() and time.monotonic() < deadline:
                time.sleep(0.05)
        except Exception:  # the JVM is gone: nothing is left to commit the batch
            pass
        raise QueryStopping(STOPPING_MESSAGE)

    def handle_rows(self, rows, batch_id: int, commits=None) -> None:
        """The group lane's rows (group, kind, payload, ts_ms) and the offsets lane's `commits`
        (streaming.offsets.table.COMMIT_INPUT columns) of micro-batch `batch_id`."""
        snapshots: list[tuple[str, int, str]] = []
        points: list[tuple[str, int, str, str]] = []
        events: list[dict[str, Any]] = []
        payloads: dict[int, str] = {}  # id(parsed event) -> its JSON: history need not dump it
        monitor = None
        for group, kind, payload, ts_ms in rows:
            if kind == "snapshot":  # its ts_ms is the state's updated_ms (pipeline/state_stage)
                snapshots.append((group, int(ts_ms or 0), payload))
            elif kind == "snapshot_point":
                points.append((group, int(ts_ms), "snapshot", payload))
            elif kind == "event":
                events.append(compact_json.loads(payload))
                payloads[id(events[-1])] = payload
            elif kind == "monitor" and group == MONITOR_KEY:
                monitor = compact_json.loads(payload)
        parsed = [compact_json.loads(payload) for _, _, payload in snapshots]
        lane = self.lane.apply_batch(commits, parsed, events, batch_id)
        for event in lane.applied.events:
            events.append(event)
            payloads[id(event)] = compact_json.dumps(event)
        events.sort(key=lambda e: (e["timestamp_ms"], e["partition"], e["offset"]))
        if self.history is not None:
            self._write_history(batch_id, snapshots + self._offsets_snapshots(lane), points,
                                events, payloads)
        if monitor is not None:
            self.note_progress(monitor)
        # One batch reaches the view whole: a reader (a scrape, a test) never sees a group's new
        # state next to record counters that do not include the records behind it yet.
        if batch_id <= self.counted_through:
            events = [e for e in events if e["event"] not in HISTORY_EVENTS]
        with self.view.lock:
            self.view.update_groups(parsed)
            self.view.apply_events(events)
            self.view.apply_offsets(lane.applied, lane.by_group_lane, lane.revived)
            if monitor is not None:
                self.apply_monitor(monitor)

    def _offsets_snapshots(self, lane: LaneBatch) -> list[tuple[str, int, str]]:
        """History snapshots of the groups the batch only committed for, each at most every
        snapshot interval: the view's state of the group with the offsets lane's entries."""
        now = time.time()
        due = []
        written = self._snapshot_written
        for name in dict.fromkeys(lane.applied.groups):
            if name in lane.by_group_lane:
                continue
            last = written.get(name)
            if last is None or now - last >= self.snapshot_interval_s:
                due.append(name)
        if not due:
            return []
        entries, activity = self.lane.lookup(due)
        out = []
        with self.view.lock:
            for name in due:
                group = self.view.groups.get(name)
                known = activity.get(name)
                revived = name in lane.revived
                if known is None or (group is not None and group.dead_since_s is not None
                                     and not revived):
                    continue  # deleted: its offsets are hidden
                if group is None or group.snapshot is None or revived:  # offsets only
                    base = offsets_only_view(name, known.partition, known.last_ts)
                else:
                    base = group.snapshot
                snapshot = dict(base, updated_ms=max(base.get("updated_ms") or 0, known.last_ts))
                snapshot["offsets"] = [offset_view((e.topic, e.partition), e.entry) for e in
                                       sorted(entries.get(name, ()), key=lambda e: e[:2])]
                out.append((name, snapshot["updated_ms"], compact_json.dumps(snapshot)))
        return out

    def note_progress(self, counters: Mapping[str, Any]) -> None:
        """The log positions a batch (or, on a restart, the checkpoint's last batch) reached;
        outside the view's lock, since it may ask the broker. `apply_monitor` follows."""
        for p, off in counters.get("progress", {}).items():
            self.progress.read[int(p)] = max(int(off), self.progress.read.get(int(p), -1))
        self.progress.refresh_target()

    def apply_monitor(self, counters: Mapping[str, Any]) -> None:
        """The record counters and progress those counters hold, with the view's lock held: on
        a restart, the restarted job is ready at once when the checkpoint's last batch had read
        up to the log's end, with no batch of its own to wait for."""
        # Totals from the state store: absolute, so a replayed batch cannot inflate them.
        self.view.set_record_totals(counters.get("records", {}),
                                    {**{reason: 0 for reason in SKIP_LABELS}, **counters.get("skipped", {})})
        ready = self.progress.ready()
        self.view.set_offsets_topic_progress(self.progress.lag(), ready)
        done, total = self.progress.backlog()
        if not ready:
            log.info("catching up on __consumer_offsets: %d of %d offsets of the backlog read (%.0f%%)",
                     done, total,
                     100.0 * done / total if total else 100.0)
        elif not self._caught_up:
            log.info("caught up on __consumer_offsets (a backlog of %d offsets): ready", total)
        if ready and self.view.seeded:
            self.view.end_seed()  # the log has brought every group it holds
        self._caught_up = ready

    def _write_history(self, batch_id: int, snapshots: list[tuple[str, int, str]],
                       points: list[tuple[str, int, str, str]], events: list[dict[str, Any]],
                       payloads: Mapping[int, str]) -> None:
        """Events worth keeping; the group as it was after each change (`points`); and each
        touched group's latest state, at most every `snapshot_interval` unless it changed."""
        event_rows = [(e["group"], int(e["timestamp_ms"]), e["event"], payloads[id(e)])
                      for e in events if e["event"] in HISTORY_EVENTS]
        changed = {e["group"] for e in events if e["event"] in HISTORY_EVENTS}
        now = time.time()
        snapshot_rows = list(points)
        for name, updated_ms, payload in snapshots:
            last = self._snapshot_written.get(name)
            if name in changed or last is None or now - last >= self.snapshot_interval_s:
                self._snapshot_written[name] = now
                snapshot_rows.append((name, updated_ms, "snapshot", payload))
        if event_rows:
            self.history.write(batch_id, "events", event_rows)
        if snapshot_rows:
            self.history.write(batch_id, "snapshots", snapshot_rows)


def stored_history(history_path: str, snapshots: bool = True) -> StoredHistory | None:
    """What `restore_view` applies, read apart from the view (None: no history yet)."""
    if not os.path.isdir(history_path):
        return None
    return read_restore(history_path, snapshots)


def restore_view(view: MonitorView, history_path: str, snapshots: bool = True) -> int:
    """Counters from the history, so a restarted job continues its series, and with `snapshots`
    each group's last snapshot from it (a job that read the groups from its checkpoint's state,
    streaming/job/state_restore.py, has fresher ones). Reads the running totals of the compacted
    days and only the rows written since (streaming/job/history_totals.py)."""
    stored = stored_history(history_path, snapshots)
    return apply_restore(view, stored) if stored is not None else 0


class Job:
    """A running groupscope job (driver side). `start()` returns once the query runs."""

    def __init__(self, config: Config, spark=None, view: MonitorView | None = None,
                 source_df=None, progress_target: Callable[[], Mapping[int, int]] | None = None,
                 offsets_client_factory: Callable[[], Any] | None = None,
                 start_exporter: bool = True, start_poller: bool = True,
                 metrics_cache: Any = None, query_name: str = "groupscope",
                 stop_asked: threading.Event | None = None) -> None:
        self.config = config
        # Set by a stop signal (the CLI's): the start's waits end early, the caller stops.
        self.stop_asked = stop_asked or threading.Event()
        self.spark = spark
        self.view = view or MonitorView(view_settings(config))
        self._source_df = source_df
        self._progress_target = progress_target
        self._offsets_client_factory = offsets_client_factory
        self._want_exporter = start_exporter
        self._want_poller = start_poller
        # Another exporter's cache of this view (several clusters in one job, streaming/job/
        # fleet.py): the end-offset poller refreshes it after each poll a scrape read.
        self._metrics_cache = metrics_cache
        self._query_name = query_name
        self.exporter = None
        self.poller = None
        self.query = None
        self._timing: BatchDurations | None = None
        self._progress_client = None  # reads the offsets topic's end offsets, opened on first use
        self.sink: BatchSink | None = None
        self.seed: AdminSeed | None = None
        self._serving = False
        self.share_state = None  # the __share_group_state query (streaming/job/share_state.py)
        self.lane: OffsetsLane | None = None  # the offsets lane (streaming/offsets/)
        self._lookup: LookupServer | None = None
        self._offsets_partitions: int | None = None

    # -- wiring -------------------------------------------------------------------------------

    def _kafka_progress_target(self) -> Callable[[], Mapping[int, int]]:
        topic = self.config.source.topic
        shard = set(self.config.source.partitions)

        def target() -> Mapping[int, int]:
            client = self._progress_client
            if client is None:
                client = self._progress_client = self._offsets_client_factory()
            partitions = [p for p in client.partitions(topic) if not shard or p in shard]
            return client.latest(topic, partitions) if partitions else {}

        return target

    @property
    def _reads_kafka(self) -> bool:
        """Whether the source is a Kafka topic (not a capture file or the simulator)."""
        return self.config.source.type in ("kafka-python", "kafka")

    def serve(self) -> None:
        """What needs no Spark, started before it: the exporter, the end-offset poller and the
        launch seed, so the seed's groups are served while Spark starts (then whatever the
        checkpoint restores). `start` calls it unless it ran."""
        from streaming.exporter.end_offset_poller import EndOffsetPoller
        from streaming.exporter.server import start_exporter as serve

        if self._serving:
            return
        self._serving = True
        config = self.config
        log_source = self._reads_kafka
        if self._offsets_client_factory is None and log_source:
            self._offsets_client_factory = offsets_client_factory(config)
        if self._want_exporter:
            self.exporter = serve(self.view, exporter_settings(config))
        cache = self.exporter.cache if self.exporter is not None else self._metrics_cache
        if self._want_poller and self._offsets_client_factory is not None:
            settings = poller_settings(config)
            self.poller = EndOffsetPoller(self.view, self._offsets_client_factory, settings,
                                          clock=self.view.clock,
                                          source_topic=config.source.topic if log_source
                                          else None,
                                          configs=topic_configs_poller(
                                              config, self.view, settings.metadata_interval_s)
                                          if log_source else None,
                                          **(cache.poller_hooks(settings.interval_s)
                                             if cache is not None else {})).start()
        # The Admin API shows the cluster's groups: a seed only for a job that reads their log,
        # and before Spark only for a checkpoint with nothing to restore. Otherwise it starts
        # once the checkpoint's groups are served (`start`), and seeds only those it lacks: a
        # seed first would serve its look's unknown counters as 0 and its offsets, then the
        # checkpoint's older ones, and every served counter and offset would go back.
        if self._wants_seed and checkpoint_is_new(config.checkpoint.path):
            self._start_seed()

    @property
    def _wants_seed(self) -> bool:
        config = self.config
        return (self._reads_kafka and config.source.admin_seed
                and config.source.topic == OFFSETS_TOPIC and self.seed is None)

    def _start_seed(self) -> None:
        config = self.config
        self.seed = AdminSeed(self.view, admin_groups_factory(config),
                              self._offsets_client_factory, config.source.topic,
                              set(config.source.partitions)).start()

    def start(self):
        from streaming.pipeline.shard_state import STATE_SHARDS

        self.serve()
        config = self.config
        if self.spark is None:
            self.spark = build_spark(config)
        query_checkpoint = os.path.join(config.checkpoint.path, "query")
        try:
            layout = state_layout(self.spark, config.checkpoint.path, STATE_SHARDS)
        except ValueError as exc:
            raise UserError(f"checkpoint.path: {exc}") from None
        if self._progress_target is None and self._reads_kafka:
            self._progress_target = self._kafka_progress_target()
        # Every skip reason exists from the start: a counter that appears only on its first
        # increment hides that increment from rate() and increase().
        self.view.set_record_totals(self.view.records_total,
                                    {**{reason: 0 for reason in SKIP_LABELS}, **self.view.records_skipped})
        history = None
        counted_through = -1
        state = committed_state(self.spark, query_checkpoint, layout.groups)
        try:
            self.lane = restored_lane(self.spark, config.checkpoint.path, state, layout)
        except MissingLane as exc:
            raise UserError(f"checkpoint.path: {exc}") from None
        stored = None
        if config.history.path:
            settings = config.history
            lineage = checkpoint_lineage(self.spark, config.checkpoint.path)
            history = HistoryWriter(settings.path, settings.format,
                                    HistoryMaintenance(settings.path, settings.format,
                                                       settings.retention).after_batch,
                                    batch_base(settings.path, lineage))
            stored = stored_history(config.history.path, snapshots=state is None)
            written = highest_batch(settings.path)
            if written is not None:
                counted_through = written - history.batch_base
        progress = OffsetsTopicProgress(self._progress_target,
                                        min_interval_s=OFFSETS_TOPIC_REFRESH_S)
        self.sink = BatchSink(self.view, history, progress, config.history.snapshot_interval,
                              counted_through, self.lane)
        monitor = state.monitor if state is not None else None
        if monitor is not None:
            self.sink.note_progress(monitor)
        else:
            progress.refresh_target()
        # Applied in one hold of the view's lock, since the exporter serves already: a render
        # in between would show a group restored without its counters, as 0.
        with self.view.lock:
            if state is not None:
                self.view.update_groups(state.groups)
                log.info("restored %d groups from the checkpoint's state", len(state.groups))
            if stored is not None:
                restored = apply_restore(self.view, stored)
                if restored:
                    log.info("restored %d events from the history at %s", restored,
                             config.history.path)
            if len(self.lane.table):  # fresher than any snapshot the history holds
                everything = self.lane.everything()
                self.view.apply_offsets(everything.applied)
                log.info("restored %d committed offsets from the offsets lane",
                         len(everything.applied.groups))
            self.view.serve_offsets_only(self.lane.without_entries())
            if monitor is not None:
                self.sink.apply_monitor(monitor)
        if self._wants_seed:  # what the checkpoint restored is served: the seed adds the rest
            self._start_seed()
        self._lookup = LookupServer(self.lane.lookup, driver_host(self.spark))
        self._stream = build_pipeline(self.spark, config, layout, self._lookup.client(),
                                      self._source_df)
        self._seed_first()
        query = self._start_query()
        if self._reads_kafka and config.source.share_state and config.source.topic == OFFSETS_TOPIC \
                and self._source_df is None:
            from streaming.job.share_state import ShareStateQuery

            self.share_state = ShareStateQuery(self.spark, config, self.view, self._in_shard,
                                               f"{self._query_name}-share-state",
                                               self._share_state_ends).start()
        return query

    def _ask_once(self, ask: Callable[[Any], Any]) -> Any:
        """`ask(client)` on an offsets client of its own, closed after: the progress poller's
        client is used from another thread."""
        client = self._offsets_client_factory()
        try:
            return ask(client)
        finally:
            client.close()

    def _share_state_ends(self) -> Mapping[int, int]:
        from streaming.job.share_state import SHARE_STATE_TOPIC

        def ends(client) -> Mapping[int, int]:
            partitions = client.partitions(SHARE_STATE_TOPIC)
            return client.latest(SHARE_STATE_TOPIC, partitions) if partitions else {}

        return self._ask_once(ends)

    def _in_shard(self, group: str) -> bool:
        """Whether `group` is one of this job's (source.partitions: its __consumer_offsets
        partition is one of them; every group when the job reads them all)."""
        shard = self.config.source.partitions
        if not shard:
            return True
        if self._offsets_partitions is None:
            self._offsets_partitions = self._ask_once(
                lambda client: len(client.partitions(self.config.source.topic)))
        return partition_for(group, self._offsets_partitions) in shard

    def _seed_first(self) -> None:
        """In local mode, the launch seed's groups served before the catch-up starts.

        One machine runs both: the seed's look, its groups into the view and their first render
        (about 15 s of the driver's CPU at 10^5 groups of 10 partitions) and the catch-up, which
        takes every core while it reads the log. Run together they served every group after
        41 s, the seed first after 32 s (docs/performance.md). Under a cluster the catch-up runs
        on the executors and nothing waits. Nor does a restart: the groups restored from the
        checkpoint (or the history) are served already, and the log behind them is short."""
        if self.seed is None or not local_tuning_applies(self.config):
            return
        with self.view.lock:
            restored = len(self.view.groups) > len(self.view.seeded)
        if restored:
            return
        started = time.monotonic()
        self.seed.join(SEED_FIRST_S, self.stop_asked)
        if self.seed.seconds is None or self.stop_asked.is_set():  # no look, a slow one, a stop
            return
        cache = self.exporter.cache if self.exporter is not None else self._metrics_cache
        if cache is not None:
            cache.refresh_if_stale()  # the first scrape finds the groups rendered
        log.info("the log's catch-up starts once the launch seed's %d groups are served (%.1f s "
                 "waited)", self.seed.seeded, time.monotonic() - started)

    def _start_query(self):
        trigger = {"processingTime": f"{int(self.config.trigger.interval * 1000)} milliseconds"}
        self.query = (self._stream.writeStream.foreachBatch(self.sink)
                      .option("checkpointLocation",
                              os.path.join(self.config.checkpoint.path, "query"))
                      .trigger(**trigger).queryName(self._query_name).start())
        query = self.query
        self.sink.query_active = lambda: query.isActive
        self._timing = BatchDurations(self.view, self.query).start()
        return self.query

    def stop(self) -> None:
        self.view.stopping = True  # /healthz says so while the batch in flight ends
        # The progress poller goes first: it calls into the query.
        if self._timing is not None:
            self._timing.stop()
            self._timing = None
        if self.sink is not None:
            logging.getLogger("py4j.clientserver").addFilter(_not_the_stop)  # added once
            if not self.sink.drain(STOP_GRACE_S):
                log.warning("stopping: the micro-batch in flight outlasted %.0f s and is cancelled;"
                            " it runs again at the next start", STOP_GRACE_S)
        if self.share_state is not None:
            self.share_state.stop()
        if self.query is not None:
            try:
                self.query.stop()
            except Exception:  # e.g. the JVM died first, from the same signal as this stop
                log.debug("stopping the query failed", exc_info=True)
        if self.poller is not None:
            self.poller.stop()
        if self.exporter is not None:
            self.exporter.stop()
        if self._progress_client is not None:
            self._progress_client.close()
            self._progress_client = None
        if self._lookup is not None:
            self._lookup.close()
            self._lookup = None

    def wait(self, stop_event: threading.Event | None = None, keep_running: bool = False) -> None:
        """Block until the query ends (or `stop_event` is set); re-raise a query failure.

        Once `stop_event` is set, a failure is the stop's: a service manager signals every
        process of the job at once, and Spark's JVM and Python workers may die before this
        driver has stopped the query."""
        from py4j.protocol import Py4JError

        def stopping() -> bool:
            return stop_event is not None and stop_event.is_set()

        retry_s = REFUSED_RETRY_S
        while True:
            try:
                while self.query is not None and self.query.isActive and not stopping():
                    try:
                        self.query.awaitTermination(1.0)
                    except Exception:  # it failed: told below, unless a stop came first
                        break
                error = self.query.exception() if self.query is not None else None
            except (Py4JError, OSError) as exc:  # the JVM is gone
                if stopping():
                    return
                raise RuntimeError(f"lost the Spark JVM: {exc}") from None
            refusal = _READ_REFUSAL.search(str(error)) if error is not None else None
            if stopping() or error is None or (refusal is None and not keep_running):
                break
            if refusal is not None:
                self._wait_for_grant(refusal.group(0), retry_s, stop_event)
            else:  # one cluster of several: the others go on, this one starts again
                self._restart_after_failure(str(error), retry_s, stop_event)
            retry_s = min(retry_s * 2, REFUSED_RETRY_MAX_S)
        if error is not None and not stopping():
            raise RuntimeError(str(error))

    def _restart_after_failure(self, error: str, retry_s: float,
                               stop_event: threading.Event | None) -> None:
        log.error("cluster %s: the streaming query failed (%s); starting it again in %.0f s",
                  self.config.cluster.name, error.splitlines()[0] if error else "", retry_s)
        self._pause_then_restart(retry_s, stop_event)

    def _wait_for_grant(self, refusal: str, retry_s: float,
                        stop_event: threading.Event | None) -> None:
        """The broker refused the query a READ: say so (the first time), report it, and start
        the query again after `retry_s` unless the job is stopped meanwhile."""
        if self.view.source_refusals.get("read") != refusal:
            log.error("groupscope source: %s; the query starts again every few minutes until "
                      "it is granted", refusal)
        self.view.set_source_refusal("read", refusal)
        self._pause_then_restart(retry_s, stop_event)

    def _pause_then_restart(self, retry_s: float, stop_event: threading.Event | None) -> None:
        if self._timing is not None:
            self._timing.stop()
            self._timing = None
        if stop_event is not None:
            if stop_event.wait(retry_s):
                return
        else:
            time.sleep(retry_s)
        log.info("groupscope source: trying to read again")
        self._start_query()
