"""A group's recorded history as a scenario (coordinator/simulator/replay.py): a simulated run,
decoded and replayed through the reducer, gives back its membership, rates and costs."""
from __future__ import annotations

import pytest

from coordinator.records import decode
from coordinator.simulator import Simulation, load_scenario
from coordinator.simulator.replay import HistoryRecorder, scenario_from_history
from coordinator.state import GroupStore


def _recorded(strategy: str, scenario: str = "join-one") -> tuple[HistoryRecorder, object, object]:
    result = Simulation(load_scenario(scenario), strategy, seed=3).run()
    store, recorder = GroupStore(), HistoryRecorder()
    for rec in result.records:
        recorder.add(store.apply(decode(rec.key, rec.value), partition=rec.partition, offset=rec.offset,
                                 timestamp_ms=rec.timestamp))
    return recorder, store, result


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky", "server-uniform"])
def test_history_of_a_simulated_run(strategy):
    recorder, store, result = _recorded(strategy)
    history = recorder.history("join-one-app", {"events": 10})
    # Four members formed the group (KIP-848 members join one heartbeat at a time), then a fifth.
    assert history.membership[-1][1] == 5 and history.membership[-2][1] == 4
    scenario = load_scenario("join-one")
    step = scenario.steps[0]
    joined_at = history.membership[-1][0] - scenario.start_ms
    assert step.at_ms <= joined_at <= step.at_ms + 5000
    # The topic is produced at 100 messages/s; the group keeps up, so its commits show that rate.
    assert history.rates["events"] == pytest.approx(100.0, rel=0.05)


@pytest.mark.parametrize("strategy", ["range", "sticky", "cooperative-sticky"])
def test_replaying_a_history_costs_what_the_run_cost(strategy):
    recorder, store, result = _recorded(strategy)
    scenario = scenario_from_history(recorder.history("join-one-app", {"events": 10}), (strategy,),
                                     processing_rate=40, fetch_start_ms=0)   # as the original run
    assert [(s.action, s.count) for s in scenario.steps] == [("scale", 5)]
    again = Simulation(scenario, strategy, seed=3).run().summary
    original = result.summary
    assert again.rebalances == original.rebalances
    assert again.partitions_moved == original.partitions_moved
    assert again.stopped_partition_seconds == pytest.approx(original.stopped_partition_seconds, rel=0.25, abs=1.0)


def test_a_leave_and_a_join_in_one_record_change_nothing():
    recorder, _store, _result = _recorded("range", "static-restart")
    history = recorder.history("static-app", {"clicks": 16})
    counts = [n for _t, n in history.membership]
    # Static members back within the session are replaced in one record; only the member that
    # stays down past the session timeout shows, as one leave and one join.
    assert counts == [8, 7, 8]


def test_a_group_without_members_cannot_be_replayed():
    with pytest.raises(ValueError, match="no member joins"):
        scenario_from_history(HistoryRecorder().history("nobody", {"t": 1}), ("range",))
