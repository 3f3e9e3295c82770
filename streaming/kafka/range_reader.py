"""Reading one offset range to its end, whatever the Kafka client.

A range planned by the driver is read until the client's position reaches its end: offset gaps
(compaction, transaction markers, aborted records under read_committed) are skipped, but the read
never stops early while the records may still be there. An unreachable broker makes the read
wait and retry with backoff, logging why, and fail after `timeout_s` rather than skip anything.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Callable, Iterator, Protocol, Sequence

import pyarrow as pa

from streaming.kafka.offset_ranges import OffsetRange
from streaming.kafka.offsets import NotAuthorized
from streaming.kafka.records import record_batch

log = logging.getLogger("groupscope.sources")


# Polls in a row that move no range before a client shared by several ranges hands the rest
# over to the one-range path.
IDLE_POLLS = 3


class OffsetOutOfRange(Exception):
    """The client was told its position is no longer (or not yet) in the log."""


class SourceReadError(RuntimeError):
    """A range could not be read completely; the micro-batch fails instead of losing records."""


@dataclass
class Polled:
    """What one poll returned: parallel columns of records (lists, or numpy and Arrow arrays),
    and the client's position after them."""

    offsets: Sequence[int]
    keys: Sequence[bytes | None]
    values: Sequence[bytes | None]
    timestamps_ms: Sequence[int | None]
    timestamp_types: Sequence[int]
    position: int


class SharedRanges:
    """Several ranges of distinct partitions read through one client.

    In steady state a micro-batch is a few records in each of many partitions, and a client per
    range costs a connection and a fetch round trip each (confluent-kafka, a task of 25 such
    ranges: 110 ms of CPU against 15 ms through one client). `poll_all` reads until every range
    is done or something unusual happens (an error, or IDLE_POLLS polls that move nothing); then
    `positions` says where each range stands, and the caller reads the rest of each range with
    the careful one-partition path (retries, lost records, truncation). Each client supplies
    `_poll`, `_pause` and `close`."""

    def __init__(self, ranges: list[OffsetRange]) -> None:
        self.positions = {rng.partition: rng.start for rng in ranges}
        self._ends = {rng.partition: rng.end for rng in ranges}

    def _poll(self, unfinished: list[int]) -> tuple[list[tuple[int, Polled]], bool]:
        """What one poll read: (partition, records with the position after them), and whether
        it met an error that the one-partition path is to handle."""
        raise NotImplementedError

    def _pause(self, partitions: list[int]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def poll_all(self) -> Iterator[tuple[int, Polled]]:
        """(partition, records polled for it) until all ranges are read or the fast path stops;
        records may run past the range's end (new records since planning), which the caller
        cuts off."""
        idle_polls = 0
        while True:
            unfinished = [p for p, position in self.positions.items() if position < self._ends[p]]
            if not unfinished:
                return
            polls, failed = self._poll(unfinished)
            moved = False
            for partition, polled in polls:
                if polled.position > self.positions[partition]:
                    self.positions[partition] = polled.position
                    moved = True
                if len(polled.offsets):
                    yield partition, polled
            if failed:
                return
            done = [p for p in unfinished if self.positions[p] >= self._ends[p]]
            if done:
                self._pause(done)
            idle_polls = 0 if moved else idle_polls + 1
            if idle_polls >= IDLE_POLLS:
                return


class PartitionClient(Protocol):
    """One client assigned to one partition, positioned by `seek`."""

    def seek(self, offset: int) -> None: ...
    def poll(self) -> Polled: ...
    def earliest(self) -> int: ...
    def latest(self) -> int: ...
    def close(self) -> None: ...


@dataclass(frozen=True)
class ReadSettings:
    timeout_s: float = 300.0       # give up on an unreachable broker after this long
    warn_after_s: float = 10.0     # silence before the first "still waiting" log line
    fail_on_data_loss: bool = False
    max_backoff_s: float = 5.0


def read_range(open_client: Callable[[], PartitionClient], topic: str, rng: OffsetRange,
               settings: ReadSettings, sleep: Callable[[float], None] = time.sleep
               ) -> Iterator[pa.RecordBatch]:
    client = _open(open_client, topic, rng, settings, sleep)
    try:
        client.seek(rng.start)
        yield from _read_to_end(client, topic, rng, settings, sleep)
    finally:
        client.close()


def _open(open_client: Callable[[], PartitionClient], topic: str, rng: OffsetRange,
          settings: ReadSettings, sleep: Callable[[float], None]) -> PartitionClient:
    """A client, retried with backoff while the broker cannot be reached."""
    started = time.monotonic()
    backoff = 0.1
    while True:
        try:
            return open_client()
        except Exception as exc:
            waited = time.monotonic() - started
            if waited >= settings.timeout_s:
                raise SourceReadError(
                    f"groupscope source: cannot connect to read {topic}-{rng.partition} "
                    f"(offsets {rng.start}..{rng.end - 1}) after {waited:.0f}s: {exc}") from exc
            log.warning("groupscope source: cannot connect to read %s-%d (%s); retrying in %.1fs",
                        topic, rng.partition, exc, backoff)
            sleep(backoff)
            backoff = min(backoff * 2, settings.max_backoff_s)


def _read_to_end(client: PartitionClient, topic: str, rng: OffsetRange, settings: ReadSettings,
                 sleep: Callable[[float], None]) -> Iterator[pa.RecordBatch]:
    where = f"{topic}-{rng.partition}"
    position = rng.start
    idle_since: float | None = None
    backoff = 0.05
    next_warning = settings.warn_after_s
    while position < rng.end:
        try:
            polled = client.poll()
        except OffsetOutOfRange:
            position = _skip_lost(client, where, position, rng.end, settings)
            continue
        except NotAuthorized as exc:  # waiting would not help: the job waits for the grant
            raise SourceReadError(f"groupscope source: {exc}") from None
        except Exception as exc:  # client errors during an outage: keep retrying below
            polled = None
            last_error = exc
        else:
            last_error = None
        if polled is not None and len(polled.offsets):
            batch = records_in_range(topic, rng, position, polled)
            if batch is not None:
                yield batch
        new_position = polled.position if polled is not None else position
        if new_position > position:
            position = new_position
            idle_since, backoff, next_warning = None, 0.05, settings.warn_after_s
            continue
        # Nothing new: the broker is slow or gone, or the records are truly gone (truncation).
        now = time.monotonic()
        idle_since = idle_since if idle_since is not None else now
        idle = now - idle_since
        if _truncated_below(client, position):
            log.warning("groupscope source: %s ends at %d, before the planned end %d (log "
                        "truncated); records %d..%d are gone", where, position, rng.end,
                        position, rng.end - 1)
            return
        if idle >= settings.timeout_s:
            raise SourceReadError(
                f"groupscope source: gave up reading {where} at offset {position} (planned end "
                f"{rng.end}) after {idle:.0f}s without progress: {last_error or 'no records'}; "
                "the query can be restarted from its checkpoint without losing records")
        if idle >= next_warning:
            log.warning("groupscope source: no progress reading %s at offset %d (planned end %d) "
                        "for %.0fs (%s); retrying with backoff", where, position, rng.end, idle,
                        last_error or "broker slow or unreachable")
            next_warning = idle + max(settings.warn_after_s, 30.0)
        sleep(backoff)
        backoff = min(backoff * 2, settings.max_backoff_s)


def records_in_range(topic: str, rng: OffsetRange, position: int, polled: Polled
                     ) -> pa.RecordBatch | None:
    """The polled records from `position` up to the range's end, as a batch (None if none)."""
    offsets = polled.offsets
    lo = 0
    while lo < len(offsets) and offsets[lo] < position:
        lo += 1
    hi = len(offsets)
    while hi > lo and offsets[hi - 1] >= rng.end:
        hi -= 1
    if hi <= lo:
        return None
    if lo == 0 and hi == len(offsets):
        cut = polled
    else:
        cut = Polled(offsets[lo:hi], polled.keys[lo:hi], polled.values[lo:hi],
                     polled.timestamps_ms[lo:hi], polled.timestamp_types[lo:hi], polled.position)
    return record_batch(topic, rng.partition, cut.keys, cut.values, cut.offsets, cut.timestamps_ms,
                        cut.timestamp_types)


def _skip_lost(client: PartitionClient, where: str, position: int, end: int,
               settings: ReadSettings) -> int:
    earliest = client.earliest()
    if earliest <= position:
        raise SourceReadError(f"groupscope source: {where} reported offset {position} out of "
                              f"range, yet the log starts at {earliest}")
    message = (f"groupscope source: records {position}..{min(earliest, end) - 1} of {where} are "
               "gone (retention or deletion) before they could be read")
    if settings.fail_on_data_loss:
        raise SourceReadError(message + " (failOnDataLoss=true)")
    log.warning(message + "; continuing at offset %d", earliest)
    resumed = min(earliest, end)
    client.seek(resumed)
    return resumed


def _truncated_below(client: PartitionClient, position: int) -> bool:
    """True when the broker answers that the log now ends at or before `position`."""
    try:
        return client.latest() <= position
    except Exception:  # unreachable: not evidence of truncation
        return False
