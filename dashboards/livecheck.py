"""Live check: a real Prometheus scrapes a /metrics endpoint, then every dashboard query and every
recording rule must return data.

    python -m dashboards.livecheck http://127.0.0.1:9464/metrics [--group NAME]

`run_live_check(url)` is the whole check; the target can be groupscope's exporter (e.g. the job
running on the simulator source) or any page with the same series (tests use sample_metrics).
"""
from __future__ import annotations

import argparse
import json
import math
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

import yaml

from dashboards.boards import PROBLEMS_ONLY, SHARE_GROUP_PANELS, TOPIC_SETTINGS_PANELS
from dashboards.promtool import RULE_FILES
from dashboards.queries import all_queries, resolved_queries
from dashboards.rollups import recording_rule_groups

SCRAPE_INTERVAL_S = 1


class LiveCheckError(RuntimeError):
    """Prometheus could not be started, or never scraped the target."""


def prometheus_binary() -> str | None:
    return shutil.which("prometheus")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrometheusAPI:
    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    def get(self, path: str, **params: str) -> Any:
        url = f"{self.base_url}{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
        with urllib.request.urlopen(url, timeout=10) as response:
            return json.loads(response.read())

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        """An instant query, now or at the Unix time `at`."""
        params = {"query": expr} if at is None else {"query": expr, "time": repr(at)}
        body = self.get("/api/v1/query", **params)
        if body.get("status") != "success":
            raise LiveCheckError(f"query failed: {expr}: {body}")
        result = body["data"]["result"]
        return result if isinstance(result, list) else [{"metric": {}, "value": result}]


def _config(target_urls: Sequence[str], rule_files: tuple[Path, ...]) -> dict[str, Any]:
    urls = [urllib.parse.urlsplit(u) for u in target_urls]
    schemes_paths = {(u.scheme or "http", u.path or "/metrics") for u in urls}
    if len(schemes_paths) != 1:
        raise LiveCheckError(f"the targets of one scrape job share a scheme and a path: {list(target_urls)}")
    (scheme, path), = schemes_paths
    return {
        "global": {"scrape_interval": f"{SCRAPE_INTERVAL_S}s", "evaluation_interval": f"{SCRAPE_INTERVAL_S}s"},
        "rule_files": [str(p) for p in rule_files],
        "scrape_configs": [{
            "job_name": "groupscope", "scheme": scheme, "metrics_path": path,
            "static_configs": [{"targets": [u.netloc for u in urls]}],
        }],
    }


@contextmanager
def running_prometheus(target_url: str | Sequence[str], rule_files: tuple[Path, ...] = RULE_FILES,
                       startup_timeout_s: float = 30) -> Iterator[PrometheusAPI]:
    """A throw-away Prometheus on 127.0.0.1 with its own data directory, stopped on exit,
    scraping `target_url` (or each of several, as the targets of one job: shards)."""
    binary = prometheus_binary()
    if binary is None:
        raise LiveCheckError("the prometheus binary is not on PATH (Debian package `prometheus`)")
    with tempfile.TemporaryDirectory(prefix="groupscope-prom-") as tmp:
        config = Path(tmp) / "prometheus.yml"
        urls = [target_url] if isinstance(target_url, str) else list(target_url)
        config.write_text(yaml.safe_dump(_config(urls, rule_files)))
        port = _free_port()
        log = open(Path(tmp) / "prometheus.log", "w")
        proc = subprocess.Popen(
            [binary, f"--config.file={config}", f"--storage.tsdb.path={tmp}/data",
             f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
            stdout=log, stderr=subprocess.STDOUT)
        api = PrometheusAPI(f"http://127.0.0.1:{port}")
        try:
            _wait_ready(api, proc, startup_timeout_s, Path(tmp) / "prometheus.log")
            yield api
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()


def _wait_ready(api: PrometheusAPI, proc: subprocess.Popen, timeout_s: float, log: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LiveCheckError(f"prometheus exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            urllib.request.urlopen(f"{api.base_url}/-/ready", timeout=2).close()
            return
        except OSError:
            time.sleep(0.2)
    raise LiveCheckError(f"prometheus not ready after {timeout_s}s: {log.read_text()[-2000:]}")


def wait_for_scrapes(api: PrometheusAPI, scrapes: int, timeout_s: float) -> None:
    """Until every target has been scraped successfully `scrapes` times (so rates have points)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        targets = api.get("/api/v1/targets")["data"]["activeTargets"]
        result = api.query('sum_over_time(up{job="groupscope"}[5m])')
        if targets and len(result) == len(targets) and all(float(r["value"][1]) >= scrapes for r in result):
            return
        time.sleep(SCRAPE_INTERVAL_S / 2)
    targets = api.get("/api/v1/targets")["data"]["activeTargets"]
    errors = [t.get("lastError") for t in targets]
    raise LiveCheckError(f"target not scraped {scrapes} times in {timeout_s}s (errors: {errors})")


def scraped_instant(api: PrometheusAPI, timeout_s: float = 30) -> float:
    """A time at which every target's latest scrape had succeeded.

    A failed scrape (a timeout of a loaded target) marks every series of that target stale, so
    a query evaluated just after one finds nothing; queries pinned to this instant see the last
    successful scrape of each target.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        result = api.query('min(up{job="groupscope"})')
        if result and float(result[0]["value"][1]) == 1:
            return float(result[0]["value"][0])
        if time.monotonic() >= deadline:
            raise LiveCheckError(f"no instant in {timeout_s}s at which every target's last scrape succeeded")
        time.sleep(SCRAPE_INTERVAL_S / 2)


def discover_variables(api: PrometheusAPI, at: float | None = None) -> dict[str, str]:
    """A cluster (the first by name), and its group with the most rebalances, to fill
    single-value template variables (as of `at`, else of the latest successful scrape)."""
    at = scraped_instant(api) if at is None else at
    clusters = api.query("groupscope_ready", at)
    if not clusters:
        raise LiveCheckError("the target exports no groupscope_ready, so no cluster to check")
    cluster = min(r["metric"]["cluster"] for r in clusters)
    busiest = api.query(f'topk(1, kafka_consumergroup_rebalances_total{{cluster="{cluster}"}})', at) or \
        api.query(f'kafka_consumergroup_info{{cluster="{cluster}"}}', at)
    if not busiest:
        raise LiveCheckError(f"cluster {cluster} has no consumer groups to show")
    return {"cluster": cluster, "group": busiest[0]["metric"]["group"]}


def _data_points(result: list[dict[str, Any]]) -> int:
    """Series with a real number (a NaN quantile of an empty window is not data)."""
    return sum(1 for r in result if not math.isnan(float(r["value"][1])))


def run_live_check(metrics_url: str, *, variables: dict[str, str] | None = None, scrapes: int = 6,
                   timeout_s: float = 60) -> dict[str, int]:
    """Query label -> number of series with data, for every dashboard query and recording rule.

    Single-value template variables (cluster, the group-detail group) come from `variables`, or
    are discovered from the target; multi-value ones use their 'All' regex.
    """
    with running_prometheus(metrics_url) as api:
        wait_for_scrapes(api, scrapes, timeout_s)
        return check_queries(api, variables or discover_variables(api))


def check_queries(api: PrometheusAPI, variables: dict[str, str]) -> dict[str, int]:
    """Evaluate every dashboard query (with these variable values) and recording rule at one
    instant of the latest successful scrapes."""
    queries = resolved_queries(variables)
    for rules in recording_rule_groups().values():
        for rule in rules:
            queries[f"recording rule {rule.record}"] = rule.record
    at = scraped_instant(api)
    return {label: _data_points(api.query(expr, at)) for label, expr in queries.items()}


def clusters_shown(api: PrometheusAPI, variables: dict[str, str]) -> dict[str, set[str]]:
    """For every dashboard query (with these variable values): the `cluster` labels of what it
    returns, so that a panel can be checked to show the selected cluster only."""
    at = scraped_instant(api)
    return {label: {r["metric"]["cluster"] for r in api.query(expr, at) if "cluster" in r["metric"]}
            for label, expr in resolved_queries(variables).items()}


def problems_only_labels() -> frozenset[str]:
    """Labels of the queries a healthy cluster may leave empty: those that list only problems,
    those of share groups (a cluster may have none) and those that need the topics' retention
    settings (a principal may not describe them)."""
    return frozenset(q.label for q in all_queries()
                     if (q.dashboard, q.title) in (PROBLEMS_ONLY | SHARE_GROUP_PANELS
                                                   | TOPIC_SETTINGS_PANELS))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check every dashboard query and recording rule "
                                                 "against a live /metrics endpoint.")
    parser.add_argument("metrics_url")
    parser.add_argument("--cluster")
    parser.add_argument("--group")
    parser.add_argument("--strict", action="store_true",
                        help="also fail when panels that list only problems are empty")
    args = parser.parse_args(argv)
    variables = {"cluster": args.cluster, "group": args.group} if args.cluster and args.group else None
    try:
        counts = run_live_check(args.metrics_url, variables=variables)
    except LiveCheckError as exc:
        print(f"livecheck: {exc}", file=sys.stderr)
        return 2
    empty = sorted(label for label, n in counts.items() if n == 0)
    tolerated = set() if args.strict else problems_only_labels()
    for label in empty:
        print(f"{'empty here' if label in tolerated else 'NO DATA'}  {label}")
    print(f"{len(counts) - len(empty)}/{len(counts)} queries returned data")
    return 1 if set(empty) - tolerated else 0


if __name__ == "__main__":
    sys.exit(main())
