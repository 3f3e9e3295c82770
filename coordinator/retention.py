"""Retention risk: how soon records a group has not read yet are deleted by the topic's
retention, by age (retention.ms) or by size (retention.bytes).

Kafka deletes a log a segment at a time: a segment goes once its largest record timestamp is
older than `retention.ms` (the active one too, rolled first, once the high watermark covers it),
at the broker's next retention check (`log.retention.check.interval.ms`, 5 min by default). The
segment layout is not visible to a client, so the forecast takes the first unconsumed record's
own timestamp as its segment's largest: deletion comes no earlier than that record's time plus
`retention.ms`, and later by as long as its segment went on taking records after it (at most
`segment.ms`, less when `segment.bytes` rolls it first) and by up to one retention check. The
forecast is early, never late, by at most `late_by_s`.

At the group's pace the first unconsumed record moves on: its age grows by
1 - consume/produce seconds a second (1 for a stopped group, 0 or less for one that keeps up), so
records are lost once that age reaches `retention.ms`: after (retention - age) / growth seconds,
never where the age does not grow.

By size, Kafka deletes the oldest segments while the log without them is still at least
`retention.bytes` (UnifiedLog.deleteRetentionSizeBreachedSegments: a segment goes while the
size less its bytes stays at or over the limit). The segment holding the first unconsumed record
goes once the bytes after that segment reach the limit; those are at most the bytes from that
record to the log end, and at least those less one segment. So the loss comes no earlier than
when the bytes ahead of the group (lag x the log's average record size) reach `retention.bytes`,
and no later than one segment's bytes (segment.bytes) of production after it, plus one check.
Those bytes grow by (produce - consume) x record size a second.

Pure Python and numpy: the configuration's parsing, and the array maths a row a partition.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from coordinator.rates import NEVER

# Kafka's defaults, for an answer that leaves a key out (a broker too old to know it).
_DEFAULTS = {"cleanup.policy": "delete", "retention.ms": "604800000", "retention.bytes": "-1",
             "segment.ms": "604800000", "segment.bytes": "1073741824"}
CONFIG_KEYS = tuple(_DEFAULTS)  # what DescribeConfigs is asked for
RETENTION_CHECK_S = 300.0  # log.retention.check.interval.ms's default: a broker setting
# The risk's method where retention.bytes comes first: beside TimeLagMethod's codes (0-4), which
# say how the first unconsumed record's time was had for the time-based risk
BY_SIZE = 5


@dataclass(frozen=True)
class RetentionConfig:
    """The retention settings of one topic, as DescribeConfigs gives them."""
    deletes: bool            # cleanup.policy names delete (delete, or delete,compact)
    retention_ms: int        # -1: no time limit
    retention_bytes: int     # -1: no size limit
    segment_ms: int
    segment_bytes: int

    @property
    def size_limited(self) -> bool:
        """Whether records are deleted by the log's size."""
        return self.deletes and self.retention_bytes >= 0

    @property
    def time_limited(self) -> bool:
        """Whether records are deleted by age: a compacted-only topic's never are."""
        return self.deletes and self.retention_ms >= 0

    def late_by_s(self, check_interval_s: float = RETENTION_CHECK_S) -> float:
        """How much later than the forecast the loss may come: the rest of the segment's time
        (segment.ms) and one retention check."""
        return self.segment_ms / 1000.0 + check_interval_s


def parse_config(entries: Mapping[str, str | None]) -> RetentionConfig:
    """A topic's DescribeConfigs entries (name -> value; missing or None: Kafka's default)."""
    def value(key: str) -> str:
        found = entries.get(key)
        return _DEFAULTS[key] if found is None else str(found)

    policies = {p.strip() for p in value("cleanup.policy").split(",")}
    return RetentionConfig(deletes="delete" in policies,
                           retention_ms=int(value("retention.ms")),
                           retention_bytes=int(value("retention.bytes")),
                           segment_ms=int(value("segment.ms")),
                           segment_bytes=int(value("segment.bytes")))


def age_growth(consume: np.ndarray, produce: np.ndarray) -> np.ndarray:
    """Seconds a second the first unconsumed record's age grows at these rates (records/s):
    1 - consume/produce; 1 (as if stopped) where a rate is unknown, so the forecast errs early."""
    with np.errstate(divide="ignore", invalid="ignore"):
        growth = np.where(produce > 0, 1.0 - consume / produce,
                          np.where(consume > 0, -np.inf, 1.0))
    return np.where(np.isnan(consume) | np.isnan(produce), 1.0, growth)


def risk_seconds(age_s: np.ndarray, retention_s: np.ndarray, growth: np.ndarray) -> np.ndarray:
    """Seconds until records not read yet are deleted: 0 once the first unconsumed record is
    due, NEVER where its age does not grow. `age_s`: that record's age now."""
    margin = retention_s - age_s
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(growth > 0, margin / growth, NEVER)
    return np.where(margin <= 0, 0.0, out)


def size_risk_seconds(lag: np.ndarray, record_bytes: np.ndarray, retention_bytes: np.ndarray,
                      consume: np.ndarray, produce: np.ndarray) -> np.ndarray:
    """Seconds until retention.bytes deletes records not read yet: until the bytes ahead of the
    first unconsumed record (`lag` records of `record_bytes` each) reach `retention_bytes`, at
    (produce - consume) records/s more a second; 0 once they have, NEVER where they do not grow,
    NaN without a produce rate (an unknown consume rate is taken as 0: early, not late)."""
    consume = np.where(np.isnan(consume), 0.0, consume)
    margin = retention_bytes - lag * record_bytes
    with np.errstate(divide="ignore", invalid="ignore"):
        growth = (produce - consume) * record_bytes
        out = np.where(growth > 0, margin / growth, NEVER)
    out = np.where(margin <= 0, 0.0, out)
    return np.where(np.isnan(produce) | np.isnan(record_bytes), np.nan, out)


def size_late_by_s(config: RetentionConfig, produce_bytes_s: float,
                   check_interval_s: float = RETENTION_CHECK_S) -> float:
    """How much later than the size forecast the loss may come: the time to produce one
    segment's bytes (the rest of the first unconsumed record's segment) and one check."""
    if produce_bytes_s <= 0:
        return float("inf")
    return config.segment_bytes / produce_bytes_s + check_interval_s
