"""Groups served from launch through one Admin API look (streaming/job/admin_seed.py): the view
serves them, counted in groupscope_seeded_groups and named in /healthz, until the log brings
each one (which replaces the seed whole, even with commits older than the look) or the job is
ready (which drops the groups the log never brought). Polls are made up here; the real broker's
are in tests/broker/test_admin_source.py."""
from __future__ import annotations

import urllib.error

import pytest

from coordinator.admin_groups import PolledGroup, PolledMember
from streaming.exporter.view import MonitorView, ViewSettings
from streaming.job.admin_seed import AdminSeed
from tests.support.scrape_support import parse, scrape
from tests.unit.test_exporter import T0, Clock, member, served, snapshot, value  # noqa: F401


def _polled(group: str, offset: int, members: int = 1) -> PolledGroup:
    return PolledGroup(group, "classic", "consumer", "range", "Stable", None, None,
                       tuple(PolledMember(f"{group}-m{i}", None, "app", "/10.0.0.1", None,
                                          ("orders",), (("orders", i),)) for i in range(members)),
                       tuple(("orders", p, offset, -1, "") for p in range(members)))


class _Admin:
    """What AdminGroups.poll() returns, without a broker."""

    def __init__(self, groups: list[PolledGroup] | Exception) -> None:
        self.groups = groups
        self.closed = False

    def poll(self) -> list[PolledGroup]:
        if isinstance(self.groups, Exception):
            raise self.groups
        return self.groups

    def poll_parts(self, first: int):
        """As AdminGroups.poll_parts: the first `first` groups by name, then the rest."""
        groups = sorted(self.poll(), key=lambda g: g.group)
        yield groups[:first] if 0 < first < len(groups) else groups
        if 0 < first < len(groups):
            self.asked_rest = True
            yield groups[first:]

    def close(self) -> None:
        self.closed = True


@pytest.fixture()
def clock():
    return Clock()


def _seed(view, groups) -> AdminSeed:
    admin = _Admin(groups)
    seed = AdminSeed(view, lambda: admin).start()
    seed.join(10)
    assert admin.closed
    return seed


def test_seeded_groups_are_served_until_the_log_brings_them(served, clock):
    view, port = served()
    seed = _seed(view, [_polled("shop", 40, members=2), _polled("gone-since", 7)])
    assert seed.seeded == 2
    view.update_end_offsets({("orders", 0): 100, ("orders", 1): 100},
                            {("orders", 0): 0, ("orders", 1): 0}, T0, 0.01)
    samples = parse(scrape(port)[1])
    assert value(samples, "groupscope_seeded_groups") == 2
    assert value(samples, "groupscope_ready") == 0
    assert value(samples, "kafka_consumergroup_committed_offset", group="shop", topic="orders",
                 partition="1") == 40
    assert value(samples, "kafka_consumergroup_lag", group="shop", topic="orders",
                 partition="0") == 60
    assert value(samples, "kafka_consumergroup_members", group="shop") == 2
    # Where the look cannot tell: the coordinator partition is an empty label, not "None".
    assert {dict(k)["coordinator_partition"] for k in samples["kafka_consumergroup_info"]} == {""}
    with pytest.raises(urllib.error.HTTPError) as error:
        scrape(port, "/healthz")
    assert "serving 2 groups as the Admin API showed them" in error.value.read().decode()

    # The log brings `shop`, with commits made before the look: they replace the seed's.
    view.update_groups([snapshot("shop", [member("m-a", [("orders", 0)])],
                                 [("orders", 0, 30, T0 - 600)])])
    samples = parse(scrape(port)[1])
    assert value(samples, "groupscope_seeded_groups") == 1
    assert value(samples, "kafka_consumergroup_committed_offset", group="shop", topic="orders",
                 partition="0") == 30
    assert frozenset({("cluster", "test"), ("group", "shop"), ("topic", "orders"),
                      ("partition", "1")}) not in samples["kafka_consumergroup_committed_offset"]
    assert value(samples, "kafka_consumergroup_members", group="shop") == 1

    # Read to the end: what the log never brought is gone.
    view.set_offsets_topic_progress({0: 0}, ready=True)
    view.end_seed()
    samples = parse(scrape(port)[1])
    assert value(samples, "groupscope_seeded_groups") == 0
    assert {dict(k)["group"] for k in samples["kafka_consumergroup_info"]} == {"shop"}
    assert scrape(port, "/healthz")[0] == 200


def test_the_seed_leaves_groups_the_view_has_and_comes_too_late_after_ready(clock):
    from tests.unit.test_exporter import make_view

    view = make_view(clock)
    view.update_groups([snapshot("shop", [], [("orders", 0, 5, T0 - 60)], state="Empty")])
    assert _seed(view, [_polled("shop", 40), _polled("new", 3)]).seeded == 1
    assert view.committed("shop") == {("orders", 0): 5} and view.seeded == {"new"}

    late = make_view(clock)
    late.set_offsets_topic_progress({0: 0}, ready=True)
    assert _seed(late, [_polled("new", 3)]).seeded == 0 and not late.groups


def test_a_failed_look_seeds_nothing_and_says_so_once(clock, caplog):
    from tests.unit.test_exporter import make_view

    view = make_view(clock)
    caplog.set_level("INFO", logger="groupscope.seed")
    seed = _seed(view, PermissionError("GROUP_AUTHORIZATION_FAILED"))
    assert seed.seeded == 0 and not view.groups
    [line] = [r.getMessage() for r in caplog.records]
    assert "GROUP_AUTHORIZATION_FAILED" in line and "once the log is read" in line


def test_the_log_replacing_the_seed_takes_its_rows(clock):
    """The log's groups take the rows the seed's gave up in the same batch: the table does not
    grow to hold both (at 10^5 groups that was 10^6 rows' columns and windows more, for good)."""
    from tests.unit.test_exporter import make_view

    view = make_view(clock)
    groups = [f"g{i:04d}" for i in range(3000)]  # past the table's first 1,024 rows
    view.seed_groups([snapshot(g, [], [("orders", p, 40, T0 - 5) for p in range(2)],
                               state="Empty") for g in groups])
    rows = len(view.table.live)
    assert view.table.count == 2 * len(groups)
    view.update_groups([snapshot(g, [], [("orders", p, 30, T0 - 600) for p in range(2)],
                                 state="Empty") for g in groups])
    assert view.seeded == set() and view.table.count == 2 * len(groups)
    assert len(view.table.live) == rows
    assert all(view.committed(g) == {("orders", 0): 30, ("orders", 1): 30} for g in groups)


def test_a_wait_for_the_look_ends_when_a_stop_is_asked(served):
    """The job's start waits for the launch seed (local mode); a stop signal in that wait ends
    it at once, not when the look is done or the wait's limit has passed."""
    import threading
    import time

    view, _ = served()
    answer = threading.Event()

    class _Slow(_Admin):
        def poll_parts(self, first: int):
            answer.wait(30)
            return super().poll_parts(first)

    seed = AdminSeed(view, lambda: _Slow([_polled("shop", 40)])).start()
    stop = threading.Event()
    threading.Timer(0.2, stop.set).start()
    started = time.monotonic()
    seed.join(30, stop)
    waited = time.monotonic() - started
    assert stop.is_set() and waited < 5 and seed.seconds is None
    seed.join(0.3)  # without a stop: its limit
    assert seed.seconds is None
    answer.set()
    seed.join(10, stop)  # stop set: returns at once, whatever the look does
    seed.join(10)
    assert seed.seeded == 1


def test_the_first_part_of_the_look_is_served_before_the_rest_is_asked_for(clock, monkeypatch):
    """A large estate's look comes in two parts: the first groups are served while the rest is
    described (at 10^5 groups the whole look took 21-26 s before anything was served)."""
    import streaming.job.admin_seed as admin_seed

    monkeypatch.setattr(admin_seed, "FIRST_PART", 2)
    view = MonitorView(ViewSettings(cluster="test"), clock=clock)
    seen_at_rest: list[set[str]] = []

    class _Watched(_Admin):
        def poll_parts(self, first: int):
            parts = super().poll_parts(first)
            yield next(parts)
            seen_at_rest.append(set(view.groups))
            yield from parts

    admin = _Watched([_polled(name, 5) for name in ("d", "a", "c", "b")])
    seed = AdminSeed(view, lambda: admin).start()
    seed.join(10)
    assert seen_at_rest == [{"a", "b"}]
    assert seed.seeded == 4 and set(view.groups) == {"a", "b", "c", "d"}
    assert seed.first_seconds is not None and seed.first_seconds <= seed.seconds
