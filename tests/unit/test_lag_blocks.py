"""The lag part written block by block: a render after a change writes only the blocks whose
lines changed, and serves exactly what a render from scratch serves."""
from __future__ import annotations

from streaming.exporter.metrics_cache import MetricsCache
from tests.support.scrape_support import parse
from tests.unit.test_exporter import Clock, T0, make_view, member, snapshot, value

PARTITIONS = 50
GROUPS = [f"g{i}" for i in range(4)]
BLOCK = 16


def _snapshot(group: str, offsets: dict[int, int], at: float, moved: tuple[int, ...] = ()):
    """`group`'s snapshot: its commits at `at`, but those of `moved` partitions at T0 - 30 unless
    `moved` is empty (all at `at`)."""
    return snapshot(group, [member(f"{group}-m", [("orders", p) for p in range(PARTITIONS)])],
                    [("orders", p, o, at if not moved or p in moved else T0 - 30)
                     for p, o in offsets.items()])


def _view(clock: Clock):
    view = make_view(clock)
    view.update_topic_metadata({}, {"orders": PARTITIONS})
    view.update_groups([_snapshot(g, {p: 100 + p for p in range(PARTITIONS)}, T0 - 30)
                        for g in GROUPS])
    for step in range(2):
        view.update_end_offsets({("orders", p): 150 + p + step for p in range(PARTITIONS)}, {},
                                T0 - 20 + step, 0.01)
    return view


def _fresh_text(view) -> str:
    return MetricsCache(view, block_lines=BLOCK).text()


def test_a_commit_rewrites_only_its_blocks_and_serves_what_a_full_render_serves():
    clock = Clock()
    view = _view(clock)
    cache = MetricsCache(view, block_lines=BLOCK)
    assert cache.text() == _fresh_text(view)
    first = cache._blocks.written_lines
    assert first >= 7 * len(GROUPS) * PARTITIONS  # every family's every line, once

    view.update_groups([_snapshot("g2", {**{p: 100 + p for p in range(PARTITIONS)}, 7: 155},
                                  T0 - 1, moved=(7,))])
    text = cache.text()
    assert text == _fresh_text(view)
    assert value(parse(text), "kafka_consumergroup_committed_offset", group="g2",
                 topic="orders", partition="7") == 155
    # one block of each per-partition family that changed, and the small roll-ups
    assert 0 < cache._blocks.written_lines <= 10 * BLOCK + 6 * len(GROUPS)


def test_nothing_changed_writes_nothing_and_time_rewrites_only_what_moves_with_it():
    clock = Clock()
    view = _view(clock)
    cache = MetricsCache(view, block_lines=BLOCK)
    cache.text()
    cache.refresh()
    assert cache._blocks.written_lines == 0
    clock.now += 40  # time lags move; offsets, lags and commit times do not
    text = cache.text()
    assert text == _fresh_text(view)
    assert 0 < cache._blocks.written_lines < 4 * len(GROUPS) * PARTITIONS


def test_a_scrape_of_some_families_writes_those_and_the_next_full_one_the_rest():
    clock = Clock()
    view = _view(clock)
    cache = MetricsCache(view, block_lines=BLOCK)
    cache.text()
    view.update_groups([_snapshot("g1", {p: 120 + p for p in range(PARTITIONS)}, T0 - 1)])
    asked = b"".join(cache.exposition(["kafka_consumergroup_lag"])).decode()
    assert value(parse(asked), "kafka_consumergroup_lag", group="g1", topic="orders",
                 partition="3") == 150 + 3 + 1 - 123
    assert "kafka_consumergroup_committed_offset{" not in asked
    assert cache.lag_lines_written <= 4 * BLOCK  # the one family's blocks of g1
    text = cache.text()
    assert text == _fresh_text(view)
    assert value(parse(text), "kafka_consumergroup_lag", group="g1", topic="orders",
                 partition="3") == 150 + 3 + 1 - 123


def test_a_scrape_of_committed_offsets_alone_evaluates_no_lag_and_serves_the_view(monkeypatch):
    import streaming.exporter.metrics_cache as metrics_cache

    clock = Clock()
    view = _view(clock)
    cache = MetricsCache(view, block_lines=BLOCK)
    cache.text()
    evaluated = []
    lag_part = metrics_cache.lag_part
    monkeypatch.setattr(metrics_cache, "lag_part",
                        lambda *a, **k: (evaluated.append(1), lag_part(*a, **k))[1])
    view.update_groups([_snapshot("g3", {p: 130 + p for p in range(PARTITIONS)}, T0 - 1)])
    names = ["kafka_consumergroup_committed_offset", "kafka_consumergroup_commit_timestamp_seconds"]
    asked = b"".join(cache.exposition(names)).decode()
    assert not evaluated
    samples = parse(asked)
    assert value(samples, "kafka_consumergroup_committed_offset", group="g3", topic="orders",
                 partition="9") == 139
    assert value(samples, "kafka_consumergroup_commit_timestamp_seconds", group="g3",
                 topic="orders", partition="9") == T0 - 1
    fresh = parse(b"".join(MetricsCache(view).exposition(names)).decode())
    assert samples == fresh
    b"".join(cache.exposition(names))  # nothing changed since: nothing written
    assert cache.lag_lines_written == 0
    view.update_groups([_snapshot("g0", {**{p: 100 + p for p in range(PARTITIONS)}, 2: 140},
                                  T0 - 1, moved=(2,))])
    again = parse(b"".join(cache.exposition(names)).decode())
    assert value(again, "kafka_consumergroup_committed_offset", group="g0", topic="orders",
                 partition="2") == 140
    assert 0 < cache.lag_lines_written <= 2 * BLOCK  # one block of each of the two families
    assert cache.text() == _fresh_text(view) and evaluated  # a full scrape evaluates it all


def test_families_of_the_partitions_with_a_known_end_offset_rewrite_only_what_changed():
    """Lag and time lag are served for the partitions whose end offset is known: their lines
    are those rows' labels, and a commit rewrites only its block of them too."""
    clock = Clock()
    view = make_view(clock)
    view.update_topic_metadata({}, {"orders": PARTITIONS})
    view.update_groups([_snapshot(g, {p: 100 + p for p in range(PARTITIONS)}, T0 - 30)
                        for g in GROUPS])
    for step in range(2):  # the even partitions only
        view.update_end_offsets({("orders", p): 150 + p + step for p in range(0, PARTITIONS, 2)},
                                {}, T0 - 20 + step, 0.01)
    cache = MetricsCache(view, block_lines=BLOCK)
    cache.text()
    view.update_groups([_snapshot("g1", {**{p: 100 + p for p in range(PARTITIONS)}, 8: 157},
                                  T0 - 1, moved=(8,))])
    text = cache.text()
    assert text == _fresh_text(view)
    assert value(parse(text), "kafka_consumergroup_lag", group="g1", topic="orders",
                 partition="8") == 150 + 8 + 1 - 157
    assert 0 < cache.lag_lines_written <= 10 * BLOCK + 6 * len(GROUPS)


def test_a_scrape_of_committed_offsets_does_not_wait_for_a_whole_render():
    """While a refresh of the whole exposition runs (seconds at 10^6 group-partitions, the
    cache's lock held), a scrape of the committed offsets alone is answered from the view."""
    import threading

    clock = Clock()
    view = _view(clock)
    cache = MetricsCache(view, block_lines=BLOCK)
    cache.text()
    view.update_groups([_snapshot("g2", {p: 170 + p for p in range(PARTITIONS)}, T0 - 1)])
    held, release = threading.Event(), threading.Event()

    def whole_render() -> None:
        with cache._lock:
            held.set()
            release.wait(30)

    render = threading.Thread(target=whole_render)
    render.start()
    held.wait(5)
    answered: list[str] = []
    scrape = threading.Thread(target=lambda: answered.append(b"".join(cache.exposition(
        ["kafka_consumergroup_committed_offset"])).decode()))
    scrape.start()
    scrape.join(10)
    release.set()
    render.join(10)
    assert answered, "the scrape waited for the whole render"
    assert value(parse(answered[0]), "kafka_consumergroup_committed_offset", group="g2",
                 topic="orders", partition="4") == 174
