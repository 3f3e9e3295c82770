"""`groupscope simulate SCENARIO`: run the group-coordinator simulator.

For each strategy it writes, under --out, the records as a capture (`<name>-<strategy>.capture.jsonl`,
docs/capture-format.md), the produce side's end offsets over time (`.end-offsets.jsonl`) and the
ground truth (`.truth.json`), then prints one comparison row per strategy.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from coordinator.simulator import (STRATEGIES, ScenarioError, Simulation, SimulationResult, builtin_scenarios,
                                   format_table, load_scenario)
from streaming.errors import UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "simulate", help="simulate a consumer group and write the records Kafka would write",
        description=f"Run a scenario (a built-in: {', '.join(builtin_scenarios())}; or a YAML file) "
                    "under one or every strategy; write captures and ground truth; print a table.")
    parser.add_argument("scenario", help="built-in scenario name or path to a scenario YAML file")
    parser.add_argument("--strategy", choices=STRATEGIES,
                        help="one assignor (default: every strategy the scenario lists)")
    parser.add_argument("--out", default="simulation-output", help="output directory (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    parser.set_defaults(func=run)


def _write_run(sim: Simulation, out: Path, stem: str) -> SimulationResult:
    result = sim.run()
    with (out / f"{stem}.capture.jsonl").open("w", encoding="utf-8") as fh:
        for rec in result.records:
            fh.write(json.dumps(rec.to_capture(), separators=(",", ":")) + "\n")
    with (out / f"{stem}.end-offsets.jsonl").open("w", encoding="utf-8") as fh:
        scenario = sim.scenario
        for t in range(0, scenario.duration_ms + 1, scenario.lag_sample_ms):
            at = scenario.start_ms + t
            offsets = sim.end_offsets_at(at)
            fh.write(json.dumps({"timestamp": at, "end_offsets": [
                {"topic": topic, "partition": p, "offset": o} for (topic, p), o in sorted(offsets.items())]},
                separators=(",", ":")) + "\n")
    (out / f"{stem}.truth.json").write_text(json.dumps(result.truth_dict(), indent=1) + "\n",
                                            encoding="utf-8")
    return result


def run(args: argparse.Namespace) -> int:
    try:
        scenario = load_scenario(args.scenario)
    except ScenarioError as exc:
        raise UserError(str(exc)) from None
    strategies = [args.strategy] if args.strategy else list(scenario.strategies)
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create output directory {out}: {exc.strerror}") from None
    summaries = []
    for strategy in strategies:
        result = _write_run(Simulation(scenario, strategy, seed=args.seed), out,
                            f"{scenario.name}-{strategy}")
        summaries.append(result.summary)
    print(f"scenario {scenario.name} (seed {args.seed}); files in {out}/")
    print(format_table(summaries))
    return 0
