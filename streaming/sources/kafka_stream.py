"""`groupscope-kafka`: a Spark Python streaming source reading one Kafka topic.

The driver side (offset planning) runs in Spark's long-lived Python source runner and keeps one
offsets client open; `read` runs on executors, opens its own client per offset range and yields
Arrow batches. Clients are never pickled: they are created lazily and dropped from the pickled
state.
"""
from __future__ import annotations

import logging
import time
from collections import deque
from typing import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadLimit, ReadMaxRows,
                                              SupportsTriggerAvailableNow)
from pyspark.sql.types import StructType

from streaming.sources.kafka_options import KafkaSourceOptions, parse_options
from streaming.kafka.offsets import (NotAuthorized, close_quietly, offsets_client,
                                     readable_partitions)
from streaming.kafka.offset_ranges import (EARLIEST, LATEST, OffsetRange, PartitionOffsets,
                                             from_offset_dict, limit_end, pack_ranges,
                                             parse_starting_offsets, plan_ranges, to_offset_dict)
from streaming.kafka.range_reader import read_range, records_in_range
from streaming.kafka.records import KafkaShapedSource
from streaming.kafka.refusals import Refused, refusal_of
from streaming.outage_log import OutageLog

FORMAT = "groupscope-kafka"
# Ranges of a task whose clients are opened while an earlier range is read (see _read_each).
OPEN_AHEAD = 4
# Tasks up to this many records read their ranges through one shared client (see _together);
# larger ones (catching up) read range by range, where each client is worth its cost.
SHARED_CLIENT_MAX_RECORDS = 50_000
log = logging.getLogger("groupscope.sources")


class KafkaRangePartition(InputPartition):
    """One Spark task: offset ranges read one after the other."""

    def __init__(self, ranges: list[OffsetRange]) -> None:
        super().__init__(tuple(ranges))
        self.ranges = ranges


def partition_client(options: KafkaSourceOptions, partition: int, end: int | None = None):
    """A client for one partition; `end`: the offset the read stops at, when known."""
    if options.client == "confluent":
        from streaming.kafka.confluent_client import ConfluentPartition
        return ConfluentPartition(options.confluent_config(), options.topic, partition, end)
    from streaming.kafka.client import KafkaPythonPartition
    return KafkaPythonPartition(options.kafka_python_config(), options.topic, partition)


def shared_client(options: KafkaSourceOptions, ranges: list[OffsetRange]):
    """One client reading several ranges of distinct partitions (`poll_all`, `positions`)."""
    if options.client == "confluent":
        from streaming.kafka.confluent_client import ConfluentRanges
        return ConfluentRanges(options.confluent_config(), options.topic, ranges)
    from streaming.kafka.client import KafkaPythonRanges
    return KafkaPythonRanges(options.kafka_python_config(), options.topic, ranges)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: KafkaSourceOptions) -> None:
        self.options = options
        self._client = None
        self._target: PartitionOffsets | None = None  # availableNow: never read past this
        self._seen_latest: PartitionOffsets | None = None  # for progress reports
        self._missing_logged = False
        # A refusal (an ACL, the credentials, TLS) is asked about again seldom, like a topic not
        # created yet; the driver says it (its end-offset poller asks the same, the share-state
        # query for its topic), in the job's log, /healthz and a metric: here it is only noted.
        self._refused = Refused(log, f"groupscope source at {options.bootstrap_servers}",
                                f"waiting for {options.topic}", level=logging.DEBUG,
                                repeat_s=None, answered=f"{options.topic} may be read now")
        self._may_read = False  # a fetch was allowed once: no need to ask again
        # Spark asks for the initial offsets again before each trigger until the first batch
        # runs; once the topic has partitions the answer is kept, so the batch starts where the
        # offsets log says even if retention moves the log start in between (and no lookup).
        self._initial: dict | None = None
        self._outage = OutageLog(log, f"groupscope source: reading the end offsets of "
                                      f"{options.topic} at {options.bootstrap_servers}")

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_client"] = None
        return state

    # -- driver side -------------------------------------------------------------------------
    def _offsets(self):
        if self._client is None:
            self._client = offsets_client(self.options)
        return self._client

    def _drop_client(self) -> None:
        client, self._client = self._client, None
        close_quietly(client, "offsets client")

    def _partitions(self) -> list[int]:
        if not self._refused.due():
            return []
        try:
            # Planning reads that will be refused would fail the query's tasks, each with
            # Spark's stack traces: ask first, and wait like for a missing topic (the grant may
            # come while the job runs; failing would only restart it into the same refusal).
            partitions = readable_partitions(self._offsets(), self.options.topic, self._may_read)
            self._may_read = self._may_read or bool(partitions)
        except NotAuthorized as exc:
            self._refused.refused(str(exc))
            return []
        except Exception as exc:
            refusal = refusal_of(exc)
            if refusal is None:
                raise
            self._drop_client()
            self._refused.refused(refusal)
            return []
        self._refused.answered()
        if partitions and self.options.partitions is not None:
            partitions = [p for p in partitions if p in self.options.partitions]
        if not partitions and not self._missing_logged:
            # Kafka creates __consumer_offsets on first use: wait for it rather than fail.
            # Kafka 3.x has no share groups: their state topic missing is no news
            log.log(logging.INFO if self.options.topic == "__share_group_state" else logging.WARNING,
                    "groupscope source: topic %s not found at %s (yet); reading it as soon "
                    "as it appears", self.options.topic, self.options.bootstrap_servers)
        self._missing_logged = not partitions
        return partitions

    def _latest(self) -> PartitionOffsets:
        partitions = self._partitions()
        return self._offsets().latest(self.options.topic, partitions) if partitions else {}

    def _bounds(self) -> tuple[PartitionOffsets, PartitionOffsets]:
        partitions = self._partitions()
        if not partitions:
            return {}, {}
        client = self._offsets()
        return (client.earliest(self.options.topic, partitions),
                client.latest(self.options.topic, partitions))

    def _with_retries(self, what: str, call):
        """Driver look-ups that must succeed (the query cannot start without them)."""
        deadline = time.monotonic() + self.options.read.timeout_s
        backoff = 0.5
        while True:
            try:
                return call()
            except Exception as exc:
                self._drop_client()
                if time.monotonic() + backoff > deadline:
                    raise RuntimeError(f"groupscope source: {what} failed at "
                                       f"{self.options.bootstrap_servers}: {exc}") from exc
                log.warning("groupscope source: %s failed (%s); retrying in %.1fs", what, exc,
                            backoff)
                time.sleep(backoff)
                backoff = min(backoff * 2, 10.0)

    def initialOffset(self) -> dict:
        if self._initial is None:
            initial = self._initial_offsets()
            if not initial.get(self.options.topic):
                return initial  # no partitions yet: ask again next time
            self._initial = initial
        return self._initial

    def _initial_offsets(self) -> dict:
        earliest, latest = self._with_retries("reading the topic's offsets", self._bounds)
        wanted = parse_starting_offsets(self.options.starting_offsets, self.options.topic)
        start: PartitionOffsets = {}
        for partition in latest:
            chosen = wanted if isinstance(wanted, str) else wanted.get(partition, EARLIEST)
            if chosen in ("earliest", EARLIEST):
                start[partition] = earliest[partition]
            elif chosen in ("latest", LATEST):
                start[partition] = latest[partition]
            else:
                start[partition] = chosen
        return to_offset_dict(self.options.topic, start)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_records_per_trigger:
            return ReadMaxRows(self.options.max_records_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        latest = self._with_retries("reading the topic's end offsets", self._latest)
        self._target = latest

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = from_offset_dict(self.options.topic, start)
        try:
            latest = self._latest()
        except Exception as exc:
            # No new batch this trigger; the next trigger asks again. Nothing is skipped.
            self._drop_client()
            self._outage.failed(exc, "no new data until it answers")
            return start
        self._outage.answered()
        self._seen_latest = latest
        if self._target is not None:
            latest = {p: min(o, self._target[p]) for p, o in latest.items() if p in self._target}
        # New partitions start at 0 (an out-of-range start is moved to the log start on read);
        # an end never moves backwards even if the broker's answer does.
        end = {p: max(o, begin.get(p, 0)) for p, o in latest.items()}
        for partition, offset in begin.items():
            end.setdefault(partition, offset)
        if isinstance(limit, ReadMaxRows):
            end = limit_end(begin, end, limit.max_rows)
        return to_offset_dict(self.options.topic, end)

    def reportLatestOffset(self) -> dict | None:
        if self._seen_latest is None:
            return None
        return to_offset_dict(self.options.topic, self._seen_latest)

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        ranges = plan_ranges(from_offset_dict(self.options.topic, start),
                             from_offset_dict(self.options.topic, end),
                             self.options.records_per_split)
        return [KafkaRangePartition(task)
                for task in pack_ranges(ranges, self.options.records_per_task)]

    def commit(self, end: dict) -> None:
        pass  # nothing to acknowledge: progress lives in Spark's checkpoint only

    def stop(self) -> None:
        self._drop_client()

    # -- executor side -----------------------------------------------------------------------
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        ranges = list(partition.ranges)
        if self._together(ranges):
            yield from self._read_together(ranges)
        else:
            yield from self._read_each(ranges)

    def _together(self, ranges: list[OffsetRange]) -> bool:
        """Small ranges of distinct partitions (a steady-state task) share one client."""
        return (len(ranges) > 1 and len({rng.partition for rng in ranges}) == len(ranges)
                and sum(rng.size for rng in ranges) <= SHARED_CLIENT_MAX_RECORDS)

    def _read_together(self, ranges: list[OffsetRange]) -> Iterator[pa.RecordBatch]:
        """Through one client while all goes well; whatever it leaves unread (an error, a stall)
        is read range by range, with retries and the checks for lost records."""
        try:
            shared = shared_client(self.options, ranges)
        except Exception:
            yield from self._read_each(ranges)
            return
        by_partition = {rng.partition: rng for rng in ranges}
        try:
            for number, polled in shared.poll_all():
                rng = by_partition[number]
                batch = records_in_range(self.options.topic, rng, rng.start, polled)
                if batch is not None:
                    yield batch
        finally:
            shared.close()
        rest = [OffsetRange(rng.partition, shared.positions[rng.partition], rng.end)
                for rng in ranges if shared.positions[rng.partition] < rng.end]
        yield from self._read_each(rest)

    def _read_each(self, ranges: list[OffsetRange]) -> Iterator[pa.RecordBatch]:
        """The ranges one after the other, with the clients of the next OPEN_AHEAD ranges
        opened and positioned meanwhile: librdkafka connects and fetches in its own threads, so
        a range's records are usually there by the time its turn comes."""
        ahead: deque = deque()
        try:
            for i, rng in enumerate(ranges):
                while len(ahead) < min(OPEN_AHEAD, len(ranges) - i):
                    ahead.append(self._opened(ranges[i + len(ahead)]))
                client = ahead.popleft()
                # A client that could not be opened ahead is opened by read_range, with retries.
                open_client = (lambda: client) if client is not None else (
                    lambda: partition_client(self.options, rng.partition, rng.end))
                yield from read_range(open_client, self.options.topic, rng, self.options.read)
        finally:
            for client in ahead:
                if client is not None:
                    client.close()

    def _opened(self, rng: OffsetRange):
        """A client positioned at the range's start, or None when that fails now."""
        if self.options.client != "confluent":
            return None  # kafka-python fetches only when polled: nothing to gain
        try:
            client = partition_client(self.options, rng.partition, rng.end)
        except Exception:
            return None
        try:
            client.seek(rng.start)
        except Exception:
            client.close()
            return None
        return client


class KafkaDataSource(KafkaShapedSource):
    """`spark.readStream.format("groupscope-kafka")` after `register(spark)`."""

    format_name = FORMAT
    reader_class = KafkaStreamReader

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return self.reader_class(parse_options(self.options))
