"""The simulator's predictions beside a real canary run (benchmarks/rebalance_truth.py).

The real run's phases (form, double, halve, restart) are replayed through `coordinator.simulator`
with the same timings: the same consumer counts at the same offsets from the group's start, the
harness's client settings (session timeout, heartbeat and auto-commit intervals, a 100 ms poll
loop) and the test broker's (no initial rebalance delay, KIP-848 heartbeats every 500 ms). For every
phase and strategy it prints the clients' truth next to the simulator's prediction: rebalance
duration, partitions moved, the longest time a partition went unconsumed and the messages that
waited longer than 3 s, and flags each prediction more than 20% away.

    .venv/bin/python -m benchmarks.simulator_vs_clients PHASES.json   # written by rebalance_truth --save
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
from pathlib import Path
from typing import Any

from benchmarks._stopping import stop_everything_at_exit
from coordinator.simulator import Simulation
from coordinator.simulator.replay import FETCH_START_MS
from coordinator.simulator.scenario import ClientSpec, Scenario, Step, TopicSpec

# The harness names KIP-848 strategies after the protocol, the simulator after the server assignor.
SIMULATOR_STRATEGY = {"kip848-uniform": "server-uniform", "kip848-range": "server-range"}
PHASES = ("form", "double", "halve", "restart", "crash")
UNTIMED = ("crash",)   # the clients date a crash's rebalance from the crash, the simulator from the expiry
TOLERANCE = 0.20
SLOW_MS = 3000                     # the harness's --slow-ms: messages that waited longer count
TOPIC = "canary"
# The test broker's settings (tests/support/kafka_broker.py) and the harness's poll loop.
BROKER = {"initial_rebalance_delay_ms": 0, "consumer_heartbeat_interval_ms": 500,
          "consumer_assignment_interval_ms": 1000}   # Kafka 4.4's default
POLL_MS = 100
# The harness processes a message as soon as it is polled: capacity far above the produce rate.
HARNESS_CAPACITY = 100_000.0


@dataclasses.dataclass(frozen=True)
class Figures:
    """One phase's figures, from the clients or from the simulator."""

    duration_s: float | None
    moved: int
    longest_unconsumed_s: float | None
    delayed: float


def real_offsets(phases: list[dict[str, Any]]) -> dict[str, int]:
    """Each phase's action in ms after the group's first (the real run's step times)."""
    by_name = {p["phase"]: p for p in phases}
    return {name: int(by_name[name]["since_ms"] - by_name["form"]["since_ms"])
            for name in PHASES if name in by_name}


def scenario_for(strategy: str, settings: dict[str, Any], phases: list[dict[str, Any]],
                 at: dict[str, int] | None = None, **overrides: Any) -> Scenario:
    """The canary run of one strategy as a scenario: steps at `at` (ms from the group's start; by
    default the real phases' offsets); `overrides` replace scenario or client settings
    (calibration experiments)."""
    by_name = {p["phase"]: p for p in phases}
    n, k = settings["n"], settings["k"]
    at = at or real_offsets(phases)
    # The harness's consumer threads start unevenly when 50 start at once on a busy machine:
    # the newcomers of the doubling give the start-up delay and its spread.
    starts = by_name["double"].get("starts_ms") or [500.0]
    startup = {"startup_ms": max(1, int(min(starts))), "startup_jitter_ms": int(max(starts) - min(starts)),
               "fetch_start_ms": int(by_name["double"].get("first_message_ms") or FETCH_START_MS)}
    restart_down = int(by_name["restart"].get("down_ms") or 1000)
    # The halving's consumers begin to close over some tens of ms: with heartbeats every 500 ms
    # from 50 members, the coordinator computes a target between the first and the last leave.
    stops = by_name["halve"].get("stops_ms") or [0.0]
    stagger = math.ceil((max(stops) - min(stops)) / max(1, len(stops) - 1))
    last = by_name[[name for name in PHASES if name in by_name][-1]]
    end = max(at.values()) + int(last["until_ms"] - last["since_ms"]) + 10_000
    client_fields = {f.name for f in dataclasses.fields(ClientSpec)}
    clients = ClientSpec(count=n, topics=(TOPIC,), processing_rate=HARNESS_CAPACITY,
                         session_timeout_ms=settings["session_ms"], heartbeat_interval_ms=settings["heartbeat_ms"],
                         auto_commit_interval_ms=settings["auto_commit_ms"], poll_delay_ms=POLL_MS,
                         **{"client_id": f"{strategy}-m{{index:03d}}",   # the harness's consumer names
                            **startup, **{k_: v for k_, v in overrides.items() if k_ in client_fields}})
    return Scenario(
        name=f"canary-{strategy}", group=f"canary-{strategy}", duration_ms=end,
        topics=(TopicSpec(TOPIC, settings["partitions"], settings["rate"]),), clients=clients,
        steps=(Step(at["double"], "scale", 2 * n), Step(at["halve"], "scale", n, stagger_ms=stagger),
               Step(at["restart"], "restart", k, down_ms=restart_down))
        + ((Step(at["crash"], "kill", k),) if "crash" in at else ()),
        strategies=(SIMULATOR_STRATEGY.get(strategy, strategy),), latency_budget_ms=SLOW_MS,
        **{**BROKER, **{k_: v for k_, v in overrides.items() if k_ not in client_fields}})


def aligned_steps(strategy: str, settings: dict[str, Any], phases: list[dict[str, Any]],
                  **overrides: Any) -> dict[str, int]:
    """Step times that put each step where the real one fell relative to the end of the rebalance
    before it. A classic member hears of a rebalance at its next heartbeat, and its heartbeats run
    on a grid from its last SyncGroup; how long a join or leave waits for the others therefore
    depends on where in that grid it lands, and the simulator is given the same place."""
    by_name = {p["phase"]: p for p in phases}
    at = real_offsets(phases)
    names = list(at)
    for previous, name in zip(names, names[1:]):
        sim = Simulation(scenario_for(strategy, settings, phases, at, **overrides), SIMULATOR_STRATEGY.get(strategy, strategy), seed=1)
        result = sim.run()
        origin = sim.scenario.start_ms
        ended = [r.end_ms - origin for r in result.truth.rebalances
                 if r.end_ms is not None and at[previous] <= r.start_ms - origin < at[name]]
        if not ended:
            break
        shift = max(ended) + int(by_name[name]["since_ms"] - by_name[previous]["truth"]["end_ms"]) - at[name]
        for later in names[names.index(name):]:
            at[later] += shift
    return at


def predict(scenario: Scenario, windows: dict[str, tuple[int, int, int]],
            baseline_s: dict[str, float]) -> dict[str, Figures]:
    """Runs the scenario; per phase window (ms from the start: begin, end of the rebalances that
    belong to it, end of its message-wait window), the rebalances that began in it and the
    messages that went over the budget in it. The simulator's consumers process a message the
    moment it is produced, so a partition's longest wait is its longest stall (which ends at the
    first fetch after the hand-over), or where nothing stalled the real run's quiet-time wait
    (`baseline_s`: poll loop and fetch)."""
    sim = Simulation(scenario, scenario.strategies[0], seed=1)
    late_at: dict[int, float] = {}

    def probe(t: int) -> None:
        for flow in sim.flows.values():
            flow.advance(t)
        late_at[t] = sum(flow.late for flow in sim.flows.values())

    for begin, _next, end in windows.values():
        for t in (begin, end):
            if t <= scenario.duration_ms:
                sim.schedule(t, probe, t)
    result = sim.run()
    out = {}
    for name, (begin, next_begin, end) in windows.items():
        lo, hi = sim.abs_ms(begin), sim.abs_ms(next_begin)
        rebalances = [r for r in result.truth.rebalances if lo <= r.start_ms < hi and r.end_ms is not None]
        stalls = [d["seconds"] for r in rebalances for d in r.downtime]
        out[name] = Figures(
            duration_s=(max(r.end_ms for r in rebalances) - min(r.start_ms for r in rebalances)) / 1000.0
            if rebalances and name not in UNTIMED else None,
            moved=len({tp for r in rebalances for tp in r.partitions_moved}),
            longest_unconsumed_s=max(max(stalls, default=0.0), baseline_s.get(name, 0.0)),
            delayed=late_at.get(end, late_at.get(begin, 0.0)) - late_at.get(begin, 0.0))
    return out


def truth_of(phase: dict[str, Any]) -> Figures:
    """The clients' figures. Idle KIP-848 members leaving move nothing and call no callback: the
    clients saw no rebalance to time."""
    t = phase["truth"]
    duration = t["duration_s"] if t["generations"] and phase["phase"] not in UNTIMED else None
    return Figures(duration, len(t["moved"]), t["longest_wait_s"], float(t["delayed"]))


def windows_of(phases: list[dict[str, Any]], at: dict[str, int]) -> dict[str, tuple[int, int, int]]:
    """Each phase's window in ms from the group's start: its step, the next phase's step (its
    rebalances end the window), and the end of the benchmark's message-wait window (the clients'
    settling plus 1.5 s)."""
    by_name = {p["phase"]: p for p in phases}
    out = {}
    names = [name for name in PHASES if name in by_name]
    for i, name in enumerate(names):
        p = by_name[name]
        settle = int(p["until_ms"] - p["since_ms"]) + 1500
        next_begin = at[names[i + 1]] if i + 1 < len(names) else at[name] + settle
        out[name] = (at[name], next_begin, at[name] + settle)
    return out


def off(predicted: float | None, true: float | None, floor: float) -> float | None:
    """Relative difference, with `floor` as the smallest denominator (a 0.1 s or 1-message truth
    would otherwise make any prediction look wrong)."""
    if predicted is None or true is None:
        return None
    return abs(predicted - true) / max(abs(true), floor)


FLOORS = {"duration_s": 0.5, "moved": 1.0, "longest_unconsumed_s": 0.5, "delayed": 10.0}


# What the simulator assumed before it was set against this run (docs/simulator.md): Kafka's
# default client ids, a fixed start-up, no assignment interval, processing from the assignment on,
# and steps at the real times whatever the heartbeat grid.
UNCALIBRATED = {"client_id": "consumer-{group}-{index}", "startup_ms": 500, "startup_jitter_ms": 250,
                "consumer_assignment_interval_ms": 0, "fetch_start_ms": 0}


def compare(saved: dict[str, Any], calibrated: bool = True, **overrides: Any) -> list[dict[str, Any]]:
    """Per strategy and phase: the clients' figures, the simulator's and their relative gaps
    (`calibrated=False`: as the simulator stood before this comparison taught it)."""
    if not calibrated:
        overrides = {**UNCALIBRATED, **overrides}
    settings, rows = saved["settings"], []
    by_strategy: dict[str, list[dict[str, Any]]] = {}
    for p in saved["phases"]:
        by_strategy.setdefault(p["strategy"], []).append(p)
    for strategy, phases in by_strategy.items():
        if not set(PHASES[:4]) <= {p["phase"] for p in phases}:
            continue
        at = aligned_steps(strategy, settings, phases, **overrides) if calibrated else real_offsets(phases)
        baseline = {p["phase"]: p.get("baseline_wait_s") or 0.0 for p in phases}
        scenario = scenario_for(strategy, settings, phases, at, **overrides)
        predicted = predict(scenario, windows_of(phases, at), baseline)
        for p in phases:
            truth, sim = truth_of(p), predicted[p["phase"]]
            gaps = {f: off(getattr(sim, f), getattr(truth, f), FLOORS[f]) for f in FLOORS}
            rows.append({"strategy": strategy, "phase": p["phase"], "truth": truth, "simulator": sim, "gaps": gaps})
    return rows


def _cell(v: float | None, unit: str = "") -> str:
    if v is None:
        return "-"
    return f"{v:.2f}{unit}" if unit else f"{v:.0f}"


def print_comparison(rows: list[dict[str, Any]], title: str = "") -> None:
    print(f"\n== the simulator's predictions beside the clients (phases after the group formed){title} ==")
    print(f"{'strategy / phase':28}{'duration s':>18}{'moved':>12}{'longest stall s':>20}{'waited > 3 s':>16}")
    print(f"{'':28}{'real  sim':>18}{'real sim':>12}{'real  sim':>20}{'real  sim':>16}")
    scored = [r for r in rows if r["phase"] != "form"]
    for r in scored:
        t, s, g = r["truth"], r["simulator"], r["gaps"]

        def pair(field: str, unit: str) -> str:
            flag = "*" if (g[field] or 0) > TOLERANCE else " "
            return f"{_cell(getattr(t, field), unit)} {_cell(getattr(s, field), unit)}{flag}"
        print(f"{r['strategy'] + ' / ' + r['phase']:28}{pair('duration_s', 's'):>18}{pair('moved', ''):>12}"
              f"{pair('longest_unconsumed_s', 's'):>20}{pair('delayed', ''):>16}")
    for field in FLOORS:
        gaps = [r["gaps"][field] for r in scored if r["gaps"][field] is not None]
        if gaps:
            within = sum(g <= TOLERANCE for g in gaps)
            print(f"  {field:22} within 20%: {within}/{len(gaps)}  median gap {statistics.median(gaps):.0%}")
    print("  (* more than 20% away; gaps relative to the truth, floors "
          + ", ".join(f"{k} {v:g}" for k, v in FLOORS.items()) + ")")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("phases", type=Path, nargs="?",
                        help="JSON written by benchmarks.rebalance_truth --save")
    parser.add_argument("--before", action="store_true",
                        help="also the simulator's predictions with its settings before calibration")
    args = parser.parse_args(argv)
    if args.phases is None:
        print("nothing to compare: give the phases a canary run saved "
              "(python -m benchmarks.rebalance_truth --save FILE), which also prints this comparison")
        return
    saved = json.loads(args.phases.read_text())
    if args.before:
        print_comparison(compare(saved, calibrated=False), ", before calibration")
    print_comparison(compare(saved))


if __name__ == "__main__":
    stop_everything_at_exit()
    main()
