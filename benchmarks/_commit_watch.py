"""When each commit reaches a job's view: the latency benchmarks' probe."""
from __future__ import annotations

import time
from typing import Callable


def watch_commits(view, on_new: Callable[[float, float], None]) -> None:
    """Calls `on_new(commit_timestamp_ms, now_ms)` for each offset that reaches `view` (a
    MonitorView) with a value it did not have before, right after the view took it."""
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

    view.update_groups = timed_update
