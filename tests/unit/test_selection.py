"""Cardinality controls: groups.include/exclude and topics.include/exclude decide which groups
and which topics' committed offsets the exporter serves."""
from __future__ import annotations

import pytest

from streaming.config import load_config
from streaming.errors import UserError
from streaming.exporter.evaluation import build_families
from streaming.exporter.selection import Selection
from streaming.exporter.view import MonitorView
from streaming.job.settings import view_settings
from tests.unit.test_exporter import T0, Clock, snapshot


def test_a_name_is_in_when_an_include_matches_it_whole_and_no_exclude_does():
    everything = Selection()
    assert everything.everything and "anything" in everything
    chosen = Selection(include=("app-.*", "billing"), exclude=(".*-test",))
    assert "app-orders" in chosen and "billing" in chosen
    assert "app-orders-test" not in chosen   # excluded
    assert "billing-2" not in chosen         # matches only part of the name
    assert "my-app-orders" not in chosen
    assert "x" not in Selection(exclude=(".*",)) and "x" in Selection(exclude=("y",))
    with pytest.raises(ValueError, match="'a\\(' is not a regular expression"):
        Selection(include=("a(",))


def served_series(env: dict[str, str]) -> dict[str, set[tuple]]:
    view = MonitorView(view_settings(load_config(None, env=env)), clock=Clock())
    view.update_topic_metadata({}, {"orders": 2, "audit": 1})
    offsets = [("orders", 0, 10, T0 - 30), ("orders", 1, 20, T0 - 30), ("audit", 0, 5, T0 - 30)]
    view.update_groups([snapshot(g, [], offsets) for g in ("app-a", "app-b", "app-b-test", "etl")])
    view.apply_events([{"event": "rebalance", "group": g, "timestamp_ms": int(T0 * 1000), "partition": 1,
                        "offset": 1, "partitions_moved": [], "duration_seconds": 1.0}
                       for g in ("app-a", "etl")])
    view.update_end_offsets({("orders", 0): 15, ("orders", 1): 25, ("audit", 0): 9},
                            {}, T0 - 5, 0.01)
    families = {f.name: f for f in build_families(view, now_s=T0)}
    out = {}
    for name in ("kafka_consumergroup_info", "kafka_consumergroup_lag", "kafka_consumergroup_rebalances"):
        family = families[name]
        out[name] = {tuple((k, v) for k, v in zip(family.label_names, values) if k in ("group", "topic"))
                     for values, _ in family.samples}
    return out


def test_the_served_series_follow_the_group_and_topic_selections():
    everything = served_series({})
    assert {dict(k)["group"] for k in everything["kafka_consumergroup_info"]} == {
        "app-a", "app-b", "app-b-test", "etl"}
    chosen = served_series({"GROUPSCOPE_GROUPS__INCLUDE": '["app-.*"]',
                            "GROUPSCOPE_GROUPS__EXCLUDE": '[".*-test"]',
                            "GROUPSCOPE_TOPICS__EXCLUDE": '["audit"]'})
    assert chosen["kafka_consumergroup_info"] == {(("group", "app-a"),), (("group", "app-b"),)}
    assert chosen["kafka_consumergroup_lag"] == {(("group", g), ("topic", "orders")) for g in ("app-a", "app-b")}
    assert chosen["kafka_consumergroup_rebalances"] == {(("group", "app-a"),), (("group", "app-b"),)}
    only_audit = served_series({"GROUPSCOPE_TOPICS__INCLUDE": '["aud.*"]'})
    assert {dict(k)["topic"] for k in only_audit["kafka_consumergroup_lag"]} == {"audit"}


def test_a_bad_pattern_names_its_key():
    with pytest.raises(UserError, match="config key groups.include: '\\[' is not a regular expression"):
        load_config(None, env={"GROUPSCOPE_GROUPS__INCLUDE": '["["]'})
