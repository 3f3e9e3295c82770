"""Offsets of a topic that hold no record: transaction markers (control batches) and what
compaction removed.

A share consumer is handed a batch of offsets and acknowledges each offset it got no record for
as a GAP, which the partition leader stores as ARCHIVED in `__share_group_state`, with the
delivery count of the batch: `__share_group_state` alone cannot tell such an offset from a record
the group gave up on. The topic's own batches can: `RecordGaps` reads the archived ranges
(read_uncommitted, so that every data record is seen; kafka-python skips control batches, and
its position moves past them) and names the offsets in them that no record came from.
"""
from __future__ import annotations

import logging
import time
from typing import Mapping, Sequence

from streaming.kafka.offsets import NotAuthorized, TopicPartition, not_authorized_to_read

log = logging.getLogger("groupscope.share_state")
POLL_TIMEOUT_MS = 200
Ranges = Sequence[tuple[int, int]]  # (first, last) offsets, inclusive


class RecordGaps:
    """One consumer without a group. `gaps` answers within `timeout_s`, or leaves out the
    partitions it could not read whole (their offsets are then taken as records)."""

    def __init__(self, config: dict, timeout_s: float) -> None:
        self._config = dict(config, isolation_level="read_uncommitted")
        self._timeout_s = timeout_s
        self._consumer = None
        self._refused: str | None = None  # said once: the archived counts include markers

    def gaps(self, wanted: Mapping[TopicPartition, Ranges]) -> dict[TopicPartition, set[int]]:
        wanted = {tp: sorted(ranges) for tp, ranges in wanted.items() if ranges}
        if not wanted:
            return {}
        try:
            found = self._read(wanted)
        except NotAuthorized as exc:
            if str(exc) != self._refused:
                log.warning("share groups' archived records may include transaction markers "
                            "(Kafka stores a marker's offset as archived): %s", exc)
                self._refused = str(exc)
            return {}
        except Exception as exc:  # noqa: BLE001 - the counts stand, markers included
            log.info("offsets archived by share groups not checked for markers: %s", exc)
            self.close()
            return {}
        self._refused = None
        return found

    def _read(self, wanted: dict[TopicPartition, list[tuple[int, int]]]
              ) -> dict[TopicPartition, set[int]]:
        from kafka import KafkaConsumer, TopicPartition as KafkaTopicPartition
        from kafka.errors import TopicAuthorizationFailedError

        if self._consumer is None:
            self._consumer = KafkaConsumer(**self._config, enable_auto_commit=False,
                                           group_id=None, auto_offset_reset="earliest")
        consumer = self._consumer
        tps = {KafkaTopicPartition(t, p): (t, p) for t, p in wanted}
        starts, ends = consumer.beginning_offsets(list(tps)), consumer.end_offsets(list(tps))
        # Offsets retention removed cannot be told apart: they count as records; none is past
        # the log's end.
        todo = {key: [(max(a, starts[tp]), min(b, ends[tp] - 1)) for a, b in wanted[key]
                      if b >= starts[tp] and a < ends[tp]]
                for tp, key in tps.items()}
        seen: dict[TopicPartition, set[int]] = {key: set() for key in todo}
        found: dict[TopicPartition, set[int]] = {key: set() for key in todo}
        done = {key for key, ranges in todo.items() if not ranges}
        consumer.assign(list(tps))
        try:
            for tp, key in tps.items():
                if key not in done:
                    consumer.seek(tp, todo[key][0][0])
            deadline = time.monotonic() + self._timeout_s
            while len(done) < len(tps) and time.monotonic() < deadline:
                try:
                    batches = consumer.poll(timeout_ms=POLL_TIMEOUT_MS)
                except TopicAuthorizationFailedError:
                    raise not_authorized_to_read(", ".join(sorted({t for t, _ in wanted})))
                for tp, records in batches.items():
                    seen[tps[tp]].update(r.offset for r in records)
                for tp, key in tps.items():
                    if key in done:
                        continue
                    # the ranges the position has passed: their offsets no record came from
                    position, ranges = consumer.position(tp), todo[key]
                    while ranges and position > ranges[0][1]:
                        first, last = ranges.pop(0)
                        found[key].update(o for o in range(first, last + 1)
                                          if o not in seen[key])
                    if not ranges:
                        done.add(key)
                    elif position < ranges[0][0]:
                        consumer.seek(tp, ranges[0][0])
        finally:
            consumer.assign([])  # nothing fetched in the background
        return {key: found[key] for key in done}

    def close(self) -> None:
        consumer, self._consumer = self._consumer, None
        if consumer is not None:
            try:
                consumer.close()
            except Exception:  # noqa: BLE001 - closing a broken client says nothing new
                log.debug("closing the record gaps reader failed", exc_info=True)
