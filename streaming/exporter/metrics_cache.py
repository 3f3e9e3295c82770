"""Rendered exposition text, so that a scrape costs little more than concatenation.

The series fall in parts, each rendered and cached (per family: the text format needs each
family's samples together):
- each group's *state* (info, assignment, rebalance counters and histograms), rendered per group
  and only again when the group changes (or topic metadata does); except the plain groups'
  (never a member, generation or rebalance: `streaming.exporter.plain_states`), rendered as one
  block of columns again when one of them changes;
- every group's *lag* part at once (committed offsets, lag, time lag, status, their roll-ups),
  evaluated and rendered a column at a time (`evaluation.lag_part`): it changes with commits, end
  offsets and, for time lag and the STOP rule, time;
- the topic partitions' end offsets, and the monitor's own figures (at every scrape).

`refresh()` renders the lag part again, and the state of the groups that changed. The end-offset
poller calls it right after a poll (`refresh_if_read`: when a scrape read the last render, and
no other poll comes before the next scrape is due), off the scrape path; it starts that poll
when `poll_by` says, so the render is done as the scrape comes (`poller_hooks` wires both). A
scrape refreshes first if the view changed since (a commit, a poll, metadata) or `max_age_s`
went by, so the job never needs to call `refresh()` after a batch.

Parts are served as a stream (`exposition`): a family at a time, joined from the parts taken
under the lock, so that a scrape builds neither the whole text nor its encoded copy (`text()`,
which does, is for tests and tools). The lag part's large families are kept gzipped between
scrapes (`streaming.exporter.gzip_member`): about 1 KB of text a group-partition compressed
about 30 to 1, which a gzip scrape sends as it is. They are kept in blocks of lines, and a
render writes again only the blocks whose lines changed (`streaming.exporter.lag_blocks`).

A scrape that asks for some families only (`name[]`) gets those written, the others when
something asks for them; one that asks for the committed offsets alone is answered from the
view's table with nothing evaluated (`lag_render.committed_families`), with blocks and a lock
of its own, so that it never waits for a render of the whole exposition: at 10^6
group-partitions 0.1 s against seconds for the whole lag part.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Collection, Iterable, Iterator

import pyarrow as pa

from streaming.exporter.catalog import PARTITION, series_names
from streaming.exporter.gzip_member import GzipMember, kept, plain
from streaming.exporter.evaluation import Evaluator, Sink, family_specs, lag_part, log_part
from streaming.exporter.lag_blocks import BLOCK_LINES, LagBlocks
from streaming.exporter.lag_render import COMMITTED_FAMILIES, ColumnFamily, committed_families
from streaming.exporter.plain_states import is_plain, plain_state_part
from streaming.exporter.exposition import Family, LabelCache, render_header, render_samples
from streaming.gc_pause import collector_paused
from streaming.exporter.view import MonitorView


_POLL_S = 1.0  # allowed for an end-offset poll before its render (MetricsCache.poll_by)
_GROUPS_PER_LOCK = 64  # groups evaluated per hold of the view's lock during a refresh

# A rendered part: one slot per served family (in `MetricsCache.specs` order), b"" where the part
# has no sample of that family (bytes; for the lag part a memoryview of Arrow's buffer, or when
# large the text gzipped: streaming/exporter/gzip_member.py; the lag part's slots hold a tuple of
# such pieces, its blocks: streaming/exporter/lag_blocks.py).
Piece = bytes | memoryview | GzipMember
FamilyChunks = tuple[Piece | tuple[Piece, ...], ...]


@dataclass(frozen=True)
class Parts:
    """One view's rendered exposition, as taken at one moment."""
    states: list[FamilyChunks]
    plain: FamilyChunks  # every plain group's state part (large families kept gzipped)
    lag: FamilyChunks
    topics: FamilyChunks
    monitor: FamilyChunks
    state_families: set[int]


_PIECE_SIZE = 1 << 16


def _joined(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """`chunks` joined into pieces of about `_PIECE_SIZE`: few enough writes, and no piece so
    large that a scrape grows the heap (one family of 10^5 groups' states is tens of MB)."""
    gathered: list[bytes] = []
    size = 0
    for chunk in chunks:
        if chunk:
            gathered.append(chunk)
            size += len(chunk)
            if size >= _PIECE_SIZE:
                yield b"".join(gathered)
                gathered, size = [], 0
    if gathered:
        yield b"".join(gathered)


def pieces(headers: list[bytes], views: list[Parts], slots: Iterable[int] | None = None,
           members: bool = False) -> Iterator[bytes | memoryview | GzipMember]:
    """The exposition of `views` (each with the same families) a family at a time: the text
    format wants each family's samples together, whatever view they come from. `slots`: only
    those families (None: all). `members`: the parts kept gzipped come as they are kept
    (`GzipMember`), for a gzip response; otherwise as text."""
    if not members:
        yield from plain(pieces(headers, views, slots, members=True))
        return
    for slot in range(len(headers)) if slots is None else slots:
        yield headers[slot]
        for parts in views:
            if slot in parts.state_families:
                yield from _joined(chunks[slot] for chunks in parts.states)
            yield parts.plain[slot]  # after the others: evaluation.state_order
            lag = parts.lag[slot]
            if isinstance(lag, tuple):
                yield from lag
            else:
                yield lag
            yield parts.topics[slot]
            yield parts.monitor[slot]


class MetricsCache:
    def __init__(self, view: MonitorView, max_age_s: float = 30.0,
                 block_lines: int = BLOCK_LINES) -> None:
        self.view = view
        self.max_age_s = max_age_s
        self.specs: dict[str, Family] = family_specs(view.settings.compat, view.settings.granularity,
                                                   view.settings.switches)
        self._slot = {name: i for i, name in enumerate(self.specs)}
        self._headers = [render_header(family).encode() for family in self.specs.values()]
        self._empty: FamilyChunks = (b"",) * len(self.specs)
        # Families the groups' state parts have ever had samples of: a scrape joins only those.
        self._state_families: set[int] = set()
        self.labels = LabelCache()
        self.state_chunks: dict[str, FamilyChunks] = {}  # of groups other than plain ones
        self.plain_chunks: FamilyChunks = self._empty  # every plain group's state part
        self._plain: list[str] = []  # the plain groups it holds, by name
        self._plain_set: set[str] = set()
        self.lag_chunks: FamilyChunks = self._empty
        self._blocks = LagBlocks(block_lines)
        # Lag families evaluated but not yet written, by slot: a scrape that asks for some
        # families only (`name[]`) writes those, and whatever asks for the others next writes
        # them from the same evaluation.
        self._pending_lag: dict[int, ColumnFamily] = {}
        # The slots a scrape of committed offsets alone needs (`_committed_parts`), and the
        # view's versions when they were last written so.
        self._committed_slots = {self._slot[name] for name in COMMITTED_FAMILIES
                                 if name in self._slot} if (
            view.settings.granularity == PARTITION) else set()
        self._committed_key: tuple | None = None
        # That path's own blocks, label text and lock: it never waits for a refresh of the
        # whole exposition (seconds at 10^6 group-partitions), only for the view's lock.
        self._committed_lock = threading.Lock()
        self._committed_blocks = LagBlocks(block_lines)
        self._committed_kept: dict = {}
        self._committed_chunks: FamilyChunks = self._empty
        self._written_by = self._blocks  # the blocks of the last render, for lag_lines_written
        self.topic_chunks: FamilyChunks = self._empty
        self._kept: dict = {}  # the lag part's label text, kept until the rows change
        self._read_since_refresh = False
        # The end-offset poller's interval, when one calls `refresh_if_read` (`poller_hooks`),
        # and when the last two scrapes read the parts: together they say whether another poll
        # comes before the next scrape.
        self.poll_interval_s: float | None = None
        self._scraped_at: deque[float] = deque(maxlen=2)  # when each asked, before any render
        self._render_s = 0.0  # how long the last refresh took
        self.refreshed_at: float | None = None
        self.refreshed_version = -1
        self.refreshed_ends_version = -1
        self.refreshed_offsets_version = -1
        self.refreshed_groups_version = -1
        # Guards this cache. Taken before the view's lock, never after it. A refresh holds the
        # view's lock a few groups at a time while it renders states, so the job's updates are
        # not held up by it.
        self._lock = threading.RLock()

    @property
    def views(self) -> list[MonitorView]:
        """The views served (one here; FleetCache has one per cluster)."""
        return [self.view]

    @collector_paused()  # it builds a lot and keeps it: see streaming.gc_pause
    def refresh(self, slots: Collection[int] | None = None) -> None:
        """Evaluate and render the lag part and the end offsets again, and the state of every
        group that changed (of every group if metadata changed). `slots`: write only those
        lag families now, the others when they are asked for (`parts`)."""
        view = self.view
        with self._lock:
            started = time.monotonic()  # the render's own time, not the wait for the lock
            with view.lock:
                now = view.clock()
                view.housekeeping(now)
                changed = view.take_changed_groups()
                version, ends_version = view.version, view.ends_version
                offsets_version, groups_version = view.offsets_version, view.groups_version
                full = self.refreshed_at is None or version != self.refreshed_version
                names = list(view.groups) if full else [n for n in changed if n in view.groups]
                evaluator = Evaluator(view, now)
                if full:
                    self.labels.start_render()
                lag, logs = lag_part(view, now, self._kept), log_part(view)
                # Plain groups are rendered together: again when any of them changed, or one
                # became or stopped being plain (about 5 us a group, against 35 us one at a time).
                plain_named = {name for name in names if is_plain(view.groups[name])}
                if (full or plain_named or groups_version != self.refreshed_groups_version
                        or any(name in self._plain_set for name in names)):
                    # a full refresh has just looked at every group
                    self._plain = sorted(plain_named) if full else sorted(
                        name for name, group in view.groups.items() if is_plain(group))
                    self._plain_set = set(self._plain)
                    plain_part = plain_state_part(view, self._plain)
                else:
                    plain_part = None
            # Rendered outside the view's lock: the columns are copies.
            self.lag_chunks, self.topic_chunks = self._lag_columns(lag, slots), self._columns(logs)
            if plain_part is not None:
                self.plain_chunks = self._columns(plain_part)
                self._state_families.update(self._slot[f.name] for f in plain_part)
            del lag, logs, plain_part
            # A render's intermediate columns and the text it replaced are freed now; Arrow's
            # allocator keeps such pages for reuse unless asked: about 950 B a group-partition,
            # as much again as the text kept (500,000 of them, benchmarks/memory.py).
            pa.default_memory_pool().release_unused()
            state = {} if full else self.state_chunks
            others = [name for name in names if name not in plain_named]
            for first in range(0, len(others), _GROUPS_PER_LOCK):
                with view.lock:
                    for name in others[first:first + _GROUPS_PER_LOCK]:
                        group = view.groups.get(name)
                        if group is not None:
                            state[name] = self._render_part(evaluator.group_state, group)
            with view.lock:
                for name in [name for name in state
                             if name not in view.groups or name in self._plain_set]:
                    del state[name]
            self.state_chunks = state
            self.refreshed_at = now
            self._read_since_refresh = False
            self.refreshed_version, self.refreshed_ends_version = version, ends_version
            self.refreshed_offsets_version = offsets_version
            self.refreshed_groups_version = groups_version
            self._render_s = time.monotonic() - started

    @property
    def lag_lines_written(self) -> int:
        """Lines of the lag part the last refresh wrote (the others it kept as they were)."""
        return self._written_by.written_lines

    def poller_hooks(self, poll_interval_s: float) -> dict[str, Callable[[], object]]:
        """The end-offset poller's `on_poll` and `poll_by` for this cache, which it polls for
        every `poll_interval_s`."""
        self.poll_interval_s = poll_interval_s
        return {"on_poll": self.refresh_if_read, "poll_by": self.poll_by}

    def refresh_if_read(self) -> None:
        """`refresh()` if the exposition was read since the last refresh, unless the scrapes'
        pace says another poll comes before the next scrape: what the end-offset poller calls
        after each poll. At the default 5 s poll and a 15 s scrape, rendering after every poll
        rendered three times what was served, and at 10^6 group-partitions each render is
        seconds of the driver's time; with no scraper, nothing is rendered. Rendering after the
        first poll that followed a scrape rendered once for nothing and left the scrape to
        render the later polls itself before it could answer (3.4 s at 10^6,
        docs/performance.md): the render is for the last poll before the scrape."""
        with self._lock:
            if self.refreshed_at is None:
                self.refresh()
            elif self._read_since_refresh and not self._a_poll_comes_first():
                self.refresh()

    def _scrape_due(self) -> float | None:
        """When the next scrape comes: one interval of the last two after the last."""
        if len(self._scraped_at) < 2:
            return None
        return 2 * self._scraped_at[-1] - self._scraped_at[-2]

    def _a_poll_comes_first(self) -> bool:
        """Whether another poll comes before the next scrape."""
        due = self._scrape_due()
        if self.poll_interval_s is None or due is None:
            return False
        return due > self.view.clock() + self.poll_interval_s

    def poll_by(self) -> float | None:
        """When the poll before the next scrape should start, for its render to be done as
        the scrape comes (the end-offset poller's `poll_by`): the last render's time before
        it, and a second for the poll itself."""
        due = self._scrape_due()
        return None if due is None else due - self._render_s - _POLL_S

    def refresh_if_stale(self, slots: Collection[int] | None = None) -> None:
        """`refresh()` unless the rendered parts are up to date with every change the view has
        seen (and younger than `max_age_s`); then the lag families of `slots` (None: all) not
        yet written since."""
        view = self.view
        with self._lock:
            with view.lock:
                now = view.clock()
                view.housekeeping(now)  # a Dead group's grace may have run out since
                stale = (self.refreshed_at is None or view.version != self.refreshed_version
                         or view.ends_version != self.refreshed_ends_version
                         or view.offsets_version != self.refreshed_offsets_version
                         or view.groups_version != self.refreshed_groups_version
                         or bool(view.changed_groups)
                         or now - self.refreshed_at > self.max_age_s)
            if stale:
                self.refresh(slots)
            else:
                self._write_pending(slots)

    def _committed_parts(self) -> "Parts":
        """The committed offsets' families as the view holds them now, nothing else evaluated
        or rendered: what a scrape that asks for them alone (`name[]`, a watcher read back to
        back) is answered with, in a fraction of a full render and without waiting for one
        (at 10^6 group-partitions 0.1 s against 4 s)."""
        view = self.view
        with self._committed_lock:
            blocks = self._committed_blocks
            blocks.start()
            with view.lock:
                key = (view.version, view.offsets_version, view.groups_version,
                       view.table.version)
                families = (None if key == self._committed_key
                            else committed_families(view, self._committed_kept))
            if families is not None:
                chunks = list(self._empty)
                for family in families:
                    chunks[self._slot[family.name]] = blocks.render(family)
                self._committed_chunks, self._committed_key = tuple(chunks), key
            self._written_by = blocks
            return Parts([], self._empty, self._committed_chunks, self._empty, self._empty,
                         set())

    def text(self) -> str:
        """The whole exposition, up to date with every change the view has seen."""
        return b"".join(self.exposition()).decode("utf-8")

    def exposition(self, names: Iterable[str] | None = None,
                   members: bool = False) -> Iterator[bytes | memoryview | GzipMember]:
        """The whole exposition as UTF-8 pieces, up to date with every change the view has
        seen when it is called, or with `names` only the families that have a series of one of
        those names (or are named so). The parts are taken under the lock; joining them happens
        as the pieces are read, a family at a time. `members`: as `pieces`."""
        slots = self.slots_named(names)
        return pieces(self._headers, [self.parts(slots)], slots, members)

    def slots_named(self, names: Iterable[str] | None) -> list[int] | None:
        """The slots of the families `names` asks for (prometheus-client's `name[]`: a family's
        name or one of its series' names: `_total`, `_bucket`...); None for every family."""
        if names is None:
            return None
        wanted = set(names)
        return [slot for slot, family in enumerate(self.specs.values())
                if wanted & series_names(family.name, family.kind)]

    def parts(self, slots: Collection[int] | None = None) -> "Parts":
        """This view's rendered parts, up to date with every change it has seen (for
        `pieces`, which joins several views' parts a family at a time: FleetCache); with
        `slots`, only those families' lag part is sure to be (the others may be older)."""
        if slots is not None and self._committed_slots.issuperset(slots):
            return self._committed_parts()
        view = self.view
        # Only a scrape of every family sets the pace the end-offset poller renders ahead of
        # (`refresh_if_read`, `poll_by`): one that asks for some families gets those written on
        # its own path, and counted as a read it made the poller render all of them after
        # every poll (at 10^6 group-partitions, 4 CPU-s a poll for what no one read).
        whole = slots is None
        if whole:
            self._scraped_at.append(view.clock())  # as asked: a render here is not the pace
        with self._lock:
            self.refresh_if_stale(slots)
            if whole:
                self._read_since_refresh = True
            with view.lock:
                monitor: Sink = {}
                Evaluator(view, view.clock()).monitor(monitor)
            monitor_chunks = self._render(monitor)
            states = [self.state_chunks[name] for name in sorted(self.state_chunks)]
            block, lag, topics = self.plain_chunks, self.lag_chunks, self.topic_chunks
            state_families = set(self._state_families)
        # Parts are never changed in place (a render replaces them), so the lists taken above
        # stay a consistent picture while a refresh goes on.
        return Parts(states, block, lag, topics, monitor_chunks, state_families)

    def _lag_columns(self, families: list[ColumnFamily],
                     slots: Collection[int] | None) -> FamilyChunks:
        """The lag part's slots: each family in `slots` (None: all) written, block by block
        where lines changed; the others left as they were, to be written when asked for."""
        chunks = list(self._empty)
        self._blocks.start()
        self._written_by = self._blocks
        self._pending_lag = {}
        for family in families:
            slot = self._slot[family.name]
            if slots is None or slot in slots:
                chunks[slot] = self._blocks.render(family)
            else:
                chunks[slot] = self.lag_chunks[slot]
                self._pending_lag[slot] = family
        self._blocks.keep_only({family.name for family in families})
        return tuple(chunks)

    def _write_pending(self, slots: Collection[int] | None) -> None:
        """Write the lag families evaluated by the last refresh that `slots` asks for."""
        wanted = [slot for slot in self._pending_lag if slots is None or slot in slots]
        if not wanted:
            return
        chunks = list(self.lag_chunks)
        for slot in wanted:
            chunks[slot] = self._blocks.render(self._pending_lag.pop(slot))
        self.lag_chunks = tuple(chunks)

    def _columns(self, families: list[ColumnFamily]) -> FamilyChunks:
        chunks = list(self._empty)
        for family in families:
            chunks[self._slot[family.name]] = kept(family.text())
        return tuple(chunks)

    def _render_part(self, evaluate, group) -> FamilyChunks:
        sink: Sink = {}
        evaluate(group, sink)
        self._state_families.update(self._slot[name] for name, samples in sink.items()
                                    if samples)
        return self._render(sink)

    def _render(self, sink: Sink) -> FamilyChunks:
        specs, labels, slot = self.specs, self.labels, self._slot
        chunks = list(self._empty)
        for name, samples in sink.items():
            if samples:
                chunks[slot[name]] = render_samples(specs[name], samples, labels).encode()
        return tuple(chunks)


class FleetCache:
    """The exposition of several clusters' views (`clusters` in the config), one MetricsCache
    each: every family's header once, then its samples from every cluster. The views share the
    metrics settings, so their families are the same."""

    def __init__(self, caches: list[MetricsCache]) -> None:
        self.caches = caches
        self._headers = caches[0]._headers

    @property
    def views(self) -> list[MonitorView]:
        return [cache.view for cache in self.caches]

    def exposition(self, names: Iterable[str] | None = None,
                   members: bool = False) -> Iterator[bytes | memoryview | GzipMember]:
        slots = self.caches[0].slots_named(names)
        return pieces(self._headers, [cache.parts(slots) for cache in self.caches], slots,
                      members)

    def text(self) -> str:
        return b"".join(self.exposition()).decode("utf-8")
