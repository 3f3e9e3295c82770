"""The committed Grafana dashboards: generated from source, well formed, every query valid PromQL
(checked by promtool) over series the exporter exports."""
from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from dashboards import generate, promtool
from dashboards.metrics import PROMETHEUS_SERIES, queryable_labels
from dashboards.promql import PromQLReadError, references, substitute, variable_query_as_promql
from dashboards.queries import DASHBOARD_DIR, all_queries, load_dashboards, resolved_queries
from dashboards.rollups import recording_rule_groups
from dashboards.sample_metrics import render
from streaming.exporter.catalog import (CATALOG, COMPAT_TARGETS, COUNTER, PARTITION, exported_series,
                                       served_families)

needs_promtool = pytest.mark.skipif(promtool.promtool() is None,
                                    reason="promtool not installed (run scripts/ensure-promtool.sh as root)")
BOARDS = load_dashboards()
RECORDED = {r.record for rules in recording_rule_groups().values() for r in rules}
CONCRETE = {"cluster": "demo", "group": "payments-range"}


def test_committed_files_are_the_generated_ones():
    stale = [str(p) for p, text in generate.rendered_files().items() if not p.exists() or p.read_text() != text]
    assert not stale, f"run `python -m dashboards.generate`: stale {stale}"


def test_generate_check_mode_reports_a_stale_file(tmp_path, monkeypatch):
    target = tmp_path / "groupscope-overview.json"
    target.write_text("{}\n")
    monkeypatch.setattr(generate, "rendered_files", lambda: {target: "{\"x\": 1}\n"})
    monkeypatch.setattr(generate, "ROOT", tmp_path.parent)
    assert generate.main(["--check"]) == 1
    assert target.read_text() == "{}\n"          # --check never writes
    assert generate.main([]) == 0
    assert json.loads(target.read_text()) == {"x": 1}


def test_three_dashboards_with_cluster_and_group_variables():
    assert set(BOARDS) == {"groupscope-overview.json", "groupscope-group.json", "groupscope-rebalances.json"}
    assert len({b["uid"] for b in BOARDS.values()}) == 3
    for name, board in BOARDS.items():
        variables = {v["name"]: v for v in board["templating"]["list"]}
        assert {"datasource", "cluster", "group"} <= set(variables), name
        assert variables["group"]["multi"] is (name != "groupscope-group.json")


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_panels_are_laid_out_and_query_the_templated_datasource(name):
    board = BOARDS[name]
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    occupied = set()
    for p in board["panels"]:
        pos = p["gridPos"]
        assert 0 <= pos["x"] and pos["x"] + pos["w"] <= 24, p["title"]
        cells = {(pos["x"] + dx, pos["y"] + dy) for dx in range(pos["w"]) for dy in range(pos["h"])}
        assert not cells & occupied, f"{p['title']} overlaps another panel"
        occupied |= cells
        if p["type"] in ("row", "text"):
            continue
        assert p["targets"], p["title"]
        for t in p["targets"]:
            assert t["expr"].strip() and t["datasource"]["uid"] == "${datasource}", p["title"]


def _all_expressions() -> dict[str, str]:
    exprs = resolved_queries(CONCRETE)
    for rules in recording_rule_groups().values():
        exprs.update({f"recording rule {r.record}": r.expr for r in rules})
    alerts = yaml.safe_load(promtool.RULE_FILES[1].read_text())
    for group in alerts["groups"]:
        exprs.update({f"alert {r['alert']}": r["expr"] for r in group["rules"]})
    return exprs


@needs_promtool
def test_every_query_parses_as_promql():
    result = promtool.check_expressions(resolved_queries(CONCRETE))
    assert result.ok, result.output


@needs_promtool
def test_promql_check_rejects_a_broken_query():
    result = promtool.check_expressions({"broken": "sum by (group (kafka_consumergroup_lag)"})
    assert not result.ok and "broken" in result.output


def test_every_series_and_label_used_is_exported():
    exported = exported_series().keys() | PROMETHEUS_SERIES
    known_labels = queryable_labels()
    problems = []
    for label, expr in _all_expressions().items():
        metrics, labels = references(expr)
        problems += [f"{label}: unknown series {m}" for m in metrics if m not in exported and m not in RECORDED]
        problems += [f"{label}: unknown label {lab}" for lab in labels if lab not in known_labels]
    assert not problems, "\n".join(problems)


def test_no_query_uses_a_series_whose_meaning_compat_changes():
    """A compat target may give one of our names another meaning (kafka-lag-exporter's per-partition
    kafka_consumergroup_group_lag); dashboards and rules must then work with compat on too."""
    changing = {series for family in CATALOG if family.not_with for series in family.series()}
    assert changing, "the catalog no longer has such a name: drop this test"
    used = {(label, m) for label, expr in _all_expressions().items() for m in references(expr)[0]}
    assert not [f"{label}: {m}" for label, m in used if m in changing]


def _series_used(name: str) -> set[str]:
    exprs = resolved_queries(CONCRETE)
    return set().union(*(references(e)[0] for label, e in exprs.items() if label.startswith(name)))


@pytest.mark.parametrize("name, required", [
    ("groupscope-overview.json", {
        "kafka_consumergroup_info", "kafka_consumergroup_status", "kafka_consumergroup_topic_lag",
        "kafka_consumergroup_lag_seconds", "kafka_consumergroup_rebalances_total",
        "kafka_consumergroup_assignment_skew", "kafka_consumergroup_idle_members", "groupscope_ready",
        "groupscope_offsets_topic_lag", "groupscope_records_skipped_total", "groupscope_end_offsets_age_seconds"}),
    ("groupscope-group.json", {
        "kafka_consumergroup_lag", "kafka_consumergroup_lag_seconds", "kafka_consumergroup_topic_lag",
        "kafka_consumergroup_member_assigned_partitions", "kafka_consumergroup_generation",
        "kafka_consumergroup_commit_timestamp_seconds", "kafka_consumergroup_status",
        "kafka_consumergroup_partition_status", "kafka_consumergroup_rebalance_partitions_moved_total",
        "kafka_consumergroup_rebalance_duration_seconds_sum", "kafka_consumergroup_rebalances_total"}),
    ("groupscope-rebalances.json", {
        "kafka_consumergroup_rebalance_duration_seconds_bucket",
        "kafka_consumergroup_rebalance_downtime_seconds_bucket",
        "kafka_consumergroup_rebalance_partitions_moved_total", "kafka_consumergroup_info"}),
])
def test_each_dashboard_shows_what_operators_asked_for(name, required):
    assert required <= _series_used(name), required - _series_used(name)


def test_group_detail_marks_rebalances_as_annotations():
    annotations = [a for a in BOARDS["groupscope-group.json"]["annotations"]["list"] if "expr" in a]
    assert any("kafka_consumergroup_rebalances_total" in a["expr"] for a in annotations)


def test_rebalance_figures_are_split_by_assignor():
    board = BOARDS["groupscope-rebalances.json"]
    by_assignor = [t["expr"] for p in board["panels"] for t in p.get("targets", [])
                   if "group_left (group_type, protocol)" in t["expr"]]
    assert len(by_assignor) >= 6
    assert all("kafka_consumergroup_info" in e for e in by_assignor)


def test_reader_finds_series_and_labels():
    metrics, labels = references(
        'sum by (cluster, group) (rate(a_total{cluster="x", le=~"1|2"}[5m] offset 1h)) '
        '* on (cluster, group) group_left (protocol) topk by (cluster) (1, b) > bool 3 and c:rule:x')
    assert metrics == {"a_total", "b", "c:rule:x"}
    assert labels == {"cluster", "group", "le", "protocol"}


def test_reader_rejects_what_it_cannot_read():
    with pytest.raises(PromQLReadError):
        references("sum(x) # comment?")


def test_template_substitution_and_variable_queries():
    assert substitute('x{c="$cluster", g=~"${group}"}[$__rate_interval]',
                      {"cluster": "c1", "group": ".*", "__rate_interval": "1m"}) == 'x{c="c1", g=~".*"}[1m]'
    with pytest.raises(KeyError):
        substitute("x{c=\"$missing\"}", {})
    assert variable_query_as_promql('label_values(kafka_consumergroup_info{cluster="$cluster"}, group)') == \
        ('kafka_consumergroup_info{cluster="$cluster"}', "group")
    assert variable_query_as_promql("label_values(cluster)") == ('{cluster!=""}', "cluster")


def test_every_dashboard_query_is_collected():
    panels_with_targets = sum(len(p.get("targets", [])) for b in BOARDS.values() for p in b["panels"])
    queries = all_queries(DASHBOARD_DIR)
    assert sum(q.where.startswith("panel") for q in queries) == panels_with_targets
    assert sum(q.where.startswith("variable") for q in queries) == 7


def test_sample_page_has_every_exported_series():
    text = render(30.0, 1_700_000_000.0)
    names = {line.split("{")[0] for line in text.splitlines() if line and not line.startswith("#")}
    assert names == set(exported_series(granularity=PARTITION))
    assert all('cluster="demo"' in line for line in text.splitlines() if line and not line.startswith("#"))


@needs_promtool
def test_sample_page_is_valid_exposition():
    proc = subprocess.run([promtool.promtool(), "check", "metrics"], input=render(30.0, 1_700_000_000.0),
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_catalog_follows_naming_conventions():
    for family in CATALOG:
        # `_total` is appended to counters when exposed, never part of the family name; only
        # other tools' names may end in it otherwise (Burrow's lag_total is a gauge).
        if family.kind == COUNTER:
            assert family.exposed_name == family.name + "_total", family.name
        assert not family.name.endswith("_total") or family.only_with, family.name
        assert family.labels[0] == "cluster", family.name
        assert family.only_with in (None, *COMPAT_TARGETS) and family.not_with in (None, *COMPAT_TARGETS)


@pytest.mark.parametrize("compat", [(), *((t,) for t in COMPAT_TARGETS), COMPAT_TARGETS])
def test_each_compat_setting_serves_every_name_once_with_distinct_labels(compat):
    names = [family.name for family in served_families(compat)]
    assert len(names) == len(set(names))
    for family in served_families(compat):
        assert len(set(family.labels)) == len(family.labels), family.name
