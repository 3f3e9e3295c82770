"""The demo's terminal view: `render` over a hand-fed MonitorView."""
from __future__ import annotations

import io
import threading

from streaming.cli.terminal_view import RebalanceLogView, TerminalView, render, snapshot

NOW_S = 1_800_000_100.0   # 2027-01-15 08:01:40 UTC
T_MS = 1_800_000_000_000  # 100 s earlier


def member(member_id: str, partitions: list[int]) -> dict:
    return {"member_id": member_id, "group_instance_id": None, "client_id": member_id,
            "client_host": "/10.0.0.1", "rack": None, "session_timeout_ms": 45000,
            "rebalance_timeout_ms": 300000, "subscribed_topics": ["orders"],
            "subscribed_topic_regex": None, "assigned": [["orders", p] for p in partitions],
            "member_epoch": None, "member_state": None, "target": None,
            "pending_revocation": None, "extra": {}}


def rebalance(group: str, from_gen: int, to_gen: int, end_ms: int, duration: float,
              joined: list[str], moved: list[list]) -> dict:
    return {"event": "rebalance", "group": group, "timestamp_ms": end_ms, "partition": 3,
            "offset": 10 + to_gen, "group_type": "classic", "protocol": "range",
            "from_generation": from_gen, "to_generation": to_gen, "start_ms": end_ms - 1000,
            "start_method": "commit_burst", "end_ms": end_ms, "sync_seconds": 0.1,
            "duration_seconds": duration, "members_joined": joined, "members_left": [],
            "members_kept": [], "partitions_revoked": [], "partitions_assigned": [],
            "partitions_kept": [], "partitions_moved": moved,
            "quality": {"members": 2, "min_partitions": 1, "max_partitions": 1, "skew": 0,
                        "idle_members": 0, "unowned_partitions": None}}


def fed_view() -> RebalanceLogView:
    view = RebalanceLogView(clock=lambda: NOW_S)
    offsets = [{"topic": "orders", "partition": p, "offset": 100 + p, "leader_epoch": 0,
                "metadata": "", "commit_timestamp_ms": T_MS + 90_000, "topic_id": None}
               for p in range(2)]
    last = rebalance("orders-app", 1, 2, T_MS + 50_000, 2.5, ["m2"], [["orders", 1]])
    view.update_groups([
        {"group": "orders-app", "group_type": "classic", "protocol_type": "consumer",
         "protocol": "range", "state": "Stable", "generation": 2, "assignment_epoch": None,
         "leader": "m1", "current_state_timestamp_ms": T_MS, "coordinator_partition": 3,
         "members": [member("m1", [0]), member("m2", [1])], "subscribed_topics": ["orders"],
         "offsets": offsets, "last_rebalance": last, "updated_ms": T_MS + 90_000},
        {"group": "quiet-app", "group_type": "consumer", "protocol_type": "consumer",
         "protocol": "uniform", "state": "Empty", "generation": 4, "assignment_epoch": 4,
         "leader": None, "current_state_timestamp_ms": None, "coordinator_partition": 9,
         "members": [], "subscribed_topics": [], "offsets": [], "last_rebalance": None,
         "updated_ms": T_MS},
    ])
    view.apply_events([rebalance("orders-app", 0, 1, T_MS + 5_000, 3.25, ["m1"], []), last])
    view.update_topic_metadata({}, {"orders": 2})
    # The log end moved from 100/101 to 150/111 over 40 s: lag 50 + 10.
    view.update_end_offsets({("orders", 0): 100, ("orders", 1): 101}, {}, NOW_S - 40, 0.01)
    view.update_end_offsets({("orders", 0): 150, ("orders", 1): 111}, {}, NOW_S, 0.01)
    return view


def test_group_rows_and_rebalances():
    text = render(snapshot(fed_view(), title=["demo title"]), 120)
    lines = text.splitlines()
    assert lines[0] == "demo title"
    assert lines[1] == ("08:01:40 UTC  records 0  catching up  groups 2  newest record 10.0s old "
                        "(lag includes this delay)")
    header = lines.index(next(line for line in lines if line.startswith("GROUP")))
    assert lines[header] == ("GROUP        STATE       PROTOCOL                    GEN MEMBERS"
                             "       LAG  LAG(s) STATUS   REBAL LAST(s)  MOVED")
    # 60 behind; the oldest unread record (offset 100 of partition 0) was produced when the log
    # end passed 101, interpolated 0.8 s after the first sample: 39.2 s ago.
    assert lines[header + 1] == ("orders-app   Stable      classic/range                 2"
                                 "       2        60    39.2 OK           2     2.5      1")
    assert lines[header + 2] == ("quiet-app    Empty       consumer/uniform              4"
                                 "       0         -       - NOTFOUND     0       -      0")
    at = lines.index("LATEST REBALANCES")
    assert lines[at + 1:] == [
        "08:00:50  orders-app  gen 1->2  members +1 -0  took 2.5s  moved 1",
        "08:00:05  orders-app  gen 0->1  members +1 -0  took 3.2s  moved 0",
    ]


def test_narrow_terminal_cuts_lines_and_group_names():
    view = fed_view()
    view.update_groups([{"group": "a-very-long-consumer-group-name-indeed", "state": "Empty",
                         "generation": 1, "members": [], "offsets": []}])
    text = render(snapshot(view), 80)
    assert all(len(line) <= 80 for line in text.splitlines())
    assert any(line.startswith("a-very-long~ ") for line in text.splitlines())


def test_empty_view_and_plain_output():
    out = io.StringIO()
    stop = threading.Event()
    stop.set()
    TerminalView(RebalanceLogView(clock=lambda: NOW_S), lambda: ["t"], out=out).run(stop)
    text = out.getvalue()
    assert "\x1b[" not in text  # not a terminal: no escape codes
    assert "(no groups yet: waiting for the first micro-batch)" in text and "(none yet)" in text
