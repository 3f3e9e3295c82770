"""Waiting in tests for something the system under test does by itself."""
from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def until(what: str, check: Callable[[], T], timeout_s: float = 60.0, poll_s: float = 0.25) -> T:
    """`check()`'s first true answer; an AssertionError naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout_s:.0f} s")
        time.sleep(poll_s)
