"""The lag families of a LagFrame as columns, and their exposition text a column at a time.

`lag_families(frame, ...)` turns a frame into `ColumnFamily` objects: per family, its label
columns and its value column (per partition, per group and topic, per group; at either
granularity; the compatibility families built from them). A label is a constant, names by index
(groups, topics: the names are escaped once, not once per line) or integers.

`ColumnFamily.text()` renders `name{labels} value\\n` for every element at once: Arrow's string
kernels join the columns element-wise in C++, so a million lines cost tens of milliseconds where
streaming.exporter.exposition spends a Python call per line. `ColumnFamily.samples()` gives the
same series as (label values, value) pairs, for `build_families` and the terminal view.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from coordinator.status import Status
from streaming.exporter.catalog import (BURROW, KAFKA_EXPORTER, KAFKA_LAG_EXPORTER, PARTITION,
                                        exposed_name, served_families)
from streaming.exporter.ends_table import tp_parts
from streaming.exporter.exposition import _escape
from streaming.exporter.lag_frame import LagFrame, group_statuses, segment_starts

_TEXT = pa.large_string()


def _scalar(text: str) -> pa.Scalar:
    return pa.scalar(text, _TEXT)


class NameTable:
    """IndexedNames (raw, and escaped as label values) that label columns index into."""

    def __init__(self, names: Sequence[str | None]) -> None:
        self.raw = [name or "" for name in names]
        self.escaped = pa.array([_escape(name) for name in self.raw], _TEXT)


@dataclass(frozen=True)
class IndexedNames:
    table: NameTable
    index: np.ndarray


Label = Union[str, IndexedNames, np.ndarray]  # constant, names by index, integers


def _take(label: Label, index: np.ndarray) -> Label:
    if isinstance(label, str):
        return label
    if isinstance(label, IndexedNames):
        return IndexedNames(label.table, label.index[index])
    return label[index]


def int_text(values: np.ndarray) -> pa.Array:
    return pc.cast(pa.array(values.astype(np.int64, copy=False)), _TEXT)


def float_text(values: np.ndarray) -> pa.Array:
    """Exactly as streaming.exporter.exposition formats a float: integral values below 1e15
    as `N.0`, NaN and infinities as Prometheus spells them, others as Python's repr. Arrow's
    shortest form equals repr's digits and differs only in how small and large numbers are
    written (0.00001 for 1e-05): those few go through repr."""
    values = values.astype(np.float64, copy=False)
    text = pc.cast(pa.array(values), _TEXT)
    with np.errstate(invalid="ignore"):
        finite = np.isfinite(values)
        magnitude = np.abs(values)
        integral = finite & (values == np.trunc(values)) & (magnitude < 1e15)
        odd = ~integral & (~finite | (magnitude < 1e-4) | (magnitude >= 1e13))
    if integral.any():
        whole = pc.binary_join_element_wise(int_text(values[integral]), _scalar(".0"),
                                            _scalar(""))
        text = pc.replace_with_mask(text, pa.array(integral), whole)
    if odd.any():
        spelled = [("NaN" if v != v else "+Inf" if v > 0 else "-Inf") if not np.isfinite(v)
                   else repr(v) for v in values[odd].tolist()]
        text = pc.replace_with_mask(text, pa.array(odd), pa.array(spelled, _TEXT))
    return text


def label_text(labels: Sequence[tuple[str, Label]], n: int) -> pa.Array:
    """`{l1="v1",...} ` (with the space before the value) for each of n series."""
    pieces: list = []
    constant = "{"
    for i, (label, value) in enumerate(labels):
        constant += ("," if i else "") + label + '="'
        if isinstance(value, str):
            constant += _escape(value) + '"'
            continue
        column = (pc.take(value.table.escaped, pa.array(value.index))
                  if isinstance(value, IndexedNames) else int_text(value))
        pieces += [_scalar(constant), column]
        constant = '"'
    if not pieces:
        return pa.array([constant + "} "] * n, _TEXT)
    return pc.binary_join_element_wise(*pieces, _scalar(constant + "} "), _scalar(""))


@dataclass(frozen=True)
class RowText:
    """The label text of some rows of a kept label text (`base`; `rows`: positions in it,
    None for all), taken only when written: a family of a subset of the group-partitions
    holds no copy of their labels, and a block of it is known by its rows."""
    base: pa.Array
    rows: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.base) if self.rows is None else len(self.rows)

    def text(self) -> pa.Array:
        return self.base if self.rows is None else pc.take(self.base, pa.array(self.rows))

    def slice(self, first: int, length: int) -> "RowText":
        if self.rows is None:
            return RowText(self.base.slice(first, length))
        return RowText(self.base, self.rows[first:first + length])


@dataclass(frozen=True)
class ColumnFamily:
    name: str                              # family name (as in the catalog)
    exposed: str                           # as written in the exposition
    labels: tuple[tuple[str, Label], ...]  # in the family's label order
    values: np.ndarray
    floats: bool = False
    # The series' label_text when already built (shared by the families of the same series).
    prefix: pa.Array | RowText | None = None

    def __len__(self) -> int:
        return len(self.values)

    def text(self) -> memoryview:
        """Every sample line, back to back (the joined array's own character data)."""
        n = len(self.values)
        if not n:
            return memoryview(b"")
        prefix = self.prefix
        if prefix is None:
            prefix = label_text(self.labels, n)
        elif isinstance(prefix, RowText):
            prefix = prefix.text()
        values = float_text(self.values) if self.floats else int_text(self.values)
        joined = pc.binary_join_element_wise(_scalar(self.exposed), prefix, values,
                                             _scalar("\n"), _scalar(""))
        offsets = np.frombuffer(joined.buffers()[1], dtype=np.int64, count=len(joined) + 1,
                                offset=joined.offset * 8)
        return memoryview(joined.buffers()[2])[offsets[0]:offsets[-1]]

    def samples(self) -> list[tuple[tuple[str, ...], int | float]]:
        n = len(self.values)
        columns = []
        for _, value in self.labels:
            if isinstance(value, str):
                columns.append([value] * n)
            elif isinstance(value, IndexedNames):
                raw = value.table.raw
                columns.append([raw[i] for i in value.index.tolist()])
            else:
                columns.append([str(v) for v in value.tolist()])
        return list(zip(zip(*columns), self.values.tolist())) if columns else []


def _labels_at(labels, index: np.ndarray) -> list[tuple[str, Label]]:
    """The labels of the series at `index` of those `labels` describe."""
    return [(name, _take(value, index)) for name, value in labels]


class _Families(list):
    """The ColumnFamily objects put so far, of families served with these settings."""

    def __init__(self, compat: tuple[str, ...], granularity: str | None) -> None:
        super().__init__()
        self.kinds = {f.name: f.kind for f in served_families(compat, granularity)}

    def put(self, name: str, labels, values: np.ndarray, floats: bool = False,
            prefix: pa.Array | RowText | None = None) -> None:
        if len(values):
            self.append(ColumnFamily(name, exposed_name(name, self.kinds[name]), tuple(labels),
                                     values, floats, prefix))


def _statuses_by_topic(frame: LagFrame, runs: np.ndarray):
    """(row of each (group, topic, status) run, its length), runs in (group, topic, status)
    order; `runs` numbers each row's (group, topic) run."""
    order = np.lexsort((frame.status, runs))
    starts = segment_starts(runs[order], frame.status[order])
    return order[starts], np.diff(np.r_[starts, len(order)])


def _known_or_zero(seconds: np.ndarray) -> np.ndarray:
    """A roll-up's highest time lag as served: 0 where none of its partitions' is known."""
    return np.where(np.isnan(seconds), 0.0, np.maximum(seconds, 0.0))


def _row_owners(frame: LagFrame, topics: NameTable,
                owners: Callable[[str], dict]) -> tuple[list[dict | None], np.ndarray]:
    """The members that own `frame`'s rows: the member dicts seen (index 0: no owner) and each
    row's index into them. Groups without members (most, in estates of standalone consumers)
    cost one lookup, not one per row."""
    members: list[dict | None] = [None]
    index: dict[int, int] = {}
    member_of = np.zeros(len(frame), dtype=np.int64)
    if not len(frame):
        return members, member_of
    raw_topics = topics.raw
    starts = segment_starts(frame.group_pos)
    bounds = np.r_[starts, len(frame)].tolist()
    group_pos, topic, partition = frame.group_pos, frame.topic, frame.partition
    for first, end in zip(bounds, bounds[1:]):
        owned = owners(frame.groups[group_pos[first]])
        if not owned:
            continue
        for i, t, p in zip(range(first, end), topic[first:end].tolist(),
                           partition[first:end].tolist()):
            owner = owned.get((raw_topics[t], p))
            if owner is not None:
                found = index.get(id(owner))
                if found is None:
                    found = index[id(owner)] = len(members)
                    members.append(owner)
                member_of[i] = found
    return members, member_of


def _member_families(put: Callable, frame: LagFrame, cluster: str, groups: NameTable,
                     k: np.ndarray, members: list[dict | None], member_of: np.ndarray) -> None:
    """metrics.member_lag: each member's lag summed and maximised over the partitions it owns
    whose lag is known (rows `k`)."""
    owned = k[member_of[k] > 0]
    if not len(owned):
        return
    of = member_of[owned]
    lag, seconds = frame.lag[owned], frame.seconds[owned]
    count = len(members)
    total = np.zeros(count, dtype=np.int64)
    np.add.at(total, of, lag)
    highest = np.full(count, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(highest, of, lag)
    highest_s = np.full(count, np.nan)
    np.fmax.at(highest_s, of, seconds)
    group_of = np.zeros(count, dtype=np.int64)
    group_of[of] = frame.group_pos[owned]
    shown = np.unique(of)
    label_of = [members[m] or {} for m in shown.tolist()]
    labels = [("cluster", cluster), ("group", IndexedNames(groups, group_of[shown]))]
    for label, key in (("member_id", "member_id"), ("client_id", "client_id"),
                       ("client_host", "client_host"), ("instance_id", "group_instance_id")):
        table = NameTable([m.get(key) or "" for m in label_of])
        labels.append((label, IndexedNames(table, np.arange(len(shown)))))
    put("kafka_consumergroup_member_lag", labels, total[shown])
    put("kafka_consumergroup_member_max_lag", labels, highest[shown])
    put("kafka_consumergroup_member_max_lag_seconds", labels, _known_or_zero(highest_s[shown]),
        True)


def _row_labels(kept: dict, order_key: tuple, cluster: str, group_names: list[str],
                group_pos: np.ndarray, topic: np.ndarray, partition: np.ndarray,
                topics: NameTable) -> tuple[NameTable, list[tuple[str, Label]]]:
    """(the table of group names, the labels of each exported group-partition), the table
    kept in `kept` while the rows stay: a render that finds it kept writes only the lines that
    changed (streaming.exporter.lag_blocks tells them by the objects' identity)."""
    if kept.get("key") != (order_key, cluster):
        kept.clear()
        kept["key"] = (order_key, cluster)
        kept["groups"] = NameTable(group_names)
    groups = kept["groups"]
    return groups, [("cluster", cluster), ("group", IndexedNames(groups, group_pos)),
                    ("topic", IndexedNames(topics, topic)), ("partition", partition)]


def _row_text(kept: dict, gtp: list[tuple[str, Label]], n: int) -> pa.Array:
    """The label text of every exported group-partition, built once while the rows stay."""
    if "gtp" not in kept:
        kept["gtp"] = label_text(gtp, n)
    return kept["gtp"]


def row_subset_text(kept: dict, rows: np.ndarray) -> RowText:
    """The kept label text (`_row_text`) of the group-partitions at `rows` (positions in
    exposition order)."""
    full = kept["gtp"]
    return RowText(full, None if len(rows) == len(full) else rows)


# What a scrape that asks for these alone needs: the committed offsets as the view holds them,
# with nothing evaluated (`committed_families`).
COMMITTED_FAMILIES = frozenset({"kafka_consumergroup_committed_offset",
                                "kafka_consumergroup_commit_timestamp_seconds"})


def committed_families(view, kept: dict) -> list[ColumnFamily]:
    """Every exported group-partition's committed offset and commit time, at partition
    granularity, read straight from the view's table: none of the lag part's evaluation (end
    offsets, time lag, status, rates), which at 10^6 group-partitions takes seconds. `kept` as
    for `lag_families` (the same dict). Callers hold the view's lock."""
    settings = view.settings
    out = _Families(settings.compat, PARTITION)
    order_key, names, group_pos, rows = view.exposition_order()
    table = view.table
    _, gtp = _row_labels(kept, order_key, settings.cluster, names, group_pos, table.topic[rows],
                         table.partition[rows], view.topic_table())
    text = _row_text(kept, gtp, len(rows))
    out.put("kafka_consumergroup_committed_offset", gtp, table.offset[rows], prefix=text)
    out.put("kafka_consumergroup_commit_timestamp_seconds", gtp, table.commit_s[rows], True,
            text)
    return out


def lag_families(frame: LagFrame, cluster: str, compat: tuple[str, ...], granularity: str,
                 topics: NameTable, owners: Callable[[str], dict],
                 ever_had_members: Callable[[str], bool],
                 kept: dict | None = None, member_lag: bool = False) -> list[ColumnFamily]:
    """The lag part of every group in `frame`: what the per-partition figures and their
    roll-ups serve. `owners(group)` gives a group's (topic, partition) -> member map and
    `ever_had_members(group)` whether it ever had one (kafka-lag-exporter's labels). `kept`,
    a dict the caller keeps between calls, holds the label text of every group-partition and
    the table of group names until the rows change (`frame.order_key`): most of each line,
    built once, and the same objects from render to render while the rows stay. `member_lag`:
    the per-member roll-ups too (metrics.member_lag)."""
    out = _Families(compat, granularity)
    put, at = out.put, _labels_at
    ke, kle, burrow = (KAFKA_EXPORTER in compat, KAFKA_LAG_EXPORTER in compat,
                       BURROW in compat)
    kept = {} if kept is None else kept
    groups, gtp = _row_labels(kept, frame.order_key, cluster, frame.groups, frame.group_pos,
                              frame.topic, frame.partition, topics)
    c = cluster
    group_col = gtp[1][1]
    known = frame.known
    k = np.flatnonzero(known)
    per_partition = granularity == PARTITION
    kle_rows = kle and per_partition
    members, member_of = (_row_owners(frame, topics, owners) if member_lag or kle_rows
                          else ([None], None))
    if member_lag:
        _member_families(put, frame, c, groups, k, members, member_of)

    if per_partition:
        gtp_text = _row_text(kept, gtp, len(frame))
        known_text = row_subset_text(kept, k)
        known_gtp = at(gtp, k)
        put("kafka_consumergroup_committed_offset", gtp, frame.offset, prefix=gtp_text)
        put("kafka_consumergroup_commit_timestamp_seconds", gtp, frame.commit_s, True, gtp_text)
        put("kafka_consumergroup_lag", known_gtp + ([("consumergroup", known_gtp[1][1])]
                                                    if ke else []), frame.lag[k],
            prefix=None if ke else known_text)
        put("kafka_consumergroup_lag_seconds", known_gtp, frame.seconds[k], True, known_text)
        put("kafka_consumergroup_lag_seconds_method", known_gtp, frame.method[k],
            prefix=known_text)
        put("kafka_consumergroup_messages_lost", known_gtp, frame.lost[k], prefix=known_text)
        put("kafka_consumergroup_partition_status", gtp, frame.status, prefix=gtp_text)

    # Every live group has an unknown count and a status, partitions or not.
    every = [("cluster", c), ("group", IndexedNames(groups, np.arange(len(frame.groups))))]
    put("kafka_consumergroup_lag_unknown_partitions", every,
        np.bincount(frame.group_pos[~known], minlength=len(frame.groups)))
    status = group_statuses(frame)
    put("kafka_consumergroup_status", every, status)
    if burrow:
        put("burrow_kafka_consumer_status", [("cluster", c), ("consumer_group", every[1][1])],
            status)

    # Roll-ups over the partitions whose end offset is known: a group with none has none.
    kg, kt = frame.group_pos[k], frame.topic[k]
    kgt_starts = segment_starts(kg, kt)
    kgt = [("cluster", c), ("group", IndexedNames(groups, kg[kgt_starts])),
           ("topic", IndexedNames(topics, kt[kgt_starts]))]
    kg_starts = segment_starts(kg)
    kgroup = [("cluster", c), ("group", IndexedNames(groups, kg[kg_starts]))]
    lag_k, seconds_k = frame.lag[k], frame.seconds[k]
    if len(k):
        topic_lag = np.add.reduceat(lag_k, kgt_starts)
        total = np.add.reduceat(lag_k, kg_starts)
        max_lag = np.maximum.reduceat(lag_k, kg_starts)
        max_seconds = _known_or_zero(np.fmax.reduceat(seconds_k, kg_starts))
    else:
        topic_lag = total = max_lag = np.zeros(0, np.int64)
        max_seconds = np.zeros(0)
    put("kafka_consumergroup_topic_lag", kgt, topic_lag)
    if not kle:
        put("kafka_consumergroup_group_lag", kgroup, total)
    max_labels = kgroup
    if kle:
        simple = np.array([0 if ever_had_members(frame.groups[g]) else 1
                           for g in kg[kg_starts].tolist()], dtype=np.int64)
        max_labels = kgroup + [("cluster_name", c),
                               ("is_simple_consumer", IndexedNames(_BOOLEANS, simple))]
    put("kafka_consumergroup_group_max_lag", max_labels, max_lag)
    put("kafka_consumergroup_group_max_lag_seconds", max_labels, max_seconds, True)
    if kle:
        put("kafka_consumergroup_group_sum_lag",
            [("cluster", c), ("cluster_name", c), kgroup[1]], total)
        put("kafka_consumergroup_group_topic_sum_lag",
            [("cluster", c), ("cluster_name", c), kgt[1], kgt[2]], topic_lag)
    if burrow:
        put("burrow_kafka_consumer_lag_total", [("cluster", c), ("consumer_group", kgroup[1][1])],
            total)

    # Per group and topic over every exported partition.
    gt_starts = segment_starts(frame.group_pos, frame.topic)
    gt = [("cluster", c), ("group", IndexedNames(groups, frame.group_pos[gt_starts])),
          ("topic", IndexedNames(topics, frame.topic[gt_starts]))]
    offset_sums = (np.add.reduceat(frame.offset, gt_starts) if len(frame)
                   else np.zeros(0, np.int64))
    if ke:
        put("kafka_consumergroup_current_offset_sum", [gt[0], ("consumergroup", gt[1][1]), gt[2]],
            offset_sums)
        put("kafka_consumergroup_lag_sum", [kgt[0], ("consumergroup", kgt[1][1]), kgt[2]],
            topic_lag)
    if not per_partition:
        put("kafka_consumergroup_topic_committed_offset", gt, offset_sums)
        if len(k):
            put("kafka_consumergroup_topic_max_lag", kgt, np.maximum.reduceat(lag_k, kgt_starts))
            topic_seconds = np.fmax.reduceat(seconds_k, kgt_starts)
            has = np.flatnonzero(~np.isnan(topic_seconds))
            put("kafka_consumergroup_topic_max_lag_seconds", at(kgt, has), topic_seconds[has],
                True)
            put("kafka_consumergroup_topic_messages_lost", kgt,
                np.add.reduceat(frame.lost[k], kgt_starts))
        runs = np.zeros(len(frame), dtype=np.int64)
        runs[gt_starts] = 1
        first, counts = _statuses_by_topic(frame, np.cumsum(runs))
        put("kafka_consumergroup_topic_status_partitions",
            [("cluster", c), ("group", IndexedNames(groups, frame.group_pos[first])),
             ("topic", IndexedNames(topics, frame.topic[first])),
             ("status", IndexedNames(_STATUS_NAMES, frame.status[first].astype(np.int64)))], counts)
        return out

    # Compatibility names per partition.
    if ke:
        put("kafka_consumergroup_current_offset",
            [("cluster", c), ("consumergroup", group_col), gtp[2], gtp[3]], frame.offset)
    if burrow:
        burrow_gtp = [("cluster", c), ("consumer_group", group_col), gtp[2], gtp[3]]
        put("burrow_kafka_topic_partition_status", burrow_gtp, frame.status)
        put("burrow_kafka_consumer_current_offset", burrow_gtp, frame.offset)
        put("burrow_kafka_consumer_partition_lag", at(burrow_gtp, k), frame.lag[k])
    if kle:
        # The owning member's labels: a table of the members seen, indexed per partition.
        labels = [{} if m is None else m for m in members]
        hosts_table = NameTable([m.get("client_host") or "" for m in labels])
        ids_table = NameTable([m.get("member_id") or "" for m in labels])
        clients_table = NameTable([m.get("client_id") or "" for m in labels])
        kle_p = [("cluster", c), ("cluster_name", c), ("group", group_col), gtp[2], gtp[3],
                 ("member_host", IndexedNames(hosts_table, member_of)),
                 ("consumer_id", IndexedNames(ids_table, member_of)),
                 ("client_id", IndexedNames(clients_table, member_of))]
        put("kafka_consumergroup_group_offset", kle_p, frame.offset)
        put("kafka_consumergroup_group_lag", at(kle_p, k), frame.lag[k])
        put("kafka_consumergroup_group_lag_seconds", at(kle_p, k), frame.seconds[k], True)
    return out


def log_families(view, topics: NameTable) -> list[ColumnFamily]:
    """Each polled partition's log end and start offsets (and the compatibility names for
    them), in topic name and partition order. Callers hold the view's lock."""
    compat = view.settings.compat
    out = _Families(compat, view.settings.granularity)
    put = out.put
    ends, c = view.ends, view.settings.cluster
    keys = np.fromiter(ends.index.keys(), dtype=np.int64, count=len(ends.index))
    rows = np.fromiter(ends.index.values(), dtype=np.int64, count=len(ends.index))
    counts = ends.counts[rows]
    keys, rows, counts = keys[counts > 0], rows[counts > 0], counts[counts > 0]
    topic, partition = tp_parts(keys)
    order = np.lexsort((partition, view.topic_rank()[topic]))
    rows, topic, partition, counts = rows[order], topic[order], partition[order], counts[order]
    latest = ends.offsets[rows, counts - 1]
    start = ends.starts[rows]
    has_start = np.flatnonzero(start >= 0)

    tp = [("cluster", c), ("topic", IndexedNames(topics, topic)), ("partition", partition)]
    kle_tp = [("cluster", c), ("cluster_name", c), tp[1], tp[2]]
    started, kle_started = _labels_at(tp, has_start), _labels_at(kle_tp, has_start)
    put("kafka_partition_log_end_offset", tp, latest)
    put("kafka_partition_log_start_offset", started, start[has_start])
    if KAFKA_EXPORTER in compat:
        put("kafka_topic_partition_current_offset", tp, latest)
        put("kafka_topic_partition_oldest_offset", started, start[has_start])
        seen = np.unique(topic)
        names = sorted(topics.raw[t] for t in seen.tolist()
                       if topics.raw[t] in view.partition_counts)
        put("kafka_topic_partitions", [("cluster", c), ("topic", IndexedNames(NameTable(names),
                                                                        np.arange(len(names))))],
            np.array([view.partition_counts[name] for name in names], dtype=np.int64))
    if KAFKA_LAG_EXPORTER in compat:
        put("kafka_partition_latest_offset", kle_tp, latest)
        put("kafka_partition_earliest_offset", kle_started, start[has_start])
    if BURROW in compat:
        put("burrow_kafka_topic_partition_offset", tp, latest)
    return out


_BOOLEANS = NameTable(["false", "true"])
_STATUS_NAMES = NameTable([s.name for s in Status])
