"""`groupscope demo` end to end: local Spark on the simulator, /metrics scraped over HTTP."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from coordinator.simulator import load_scenario
from dashboards.livecheck import (check_queries, discover_variables, problems_only_labels,
                                  prometheus_binary, running_prometheus, wait_for_scrapes)
from tests.support.scrape_support import parse, scrape
from streaming.cli.main import build_parser
from streaming.cli.commands import demo
from tests.support.paths import ROOT


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# The watched group must have grown every series a Group-detail panel plots, the sync phase's
# too (a classic group's from its records' state timestamps, a KIP-848 group's from the target
# assignment's timestamp, as Kafka 4.3+ writes it), and which group Prometheus sees grow first
# varies from run to run.
GROWING = ("kafka_consumergroup_rebalances_total", "kafka_consumergroup_rebalance_partitions_moved_total",
           "kafka_consumergroup_rebalance_downtime_seconds_count",
           "kafka_consumergroup_rebalance_duration_seconds_count",
           "kafka_consumergroup_rebalance_sync_duration_seconds_count")


def grown_in_prometheus(api) -> set[str]:
    """Groups whose rebalance counters all grew in Prometheus's own samples.

    Prometheus is the judge, not this test's scrapes: a counter that grew before Prometheus's
    first scrape, or whose series first appeared already at its final value, has no increase
    there, and the recording rules over it would rightly be empty.
    """
    grown: set[str] | None = None
    for name in GROWING:
        groups = {r["metric"].get("group") for r in api.query(f"increase({name}[15m]) > 0")}
        grown = groups if grown is None else grown & groups
    return grown or set()


def by_group(samples: dict, name: str) -> dict[str, float]:
    return {dict(labels)["group"]: value for labels, value in samples.get(name, {}).items()}


def test_demo_serves_the_simulated_groups(spark, tmp_path):
    port = free_port()
    args = build_parser().parse_args([
        "demo", "--no-view", "--speed", "4", "--duration", "240",
        "--listen", f"127.0.0.1:{port}", "--workdir", str(tmp_path)])
    groups = [f"canary-rollout-{s}" for s in load_scenario("canary-rollout").strategies]
    stop = threading.Event()
    outcome: dict[str, object] = {}

    def run_demo() -> None:
        try:
            outcome["code"] = demo.run(args, spark=spark, stop=stop)
        except BaseException as exc:  # reported by the assertions below
            outcome["error"] = exc

    thread = threading.Thread(target=run_demo, daemon=True)
    thread.start()
    members: dict[str, float] = {}
    rebalances: dict[str, float] = {}
    live: dict[str, int] = {}
    # A real Prometheus scrapes the job from the start, so rates and increases see the
    # rebalances of the rollout happen.
    prometheus = running_prometheus(f"http://127.0.0.1:{port}/metrics") if prometheus_binary() else None
    api = prometheus.__enter__() if prometheus is not None else None
    first: dict[str, dict[str, float]] | None = None
    watched = None
    try:
        while thread.is_alive():
            try:
                samples = parse(scrape(port)[1])
            except OSError:
                time.sleep(1)
                continue  # not serving yet
            members = by_group(samples, "kafka_consumergroup_members")
            rebalances = by_group(samples, "kafka_consumergroup_rebalances_total")
            if api is not None:
                grown = sorted(grown_in_prometheus(api) & set(groups))
            else:
                now = {name: by_group(samples, name) for name in GROWING}
                if first is None and members:
                    first = now
                # A group whose rebalance counters all grew while scraped.
                grown = [g for g in groups if first is not None
                         and all(now[name].get(g, 0) > first[name].get(g, 0) for name in GROWING)]
            if grown and all(members.get(g, 0) > 0 and rebalances.get(g, 0) > 0 for g in groups):
                watched = grown[0]
                break
            time.sleep(2)
        if api is not None and watched is not None:
            wait_for_scrapes(api, scrapes=8, timeout_s=90)
            variables = dict(discover_variables(api), group=watched)
            # Recording rules are evaluated once per interval after the growth was scraped.
            deadline = time.monotonic() + 30
            live = check_queries(api, variables)
            while any(n == 0 and label.startswith("recording rule") for label, n in live.items()) \
                    and time.monotonic() < deadline:
                time.sleep(1)
                live = check_queries(api, variables)
    finally:
        if prometheus is not None:
            prometheus.__exit__(None, None, None)
        stop.set()
        thread.join(timeout=60)
    assert not thread.is_alive()
    assert "error" not in outcome, outcome.get("error")
    assert outcome["code"] == 0
    for group in groups:
        # canary-rollout runs 50 consumers per group, 100 while scaled out, 40 at least while
        # ten of them restart.
        assert 40 <= members[group] <= 100, group
        assert rebalances[group] > 0, group
    # A real Prometheus scraping the real job: every dashboard query and recording rule has data
    # (apart from the panels that only list problems, which a healthy demo need not have).
    assert watched is not None or prometheus is None, "no group rebalanced while Prometheus watched"
    if live:
        empty = sorted(label for label, n in live.items() if n == 0 and label not in problems_only_labels())
        assert not empty, "queries without data against the running job:\n" + "\n".join(empty)
    # The simulated log and the demo's state stayed in the work directory it was given.
    assert (tmp_path / "simulated-consumer-offsets.jsonl").stat().st_size > 0
    assert (tmp_path / "checkpoint").is_dir()


@pytest.mark.parametrize("sig", [signal.SIGINT], ids=["SIGINT"])
def test_a_stop_signal_to_the_demos_process_group_ends_it_cleanly(tmp_path, sig):
    """As Ctrl-C stops `make demo`: the signal goes to every process of the group at once. The
    driver stops the query and Spark; exit status 0, no traceback. (SIGTERM to the group, as
    `timeout` and service managers send it, goes through the same handler: test_job_restart
    sends it to `groupscope run`, then checks the restart.)"""
    port = free_port()
    log_path = tmp_path / "demo.out"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "streaming.cli.main", "demo", "--no-view", "--speed", "20",
             "--listen", f"127.0.0.1:{port}", "--workdir", str(tmp_path / "work")],
            cwd=str(ROOT), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not (tmp_path / "work" / "checkpoint" / "query" / "commits" / "1").exists():
            assert process.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, "the demo made no progress"
            time.sleep(0.2)
        assert by_group(parse(scrape(port)[1]), "kafka_consumergroup_members")
        os.killpg(process.pid, sig)
        assert process.wait(timeout=120) == 0, log_path.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=60)
    output = log_path.read_text()
    assert "Traceback" not in output and "error:" not in output, output
    assert "groupscope demo: stopped after" in output
