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

Parts are kept as UTF-8 bytes, one slot per family (FamilyChunks), and a scrape is served as a
stream (`exposition`): a family at a time, joined from the parts it took under the lock, so that
a scrape builds neither the whole text nor its encoded copy (at 10^5 groups x 10 partitions that
was a gigabyte each, per scrape; `text()`, which does, is for tests and tools).
"""
from __future__ import annotations

import threading
from typing import Iterator

from streaming.exporter.evaluation import Evaluator, Sink, family_specs
from streaming.exporter.exposition import Family, LabelCache, render_header, render_samples
from streaming.gc_pause import collector_paused
from streaming.exporter.view import MonitorView


_GROUPS_PER_LOCK = 64  # groups evaluated per hold of the view's lock during a refresh

# A rendered part: one slot per served family (in `MetricsCache.specs` order), b"" where the part
# has no sample of that family.
FamilyChunks = tuple[bytes, ...]


class MetricsCache:
    def __init__(self, view: MonitorView, max_age_s: float = 30.0) -> None:
        self.view = view
        self.max_age_s = max_age_s
        self.specs: dict[str, Family] = family_specs(view.settings.compat, view.settings.granularity)
        self._slot = {name: i for i, name in enumerate(self.specs)}
        self._headers = [render_header(family).encode() for family in self.specs.values()]
        self._empty: FamilyChunks = (b"",) * len(self.specs)
        # Families each part has ever had samples of: a scrape joins only those.
        self._state_families: set[int] = set()
        self._lag_families: set[int] = set()
        self.labels = LabelCache()
        self.state_chunks: dict[str, FamilyChunks] = {}
        self.lag_chunks: dict[str, FamilyChunks] = {}
        self.topic_chunks: FamilyChunks = self._empty
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
            lag: dict[str, FamilyChunks] = {}
            previous, at_rest = self.lag_chunks, set()
            for first in range(0, len(names), _GROUPS_PER_LOCK):
                with view.lock:
                    for name in names[first:first + _GROUPS_PER_LOCK]:
                        group = view.groups.get(name)
                        if group is None:
                            continue
                        if full or name in changed or name not in state:
                            state[name] = self._render_part(evaluator.group_state, group,
                                                            self._state_families)
                        if (not full and name not in changed and name in self.at_rest
                                and name in previous
                                and (not moved or moved.isdisjoint(group.partitions))):
                            # Nothing lag_at_rest reads has changed: still at rest.
                            lag[name] = previous[name]
                            at_rest.add(name)
                            continue
                        lag[name] = self._render_part(evaluator.group_lag, group,
                                                      self._lag_families)
                        if evaluator.lag_at_rest(group):
                            at_rest.add(name)
            self.state_chunks, self.lag_chunks, self.at_rest = state, lag, at_rest
            self.refreshed_at = now
            self.refreshed_version, self.refreshed_ends_version = version, ends_version

    def text(self) -> str:
        """The whole exposition, up to date with every change the view has seen."""
        return b"".join(self.exposition()).decode("utf-8")

    def exposition(self) -> Iterator[bytes]:
        """The whole exposition as UTF-8 pieces, up to date with every change the view has
        seen when it is called. The parts are taken under the lock; joining them happens as
        the pieces are read, a family at a time."""
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
                        self.state_chunks[name] = self._render_part(
                            evaluator.group_state, group, self._state_families)
                        self.lag_chunks[name] = self._render_part(
                            evaluator.group_lag, group, self._lag_families)
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
            names = sorted(self.state_chunks)
            states = [self.state_chunks[name] for name in names]
            lags = [self.lag_chunks.get(name, self._empty) for name in names]
            topics = self.topic_chunks
            state_families, lag_families = set(self._state_families), set(self._lag_families)
        # Parts are never changed in place (a render replaces them), so the lists taken above
        # stay a consistent picture while a refresh goes on.
        return self._pieces(states, lags, topics, monitor_chunks, state_families, lag_families)

    def _pieces(self, states: list[FamilyChunks], lags: list[FamilyChunks],
                topics: FamilyChunks, monitor: FamilyChunks, state_families: set[int],
                lag_families: set[int]) -> Iterator[bytes]:
        for slot, header in enumerate(self._headers):
            yield header
            if slot in state_families:
                yield b"".join([chunks[slot] for chunks in states])
            if slot in lag_families:
                yield b"".join([chunks[slot] for chunks in lags])
            yield topics[slot]
            yield monitor[slot]

    def _render_part(self, evaluate, group, families: set[int]) -> FamilyChunks:
        sink: Sink = {}
        evaluate(group, sink)
        families.update(self._slot[name] for name, samples in sink.items() if samples)
        return self._render(sink)

    def _render(self, sink: Sink) -> FamilyChunks:
        specs, labels, slot = self.specs, self.labels, self._slot
        chunks = list(self._empty)
        for name, samples in sink.items():
            if samples:
                chunks[slot[name]] = render_samples(specs[name], samples, labels).encode()
        return tuple(chunks)
