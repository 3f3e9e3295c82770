"""A live terminal picture of the MonitorView: one row per group, then the latest rebalances.

`snapshot(view)` reads the view under its lock (lag, time lag and status are evaluated by the
exporter's own `evaluation.lag_part`, so the screen and /metrics agree); `render(data, width)` turns that
into text and is pure. `TerminalView` redraws every few seconds: clear and redraw on a terminal,
plain periodic printouts otherwise.
"""
from __future__ import annotations

import shutil
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence, TextIO

from coordinator.status import Status
from streaming.exporter.evaluation import lag_part
from streaming.exporter.view import MonitorView

RECENT_REBALANCES = 8
CLEAR = "\x1b[H\x1b[2J"


class RebalanceLogView(MonitorView):
    """A MonitorView that also remembers the latest rebalance events, for the screen."""

    def __init__(self, *args: Any, keep: int = 50, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.recent_rebalances: deque[dict[str, Any]] = deque(maxlen=keep)

    def apply_events(self, events: Iterable[Mapping[str, Any]]) -> None:
        events = list(events)
        with self.lock:
            super().apply_events(events)
            self.recent_rebalances.extend(dict(e) for e in events if e.get("event") == "rebalance")


@dataclass(frozen=True)
class GroupRow:
    group: str
    state: str
    protocol: str               # "<group type>/<assignor>"
    generation: int
    members: int
    lag: int | None             # sum over partitions; None before end offsets are known
    max_lag_seconds: float | None
    status: str
    rebalances: int
    last_rebalance_seconds: float | None
    partitions_moved: int


@dataclass(frozen=True)
class RebalanceRow:
    end_ms: int
    group: str
    from_generation: int | None
    to_generation: int | None
    joined: int
    left: int
    duration_seconds: float | None
    moved: int


@dataclass(frozen=True)
class ViewData:
    now_s: float
    title: tuple[str, ...]
    groups: tuple[GroupRow, ...]
    rebalances: tuple[RebalanceRow, ...]
    records: int
    ready: bool
    behind_s: float | None  # now minus the newest record the job has applied: its own delay


def snapshot(view: MonitorView, title: Sequence[str] = (),
             rebalances: int = RECENT_REBALANCES) -> ViewData:
    """What the screen shows, read from the view at its clock's now."""
    with view.lock:
        now = view.clock()
        lag = _lag_by_group(lag_part(view, now))
        rows = [_group_row(lag, view.groups[name]) for name in sorted(view.groups)]
        recent = getattr(view, "recent_rebalances", None)
        if recent is None:  # a plain view: each group's last rebalance
            recent = [g.snapshot["last_rebalance"] for g in view.groups.values()
                      if g.snapshot and g.snapshot.get("last_rebalance")]
        events = sorted(recent, key=lambda e: (e.get("end_ms") or e["timestamp_ms"], e["group"]))
        records = sum(view.records_total.values())
        ready = view.ready
        newest = max((g.snapshot.get("updated_ms") or 0 for g in view.groups.values()
                      if g.snapshot), default=0)
    return ViewData(now, tuple(title), tuple(rows),
                    tuple(_rebalance_row(e) for e in reversed(events[-rebalances:])), records,
                    ready, max(0.0, now - newest / 1000.0) if newest else None)


_GROUP_FIGURES = ("kafka_consumergroup_topic_lag", "kafka_consumergroup_group_max_lag_seconds",
                  "kafka_consumergroup_status")


def _lag_by_group(families) -> dict[str, dict[str, list]]:
    """group -> family -> its values, for the families a row shows."""
    by_group: dict[str, dict[str, list]] = {}
    for family in families:
        if family.name in _GROUP_FIGURES:
            for labels, value in family.samples():
                by_group.setdefault(labels[1], {}).setdefault(family.name, []).append(value)
    return by_group


def _group_row(lag: dict[str, dict[str, list]], group) -> GroupRow:
    sink = lag.get(group.name, {})
    snap = group.snapshot or {}
    topic_lags = sink.get("kafka_consumergroup_topic_lag", [])
    max_seconds = sink.get("kafka_consumergroup_group_max_lag_seconds", [])
    status = sink.get("kafka_consumergroup_status", [])
    last = snap.get("last_rebalance") or {}
    group_type = snap.get("group_type") or "?"
    return GroupRow(
        group=group.name,
        state=snap.get("state") or ("Dead" if group.dead_since_s is not None else "?"),
        protocol=f"{group_type}/{snap.get('protocol') or '-'}",
        generation=int(snap.get("generation") or 0),
        members=len(snap.get("members") or ()),
        lag=sum(topic_lags) if topic_lags else None,
        max_lag_seconds=max_seconds[0] if max_seconds and topic_lags else None,
        status=Status(status[0]).name if status else Status.NOTFOUND.name,
        rebalances=group.rebalances,
        last_rebalance_seconds=last.get("duration_seconds"),
        partitions_moved=group.partitions_moved,
    )


def _rebalance_row(event: Mapping[str, Any]) -> RebalanceRow:
    return RebalanceRow(
        end_ms=int(event.get("end_ms") or event["timestamp_ms"]), group=event["group"],
        from_generation=event.get("from_generation"), to_generation=event.get("to_generation"),
        joined=len(event.get("members_joined") or ()), left=len(event.get("members_left") or ()),
        duration_seconds=event.get("duration_seconds"),
        moved=len(event.get("partitions_moved") or ()))


# -- rendering ---------------------------------------------------------------------------------

COLUMNS = (  # header, width, right-aligned
    ("GROUP", 0, False), ("STATE", 11, False), ("PROTOCOL", 26, False), ("GEN", 4, True),
    ("MEMBERS", 7, True), ("LAG", 9, True), ("LAG(s)", 7, True), ("STATUS", 8, False),
    ("REBAL", 5, True), ("LAST(s)", 7, True), ("MOVED", 6, True))
MIN_GROUP_WIDTH = 12


def render(data: ViewData, width: int) -> str:
    """The screen as text, every line at most `width` characters."""
    fixed = sum(w + 1 for _, w, _ in COLUMNS[1:])
    longest = max((len(row.group) for row in data.groups), default=len("GROUP"))
    group_width = max(MIN_GROUP_WIDTH, min(longest, width - fixed - 1))
    widths = (group_width,) + tuple(w for _, w, _ in COLUMNS[1:])
    lines = list(data.title)
    status = (f"{_clock(data.now_s)} UTC  records {data.records}  "
              f"{'caught up' if data.ready else 'catching up'}  groups {len(data.groups)}")
    if data.behind_s is not None:
        status += f"  newest record {_seconds(data.behind_s)}s old (lag includes this delay)"
    lines.append(status)
    lines.append("")
    lines.append(_row([h for h, _, _ in COLUMNS], widths))
    for row in data.groups:
        lines.append(_row([row.group, row.state, row.protocol, str(row.generation),
                           str(row.members), _number(row.lag), _seconds(row.max_lag_seconds),
                           row.status, str(row.rebalances), _seconds(row.last_rebalance_seconds),
                           str(row.partitions_moved)], widths))
    if not data.groups:
        lines.append("(no groups yet)" if data.records else
                     "(no groups yet: waiting for the first micro-batch)")
    lines.append("")
    lines.append("LATEST REBALANCES")
    for r in data.rebalances:
        lines.append(f"{_clock(r.end_ms / 1000.0)}  {r.group}  gen {_gen(r.from_generation)}->"
                     f"{_gen(r.to_generation)}  members +{r.joined} -{r.left}  "
                     f"took {_seconds(r.duration_seconds)}s  moved {r.moved}")
    if not data.rebalances:
        lines.append("(none yet)")
    return "\n".join(line[:width].rstrip() for line in lines) + "\n"


def _row(cells: Sequence[str], widths: Sequence[int]) -> str:
    out = []
    for (_, _, right), cell, width in zip(COLUMNS, cells, widths):
        cell = cell if len(cell) <= width else cell[:width - 1] + "~"
        out.append(cell.rjust(width) if right else cell.ljust(width))
    return " ".join(out)


def _number(value: int | None) -> str:
    return "-" if value is None else str(value)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _gen(value: int | None) -> str:
    return "?" if value is None else str(value)


def _clock(epoch_s: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(epoch_s))


# -- the live loop -----------------------------------------------------------------------------

class TerminalView:
    """Redraws `snapshot(view)` every `interval_s` on `out` until `stop_event` is set."""

    def __init__(self, view: MonitorView, title: Callable[[], Sequence[str]] = lambda: (),
                 out: TextIO | None = None, interval_s: float | None = None) -> None:
        self.view = view
        self.title = title
        self.out = out or sys.stdout
        self.tty = bool(getattr(self.out, "isatty", lambda: False)())
        self.interval_s = interval_s if interval_s is not None else (2.0 if self.tty else 10.0)

    def draw(self) -> None:
        width = shutil.get_terminal_size((120, 40)).columns if self.tty else 160
        text = render(snapshot(self.view, self.title()), width)
        self.out.write((CLEAR + text) if self.tty else (text + "\n"))
        self.out.flush()

    def run(self, stop_event: threading.Event) -> None:
        while True:
            self.draw()
            if stop_event.wait(self.interval_s):
                return
