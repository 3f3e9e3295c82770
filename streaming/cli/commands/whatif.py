"""`groupscope whatif CAPTURE`: what each assignor would do with a group's last known members.

The capture (docs/capture-format.md) is replayed through the state reducer; the group's members,
subscriptions and current assignment are handed to every assignor, which prints its assignment,
partitions per member and the partitions that would move.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from coordinator.assignors import STRATEGIES, AssignorError, assign
from coordinator.assignors.quality import moved, quality
from coordinator.records import DecodeError, decode
from coordinator.simulator import from_capture
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
    parser.set_defaults(func=run)


def load_store(path: Path) -> GroupStore:
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
        store.apply(record, partition=partition, offset=offset, timestamp_ms=timestamp)
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


def _partition_counts(state: GroupState, overrides: list[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    seen = [tp for tps in state.owners().values() for tp in tps]
    seen += [(o["topic"], o["partition"]) for o in state.to_dict()["offsets"]]
    for topic, partition in seen:
        counts[topic] = max(counts.get(topic, 0), int(partition) + 1)
    for item in overrides:
        topic, sep, n = item.partition("=")
        if not sep or not topic or not n.isdigit():
            raise UserError(f"--partitions expects TOPIC=N, got {item!r}")
        counts[topic] = int(n)
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


def run(args: argparse.Namespace) -> int:
    state = _pick_group(load_store(Path(args.capture)), args.group)
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
    return 0
