"""OutageLog: one line when a dependency starts failing, a reminder a minute while it goes on,
one when it answers again."""
from __future__ import annotations

import logging

from streaming.outage_log import OutageLog


def test_an_outage_is_told_once_reminded_and_ended(caplog) -> None:
    now = [100.0]
    outage = OutageLog(logging.getLogger("groupscope.test"), "reading X", remind_s=60,
                       clock=lambda: now[0])
    caplog.set_level(logging.WARNING)
    outage.answered()  # nothing failed yet: nothing to say
    for step in range(30):  # every 5 s for 150 s
        outage.failed(ConnectionError("refused"), "keeping what was read")
        now[0] += 5
    outage.answered()
    outage.answered()
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "reading X failed (refused); keeping what was read",
        "reading X still failing after 60 s and 13 attempts (refused); keeping what was read",
        "reading X still failing after 120 s and 25 attempts (refused); keeping what was read",
        "reading X answers again after 150 s",
    ]
    outage.failed("timed out", "retrying")  # a new outage starts its own count
    assert caplog.records[-1].getMessage() == "reading X failed (timed out); retrying"
