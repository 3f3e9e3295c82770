"""Pre-rendered exposition text, so that a scrape costs rendering-free concatenation.

A group's series fall in two parts, rendered and cached separately (per group and family: the
text format needs each family's samples together):
- its *state* (info, assignment, committed offsets, rebalance counters and histograms) changes
  only when the group changes (or topic metadata does);
- its *lag* part (lag, time lag, status, roll-ups) also changes when end offsets change and, for
  time lag and the STOP rule, as time passes.

`refresh()` re-renders the lag part of every group whose figures can have changed (and
everything when metadata changed): a group at rest (every partition at its end offset, see
`Evaluator.lag_at_rest`) keeps its lag part until it commits or one of its partitions' end
offsets or log start moves, since time alone changes nothing in it. The
end-offset poller calls it right after each poll, off the scrape path. A scrape re-renders the
groups the job changed since the last refresh (both parts), refreshes itself only if no refresh
happened since the end offsets changed or for `max_age_s`, and evaluates the monitor's own
figures. So the job never needs to call `refresh()` after a batch.
"""
from __future__ import annotations

import threading

from streaming.exporter.evaluation import Evaluator, Sink, family_specs
from streaming.exporter.exposition import Family, LabelCache, render_header, render_samples
from streaming.gc_pause import collector_paused
from streaming.exporter.view import MonitorView


_GROUPS_PER_LOCK = 64  # groups evaluated per hold of the view's lock during a refresh


class MetricsCache:
    def __init__(self, view: MonitorView, max_age_s: float = 30.0) -> None:
        self.view = view
        self.max_age_s = max_age_s
        self.specs: dict[str, Family] = family_specs(view.settings.compat)
        self.labels = LabelCache()
        self.state_chunks: dict[str, dict[str, str]] = {}
        self.lag_chunks: dict[str, dict[str, str]] = {}
        self.topic_chunks: dict[str, str] = {}
        self.at_rest: set[str] = set()  # groups whose cached lag part time cannot change
        self.refreshed_at: float | None = None
        self.refreshed_version = -1
        self.refreshed_ends_version = -1
        # Guards this cache. Taken before the view's lock, never after it. A refresh holds the
        # view's lock only a few groups at a time, so the job's updates are not held up by it.
        self._lock = threading.RLock()

    @collector_paused()  # it builds a lot and keeps it: see streaming.gc_pause
    def refresh(self) -> None:
        """Re-evaluate lag figures of every group (and everything if metadata changed)."""
        view = self.view
        with self._lock:
            with view.lock:
                now = view.clock()
                view.housekeeping(now)
                changed = view.take_changed_groups()
                moved = view.take_moved_ends()
                version, ends_version = view.version, view.ends_version
                full = self.refreshed_at is None or version != self.refreshed_version
                names = list(view.groups)
                evaluator = Evaluator(view, now)
                if full:
                    self.labels.start_render()
                sink: Sink = {}
                evaluator.topics(sink)
                self.topic_chunks = self._render(sink)
            state = {} if full else self.state_chunks
            lag: dict[str, dict[str, str]] = {}
            previous, at_rest = self.lag_chunks, set()
            for first in range(0, len(names), _GROUPS_PER_LOCK):
                with view.lock:
                    for name in names[first:first + _GROUPS_PER_LOCK]:
                        group = view.groups.get(name)
                        if group is None:
                            continue
                        if full or name in changed or name not in state:
                            state[name] = self._render_part(evaluator.group_state, group)
                        if (not full and name not in changed and name in self.at_rest
                                and name in previous
                                and (not moved or moved.isdisjoint(group.partitions))):
                            # Nothing lag_at_rest reads has changed: still at rest.
                            lag[name] = previous[name]
                            at_rest.add(name)
                            continue
                        lag[name] = self._render_part(evaluator.group_lag, group)
                        if evaluator.lag_at_rest(group):
                            at_rest.add(name)
            self.state_chunks, self.lag_chunks, self.at_rest = state, lag, at_rest
            self.refreshed_at = now
            self.refreshed_version, self.refreshed_ends_version = version, ends_version

    def text(self) -> str:
        """The whole exposition, up to date with every change the view has seen."""
        view = self.view
        with self._lock:
            with view.lock:
                now = view.clock()
                stale = (self.refreshed_at is None or view.version != self.refreshed_version
                         or view.ends_version != self.refreshed_ends_version
                         or now - self.refreshed_at > self.max_age_s)
            if stale:
                self.refresh()
            with view.lock:
                now = view.clock()
                view.housekeeping(now)
                evaluator = Evaluator(view, now)
                for name in view.take_changed_groups():
                    group = view.groups.get(name)
                    if group is not None:
                        self.state_chunks[name] = self._render_part(evaluator.group_state, group)
                        self.lag_chunks[name] = self._render_part(evaluator.group_lag, group)
                        if evaluator.lag_at_rest(group):
                            self.at_rest.add(name)
                        else:
                            self.at_rest.discard(name)
                for chunks in (self.state_chunks, self.lag_chunks):
                    for name in [name for name in chunks if name not in view.groups]:
                        del chunks[name]
                monitor: Sink = {}
                evaluator.monitor(monitor)
            monitor_chunks = self._render(monitor)
            ordered = [{**self.state_chunks[name], **self.lag_chunks.get(name, {})}
                       for name in sorted(self.state_chunks)]
            parts: list[str] = []
            for family_name, family in self.specs.items():
                parts.append(render_header(family))
                for chunks in ordered:
                    chunk = chunks.get(family_name)
                    if chunk:
                        parts.append(chunk)
                for source in (self.topic_chunks, monitor_chunks):
                    chunk = source.get(family_name)
                    if chunk:
                        parts.append(chunk)
            return "".join(parts)

    def _render_part(self, evaluate, group) -> dict[str, str]:
        sink: Sink = {}
        evaluate(group, sink)
        return self._render(sink)

    def _render(self, sink: Sink) -> dict[str, str]:
        specs, labels = self.specs, self.labels
        return {name: render_samples(specs[name], samples, labels)
                for name, samples in sink.items() if samples}
