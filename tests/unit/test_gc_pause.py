"""The cyclic collector's pause: off while any pause in any thread lasts, then as it was."""
from __future__ import annotations

import gc
import threading

from streaming.gc_pause import collector_paused


def test_a_pause_that_began_earlier_in_another_thread_does_not_end_this_one():
    entered, release = threading.Event(), threading.Event()

    def other_pause() -> None:
        with collector_paused():
            entered.set()
            release.wait(10)

    assert gc.isenabled()
    other = threading.Thread(target=other_pause)
    other.start()
    assert entered.wait(10)  # the other thread's pause began first
    with collector_paused():
        release.set()
        other.join(10)
        assert not other.is_alive()
        assert not gc.isenabled()  # the other thread's pause ended; this one has not
    assert gc.isenabled()


def test_nested_pauses_and_a_collector_that_was_off():
    with collector_paused():
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # off before, off after
    finally:
        gc.enable()
