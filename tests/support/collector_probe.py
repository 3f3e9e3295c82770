"""Which garbage collections run inside a block of code."""
from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def garbage_collections() -> Iterator[list[int]]:
    """Yields a list that receives the generation of each collection the block's own thread
    started. (Collections other threads start are theirs: after the Spark tests, threads of
    py4j and of jobs that other tests ran may still be allocating in the same process.)

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
