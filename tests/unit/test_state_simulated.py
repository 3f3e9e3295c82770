"""The reducer's rebalances against the simulator's ground truth, fed the simulator's own canonical
dicts (hex blobs only, no `*_decoded` keys) into a GroupStore that knows no topic names."""
from __future__ import annotations

from collections import defaultdict

import pytest

from coordinator.simulator import Simulation, load_scenario
from coordinator.state import GroupStore

EAGER = ("range", "roundrobin", "sticky")


def replay(scenario: str, strategy: str, seed: int = 1):
    result = Simulation(load_scenario(scenario), strategy, seed=seed).run()
    store = GroupStore()
    rebalances, downtime = {}, defaultdict(list)
    for rec in result.records:
        for event in store.apply(rec.record, partition=rec.partition, offset=rec.offset, timestamp_ms=rec.timestamp):
            e = event.to_dict()
            if e["event"] == "rebalance":
                rebalances[e["to_generation"]] = e
            elif e["event"] == "rebalance_downtime":
                downtime[(e["to_generation"], e["topic"], e["partition_id"])].append(e["downtime_seconds"])
    steps = [t for t in result.truth.rebalances if t.from_generation != 0 and t.members_after]
    return result, store, rebalances, downtime, steps


def pairs(tps) -> set[tuple[str, int]]:
    return {tuple(tp) for tp in tps}


@pytest.mark.parametrize("strategy", EAGER + ("cooperative-sticky",))
def test_classic_assignments_and_moves_match_the_ground_truth(strategy):
    result, store, rebalances, _, steps = replay("crash-one", strategy)
    state = store.group(load_scenario("crash-one").group).to_dict()
    assert all(m["assigned"] for m in state["members"])   # decoded from the assignment bytes
    assert steps and any(t.partitions_moved for t in steps)
    for truth in steps:
        got = rebalances[truth.to_generation]
        changed = pairs(got["partitions_revoked"]) | pairs(got["partitions_assigned"])
        assert changed == pairs(truth.partitions_moved), truth.to_generation
        if strategy in EAGER:
            assert pairs(got["partitions_moved"]) == pairs(truth.partitions_moved)
    if strategy == "cooperative-sticky":
        # moves happen in two steps (revoked, then assigned); the second step reports them moved
        moved = [tp for t in steps for tp in rebalances[t.to_generation]["partitions_moved"]]
        assert moved


@pytest.mark.parametrize("scenario,strategy", [("crash-one", "range"), ("crash-one", "cooperative-sticky"),
                                               ("join-one", "sticky"), ("join-one", "server-uniform"),
                                               ("crash-one", "server-range")])
def test_every_moved_stall_has_a_downtime_bounded_by_the_truth(scenario, strategy):
    result, _, rebalances, downtime, steps = replay(scenario, strategy)
    spec = load_scenario(scenario)
    interval_s = spec.clients.auto_commit_interval_ms / 1000.0
    # what the log cannot see: requests and responses in flight, and the new owner starting at its
    # next poll() after the response that gave it the partition
    unseen_s = (spec.clients.poll_delay_ms + 4 * spec.network_ms) / 1000.0
    stalls = [(t.to_generation, d) for t in steps for d in t.downtime]   # eager: kept ones stall too
    assert stalls
    for generation, d in stalls:
        assert generation in rebalances
        measured = downtime[(generation, d["topic"], d["partition"])]
        assert measured, (generation, d)
        got = measured.pop(0)
        # from the old owner's last commit: never after the true stop, at most one auto-commit
        # interval before it (a crashed owner's last periodic commit)
        assert d["seconds"] - unseen_s <= got <= d["seconds"] + interval_s + unseen_s, (generation, d)
    assert not any(downtime.values())   # nothing measured that did not stall


def test_consumer_protocol_names_topic_ids_from_offset_commits():
    result, store, rebalances, _, steps = replay("join-one", "server-uniform")
    state = store.group(load_scenario("join-one").group).to_dict()
    assert {tp[0] for m in state["members"] for tp in m["assigned"]} == {"events"}
    assert all(tp[0] == "events" for t in steps for tp in rebalances[t.to_generation]["partitions_moved"])
