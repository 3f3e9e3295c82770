"""`groupscope history --group G [--since T] [--at T]`: what a group looked like and what changed.

Reads the job's history sink (history.path): the snapshot in force at `--at` (default: the latest)
and every rebalance and membership event since `--since`. Only the date folders of the range are
opened, and in them only the row groups that may hold the group (streaming/job/history.py).
"""
from __future__ import annotations

import json
import os
import re
import time
from datetime import datetime, timezone
from typing import Any

from streaming.errors import UserError
from streaming.cli.commands.capture import parse_time_ms
from streaming.config import parse_duration
from streaming.job.history import read_history, snapshot_at, unique_events

_AGO = re.compile(r"^\s*\d+(?:\.\d+)?\s*(ms|s|m|h|d)\s*$")


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "history", help="a group's past: its state at a time and the rebalances since",
        description="Query the history sink written by `groupscope run`.")
    parser.add_argument("--group", required=True, help="consumer group id")
    parser.add_argument("--since", help="events from this time: ISO-8601, epoch ms, or a "
                        "duration ago such as 6h or 1d (default: all)")
    parser.add_argument("--at", help="show the group's state at this time, as --since "
                        "(default: latest)")
    parser.add_argument("-c", "--config", help="config file (history.path comes from it)")
    parser.add_argument("--path", help="history directory (overrides the config)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.set_defaults(func=run)


def _when(ms: int | None) -> str:
    if ms is None or ms < 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000.0, timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def _parts(pairs: list) -> str:
    return ", ".join(f"{t}-{p}" for t, p in pairs) or "-"


def _seconds(value: Any) -> str:
    """A duration, or "-" where it is not known (the admin source sees no rebalance's start)."""
    return "-" if value is None else f"{value:.3f}s"


def describe_event(event: dict[str, Any]) -> str:
    kind = event["event"]
    if kind == "rebalance":
        return (f"rebalance gen {event.get('from_generation')} -> {event.get('to_generation')} "
                f"({event.get('protocol') or '-'}): {_seconds(event.get('duration_seconds'))}, "
                f"start {event.get('start_method')}; joined {len(event.get('members_joined') or [])}, "
                f"left {len(event.get('members_left') or [])}, moved "
                f"{len(event.get('partitions_moved') or [])} partitions")
    if kind == "rebalance_downtime":
        return (f"downtime {event.get('topic')}-{event.get('partition_id')}: "
                f"{_seconds(event.get('downtime_seconds'))}")
    if kind in ("member_joined", "member_left"):
        return f"{kind.replace('_', ' ')} {event.get('member_id')}"
    if kind == "offset_deleted":
        return f"offset deleted {event.get('topic')}-{event.get('partition_id')}"
    return kind.replace("_", " ")


def describe_snapshot(snap: dict[str, Any]) -> list[str]:
    lines = [f"state {snap['state']}, {snap['group_type']} group, protocol "
             f"{snap.get('protocol') or '-'}, generation {snap['generation']}, "
             f"{len(snap['members'])} members (as of {_when(snap.get('updated_ms'))})"]
    for m in snap["members"]:
        lines.append(f"  {m['member_id']} ({m.get('client_id')}@{m.get('client_host')}): "
                     f"{_parts(m.get('assigned') or [])}")
    for o in snap.get("offsets", []):
        lines.append(f"  offset {o['topic']}-{o['partition']} = {o['offset']} "
                     f"(committed {_when(o.get('commit_timestamp_ms'))})")
    return lines


def parse_when(text: str, flag: str, now_s: float | None = None) -> int:
    """Epoch ms from ISO-8601, epoch ms, or a duration before now ("6h", "1d")."""
    if _AGO.match(text):
        now_s = time.time() if now_s is None else now_s
        return int((now_s - parse_duration(text, flag)) * 1000)
    return parse_time_ms(text, flag)


def run(args) -> int:
    path = args.path
    if path is None:
        from streaming.config import load_config
        path = load_config(args.config).history.path
    if not os.path.isdir(path):
        raise UserError(f"no history at {path}: run the job first, or pass --path")
    since = parse_when(args.since, "--since") if args.since else None
    at = parse_when(args.at, "--at") if args.at else None
    snapshot = snapshot_at(path, args.group, at)
    events = unique_events(read_history(path, "events", group=args.group, since_ms=since, until_ms=at))
    if snapshot is None and not events:
        raise UserError(f"group {args.group!r} has no history in {path}")
    if args.json:
        print(json.dumps({"group": args.group, "snapshot": snapshot, "events": events}, indent=2))
        return 0
    print(f"group {args.group}" + (f" at {_when(at)}" if at is not None else ""))
    if snapshot is not None:
        print("\n".join(describe_snapshot(snapshot)))
    print(f"events{' since ' + _when(since) if since is not None else ''}:")
    for event in events:
        print(f"  {_when(event['timestamp_ms'])}  {describe_event(event)}")
    return 0
