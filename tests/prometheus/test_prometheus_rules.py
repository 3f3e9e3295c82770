"""Recording and alert rules checked and unit-tested by promtool; Prometheus and Alertmanager
configs of the docker-compose stack validated."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from dashboards import promtool

needs_promtool = pytest.mark.skipif(promtool.promtool() is None,
                                    reason="promtool not installed (run scripts/ensure-promtool.sh as root)")
DASHBOARDS = Path(promtool.__file__).resolve().parent
ALERTMANAGER_CONFIG = DASHBOARDS / "alertmanager" / "alertmanager.yml"
PROMETHEUS_CONFIG = DASHBOARDS / "prometheus" / "prometheus.yml"
# As the header of alert_rules.yml promises.
REQUIRED_ANNOTATIONS = {"summary", "description", "runbook", "dashboard"}
SEVERITIES = {"page", "ticket", "info"}


def _alerts() -> list[dict]:
    doc = yaml.safe_load(promtool.RULE_FILES[1].read_text())
    return [r for g in doc["groups"] for r in g["rules"]]


def _unit_tests() -> list[dict]:
    return yaml.safe_load(promtool.RULES_TEST.read_text())["tests"]


def _group_names(path: Path) -> list[str]:
    return [g["name"] for g in yaml.safe_load(path.read_text())["groups"]]


@needs_promtool
def test_promtool_version_is_known():
    assert promtool.version().startswith("promtool, version")


@needs_promtool
def test_rule_files_pass_promtool_check():
    result = promtool.check_rules(*promtool.RULE_FILES)
    assert result.ok, result.output


@needs_promtool
def test_rule_unit_tests_pass():
    result = promtool.test_rules()
    assert result.ok, result.output


@needs_promtool
def test_unit_tests_fail_when_an_alert_misbehaves(tmp_path):
    broken = promtool.RULES_TEST.read_text().replace("slow is 20k messages behind", "slow is 1 message behind")
    (tmp_path / promtool.RULES_TEST.name).write_text(broken)
    result = promtool.test_rules(tmp_path / promtool.RULES_TEST.name)
    assert not result.ok and "KafkaConsumerGroupLagHigh" in result.output


def test_every_alert_is_tested_firing_and_not_firing():
    firing, quiet = set(), set()
    for test in _unit_tests():
        for case in test.get("alert_rule_test", []):
            (firing if case["exp_alerts"] else quiet).add(case["alertname"])
    names = {a["alert"] for a in _alerts()}
    assert names - firing == set(), "alerts never tested firing"
    assert names - quiet == set(), "alerts never tested quiet"


def test_alerts_cover_the_issue_list():
    names = {a["alert"] for a in _alerts()}
    assert {"KafkaConsumerGroupLagHigh", "KafkaConsumerGroupLagSecondsOverSLO", "KafkaConsumerGroupLagGrowing",
            "KafkaConsumerGroupStatusError", "KafkaConsumerGroupPartitionStopped",
            "KafkaConsumerGroupPartitionStalled", "KafkaConsumerGroupRebalanceStorm",
            "KafkaConsumerGroupRebalanceSlow", "KafkaConsumerGroupEmptied", "KafkaConsumerGroupMessagesLost",
            "GroupscopeNotReady", "GroupscopeBehindOffsetsTopic", "GroupscopeSkippedRecords",
            "GroupscopeMetricsAbsent", "GroupscopeTargetDown", "GroupscopeClusterMissing"} <= names


def test_unit_tests_evaluate_every_group_recording_rules_first():
    """promtool evaluates the groups it is not given an order for in a random one at each time:
    an alert on a recorded series would read this time's value in one run, the last one's in
    the next."""
    recording, alerts = (_group_names(p) for p in promtool.RULE_FILES)
    order = yaml.safe_load(promtool.RULES_TEST.read_text())["group_eval_order"]
    assert sorted(order) == sorted(recording + alerts)
    assert set(order[:len(recording)]) == set(recording)


@pytest.mark.parametrize("alert", [a for a in _alerts() if "increase" in a["expr"]], ids=lambda a: a["alert"])
def test_counts_from_increase_are_printed_whole(alert):
    # increase() extrapolates to the window's edges: 9 rebalances read 9.083
    text = alert["annotations"]["summary"] + alert["annotations"]["description"]
    assert "$value" not in text or '$value | printf "%.0f"' in text


@pytest.mark.parametrize("alert", _alerts(), ids=lambda a: a["alert"])
def test_alert_has_severity_and_runbook(alert):
    assert alert["labels"]["severity"] in SEVERITIES
    assert REQUIRED_ANNOTATIONS <= set(alert["annotations"])
    assert len(alert["annotations"]["runbook"]) > 40


def test_unit_tests_only_assert_the_annotations_they_are_given():
    stripped = yaml.safe_load(promtool.alert_rules_for_tests(promtool.RULE_FILES[1].read_text()))
    for group in stripped["groups"]:
        for rule in group["rules"]:
            assert set(rule["annotations"]) == set(promtool.TESTED_ANNOTATIONS)


@needs_promtool
def test_prometheus_config_of_the_stack_is_valid():
    result = promtool.check_config(PROMETHEUS_CONFIG)
    assert result.ok, result.output
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
    loaded = {(PROMETHEUS_CONFIG.parent / f).resolve() for f in config["rule_files"]}
    assert loaded == {p.resolve() for p in promtool.RULE_FILES}


def _routes(route: dict) -> list[dict]:
    return [route] + [r for child in route.get("routes", []) for r in _routes(child)]


def test_alertmanager_routes_every_severity_to_a_defined_receiver():
    config = yaml.safe_load(ALERTMANAGER_CONFIG.read_text())
    receivers = {r["name"] for r in config["receivers"]}
    routes = _routes(config["route"])
    assert all(r["receiver"] in receivers for r in routes if "receiver" in r)
    routed = {m.split("=")[1].strip('"') for r in routes for m in r.get("matchers", []) if m.startswith("severity=")}
    assert routed == SEVERITIES
    assert {"cluster", "group"} <= set(config["route"]["group_by"])


@pytest.mark.skipif(shutil.which("amtool") is None, reason="amtool not installed (Debian: prometheus-alertmanager)")
def test_alertmanager_config_passes_amtool():
    proc = subprocess.run(["amtool", "check-config", str(ALERTMANAGER_CONFIG)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
