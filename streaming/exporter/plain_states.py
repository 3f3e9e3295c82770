"""The state part of plain groups, a column at a time.

A plain group is one that never used group management (no member, generation, rebalance or
downtime ever: the offset-only committers, Spark, Flink and most connectors, that make up most of
a large estate) and is not dead. Its state part is a handful of series whose values are mostly
constants (members 0, skew 0, idle 0, no histograms), and rendering it per group in Python was
about 35 us a group: 3.5 s of the first scrape at 10^5 groups. Here every plain group's state part
is rendered at once with the lag part's column kernels (`streaming.exporter.lag_render`), and
`Evaluator.group_state` stays the reference: `build_families` evaluates the same groups through
it, and the tests compare the two texts.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from streaming.exporter.catalog import KAFKA_EXPORTER
from streaming.exporter.lag_render import ColumnFamily, IndexedNames, NameTable, _Families
from streaming.exporter.view import GroupRecord, MonitorView


def uses_group_management(group: GroupRecord) -> bool:
    """Whether the group has ever had members (or a generation, or a rebalance). A group that
    only commits offsets (consumers that assign partitions themselves: Spark, Flink, many
    connectors) never joins, so it cannot rebalance: its three rebalance histograms would be
    constant zeros (about 5 KB of text per group and scrape, a third of a 10-partition group's
    series), and they appear with its first member instead."""
    if group.ever_had_members or group.rebalances or group.downtime.count:
        return True
    snapshot = group.snapshot
    return bool(snapshot and (snapshot.get("generation") or snapshot.get("members")))


def is_plain(group: GroupRecord) -> bool:
    """Whether the group's state part is rendered as columns (`plain_state_part`)."""
    return (group.dead_since_s is None and group.last_rebalance_s is None
            and not uses_group_management(group))


def _indexed(values: list[str]) -> IndexedNames:
    """`values` as indexes into a table of their distinct values (escaped once each)."""
    distinct = sorted(set(values))
    position = {value: i for i, value in enumerate(distinct)}
    return IndexedNames(NameTable(distinct), np.array([position[v] for v in values],
                                                      dtype=np.int64))


def plain_state_part(view: MonitorView, names: Sequence[str]) -> list[ColumnFamily]:
    """The state families of the plain groups `names` (in that order), as columns. Callers
    hold the view's lock."""
    settings = view.settings
    families = _Families(settings.compat, settings.granularity)
    if not names:
        return families
    cluster = settings.cluster
    groups = [view.groups[name] for name in names]
    everyone = IndexedNames(NameTable(list(names)), np.arange(len(names), dtype=np.int64))
    # Groups with a snapshot have info, generation, members, skew and idle members.
    known = np.array([i for i, g in enumerate(groups) if g.snapshot is not None], dtype=np.int64)
    if len(known):
        snapshots = [groups[i].snapshot for i in known.tolist()]
        named = IndexedNames(everyone.table, known)

        def text(key: str) -> IndexedNames:
            return _indexed([s.get(key) or "" for s in snapshots])

        where = _indexed(["" if s.get("coordinator_partition") is None
                          else str(s["coordinator_partition"]) for s in snapshots])
        group = (("cluster", cluster), ("group", named))
        families.put("kafka_consumergroup_info", group + (
            ("group_type", text("group_type")), ("protocol_type", text("protocol_type")),
            ("protocol", text("protocol")), ("state", text("state")),
            ("coordinator_partition", where)), np.ones(len(known), dtype=np.int64))
        families.put("kafka_consumergroup_generation", group,
                     np.array([int(s.get("generation") or 0) for s in snapshots], dtype=np.int64))
        zeros = np.zeros(len(known), dtype=np.int64)
        members = group + ((("consumergroup", named),) if KAFKA_EXPORTER in settings.compat
                           else ())
        families.put("kafka_consumergroup_members", members, zeros)
        families.put("kafka_consumergroup_assignment_skew", group, zeros)
        families.put("kafka_consumergroup_idle_members", group, zeros)
    group = (("cluster", cluster), ("group", everyone))
    families.put("kafka_consumergroup_rebalances", group,
                 np.array([g.rebalances for g in groups], dtype=np.int64))
    families.put("kafka_consumergroup_rebalance_partitions_moved", group,
                 np.array([g.partitions_moved for g in groups], dtype=np.int64))
    return families
