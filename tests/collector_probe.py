"""Which garbage collections run inside a block of code."""
from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def garbage_collections() -> Iterator[list[int]]:
    """Yields a list that receives the generation of each collection started in the block."""
    started: list[int] = []

    def count(phase: str, info: dict) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(count)
    try:
        yield started
    finally:
        gc.callbacks.remove(count)
