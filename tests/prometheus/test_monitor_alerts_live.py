"""Live: a real Prometheus (1 s scrapes and evaluations) scrapes two groupscope-like targets as
the targets of one job, as docs/operations.md scrapes shards, with the repository's alerts on the
monitor itself. One target dies, or stops serving one of its clusters: the alert fires for that
target alone, and once."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import pytest
import yaml

from dashboards.livecheck import PrometheusAPI, prometheus_binary, running_prometheus, wait_for_scrapes
from dashboards.promtool import RULE_FILES
from dashboards.sample_metrics import CLUSTER
from dashboards.sample_target import SampleTarget

pytestmark = pytest.mark.skipif(prometheus_binary() is None,
                                reason="prometheus not installed (run scripts/ensure-promtool.sh as root)")
CLUSTERS = (CLUSTER, "demo-east")
UNDER_TEST = ("GroupscopeTargetDown", "GroupscopeClusterMissing")
GROUP = "monitor-alerts"
Firing = set[tuple[str, str, str | None]]   # (alertname, instance, cluster)


def _rules(tmp_path: Path) -> Path:
    """The repository's expressions of the alerts under test; only their `for` is shortened to
    a few evaluations, so that the test waits seconds rather than minutes."""
    doc = yaml.safe_load(RULE_FILES[1].read_text())
    rules = [r for g in doc["groups"] for r in g["rules"] if r.get("alert") in UNDER_TEST]
    assert sorted(r["alert"] for r in rules) == sorted(UNDER_TEST)
    for rule in rules:
        rule["for"] = "2s"
    path = tmp_path / "monitor_alerts.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": GROUP, "rules": rules}]}, sort_keys=False))
    return path


def _firing(api: PrometheusAPI) -> Firing:
    return {(r["metric"]["alertname"], r["metric"]["instance"], r["metric"].get("cluster"))
            for r in api.query('ALERTS{alertstate="firing"}')}


def _evaluations(api: PrometheusAPI) -> str:
    groups = api.get("/api/v1/rules")["data"]["groups"]
    return next(g["lastEvaluation"] for g in groups if g["name"] == GROUP)


def _after_evaluations(api: PrometheusAPI, count: int, timeout_s: float = 60) -> None:
    """Until the alert group has been evaluated `count` more times."""
    deadline = time.monotonic() + timeout_s
    seen = _evaluations(api)
    while count and time.monotonic() < deadline:
        time.sleep(0.2)
        now = _evaluations(api)
        if now != seen:
            seen, count = now, count - 1
    assert not count, f"the rules were not evaluated {count} more times in {timeout_s}s"


def _until_firing(api: PrometheusAPI, done: Callable[[Firing], bool], timeout_s: float = 60) -> Firing:
    deadline = time.monotonic() + timeout_s
    firing = _firing(api)
    while not done(firing) and time.monotonic() < deadline:
        time.sleep(0.5)
        firing = _firing(api)
    # a few evaluations more, so that an alert firing after the expected one is seen too
    _after_evaluations(api, 4)
    return _firing(api)


@pytest.fixture
def two_targets():
    with SampleTarget(CLUSTERS) as first, SampleTarget(CLUSTERS) as second:
        yield first, second


@pytest.fixture
def prometheus(two_targets, tmp_path):
    recording = RULE_FILES[0]
    with running_prometheus([t.url for t in two_targets], rule_files=(recording, _rules(tmp_path))) as api:
        wait_for_scrapes(api, scrapes=3, timeout_s=60)
        # as long as the `for` and more: an alert whose expression held with both targets up
        # would be firing now
        _after_evaluations(api, 4)
        assert _firing(api) == set()
        yield api


def test_a_killed_target_pages_for_that_target_only(prometheus, two_targets):
    _, killed = two_targets
    killed.stop()
    firing = _until_firing(prometheus, lambda f: bool(f))
    # one alert for the dead monitor: not also one per cluster it served
    assert firing == {("GroupscopeTargetDown", killed.address, None)}


def test_a_target_that_stops_serving_a_cluster_pages_for_that_cluster_only(prometheus, two_targets):
    changed, _ = two_targets
    changed.clusters = (CLUSTER,)
    firing = _until_firing(prometheus, lambda f: bool(f))
    assert firing == {("GroupscopeClusterMissing", changed.address, "demo-east")}
