"""The retention-risk, rate and catch-up families as columns (`ColumnFamily`, rendered with
the lag part): per group-partition and per group from a LagFrame and its RiskFrame, per polled
partition the produce rate, the share groups' (streaming.exporter.share_risk), and the
count of topics whose settings were refused. Callers hold the view's lock.
"""
from __future__ import annotations

import numpy as np

from coordinator.rates import window_rates
from streaming.exporter.catalog import PARTITION
from streaming.exporter.ends_table import tp_parts
from streaming.exporter.lag_frame import LagFrame, segment_starts
from streaming.exporter.lag_render import (ColumnFamily, IndexedNames, NameTable, _Families,
                                           _labels_at, row_subset_text)
from streaming.exporter.risk_frame import evaluate_risk
from streaming.exporter.share_risk import share_families


def risk_families(view, frame: LagFrame, now: float, topics: NameTable,
                  kept: dict) -> list[ColumnFamily]:
    """Every family of this module for the view at `now`; `frame`: the lag part's frame,
    `kept` what `lag_families` keeps while the rows stay (the table of group names, the label
    text of every group-partition): a render then writes only the lines that changed
    (streaming.exporter.lag_blocks)."""
    settings = view.settings
    out = _Families(settings.compat, settings.granularity)
    c, groups = settings.cluster, kept["groups"]
    figures = evaluate_risk(view, frame, now)
    gtp = [("cluster", c), ("group", IndexedNames(groups, frame.group_pos)),
           ("topic", IndexedNames(topics, frame.topic)), ("partition", frame.partition)]

    def rows_with(values: np.ndarray) -> tuple[np.ndarray, list]:
        at = np.flatnonzero(~np.isnan(values))
        return at, _labels_at(gtp, at)

    risk_at, risk_labels = rows_with(figures.risk)
    rate_at, rate_labels = rows_with(figures.consume)
    plan_at, plan_labels = rows_with(figures.catch_up)
    if settings.granularity == PARTITION:
        def text(at: np.ndarray):
            return row_subset_text(kept, at)

        risk_text = text(risk_at)
        out.put("kafka_consumergroup_retention_risk_seconds", risk_labels, figures.risk[risk_at],
                True, risk_text)
        out.put("kafka_consumergroup_retention_risk_method", risk_labels,
                figures.risk_method[risk_at].astype(np.int64), prefix=risk_text)
        out.put("kafka_consumergroup_consume_rate", rate_labels, figures.consume[rate_at], True,
                text(rate_at))
        out.put("kafka_consumergroup_catch_up_seconds", plan_labels, figures.catch_up[plan_at],
                True, text(plan_at))
        known = np.flatnonzero(frame.known)
        out.put("kafka_consumergroup_catch_up_method",
                _labels_at(gtp, known),
                figures.catch_up_method[known].astype(np.int64), prefix=text(known))
    for name, at, values, reduce in (
            ("kafka_consumergroup_group_retention_risk_seconds", risk_at, figures.risk, np.minimum),
            ("kafka_consumergroup_group_consume_rate", rate_at, figures.consume, np.add),
            ("kafka_consumergroup_group_catch_up_seconds", plan_at, figures.catch_up, np.maximum)):
        _per_group(out, name, c, groups, frame.group_pos[at], values[at], reduce)
    _produce_rates(out, view, now, topics)
    share_families(out, view, now)
    out.put("groupscope_topic_configs_refused", [("cluster", c)],
            np.array([view.retention.refused], dtype=np.int64))
    out.put("groupscope_log_dirs_refused", [("cluster", c)],
            np.array([int(view.retention.sizes_refused)], dtype=np.int64))
    return out


def _per_group(out: _Families, name: str, cluster: str, groups: NameTable, group_pos: np.ndarray,
               values: np.ndarray, reduce) -> None:
    """`reduce` of `values` over each group's rows (rows sorted by group, as frames are)."""
    if not len(values):
        return
    starts = segment_starts(group_pos)
    out.put(name, [("cluster", cluster), ("group", IndexedNames(groups, group_pos[starts]))],
            reduce.reduceat(values, starts), True)


def _produce_rates(out: _Families, view, now: float, topics: NameTable) -> None:
    """Each polled partition's produce rate over the window, in topic name and partition order."""
    ends = view.ends
    rows = np.fromiter(ends.index.values(), dtype=np.int64, count=len(ends.index))
    topic, partition = tp_parts(np.fromiter(ends.index.keys(), dtype=np.int64, count=len(rows)))
    polled = np.flatnonzero(ends.counts[rows] > 0)
    polled = polled[np.lexsort((partition[polled], view.topic_rank()[topic[polled]]))]
    rows, topic, partition = rows[polled], topic[polled], partition[polled]
    counts = ends.counts[rows]
    window_s = view.retention.rate_window_s
    o, t = ends.offsets[rows], ends.times[rows]
    last = (counts - 1)[:, None]
    latest = np.take_along_axis(o, last, axis=1)[:, 0]
    latest_t = np.take_along_axis(t, last, axis=1)[:, 0]
    rate, _, _ = window_rates(o, t, counts, latest, latest_t, window_s)
    has = np.flatnonzero(~np.isnan(rate))
    out.put("kafka_partition_produce_rate",
            [("cluster", view.settings.cluster), ("topic", IndexedNames(topics, topic[has])),
             ("partition", partition[has])], rate[has], True)
