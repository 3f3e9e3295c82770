"""Which garbage collections run inside a block of code, measured in an interpreter of its own.

Python's collector is one per process: its allocation counts and its on/off switch are shared by
every thread. In a full test run, threads that earlier tests left behind (py4j, Spark jobs, HTTP
servers) allocate too, so the count can cross a threshold in the middle of the measured block and
the block's own thread then starts a collection it did not cause. `collections_in_fresh_interpreter`
therefore runs the scenario in a new `python` process, where nothing else allocates.

A scenario is a module-level function `name(*args: str) -> list[int]`: it builds what it needs,
runs the code under test inside `garbage_collections()`, checks its result, and returns the
generations of the collections that started in the block.
"""
from __future__ import annotations

import gc
import importlib
import json
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

_REPO = Path(__file__).resolve().parents[2]


@contextmanager
def garbage_collections() -> Iterator[list[int]]:
    """Yields a list that receives the generation of each collection the block's own thread
    started.

    A full collection just before the block sets the collector's allocation counts to zero:
    otherwise whatever ran before could leave them just short of a threshold, and the few
    allocations before the code under test pauses the collector would start a collection the
    test blames on it."""
    started: list[int] = []
    mine = threading.get_ident()

    def count(phase: str, info: dict) -> None:
        if phase == "start" and threading.get_ident() == mine:
            started.append(info["generation"])

    gc.callbacks.append(count)
    try:
        gc.collect()
        started.clear()  # that collection is the probe's own
        yield started
    finally:
        gc.callbacks.remove(count)


def collections_in_fresh_interpreter(scenario: str, *args: str, timeout: float = 120.0) -> list[int]:
    """Runs `module:function` with `args` in a new interpreter; returns the collections it saw.
    A scenario whose own checks fail fails the caller with the scenario's traceback."""
    done = subprocess.run([sys.executable, "-m", "tests.support.collector_probe", scenario, *args],
                          cwd=_REPO, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"scenario {scenario} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _main(argv: list[str]) -> None:
    module, _, function = argv[0].partition(":")
    collections = getattr(importlib.import_module(module), function)(*argv[1:])
    print(json.dumps(list(collections)))


if __name__ == "__main__":
    _main(sys.argv[1:])
