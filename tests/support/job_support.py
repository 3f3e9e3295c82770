"""Shared pieces of the Spark job tests: a mixed `__consumer_offsets` timeline, capture files and a
configured job."""
from __future__ import annotations

import os
from typing import Any

from coordinator.records import encode
from coordinator.state import GroupStore
from coordinator.state.context import Context
from tests.support.state_timeline import (Timeline, cg_current, cg_epoch, cg_member, cg_target, cg_target_epoch,
                            group_metadata, group_tombstone, member, offset_commit)
from streaming.sources.capture_file import CapturedRecord, encode_line
from streaming.config import load_config

T0 = 1_763_000_000_000  # 2025-11-13, a fixed clock for reproducible timelines
TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"


def mixed_timeline() -> Timeline:
    """Two classic groups (one rebalances, one is deleted) and one KIP-848 group."""
    tl = Timeline()
    ts = T0
    m1 = member("m1", ["orders"], [("orders", 0), ("orders", 1), ("orders", 2), ("orders", 3)])
    tl.add(group_metadata("orders-app", 1, [m1], state_ts=ts - 300), ts)
    for i in range(1, 6):
        ts += 1000
        for p in range(4):
            tl.add(offset_commit("orders-app", "orders", p, 100 * i + p, ts), ts)
    # m2 joins: m1 commits before rejoining, then generation 2 splits the partitions.
    ts += 400
    for p in range(4):
        tl.add(offset_commit("orders-app", "orders", p, 600 + p, ts), ts)
    ts += 2500
    m1b = member("m1", ["orders"], [("orders", 0), ("orders", 1)])
    m2 = member("m2", ["orders"], [("orders", 2), ("orders", 3)], client_id="client-2")
    tl.add(group_metadata("orders-app", 2, [m1b, m2], state_ts=ts - 200), ts)
    for i in range(3):
        ts += 1000
        for p in range(4):
            tl.add(offset_commit("orders-app", "orders", p, 700 + 10 * i + p, ts), ts)
    # A short-lived group that is deleted.
    tl.add(offset_commit("tmp-group", "events", 0, 42, ts), ts)
    tl.add(group_tombstone("tmp-group"), ts + 10)
    # A KIP-848 group: join, target, reconcile.
    ts += 1000
    tl.add(cg_member("payments", "c1", ["pay"]), ts)
    tl.add(cg_epoch("payments", 1), ts)
    tl.add(cg_target("payments", "c1", [(TOPIC_ID, 0), (TOPIC_ID, 1)]), ts)
    tl.add(cg_target_epoch("payments", 1), ts)
    tl.add(cg_current("payments", "c1", 1, [(TOPIC_ID, 0), (TOPIC_ID, 1)], previous=0), ts + 120)
    for p in range(2):
        tl.add(offset_commit("payments", "pay", p, 10 + p, ts + 500, version=4, leader_epoch=0), ts + 500)
    return tl


def timeline_lines(tl: Timeline, extra: list[CapturedRecord] = ()) -> list[str]:
    lines = []
    for rec, partition, offset, ts in tl.entries:
        key, value = encode(rec)
        lines.append(encode_line(CapturedRecord(partition, offset, ts, key, value)))
    lines.extend(encode_line(r) for r in extra)
    return lines


def bad_records(partition: int = 49) -> list[CapturedRecord]:
    """A truncated offset commit and a record of a type nobody knows, on a partition of their own."""
    key, value = encode({"type": 1, "type_name": "offset_commit",
                         "key": {"group": "g", "topic": "t", "partition": 0},
                         "value": {"version": 3, "offset": 1, "leader_epoch": -1, "metadata": "",
                                   "commit_timestamp": T0}})
    return [CapturedRecord(partition, 0, T0, key, value[:-3]),
            CapturedRecord(partition, 1, T0, b"\x00\x63\x00\x01g", b"\x00\x00")]


def write_capture(path: str, lines: list[str]) -> str:
    with open(path, "w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(line + "\n")
    return path


def reference_groups(tl: Timeline) -> dict[str, dict[str, Any]]:
    """What the pure reducer makes of the timeline: the job must agree."""
    store = GroupStore()
    tl.replay(store)
    return {name: state.to_dict() for name, state in store.groups().items()}


def replay_config(tmp_path, capture: str, **extra: str):
    env = {
        "GROUPSCOPE_SOURCE__TYPE": "replay",
        "GROUPSCOPE_SOURCE__REPLAY_PATH": capture,
        "GROUPSCOPE_CHECKPOINT__PATH": os.path.join(str(tmp_path), "checkpoint"),
        "GROUPSCOPE_HISTORY__PATH": os.path.join(str(tmp_path), "history"),
        "GROUPSCOPE_EXPORTER__LISTEN": "127.0.0.1:0",
        "GROUPSCOPE_TRIGGER__INTERVAL": "0.5s",
    }
    env.update(extra)
    return load_config(None, env=env)


def replay_to_end(spark, work_dir, capture: str):
    """A job over `capture` with its checkpoint and history under `work_dir`, run until it has
    read all of it, then stopped."""
    from streaming.job.lifecycle import Job

    job = Job(replay_config(work_dir, capture), spark=spark, start_exporter=False,
              start_poller=False)
    try:
        job.start().processAllAvailable()
    finally:
        job.stop()
    return job


__all__ = ["Context", "T0", "bad_records", "mixed_timeline", "reference_groups", "replay_config",
           "replay_to_end", "timeline_lines", "write_capture"]
