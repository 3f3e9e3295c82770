"""The share groups' figures of the retention-risk families: per share-partition the consume
rate (its start offset's pace, `streaming.exporter.share_windows`), the catch-up forecast and the
retention risk at that pace, and per share group the lowest risk, the summed rate and the
highest forecast. The maths are the consumer groups' (`coordinator.rates`,
`coordinator.retention`); callers hold the view's lock.
"""
from __future__ import annotations

import numpy as np

from coordinator.lag_arrays import time_lags
from coordinator.rates import catch_up, rates_between, window_rates
from coordinator.retention import age_growth, risk_seconds, size_risk_seconds
from coordinator.state.share_partition import UNKNOWN
from coordinator.timelag import TimeLagMethod
from streaming.exporter.catalog import PARTITION
from streaming.exporter.ends_table import tp_key
from streaming.exporter.lag_frame import segment_starts
from streaming.exporter.lag_render import IndexedNames, NameTable, _Families
from streaming.exporter.risk_frame import (partition_record_bytes, size_first,
                                           topic_retention_bytes, topic_retention_s)


def _found(view) -> list[tuple]:
    """(group, topic, partition, topic id, ends row, start offset, end, key) of each
    share-partition behind a polled log end, in group, topic id, partition order."""
    ids, ends, found = view.topics.ids, view.ends, []
    for key, sp in sorted(view.share_partitions.items()):
        group, topic_id, partition = key
        topic = view.topic_names.get(topic_id)
        if (topic is None or topic not in view.settings.topics or sp.start_offset == UNKNOWN
                or topic not in ids):
            continue
        row = ends.index.get(tp_key(ids[topic], partition))
        if row is None or not ends.counts[row]:
            continue
        end = ends.latest(tp_key(ids[topic], partition))[0]
        if sp.start_offset < end:
            found.append((group, topic, partition, ids[topic], row, sp.start_offset, end, key))
    return found


def _rates(view, rows: np.ndarray, starts: np.ndarray, ends_now: np.ndarray, keys: list,
           now: float) -> tuple[np.ndarray, np.ndarray]:
    """(consume, produce) records/s: the start offsets' window, and the producers over that
    same span where the end-offset timeline reaches back to it (else over their own)."""
    window_s, ends = view.retention.rate_window_s, view.ends
    offsets, times, counts = view.share_starts.samples(keys)
    consume, _, since = window_rates(offsets, times, counts, starts, now, window_s)
    o, t, c = ends.offsets[rows], ends.times[rows], ends.counts[rows]
    latest_t = np.take_along_axis(t, (c - 1)[:, None], axis=1)[:, 0]
    same = rates_between(o, t, c, ends_now, since, latest_t)
    own, _, _ = window_rates(o, t, c, ends_now, latest_t, window_s)
    return consume, np.where(np.isnan(same), own, same)


def share_families(out: _Families, view, now: float) -> None:
    """Put the share groups' families into `out`."""
    found = _found(view)
    if not found:
        return
    names, topic_names, partitions, topic_ids, rows, starts, ends_now, keys = (
        list(x) for x in zip(*found))
    ends = view.ends
    rows, starts = np.array(rows), np.array(starts, dtype=np.int64)
    ends_now = np.array(ends_now, dtype=np.int64)
    consume, produce = _rates(view, rows, starts, ends_now, keys, now)
    age, method = time_lags(ends.offsets[rows], ends.times[rows], ends.counts[rows], starts, now,
                            ends.firsts[rows])
    log_first = ends.firsts[rows]
    # at or below the log start, or unknown: the log's first record, so that the figure errs early
    early = (starts <= ends.starts[rows]) | (method == int(TimeLagMethod.UNKNOWN))
    early &= ~np.isnan(log_first)
    age = np.where(early, now - log_first, age)
    topic_ids = np.array(topic_ids)
    risk = risk_seconds(age, topic_retention_s(view)[topic_ids], age_growth(consume, produce))
    # where retention.bytes deletes, by size too: whichever comes first, as for consumer groups
    by_bytes = topic_retention_bytes(view)[topic_ids]
    if not np.isnan(by_bytes).all():
        tps = tp_key(topic_ids.astype(np.int64), np.array(partitions, dtype=np.int64))
        size = np.where(np.isnan(by_bytes), np.nan, size_risk_seconds(
            ends_now - starts, partition_record_bytes(view, tps), by_bytes, consume, produce))
        risk = np.where(size_first(risk, size), size, risk)
    plan = catch_up(ends_now - starts, consume, produce)
    group_table = NameTable(sorted(set(names)))
    at_of = {name: i for i, name in enumerate(group_table.raw)}
    group_pos = np.array([at_of[name] for name in names])
    topics = NameTable(topic_names)
    c = view.settings.cluster
    for suffix, values, reduce in (("retention_risk_seconds", risk, np.minimum),
                                   ("consume_rate", consume, np.add),
                                   ("catch_up_seconds", plan, np.maximum)):
        has = np.flatnonzero(~np.isnan(values))
        if not len(has):
            continue
        if view.settings.granularity == PARTITION:
            out.put(f"kafka_sharegroup_partition_{suffix}",
                    [("cluster", c), ("group", IndexedNames(group_table, group_pos[has])),
                     ("topic", IndexedNames(topics, has)),
                     ("partition", np.array(partitions)[has])], values[has], True)
        starts_at = segment_starts(group_pos[has])
        out.put(f"kafka_sharegroup_{suffix}",
                [("cluster", c), ("group", IndexedNames(group_table, group_pos[has][starts_at]))],
                reduce.reduceat(values[has], starts_at), True)
