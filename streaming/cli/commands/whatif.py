"""`groupscope whatif CAPTURE`: what each assignor would do with a group's last known members,
and what the group's own rebalances would have cost under each of them.

The capture (docs/capture-format.md) is replayed through the state reducer; the group's members,
subscriptions and current assignment are handed to every assignor, which prints its assignment,
partitions per member and the partitions that would move. Then the group's history in the capture
(members joining and leaving, at their moments, on topics produced at the rates its commits show)
is run through the simulator under every strategy (coordinator/simulator/replay.py), whose
timings were checked against real clients (docs/simulator.md).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from coordinator.assignors import STRATEGIES, AssignorError, assign
from coordinator.assignors.quality import moved, quality
from coordinator.records import DecodeError, decode
from coordinator.simulator import STRATEGIES as SIMULATED, Simulation, format_table, from_capture
from coordinator.simulator.replay import HistoryRecorder, scenario_from_history
from coordinator.state import GroupState, GroupStore
from streaming.errors import UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "whatif", help="compare every assignor on a group's last known subscriptions",
        description="Replay a capture of __consumer_offsets, take a group's last known members and "
                    "subscriptions, and show what each assignor would assign and move.")
    parser.add_argument("capture", help="capture file (JSON lines, docs/capture-format.md)")
    parser.add_argument("--group", help="group id (needed when the capture holds several groups)")
    parser.add_argument("--partitions", action="append", default=[], metavar="TOPIC=N",
                        help="partition count of a topic (default: highest partition seen + 1)")
    parser.add_argument("--strategy", action="append", choices=STRATEGIES, dest="strategies",
                        help="assignor to try (repeatable; default: all)")
    parser.add_argument("--budget", type=float, default=5.0, metavar="SECONDS",
                        help="latency budget of the replay: messages processed later count as delayed "
                             "(default: %(default)s)")
    parser.add_argument("--rate", action="append", default=[], metavar="TOPIC=N",
                        help="messages/s produced to a topic, for the replay (default: from the commits)")
    parser.add_argument("--processing-rate", type=float, metavar="N",
                        help="messages/s one consumer processes per partition (default: ten times the "
                             "busiest partition's produce rate)")
    parser.add_argument("--no-replay", action="store_true",
                        help="only the assignments, without replaying the group's history")
    parser.set_defaults(func=run)


def load_store(path: Path, recorder: HistoryRecorder | None = None) -> GroupStore:
    store = GroupStore()
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UserError(f"cannot read capture {path}: {exc.strerror}") from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            partition, offset, timestamp, key, value = from_capture(json.loads(line))
        except ValueError as exc:
            raise UserError(f"{path}:{n}: {exc}") from None
        try:
            record = decode(key, value)
        except DecodeError:
            continue  # records the decoder cannot read do not describe group membership
        events = store.apply(record, partition=partition, offset=offset, timestamp_ms=timestamp)
        if recorder is not None:
            recorder.add(events)
    # KIP-848 assignments name topics by id; commits of 4.1+ clients carry the id with the name.
    names = {o["topic_id"]: o["topic"] for st in store.groups().values()
             for o in st.to_dict()["offsets"] if o.get("topic_id")}
    if names:
        store.set_topic_names(names)
    return store


def _pick_group(store: GroupStore, wanted: str | None) -> GroupState:
    groups = {gid: st for gid, st in store.groups().items() if st.subscriptions()}
    if wanted is not None:
        if wanted not in groups:
            raise UserError(f"group {wanted!r} has no known members in the capture; "
                            f"groups with members: {', '.join(sorted(groups)) or 'none'}")
        return groups[wanted]
    if len(groups) != 1:
        raise UserError("the capture holds " + (f"several groups with members ({', '.join(sorted(groups))}); "
                                                "choose one with --group" if groups else "no group with members"))
    return next(iter(groups.values()))


def _topic_numbers(items: list[str], flag: str, cast: type) -> dict[str, float]:
    out = {}
    for item in items:
        topic, sep, n = item.partition("=")
        try:
            value = cast(n)
        except ValueError:
            value = None
        if not sep or not topic or value is None or value < 0:
            raise UserError(f"{flag} expects TOPIC=N with N a non-negative number, got {item!r}")
        out[topic] = value
    return out


def _partition_counts(state: GroupState, overrides: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    seen = [tp for tps in state.owners().values() for tp in tps]
    seen += [(o["topic"], o["partition"]) for o in state.to_dict()["offsets"]]
    for topic, partition in seen:
        counts[topic] = max(counts.get(topic, 0), int(partition) + 1)
    counts.update(_topic_numbers(overrides, "--partitions", int))
    return counts


def _compact(partitions: list[tuple[str, int]]) -> str:
    by_topic: dict[str, list[int]] = {}
    for t, p in sorted(partitions):
        by_topic.setdefault(t, []).append(p)
    parts = []
    for topic, ps in by_topic.items():
        runs, start = [], ps[0]
        for prev, cur in zip(ps, ps[1:] + [None]):
            if cur != prev + 1:
                runs.append(str(start) if start == prev else f"{start}-{prev}")
                start = cur
        parts.append(f"{topic}:{','.join(runs)}")
    return " ".join(parts) or "-"


def replay(recorder: HistoryRecorder, state: GroupState, counts: dict[str, int],
           args: argparse.Namespace) -> None:
    """The group's membership changes in the capture, run through the simulator per strategy."""
    members = state.member_views().values()
    sessions = [m["session_timeout_ms"] for m in members if m.get("session_timeout_ms")]
    rebalance = [m["rebalance_timeout_ms"] for m in members if m.get("rebalance_timeout_ms")]
    history = recorder.history(state.group, counts, max(sessions, default=None), max(rebalance, default=None))
    if history.changes == 0:
        print("\nreplay: the capture shows no change of this group's members after it formed; nothing to replay")
        return
    rates = {**history.rates, **_topic_numbers(args.rate, "--rate", float)}
    unknown = sorted(set(counts) - set(rates))
    history = dataclasses.replace(history, rates=rates)
    scenario = scenario_from_history(history, SIMULATED, processing_rate=args.processing_rate,
                                     latency_budget_ms=int(args.budget * 1000))
    print(f"\nreplay: this group's {history.changes} membership changes "
          f"({' -> '.join(str(n) for _t, n in history.membership)} members) under each strategy; "
          f"topics at {', '.join(f'{t.name} {t.rate:.1f}/s' for t in scenario.topics)}, "
          f"latency budget {args.budget:g} s")
    if unknown:
        print(f"  no commits to measure the rate of {', '.join(unknown)} by: assumed 1 message/s (set --rate)")
    summaries = [Simulation(scenario, strategy, seed=0).run().summary for strategy in SIMULATED]
    print(format_table(summaries))
    best = min(summaries, key=lambda s: (s.over_budget, s.stopped_partition_seconds, s.partitions_moved))
    print(f"least harm: {best.strategy} ({best.over_budget} messages over the budget, "
          f"{best.stopped_partition_seconds:.1f} partition-seconds stopped, {best.partitions_moved} moved)")


def run(args: argparse.Namespace) -> int:
    recorder = HistoryRecorder()
    state = _pick_group(load_store(Path(args.capture), recorder), args.group)
    subscriptions = state.subscriptions()
    current = {m: sorted(tps) for m, tps in state.owners().items()}
    counts = _partition_counts(state, args.partitions)
    view = state.to_dict()
    generations = {m: view["generation"] for m in subscriptions}
    print(f"group {state.group}: {len(subscriptions)} members, generation {view['generation']}, "
          f"assignor now {view['protocol'] or '-'}; partitions {counts}")
    for strategy in args.strategies or STRATEGIES:
        try:
            result = assign(strategy, counts, subscriptions, previous=current, generations=generations)
            note = ""
            if strategy == "cooperative-sticky":
                withheld = sum(len(v) for v in current.values()) - sum(len(v) for v in result.values())
                result = assign(strategy, counts, subscriptions, previous=result, generations=generations)
                note = f" (two rounds; {max(0, withheld)} withheld in the first)"
        except AssignorError as exc:
            print(f"\n{strategy}: cannot assign ({exc})")
            continue
        q = quality(result, subscriptions, counts)
        move = moved(current, result)
        print(f"\n{strategy}: {len(move)} partitions would move{note}; per member "
              f"min {q.min_partitions} max {q.max_partitions} skew {q.skew} idle {len(q.idle_members)}")
        for member in sorted(result):
            print(f"  {member}  {len(result[member]):>3}  {_compact(result[member])}")
        if move:
            print(f"  moved: {_compact(move)}")
    if not args.no_replay:
        replay(recorder, state, counts, args)
    return 0
