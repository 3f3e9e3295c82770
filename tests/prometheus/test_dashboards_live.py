"""Live check: a real Prometheus (Debian package, 127.0.0.1, 1 s scrapes) scrapes a /metrics target;
every dashboard query and every recording rule must return data.

The target is `metrics_target` below: for now a small HTTP server serving
dashboards.sample_metrics (every exported series, values moving with time). To check the real
exporter, make the fixture yield the URL of groupscope's /metrics instead (e.g. the job running on
the simulator source); nothing else changes. From a shell: `python -m dashboards.livecheck URL`.
"""
from __future__ import annotations

import threading
import time

import pytest

from dashboards.boards import PROBLEMS_ONLY
from dashboards.livecheck import (
    check_queries, clusters_shown, discover_variables, problems_only_labels, prometheus_binary,
    running_prometheus,
    wait_for_scrapes,
)
from dashboards.queries import all_queries
from dashboards.sample_metrics import CLUSTER, TROUBLED
from dashboards.sample_target import SampleTarget

# One job watching two clusters serves both (streaming/job/fleet.py): every panel must show the
# selected one only.
CLUSTERS = (CLUSTER, "demo-east")
pytestmark = pytest.mark.skipif(prometheus_binary() is None,
                                reason="prometheus not installed (run scripts/ensure-promtool.sh as root)")


@pytest.fixture(scope="module")
def metrics_target():
    with SampleTarget(CLUSTERS) as target:
        yield target.url


@pytest.fixture(scope="module")
def prometheus(metrics_target):
    with running_prometheus(metrics_target) as api:
        wait_for_scrapes(api, scrapes=6, timeout_s=60)
        yield api


def test_every_dashboard_query_and_recording_rule_returns_data(prometheus):
    variables = discover_variables(prometheus)
    assert variables == {"cluster": "demo", "group": TROUBLED.name}
    counts = check_queries(prometheus, variables)
    assert len(counts) > 100
    empty = sorted(label for label, n in counts.items() if n == 0)
    assert not empty, "queries without data:\n" + "\n".join(empty)


def test_problem_only_panels_exist_and_have_data_in_the_troubled_sample(prometheus):
    titles = {(q.dashboard, q.title) for q in all_queries()}
    assert PROBLEMS_ONLY <= titles
    counts = check_queries(prometheus, discover_variables(prometheus))
    assert problems_only_labels() and all(counts[label] > 0 for label in problems_only_labels())


def test_every_panel_shows_the_selected_cluster_only(prometheus):
    for cluster in CLUSTERS:
        variables = {"cluster": cluster, "group": TROUBLED.name}
        counts = check_queries(prometheus, variables)
        empty = sorted(label for label, n in counts.items()
                       if n == 0 and label not in problems_only_labels())
        assert not empty, f"{cluster}: queries without data:\n" + "\n".join(empty)
        shown = clusters_shown(prometheus, variables)
        # The cluster selector itself lists every cluster; every panel shows the chosen one.
        assert {label for label, found in shown.items()
                if found - {cluster} and not label.endswith("variable 'cluster'")} == set(), cluster
        assert any(found == {cluster} for found in shown.values())


def test_the_check_notices_queries_without_data(prometheus):
    counts = check_queries(prometheus, {"cluster": "demo", "group": "no-such-group"})
    empty = {label for label, n in counts.items() if n == 0}
    assert any(label.startswith("groupscope-group.json: panel 'Lag per partition'") for label in empty)
    assert not any(label.startswith("recording rule") for label in empty)


def test_recording_rules_compute_real_figures(prometheus):
    # The slowest counter compared below (cooperative-sticky: a rebalance every 5 s) needs
    # samples spanning more than 5 s to show any rate; 12 scrapes span 11 s.
    wait_for_scrapes(prometheus, scrapes=12, timeout_s=60)
    by_assignor = {(r["metric"]["group_type"], r["metric"]["protocol"]): float(r["value"][1])
                   for r in prometheus.query("cluster_assignor:kafka_consumergroup_rebalance_partitions_moved:rate5m")}
    # range moves every partition of each rebalance, cooperative-sticky one: 4 per rebalance at
    # 0.5/s against 1 per rebalance at 0.2/s.
    assert by_assignor[("classic", "range")] > by_assignor[("classic", "cooperative-sticky")] > 0
    trusted = prometheus.query(f'cluster_group:kafka_consumergroup_lag_seconds:max_trusted{{group="{TROUBLED.name}"}}')
    exported = prometheus.query(f'kafka_consumergroup_group_max_lag_seconds{{group="{TROUBLED.name}"}}')
    # the largest time lag of the troubled group sits on its last partition, whose estimate is 'unknown'
    assert float(trusted[0]["value"][1]) < float(exported[0]["value"][1])


def test_the_check_reads_the_last_successful_scrape_not_the_staleness_a_failed_one_leaves():
    with SampleTarget(CLUSTERS) as target, running_prometheus(target.url) as api:
        wait_for_scrapes(api, scrapes=3, timeout_s=60)
        target.failing = True
        deadline = time.monotonic() + 20
        while api.query("up")[0]["value"][1] != "0" and time.monotonic() < deadline:
            time.sleep(0.2)
        # A failed scrape marks the target's series stale: a plain query now finds nothing.
        assert api.query("groupscope_ready") == []
        threading.Timer(3, lambda: setattr(target, "failing", False)).start()
        variables = discover_variables(api)
        counts = check_queries(api, variables)
    assert variables == {"cluster": "demo", "group": TROUBLED.name}
    assert not sorted(label for label, n in counts.items()
                      if n == 0 and not label.startswith("recording rule"))
