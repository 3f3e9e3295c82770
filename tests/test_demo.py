"""`groupscope demo` end to end: local Spark on the simulator, /metrics scraped over HTTP."""
from __future__ import annotations

import socket
import threading
import time

from coordinator.simulator import load_scenario
from scrape_support import parse, scrape
from streaming.cli import build_parser
from streaming.commands import demo


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def by_group(samples: dict, name: str) -> dict[str, float]:
    return {dict(labels)["group"]: value for labels, value in samples.get(name, {}).items()}


def test_demo_serves_the_simulated_groups(spark, tmp_path):
    port = free_port()
    args = build_parser().parse_args([
        "demo", "--no-view", "--speed", "4", "--duration", "100",
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
    try:
        while thread.is_alive():
            try:
                samples = parse(scrape(port)[1])
                members = by_group(samples, "kafka_consumergroup_members")
                rebalances = by_group(samples, "kafka_consumergroup_rebalances_total")
            except OSError:
                pass  # not serving yet
            if all(members.get(g, 0) > 0 and rebalances.get(g, 0) > 0 for g in groups):
                break
            time.sleep(2)
    finally:
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
    # The simulated log and the demo's state stayed in the work directory it was given.
    assert (tmp_path / "simulated-consumer-offsets.jsonl").stat().st_size > 0
    assert (tmp_path / "checkpoint").is_dir()
