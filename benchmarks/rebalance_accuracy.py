"""How close the monitor's rebalance estimates come to the simulator's ground truth.

Runs every built-in scenario under every strategy and a few seeds, feeds the records (encoded,
then decoded) through the state reducer, and compares its `rebalance` events with the true
rebalances and its `rebalance_downtime` events with the true per-partition stalls.

Targets: classic duration within max(10 %, 0.5 s) at the median; KIP-848 durations exact to the ms.
The group forming from nothing (from generation 0) and the group emptying are left out: there is
no previous generation to estimate from.

Classic figures are broken down by what started the rebalance. A join or a session expiry leaves no
trace in the log until the first member hears of it at its next heartbeat, so part of the true
duration is invisible; "vs visible start" scores against the first trace instead. Next to the
reducer's figures the benchmark prints those of two reference computations made directly from the
same records (`suggested_start` and `suggested_downtime`: the rules coordinator/state/estimator.py
now implements, the start here with a plain heartbeat interval as the gap), as a cross-check.

    .venv/bin/python -m benchmarks.rebalance_accuracy [--seeds 3]
"""
from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict

from benchmarks._stopping import stop_everything_at_exit
from coordinator.records import decode
from coordinator.simulator import STRATEGIES, Simulation, builtin_scenarios, load_scenario
from coordinator.state import GroupStore

HEARTBEAT_GAP_MS = 3_000


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.9 * (len(ordered) - 1))))]


def suggested_start(commits: list[tuple[int, tuple]], anchor: int, prev_end: int) -> int | None:
    """Each partition's last commit before the join ended is its owner's commit before rejoining
    (or before leaving); auto-commits that happened while the members had not yet heard of the
    rebalance are superseded by those. Walk back through these last commits while gaps stay under
    a heartbeat interval (a crashed member's old commits fall off), and take the earliest."""
    last: dict[tuple, int] = {}
    for ts, tp in commits:
        if prev_end < ts <= anchor:
            last[tp] = ts
    start = None
    for ts in sorted(set(last.values()), reverse=True):
        if start is not None and start - ts > HEARTBEAT_GAP_MS:
            break
        start = ts
    return start


def suggested_downtime(last_commit_before: int, resumed_ms: int) -> float:
    """Stop = the old owner's commit before it let go; resume = the record that hands the
    partition over (classic: the generation's group metadata; KIP-848: the new owner's record 8)."""
    return (resumed_ms - last_commit_before) / 1000.0


class Scores:
    def __init__(self) -> None:
        self.values: dict[str, list[float]] = defaultdict(list)
        self.within: dict[str, list[bool]] = defaultdict(list)
        self.counts: dict[str, int] = defaultdict(int)

    def add(self, name: str, error: float) -> None:
        self.values[name].append(error)

    def line(self, name: str, label: str) -> str:
        v = self.values.get(name)
        if not v:
            return f"  {label:<44} -"
        return f"  {label:<44} median {statistics.median(v):6.3f} s  p90 {p90(v):6.3f} s  (n={len(v)})"


def run_one(scenario_name: str, strategy: str, seed: int, scores: dict[str, Scores]) -> None:
    sim = Simulation(load_scenario(scenario_name), strategy, seed=seed)
    result = sim.run()
    store = GroupStore(topic_names={tid: name for name, tid in sim.topic_ids.items()})
    names = {tid: name for name, tid in sim.topic_ids.items()}
    estimated: dict = {}
    downtime: dict[tuple, list[float]] = defaultdict(list)   # KIP-848: several hand-overs per rebalance
    commits: list[tuple[int, tuple]] = []
    handed_over: dict[tuple, list[tuple[int, str]]] = defaultdict(list)   # KIP-848: (ts, member)
    owners: dict[str, set] = {}
    for rec in result.records:
        r = rec.record
        if r["type"] == 1 and r["value"] is not None:
            commits.append((rec.timestamp, (r["key"]["topic"], r["key"]["partition"])))
        if r["type"] == 8:
            mid = r["key"]["member_id"]
            new = set() if r["value"] is None else {
                (names[t["topic_id"]], p) for t in r["value"]["assigned_partitions"] for p in t["partitions"]}
            for tp in new - owners.get(mid, set()):
                handed_over[tp].append((rec.timestamp, mid))
            owners[mid] = new
        for event in store.apply(decode(rec.key, rec.value), partition=rec.partition, offset=rec.offset,
                                 timestamp_ms=rec.timestamp):
            e = event.to_dict()
            if e["event"] == "rebalance":
                estimated[e["to_generation"]] = e
            elif e["event"] == "rebalance_downtime":
                downtime[(e["to_generation"], e["topic"], e["partition_id"])].append(e["downtime_seconds"])
    protocol = result.protocol
    s = scores[protocol]
    prev_end = None
    for truth in result.truth.rebalances:
        first = truth.from_generation == 0 or not truth.members_after
        if first:
            prev_end = truth.end_ms
            continue
        true_s = (truth.end_ms - truth.start_ms) / 1000.0
        est = estimated.get(truth.to_generation)
        if est is None:
            s.counts["no estimate"] += 1
            prev_end = truth.end_ms
            continue
        error = abs(est["duration_seconds"] - true_s)
        s.add("duration", error)
        s.within["duration"].append(error <= max(0.1 * true_s, 0.5) if protocol == "classic" else error < 0.0005)
        s.counts[f"method {est['start_method']}"] += 1
        if protocol == "classic":
            s.add(f"duration [{truth.trigger}]", error)
            visible = truth.start_ms if truth.trigger == "member_left" else (truth.first_reaction_ms or truth.start_ms)
            s.add("vs visible start", abs(est["duration_seconds"] - (truth.end_ms - visible) / 1000.0))
            s.add("invisible part", (visible - truth.start_ms) / 1000.0)
            anchor = truth.join_end_ms if truth.join_end_ms is not None else truth.end_ms
            start = suggested_start(commits, anchor, prev_end or 0)
            if start is not None:
                alt = (truth.end_ms - start) / 1000.0
                s.add("suggested: duration", abs(alt - true_s))
                s.within["suggested"].append(abs(alt - true_s) <= max(0.1 * true_s, 0.5))
                s.add(f"suggested: duration [{truth.trigger}]", abs(alt - true_s))
                s.add("suggested: vs visible start", abs(alt - (truth.end_ms - visible) / 1000.0))
        for d in truth.downtime:
            if not d["moved"]:
                continue
            tp = (d["topic"], d["partition"])
            # the n-th stall of a partition in this rebalance against the n-th measured hand-over
            measured = downtime.get((truth.to_generation, *tp))
            got = measured.pop(0) if measured else None
            if got is None:
                s.counts["moved partitions without a downtime estimate"] += 1
            else:
                s.add("downtime", abs(got - d["seconds"]))
            before = [ts for ts, c in commits if c == tp and ts <= d["stopped_ms"] + 50]
            if protocol == "classic":
                resumed = truth.end_ms
            else:
                resumed = next((ts for ts, _ in handed_over[tp] if ts >= d["stopped_ms"]), None)
            if before and resumed is not None:
                s.add("suggested: downtime", abs(suggested_downtime(before[-1], resumed) - d["seconds"]))
        prev_end = truth.end_ms


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args(argv)
    scores: dict[str, Scores] = defaultdict(Scores)
    for name in builtin_scenarios():
        for strategy in STRATEGIES:
            for seed in range(1, args.seeds + 1):
                run_one(name, strategy, seed, scores)
    print(f"scenarios: {', '.join(builtin_scenarios())}; strategies: all {len(STRATEGIES)}; "
          f"seeds 1..{args.seeds}")
    for protocol, s in sorted(scores.items()):
        within = s.within["duration"]
        print(f"\n[{protocol}] {len(s.values['duration'])} rebalances; {dict(s.counts)}")
        print(s.line("duration", "duration abs error (reducer)") +
              f"  within target {sum(within)}/{len(within)}")
        for key in sorted(k for k in s.values if k.startswith("duration [")):
            print(s.line(key, "  " + key))
        print(s.line("vs visible start", "duration vs visible start (reducer)"))
        print(s.line("invisible part", "invisible part: true start -> first trace"))
        print(s.line("downtime", "downtime abs error (reducer)"))
        if s.values.get("suggested: duration"):
            sw = s.within["suggested"]
            print(s.line("suggested: duration", "suggested start: duration abs error") +
                  f"  within target {sum(sw)}/{len(sw)}")
            for key in sorted(k for k in s.values if k.startswith("suggested: duration [")):
                print(s.line(key, "  " + key[len("suggested: "):]))
            print(s.line("suggested: vs visible start", "suggested start: vs visible start"))
        print(s.line("suggested: downtime", "suggested downtime: abs error"))
    return 0


if __name__ == "__main__":
    stop_everything_at_exit()
    sys.exit(main())
