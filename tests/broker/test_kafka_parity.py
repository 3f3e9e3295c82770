"""groupscope against Kafka's own view of every group, on real brokers (4.4 and 3.9) with real Java
clients: Kafka is the oracle (docs/kafka-parity.md).

One `groupscope run` per broker reads the real `__consumer_offsets`; every scenario
(tests/support/parity_scenarios.py) runs at the same time on its own topics and groups, step by
step in lockstep. At each step the runner waits for a quiet point (the job caught up, Kafka shows
the change settled) and records where groupscope and Kafka still differ; the tests below assert
there is nothing recorded.
"""
from __future__ import annotations

import concurrent.futures
import time
from dataclasses import dataclass, field

import pytest

from tests.support.groupscope_job import GroupscopeJob, start_groupscope_job
from tests.support.kafka_broker import KafkaBroker
from tests.support.parity import Views, differences, groupscope_views, kafka_views
from tests.support.parity_scenarios import (STEPS, AdminScenario, ConversionScenario,
                                            MembershipScenario, Scenario, member_logdir)
from tests.support.verifiable_members import CLASSIC_ASSIGNORS, Members

STEP_TIMEOUT_S = 60.0
POLL_S = 2.0
SERVER_ASSIGNORS = ("uniform", "range")
# Kafka 3.9 has the consumer protocol as a preview: one server assignor there keeps the JVM count
# down (the lanes run one after the other, each with up to ~30 client JVMs at its peak).
SERVER_ASSIGNORS_39 = ("uniform",)


@dataclass
class Lane:
    """One broker, its groupscope job, its members and the scenarios running on it."""
    broker: KafkaBroker
    job: GroupscopeJob
    members: Members
    scenarios: list[Scenario]
    # (scenario name, step) -> what was still unmet or different when the step ended
    outcome: dict[tuple[str, int], list[str]] = field(default_factory=dict)
    final_kafka: Views = field(default_factory=dict)
    final_ours: Views = field(default_factory=dict)

    @property
    def groups(self) -> list[str]:
        return [g for s in self.scenarios for g in s.groups]


def _check(lane: Lane, step: int) -> dict[str, list[str]]:
    """Per scenario: Kafka's unmet expectations, then groupscope's differences from Kafka (or
    why neither could be read this time)."""
    try:
        return _compare(lane, step)
    except Exception as exc:  # a tool that timed out on a busy machine: look again
        return {s.name: [f"could not compare: {exc!r:.500}"] for s in lane.scenarios}


def _compare(lane: Lane, step: int) -> dict[str, list[str]]:
    samples = lane.job.scrape()
    kafka = kafka_views(lane.broker, lane.groups)
    ours = groupscope_views(lane.job, lane.groups, samples)
    lane.final_kafka, lane.final_ours = kafka, ours
    behind = [] if lane.job.caught_up(samples) else ["groupscope has not caught up"]
    return {s.name: s.expect(step, kafka) + differences(kafka, ours, s.groups) + behind
            for s in lane.scenarios}


def _run_lockstep(lanes: list[Lane]) -> None:
    for step in range(STEPS):
        # A lane that did not settle stops there: the next steps' actions assume the last ones
        # took effect (a group to delete must exist), and its recorded problems say why.
        lanes = [lane for lane in lanes if not any(lane.outcome.get((s.name, step - 1))
                                                   for s in lane.scenarios)]
        for lane in lanes:
            for scenario in lane.scenarios:
                scenario.act(step)
        deadline = time.monotonic() + STEP_TIMEOUT_S
        pending = list(lanes)
        while pending:
            time.sleep(POLL_S)  # each look at Kafka starts a JVM or two: not too often
            with concurrent.futures.ThreadPoolExecutor(len(pending)) as pool:
                results = list(pool.map(lambda lane: _check(lane, step), pending))
            for lane, result in zip(list(pending), results):
                for name, problems in result.items():
                    lane.outcome[(name, step)] = problems
                if not any(result.values()):
                    pending.remove(lane)
            if time.monotonic() > deadline:
                break


@pytest.fixture(scope="module")
def lanes(broker, broker39, tmp_path_factory):
    root = tmp_path_factory.mktemp("kafka-parity")
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        jobs = list(pool.map(lambda b: start_groupscope_job(b.bootstrap, root / f"job-{b.version}"),
                             (broker, broker39)))
    made: list[Lane] = []
    try:
        for b, job in zip((broker, broker39), jobs):
            members = Members(b, member_logdir(root, b))
            # The administration scenario first: its standalone commits are quick when the
            # broker is not yet busy starting the members' JVMs.
            scenarios: list[Scenario] = [AdminScenario(b, members)]
            scenarios += [MembershipScenario(b, members, "classic", a) for a in CLASSIC_ASSIGNORS]
            server_assignors = SERVER_ASSIGNORS if b.version.startswith("4.") else SERVER_ASSIGNORS_39
            # 3.9's preview did not take the restarted static member back within 60 s (measured
            # once, cause not checked in Kafka's source): there the static member only crashes.
            scenarios += [MembershipScenario(b, members, "consumer", a,
                                             restart_static=b.version.startswith("4."))
                          for a in server_assignors]
            if b.version.startswith("4."):
                scenarios.append(ConversionScenario(b, members))
            made.append(Lane(b, job, members, scenarios))
        for lane in made:  # one broker at a time: the machine has 2 cores
            _run_lockstep([lane])
        print(f"kafka parity: {time.monotonic() - started:.0f} s for {STEPS} steps")
        for lane in made:
            for (name, step), problems in sorted(lane.outcome.items()):
                print(f"  {lane.broker.version} {name} step {step}: {problems or 'equal'}")
        yield {lane.broker.version: lane for lane in made}
    finally:
        for lane in made:
            lane.members.kill_all()
        for job in jobs:
            job.stop()


def _problems(lane: Lane, scenario: str) -> dict[int, list[str]]:
    return {step: problems for (name, step), problems in sorted(lane.outcome.items())
            if name == scenario and problems}


@pytest.mark.parametrize("version", ["4.4.0", "3.9.2"])
@pytest.mark.parametrize("assignor", list(CLASSIC_ASSIGNORS))
def test_classic_group_matches_kafka(lanes, version, assignor):
    assert _problems(lanes[version], f"classic-{assignor}") == {}


@pytest.mark.parametrize("version, assignor", [("4.4.0", a) for a in SERVER_ASSIGNORS]
                         + [("3.9.2", a) for a in SERVER_ASSIGNORS_39])
def test_consumer_protocol_group_matches_kafka(lanes, version, assignor):
    assert _problems(lanes[version], f"consumer-{assignor}") == {}


def test_protocol_conversion_matches_kafka(lanes):
    assert _problems(lanes["4.4.0"], "conversion") == {}


@pytest.mark.parametrize("version", ["4.4.0", "3.9.2"])
def test_administration_matches_kafka(lanes, version):
    assert _problems(lanes[version], "admin") == {}


@pytest.mark.parametrize("version", ["4.4.0", "3.9.2"])
def test_deleted_group_is_dead_in_groupscope_and_gone_from_kafka(lanes, version):
    """Rule 1 of docs/kafka-parity.md: Kafka forgets a deleted group; groupscope keeps it as Dead
    (groups.dead_grace) with no members and no offsets."""
    lane = lanes[version]
    admin = next(s for s in lane.scenarios if isinstance(s, AdminScenario))
    assert admin.deleted not in lane.final_kafka
    dead = lane.final_ours[admin.deleted]
    assert (dead.state, dead.members, dead.committed) == ("Dead", {}, {})


def test_offsets_outlive_the_protocol_conversion(lanes):
    """Converting a group keeps its committed offsets, in Kafka and in groupscope."""
    lane = lanes["4.4.0"]
    upgrade = next(s for s in lane.scenarios if isinstance(s, ConversionScenario)).upgrade
    assert lane.final_kafka[upgrade].group_type == "consumer"
    assert len(lane.final_kafka[upgrade].committed) == 6
    assert lane.final_ours[upgrade].committed == lane.final_kafka[upgrade].committed
