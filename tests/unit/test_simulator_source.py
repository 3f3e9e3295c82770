"""The simulator as a live source: one merged `__consumer_offsets` log, its file, its offsets."""
from __future__ import annotations

import dataclasses
import itertools
import time

import pytest

from coordinator.partitioning import partition_for
from coordinator.records import decode
from coordinator.simulator import STRATEGIES, load_scenario, parse_scenario
from streaming.sources.capture_file import decode_line
from streaming.sources.simulator import (SimulatedClock, SimulatorFeed, build_simulations,
                                         merged_log)

START_MS = 1_800_000_000_000


def small_scenario(offsets_partitions: int = 50):
    return parse_scenario({
        "name": "tiny", "group": "ignored", "duration": 40,
        "topics": [{"name": "orders", "partitions": 4, "rate": 40}],
        "consumers": {"count": 2, "processing_rate": 50},
        "steps": [{"at": 20, "action": "scale", "to": 3}],
        "offsets_topic_partitions": offsets_partitions}, "tiny")


def check_log(records, groups, partitions):
    last: dict[int, int] = {}
    seen_groups = set()
    for rec in records:
        decoded = decode(rec.key, rec.value)
        group = decoded.key.get("group", decoded.key.get("group_id"))
        seen_groups.add(group)
        assert rec.partition == partition_for(group, partitions)
        assert rec.offset == last.get(rec.partition, -1) + 1  # gap-free and increasing
        last[rec.partition] = rec.offset
    assert seen_groups == set(groups)
    return last


def test_canary_rollout_groups_each_in_their_partition():
    scenario = load_scenario("canary-rollout")
    sims = build_simulations(scenario, scenario.strategies, 0, START_MS)
    groups = [f"canary-rollout-{s}" for s in scenario.strategies]
    assert [sim.scenario.group for sim in sims.values()] == groups
    records = list(itertools.islice(merged_log(sims), 3000))  # the groups forming
    assert [r.timestamp_ms for r in records] == sorted(r.timestamp_ms for r in records)
    check_log(records, groups, 50)
    # One cluster: every KIP-848 group names the topic by the same id.
    assert len({tuple(sim.topic_ids.items()) for sim in sims.values()}) == 1


def test_groups_sharing_a_partition_interleave_with_their_own_offsets():
    scenario = small_scenario(offsets_partitions=1)
    sims = build_simulations(scenario, STRATEGIES, 3, START_MS)
    records = list(merged_log(sims))
    last = check_log(records, [f"tiny-{s}" for s in STRATEGIES], 1)
    assert last == {0: len(records) - 1}
    per_group = {s: len(sim.log.records) for s, sim in sims.items()}
    assert sum(per_group.values()) == len(records)


def test_feed_writes_the_paced_log_and_answers_the_poller(tmp_path):
    scenario = small_scenario()
    feed = SimulatorFeed(scenario, ["range", "server-uniform"], str(tmp_path / "log.jsonl"),
                         speed=200.0, seed=1, clock=SimulatedClock(200.0, start_ms=START_MS))
    assert feed.end_offsets()[("orders", 0)] == 0  # the clock stands still until started
    feed.start()
    deadline = time.monotonic() + 30
    while not feed.finished and feed.error is None and time.monotonic() < deadline:
        time.sleep(0.05)
    feed.stop()
    assert feed.error is None and feed.finished
    with open(feed.path, encoding="utf-8") as fh:
        records = [decode_line(line) for line in fh]
    last = check_log(records, ["tiny-range", "tiny-server-uniform"], 50)
    target = feed.progress_target()
    assert set(target) == set(range(50))
    assert {p: end for p, end in target.items() if end} == {p: o + 1 for p, o in last.items()}
    # The produce side, frozen at the scenario's end: 10 messages/s per partition for 40 s.
    client = feed.offsets_client()
    wanted = [("orders", 0), ("orders", 3), ("gone", 0)]
    assert client.end_offsets(wanted) == {("orders", 0): 400, ("orders", 3): 400}
    time.sleep(0.1)  # 20 simulated seconds later
    assert client.end_offsets(wanted) == {("orders", 0): 400, ("orders", 3): 400}
    assert client.start_offsets(wanted) == {("orders", 0): 0, ("orders", 3): 0}
    names, counts = client.topic_metadata()
    assert counts == {"orders": 4} and list(names.values()) == ["orders"]
    assert feed.sims["server-uniform"].topic_ids["orders"] in names


def test_clock_runs_at_speed():
    now = [100.0]
    clock = SimulatedClock(4.0, start_ms=START_MS, monotonic=lambda: now[0])
    now[0] += 10
    assert clock() == START_MS / 1000  # not started
    clock.run()
    now[0] += 2.5
    assert clock.ms() == START_MS + 10_000 and clock() == START_MS / 1000 + 10
    with pytest.raises(ValueError):
        SimulatedClock(0)


def test_scenario_replace_keeps_the_produce_side():
    scenario = small_scenario()
    sims = build_simulations(scenario, ["range", "sticky"], 0, START_MS)
    at = START_MS + 12_345
    assert sims["range"].end_offsets_at(at) == sims["sticky"].end_offsets_at(at)
    assert dataclasses.replace(scenario, group="x").topics == scenario.topics
