"""Eager classic rebalances stall every partition: kept partitions get a downtime too."""
from __future__ import annotations

import pytest

from coordinator.protocol.consumer import encode_subscription
from coordinator.state import GroupStore
from tests.support.state_timeline import group_metadata, member, offset_commit

pytestmark = pytest.mark.unit

G, T = "g-eager", "t"


def _owning(member_view: dict, owned: list[int]) -> dict:
    """`member_view` whose subscription lists `owned` (what a cooperative member sends)."""
    sub = {"version": 3, "topics": [T], "user_data": None, "generation_id": 1, "rack_id": None,
           "owned_partitions": [{"topic": T, "partitions": owned}] if owned else []}
    return {**member_view, "subscription": encode_subscription(sub).hex()}


def _downtime(cooperative: bool) -> dict[int, float]:
    store = GroupStore()
    store.apply(group_metadata(G, 1, [member("a", [T], [(T, 0), (T, 1)])]), 0, 0, 10_000)
    store.apply(offset_commit(G, T, 0, 5, 20_000), 0, 1, 20_000)   # a's rejoin commit
    store.apply(offset_commit(G, T, 1, 5, 20_000), 0, 2, 20_000)
    a = member("a", [T], [(T, 0)])
    members = [_owning(a, [0]) if cooperative else a, member("b", [T], [(T, 1)])]
    events = store.apply(group_metadata(G, 2, members, state_ts=20_500), 0, 3, 21_000)
    return {e.fields["partition_id"]: e.fields["downtime_seconds"] for e in events
            if e.event == "rebalance_downtime"}


def test_an_eager_rebalance_stalls_the_kept_partition_too() -> None:
    assert _downtime(cooperative=False) == {0: 1.0, 1: 1.0}


def test_a_cooperative_rebalance_stalls_only_what_moved() -> None:
    assert _downtime(cooperative=True) == {1: 1.0}
