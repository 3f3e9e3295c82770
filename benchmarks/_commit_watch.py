"""When each commit reaches a job's view: the latency benchmarks' probe."""
from __future__ import annotations

import time
from typing import Callable


def watch_commits(view, on_new: Callable[[float, float], None]) -> None:
    """Calls `on_new(commit_timestamp_ms, now_ms)` for each offset that reaches `view` (a
    MonitorView) with a value it did not have before, right after the view took it: from a
    group lane's snapshot or from the offsets lane."""
    original = view.update_groups
    seen: dict[tuple[str, str, int], int] = {}

    def timed_update(snapshots) -> None:
        snapshots = list(snapshots)
        original(snapshots)
        now_ms = time.time() * 1000
        for snap in snapshots:
            for entry in snap.get("offsets") or ():
                key = (snap["group"], entry["topic"], entry["partition"])
                if seen.get(key) != entry["offset"]:
                    seen[key] = entry["offset"]
                    on_new(entry["commit_timestamp_ms"], now_ms)

    applied_original = view.apply_offsets

    def timed_offsets(applied, *args, **kwargs) -> None:
        applied_original(applied, *args, **kwargs)
        now_ms = time.time() * 1000
        for key in zip(applied.groups, applied.topics, applied.partitions.tolist(),
                       applied.offsets.tolist(), applied.commit_s.tolist()):
            if seen.get(key[:3]) != key[3]:
                seen[key[:3]] = key[3]
                on_new(key[4] * 1000, now_ms)

    view.update_groups = timed_update
    view.apply_offsets = timed_offsets
