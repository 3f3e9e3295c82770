"""The group-coordinator simulator: determinism, and records that rebuild its own view of the group
when decoded and replayed through the state reducer."""
from __future__ import annotations

import dataclasses
import json

import pytest

from coordinator.partitioning import partition_for
from coordinator.protocol import decode_assignment
from coordinator.records import decode
from coordinator.simulator import (STRATEGIES, ScenarioError, Simulation, builtin_scenarios, load_scenario,
                                   parse_scenario)
from coordinator.simulator.traffic import PartitionFlow
from coordinator.state import GroupStore


def _without_decoded_blobs(record: dict) -> dict:
    """The decoder adds the decoded ConsumerProtocol blobs next to their hex; compare without them."""
    value = record["value"]
    if record["type"] != 2 or not value:
        return record
    members = [{k: v for k, v in m.items() if not k.endswith("_decoded")} for m in value["members"]]
    return {**record, "value": {**value, "members": members}}


def _reducer_view(state: dict) -> dict:
    return {"generation": state["generation"],
            "members": {m["member_id"]: sorted(tuple(tp) for tp in m["assigned"]) for m in state["members"]},
            "offsets": {(o["topic"], o["partition"]): o["offset"] for o in state["offsets"]}}


def _sim_view(view: dict) -> dict:
    return {"generation": view["generation"], "members": view["members"], "offsets": view["offsets"]}


def replay_checking_every_batch(scenario_name: str, strategy: str, seed: int = 3) -> tuple[Simulation, GroupStore]:
    """Steps the simulation; after every event that wrote records, decodes them from their bytes,
    applies them to a GroupStore and compares the reconstructed group with the simulator's view."""
    sim = Simulation(load_scenario(scenario_name), strategy, seed=seed)
    store = GroupStore(topic_names={tid: name for name, tid in sim.topic_ids.items()})
    seen = 0
    checked = 0
    while sim.step():
        fresh = sim.log.records[seen:]
        seen = len(sim.log.records)
        for rec in fresh:
            decoded = decode(rec.key, rec.value)
            assert _without_decoded_blobs(decoded.to_dict()) == rec.record  # bytes say what was meant
            store.apply(decoded, partition=rec.partition, offset=rec.offset, timestamp_ms=rec.timestamp)
        view = sim.group_view()
        if fresh and view is not None:
            state = store.group(sim.scenario.group).to_dict()
            assert _reducer_view(state) == _sim_view(view), f"after offset {fresh[-1].offset}"
            checked += 1
    assert checked > 10
    return sim, store


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_join_one_reconstructs_through_codec_and_reducer(strategy):
    sim, store = replay_checking_every_batch("join-one", strategy)
    state = store.group("join-one-app").to_dict()
    assert state["state"] == "Stable"
    assert len(state["members"]) == 5
    assert sorted(tp for m in state["members"] for tp in map(tuple, m["assigned"])) == \
        [("events", p) for p in range(10)]
    assert state["coordinator_partition"] == partition_for("join-one-app", 50)
    assert {r.partition for r in sim.log.records} == {partition_for("join-one-app", 50)}


@pytest.mark.parametrize("scenario,strategy", [
    ("static-restart", "range"), ("static-restart", "server-uniform"),
    ("crash-one", "cooperative-sticky"), ("crash-one", "server-range"),
    ("drain-and-delete", "sticky"), ("drain-and-delete", "server-uniform"),
])
def test_other_scenarios_reconstruct(scenario, strategy):
    replay_checking_every_batch(scenario, strategy)


def _capture(sim: Simulation) -> list[dict]:
    return [rec.to_capture() for rec in sim.run().records]


def test_same_seed_same_records_and_truth():
    scenario = load_scenario("join-one")
    a, b = Simulation(scenario, "cooperative-sticky", seed=7), Simulation(scenario, "cooperative-sticky", seed=7)
    assert _capture(a) == _capture(b)
    assert a.truth.to_dict() == b.truth.to_dict()
    c = Simulation(scenario, "cooperative-sticky", seed=8)
    assert _capture(c) != _capture(a)


def test_capture_lines_are_json_with_base64():
    sim = Simulation(load_scenario("join-one"), "range", seed=1)
    line = json.loads(json.dumps(_capture(sim)[0]))
    assert set(line) == {"partition", "offset", "timestamp", "key", "value"}
    assert line["offset"] == 0 and line["timestamp"] > 1_600_000_000_000


def test_classic_generation_record_fields():
    sim = Simulation(load_scenario("join-one"), "range", seed=2)
    sim.run()
    gm = [r for r in sim.log.records if r.record["type"] == 2]
    assert [r.record["value"]["generation"] for r in gm] == [1, 2]
    last = decode(gm[-1].key, gm[-1].value).value
    assert last["protocol"] == "range" and last["leader"] in {m["member_id"] for m in last["members"]}
    # current_state_timestamp = when the group entered CompletingRebalance, before the SyncGroup
    assert last["current_state_timestamp"] <= gm[-1].timestamp
    truth = sim.truth.rebalances[-1]
    assert truth.join_end_ms == last["current_state_timestamp"] and truth.end_ms == gm[-1].timestamp
    owned = [tp for m in last["members"]
             for t in decode_assignment(bytes.fromhex(m["assignment"])).assigned_partitions
             for tp in [(t.topic, p) for p in t.partitions]]
    assert sorted(owned) == [("events", p) for p in range(10)]


def test_eager_members_commit_before_rejoining():
    sim = Simulation(load_scenario("join-one"), "range", seed=2)
    sim.run()
    reb = sim.truth.rebalances[-1]
    burst = [r for r in sim.log.records
             if r.record["type"] == 1 and reb.start_ms <= r.timestamp <= reb.join_end_ms]
    # every partition's owner committed between the rebalance start and the end of the join phase
    assert sorted({(r.record["key"]["topic"], r.record["key"]["partition"]) for r in burst}) == \
        [("events", p) for p in range(10)]


def test_cooperative_rebalance_takes_two_generations_and_withholds_moving_partitions():
    sim = Simulation(load_scenario("join-one"), "cooperative-sticky", seed=2)
    sim.run()
    gm = [r.record["value"] for r in sim.log.records if r.record["type"] == 2]
    assert [v["generation"] for v in gm] == [1, 2, 3]
    def owned(v):
        return sum(len(t.partitions) for m in v["members"]
                   for t in decode_assignment(bytes.fromhex(m["assignment"])).assigned_partitions)
    assert owned(gm[1]) < 10 and owned(gm[2]) == 10
    assert sim.truth.rebalances[1].trigger == "member_joined"
    assert sim.truth.rebalances[2].trigger == "member_rejoined"


def test_static_members_restart_without_rebalance():
    sim = Simulation(load_scenario("static-restart"), "range", seed=1)
    sim.run()
    replaced = [e for e in sim.truth.events if e["event"] == "static_member_replaced"]
    assert len(replaced) == 4 and all(e["generation"] == 1 for e in replaced)
    gm = [r.record["value"] for r in sim.log.records if r.record["type"] == 2]
    # four records keep generation 1 with a new member id each; only the long absence rebalances
    assert [v["generation"] for v in gm][:5] == [1, 1, 1, 1, 1]
    assert [r.trigger for r in sim.truth.rebalances[1:]] == ["session_expired", "member_joined"]


def test_crash_is_noticed_at_session_timeout():
    scenario = load_scenario("crash-one")
    sim = Simulation(scenario, "range", seed=1)
    sim.run()
    reb = next(r for r in sim.truth.rebalances if r.trigger == "session_expired")
    crash_ms = scenario.start_ms + scenario.steps[0].at_ms
    timeout, hb = scenario.clients.session_timeout_ms, scenario.clients.heartbeat_interval_ms
    assert reb.trigger_ms == crash_ms
    assert crash_ms + timeout - hb <= reb.start_ms <= crash_ms + timeout
    # the dead member's partitions stalled from the crash until after the rebalance
    stalled = [d for d in reb.downtime if d["stopped_ms"] == crash_ms]
    assert stalled and all(d["seconds"] >= (reb.end_ms - crash_ms) / 1000 for d in stalled)


def test_empty_snapshot_then_deletion():
    sim = Simulation(load_scenario("drain-and-delete"), "range", seed=1)
    sim.run()
    recs = [r.record for r in sim.log.records]
    empty = [r["value"] for r in recs if r["type"] == 2 and r["value"] and not r["value"]["members"]]
    assert len(empty) == 1
    assert empty[0]["protocol"] is None and empty[0]["leader"] is None and empty[0]["generation"] == 4
    tail = recs[-7:]
    assert [r["type"] for r in tail] == [1] * 6 + [2] and all(r["value"] is None for r in tail)
    assert sim.group_view() is None


def test_consumer_protocol_join_writes_records_in_kafka_order():
    sim = Simulation(load_scenario("join-one"), "server-uniform", seed=1)
    sim.run()
    recs = [r for r in sim.log.records if r.record["type"] != 1]
    join_ts = [r.timestamp for r in recs if r.record["type"] == 3][-1]
    batch = [r.record for r in recs if r.timestamp == join_ts]
    types = [r["type"] for r in batch]
    assert types[:2] == [5, 3] and types[-2:] == [6, 8] and set(types[2:-2]) == {7}
    assert batch[1]["value"]["epoch"] == batch[-2]["value"]["assignment_epoch"]


def test_consumer_protocol_leave_writes_tombstones_then_epoch():
    sim = Simulation(load_scenario("drain-and-delete"), "server-range", seed=1)
    sim.run()
    recs = [r.record for r in sim.log.records if r.record["type"] != 1]
    i = next(i for i, r in enumerate(recs) if r["type"] == 8 and r["value"] is None)
    assert [(r["type"], r["value"] is None) for r in recs[i:i + 4]] == [(8, True), (7, True), (5, True), (3, False)]


def test_consumer_protocol_revokes_before_assigning():
    """No partition is ever in two members' assigned sets at once."""
    sim = Simulation(load_scenario("canary-rollout"), "server-uniform", seed=1)
    current: dict[str, set] = {}
    while sim.step():
        pass
    for rec in sim.log.records:
        r = rec.record
        if r["type"] != 8:
            continue
        mid = r["key"]["member_id"]
        if r["value"] is None:
            current.pop(mid, None)
            continue
        mine = {(t["topic_id"], p) for t in r["value"]["assigned_partitions"] for p in t["partitions"]}
        mine |= {(t["topic_id"], p) for t in r["value"]["partitions_pending_revocation"] for p in t["partitions"]}
        current[mid] = mine
        others = set().union(*(v for k, v in current.items() if k != mid))
        assert not (mine & others)


def test_consumer_protocol_truth_matches_records_exactly():
    sim = Simulation(load_scenario("join-one"), "server-range", seed=4)
    sim.run()
    by_offset = {r.offset: r for r in sim.log.records}
    for reb in sim.truth.rebalances:
        end = by_offset[reb.end_offset]
        assert end.timestamp == reb.end_ms
        bump = [r for r in sim.log.records if r.record["type"] == 3
                and r.record["value"]["epoch"] == reb.from_generation + 1]
        assert bump[0].timestamp == reb.start_ms


def test_flow_lag_grows_during_stall_and_drains():
    flow = PartitionFlow(rate=10.0, capacity=20.0, budget_s=5.0)
    flow.start(0, committed=0)
    assert flow.backlog(10_000) == pytest.approx(0.0)
    flow.stop(10_000)
    assert flow.backlog(20_000) == pytest.approx(100.0)
    flow.start(20_000, committed=flow.consumed_offset(20_000))
    assert flow.backlog(25_000) == pytest.approx(50.0)
    assert flow.backlog(30_000) == pytest.approx(0.0)
    # the message processed at resume waited 10 s; latency falls 1 s per s: 5 s at 20/s are late
    assert flow.late == pytest.approx(100.0)


def test_end_offsets_follow_the_produce_rate():
    sim = Simulation(load_scenario("canary-rollout"), "range")
    start = sim.scenario.start_ms
    first, later = sim.end_offsets_at(start + 10_000), sim.end_offsets_at(start + 20_000)
    assert len(first) == 50 and first[("orders", 0)] == 120 and later[("orders", 49)] == 240


def test_run_stream_paces_to_speed_and_matches_run():
    scenario = load_scenario("join-one")
    waits: list[float] = []
    now = [0.0]

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds
    streamed = list(Simulation(scenario, "range", seed=5).run_stream(speed=10.0, sleep=sleep,
                                                                     clock=lambda: now[0]))
    assert [r.to_capture() for r in streamed] == _capture(Simulation(scenario, "range", seed=5))
    last = (streamed[-1].timestamp - scenario.start_ms) / 1000.0
    assert sum(waits) == pytest.approx(last / 10.0, abs=1e-6)


def test_summary_figures_are_consistent():
    sim = Simulation(load_scenario("join-one"), "sticky", seed=2)
    result = sim.run()
    s = result.summary
    assert s.rebalances == 1 and s.records == len(result.records)
    assert s.partitions_moved == len(sim.truth.rebalances[-1].partitions_moved)


def test_builtins_load_and_canary_matches_issue():
    assert {"canary-rollout", "join-one"} <= set(builtin_scenarios())
    canary = load_scenario("canary-rollout")
    assert canary.topics[0].partitions == 50 and canary.topics[0].rate == 600
    assert canary.clients.count == 50 and [s.count for s in canary.steps] == [100, 50, 10]


@pytest.mark.parametrize("data,message", [
    ({"group": "g", "duration": 10, "topics": []}, "topics must be a non-empty list"),
    ({"group": "g", "duration": 10, "topics": [{"name": "t", "partitions": 0, "rate": 1}],
      "consumers": {"count": 1}}, "partitions must be an integer >= 1"),
    ({"group": "g", "duration": 10, "topics": [{"name": "t", "partitions": 1, "rate": 1}],
      "consumers": {"count": 1}, "steps": [{"at": 1, "action": "explode"}]}, "action must be one of"),
    ({"group": "g", "duration": 10, "topics": [{"name": "t", "partitions": 1, "rate": 1}],
      "consumers": {"count": 1, "topics": ["u"]}}, "unknown: ['u']"),
    ({"group": "g", "duration": 10, "topics": [{"name": "t", "partitions": 1, "rate": 1}],
      "consumers": {"count": 1}, "strategies": ["fastest"]}, "unknown strategy"),
    ({"group": "g", "duration": 10, "colour": "red"}, "unknown key(s) colour"),
    ({"group": "g", "duration": 10, "topics": [{"name": "t", "partitions": 1, "rate": 1}],
      "consumers": {"count": 1, "client_id": "app-{host}"}}, "consumers.client_id must be a format string"),
])
def test_bad_scenarios_are_rejected_clearly(data, message):
    with pytest.raises(ScenarioError, match=None) as info:
        parse_scenario(data)
    assert message in str(info.value)


def test_unknown_scenario_name(tmp_path):
    with pytest.raises(ScenarioError, match="no scenario named"):
        load_scenario("no-such-scenario")
    bad = tmp_path / "bad.yaml"
    bad.write_text("group: [unclosed\n")
    with pytest.raises(ScenarioError, match="not valid YAML"):
        load_scenario(str(bad))


from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@st.composite
def small_scenarios(draw):
    steps = []
    for _ in range(draw(st.integers(0, 3))):
        action = draw(st.sampled_from(["scale", "crash", "restart", "leave_all"]))
        step = {"at": draw(st.integers(10, 80)), "action": action}
        if action == "scale":
            step["to"] = draw(st.integers(0, 6))
        elif action in ("crash", "restart"):
            step["count"] = draw(st.integers(1, 3))
        if action in ("restart", "leave_all", "scale"):
            step["stagger"] = draw(st.sampled_from([0, 0.5, 4]))
        if action == "restart":
            step["down"] = draw(st.sampled_from([1, 10]))
        steps.append(step)
    data = {
        "name": "random", "group": draw(st.sampled_from(["g", "orders-app", "grüße"])), "duration": 100,
        "topics": [{"name": "a", "partitions": draw(st.integers(1, 8)), "rate": 20},
                   {"name": "b", "partitions": draw(st.integers(1, 4)), "rate": 5}],
        "consumers": {"count": draw(st.integers(1, 5)), "topics": draw(st.sampled_from([["a"], ["a", "b"]])),
                      "static": draw(st.booleans()), "session_timeout_ms": 10000,
                      "processing_rate": 10},
        "steps": steps,
    }
    return parse_scenario(data), draw(st.sampled_from(STRATEGIES)), draw(st.integers(0, 1000))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_scenarios())
def test_random_scenarios_reconstruct_and_never_double_assign(case):
    scenario, strategy, seed = case
    sim = Simulation(scenario, strategy, seed=seed)
    store = GroupStore(topic_names={tid: name for name, tid in sim.topic_ids.items()})
    seen = 0
    while sim.step():
        for rec in sim.log.records[seen:]:
            store.apply(decode(rec.key, rec.value), partition=rec.partition, offset=rec.offset,
                        timestamp_ms=rec.timestamp)
        if len(sim.log.records) > seen and sim.group_view() is not None:
            view = sim.group_view()
            assert _reducer_view(store.group(scenario.group).to_dict()) == _sim_view(view)
            owned = [tp for tps in view["members"].values() for tp in tps]
            assert len(owned) == len(set(owned))
        seen = len(sim.log.records)
    # no partition is processed by two consumers; once settled with only live members, all are
    alive = [c for c in sim.clients if c.alive]
    processed = sorted(tp for c in alive for tp in c.owned)
    assert len(processed) == len(set(processed))
    view = sim.group_view()
    settled = (view is not None and sim.truth.open is None and view["members"]
               and set(view["members"]) == {c.member_id for c in alive}
               and all(getattr(c, "phase", "stable") == "stable" and not getattr(c, "reconciling", False)
                       for c in alive))
    if settled:
        topics = set(scenario.clients.topics)
        assert processed == sorted(tp for tp in sim.flows if tp[0] in topics)


def test_client_ids_order_the_members_of_range():
    """The classic member id is client.id + "-" + a UUID, so range hands partitions out in client
    id order: with zero-padded ids the first consumers keep theirs when more join and nothing
    moves; with Kafka's default ids ("...-10" sorts before "...-2") the newcomers cut in."""
    def moved_on_doubling(client_id: str | None) -> int:
        consumers = {"count": 6, "topics": ["t"], "processing_rate": 100}
        if client_id:
            consumers["client_id"] = client_id
        scenario = parse_scenario({"group": "g", "duration": 40, "topics": [{"name": "t", "partitions": 6, "rate": 6}],
                                   "consumers": consumers, "steps": [{"at": 20, "action": "scale", "to": 12}],
                                   "strategies": ["range"]})
        return Simulation(scenario, "range", seed=1).run().summary.partitions_moved
    assert moved_on_doubling("app-{index:03d}") == 0
    assert moved_on_doubling(None) > 0


def test_startup_jitter_spreads_the_first_requests():
    def first_join_spread(jitter: int) -> int:
        scenario = parse_scenario({"group": "g", "duration": 10, "topics": [{"name": "t", "partitions": 4, "rate": 4}],
                                   "consumers": {"count": 20, "topics": ["t"], "startup_ms": 100,
                                                 "startup_jitter_ms": jitter},
                                   "strategies": ["server-uniform"]})
        sim = Simulation(scenario, "server-uniform", seed=1)
        sim.run()
        joined = [r.timestamp for r in sim.log.records if r.record["type_name"] == "consumer_group_member_metadata"]
        return max(joined) - min(joined)
    assert first_join_spread(0) <= 5
    assert 1000 <= first_join_spread(2000) <= 2000


@pytest.mark.parametrize("interval", [0, 1000, 4000])
def test_kip848_targets_wait_for_the_assignment_interval(interval):
    """KIP-1263 (Kafka 4.3+): a new target assignment is computed at the first heartbeat a full
    `group.consumer.assignment.interval.ms` after the previous computation, never sooner."""
    base = load_scenario("join-one")
    scenario = dataclasses.replace(base, consumer_assignment_interval_ms=interval,
                                   consumer_heartbeat_interval_ms=500)
    sim = Simulation(scenario, "server-uniform", seed=1)
    result = sim.run()
    targets = [r.timestamp for r in result.records
               if r.record["type_name"] == "consumer_group_target_assignment_metadata"]
    assert len(targets) >= 2
    assert all(b - a >= interval for a, b in zip(targets, targets[1:]))
    joined = result.truth.rebalances[-1]
    # the fifth member joins well after the last computation: its target comes at once (at a
    # heartbeat), so the interval only matters while members arrive close together
    assert joined.end_ms - joined.start_ms < 3000


def test_a_partition_flows_fetch_start_after_its_assignment():
    """Messages flow `fetch_start_ms` after an assignment; every hand-over stall lasts at least
    that long, and grows by exactly that much."""
    def run(fetch_start_ms: int):
        base = load_scenario("join-one")
        scenario = dataclasses.replace(base, clients=dataclasses.replace(base.clients, fetch_start_ms=fetch_start_ms))
        return Simulation(scenario, "cooperative-sticky", seed=1).run()
    quick, slow = run(0), run(1500)
    stalls = [d for r in slow.truth.rebalances[1:] for d in r.downtime]
    before = [d for r in quick.truth.rebalances[1:] for d in r.downtime]
    assert stalls and all(d["seconds"] >= 1.5 for d in stalls)
    assert [(d["partition"], round(d["seconds"] - 1.5, 3)) for d in stalls] == \
        [(d["partition"], d["seconds"]) for d in before]


@pytest.mark.parametrize("action", ["crash", "kill"])
def test_a_killed_consumer_commits_then_waits_for_its_session(action):
    """`kill` is a close that stays in the group: it commits, the partitions stall until the
    session expires; a crash does the same without the commit."""
    scenario = parse_scenario({"group": "g", "duration": 60, "latency_budget": 3,
                               "topics": [{"name": "t", "partitions": 4, "rate": 40}],
                               "consumers": {"count": 4, "topics": ["t"], "processing_rate": 1000,
                                             "session_timeout_ms": 10000, "auto_commit_interval_ms": 5000},
                               "steps": [{"at": 22, "action": action, "count": 1}], "strategies": ["range"]})
    sim = Simulation(scenario, "range", seed=1)
    result = sim.run()
    expired = [r for r in result.truth.rebalances if r.start_ms - scenario.start_ms >= 22000]
    # A commit counts as a heartbeat (OffsetMetadataManager reschedules the classic member's
    # session): the killed member's closing commit restarts its session, a crash does not.
    expiry = expired[0].start_ms - scenario.start_ms if len(expired) == 1 else None
    if action == "kill":
        assert expiry is not None and 22000 + 10000 <= expiry <= 22000 + 10000 + 100
    else:
        assert expiry is not None and 22000 + 10000 - 3000 <= expiry < 22000 + 10000
    crashed_at = 22000 + scenario.start_ms
    commits = [r for r in result.records if r.record["type_name"] == "offset_commit"
               and crashed_at <= r.timestamp <= crashed_at + 100]
    assert bool(commits) == (action == "kill")
