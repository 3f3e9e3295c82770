"""groupscope against Kafka's own view of every group, on real brokers (4.4 and 3.9) with real Java
clients: Kafka is the oracle (docs/kafka-parity.md).

One groupscope job per broker (queries of the test session's Spark) reads the real
`__consumer_offsets`; every scenario
(tests/support/parity_scenarios.py) runs at the same time on its own topics and groups, step by
step in lockstep; the two brokers' lanes run side by side, each at its own pace. The members are
threads of a few harness JVMs per lane (tests/support/parity_clients.py). At each step the runner
polls both sides until a quiet point (the job caught up, Kafka's AdminClient shows the change
settled) and records where groupscope and Kafka still differ; after the last step it looks once
more through Kafka's consumer-group command. The tests below assert there is nothing recorded.
"""
from __future__ import annotations

import concurrent.futures
import time
from dataclasses import dataclass, field

import pytest

from tests.support.groupscope_job import GroupscopeJob, run_groupscope_job
from tests.support.kafka_broker import KafkaBroker
from tests.support.client_harness import CLASSIC_ASSIGNORS, SERVER_ASSIGNORS
from tests.support.parity import (Views, differences, groupscope_views, kafka_views,
                                  kafka_views_from_command)
from tests.support.parity_clients import Members
from tests.support.parity_scenarios import (STEPS, AdminScenario, ConversionScenario,
                                            MembershipScenario, Scenario, member_logdir)

# A step's change settles in a few seconds; a KIP-848 crash waits for the broker's session timeout
# (10 s, tests/support/kafka_broker.py).
STEP_TIMEOUT_S = 60.0
POLL_S = 0.5
CLI = STEPS  # the outcome key of the final look through Kafka's consumer-group command


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
    last_admin: Views = field(default_factory=dict)  # Kafka's AdminClient view at the last step
    step_s: dict[int, float] = field(default_factory=dict)  # step -> seconds to act and settle

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
    if step == CLI:
        kafka = kafka_views_from_command(lane.broker, lane.groups)
    else:
        kafka = lane.last_admin = kafka_views(lane.broker, lane.members.describe, lane.groups)
    ours = groupscope_views(lane.job, lane.groups, samples)
    lane.final_kafka, lane.final_ours = kafka, ours
    behind = [] if lane.job.caught_up(samples) else ["groupscope has not caught up"]
    return {s.name: (s.expect(min(step, STEPS - 1), kafka) + differences(kafka, ours, s.groups, member_lag=True)
                     + behind) for s in lane.scenarios}


def _both_views(lane: Lane, groups: tuple[str, ...]) -> str:
    return "; ".join(f"{g}: Kafka {lane.final_kafka.get(g)}, groupscope {lane.final_ours.get(g)}"
                     for g in groups)


def _settle(lane: Lane, step: int) -> bool:
    """Poll both sides until every scenario's step has settled and groupscope agrees with Kafka;
    on the deadline, the unsettled scenarios' problems end with both sides' last views."""
    deadline = time.monotonic() + (STEP_TIMEOUT_S if step != CLI else 2 * STEP_TIMEOUT_S)
    while True:
        result = _check(lane, step)
        for name, problems in result.items():
            lane.outcome[(name, step)] = problems
        if not any(result.values()):
            return True
        if time.monotonic() > deadline:
            for scenario in lane.scenarios:
                if result[scenario.name]:
                    result[scenario.name].append(f"not settled within the deadline; "
                                                 f"{_both_views(lane, scenario.groups)}")
            return False
        # The command's look starts three JVMs: not every half second.
        time.sleep(POLL_S if step != CLI else 3 * POLL_S)


def _run_lockstep(lane: Lane) -> None:
    """Every step of every scenario on one lane, then the consumer-group command's look. A lane
    that did not settle stops there: the next steps' actions assume the last ones took effect
    (a group to delete must exist), and its recorded problems say why."""
    for step in [*range(STEPS), CLI]:
        started = time.monotonic()
        for scenario in lane.scenarios:
            if step != CLI:
                scenario.act(step)
        settled = _settle(lane, step)
        lane.step_s[step] = time.monotonic() - started
        if not settled:
            return


@pytest.fixture(scope="module")
def lanes(spark, broker, broker39, tmp_path_factory):
    root = tmp_path_factory.mktemp("kafka-parity")
    started = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        jobs = list(pool.map(lambda b: run_groupscope_job(spark, b.bootstrap, root / f"job-{b.version}",
                                                          member_lag=True),
                             (broker, broker39)))
    made: list[Lane] = []
    try:
        for b, job in zip((broker, broker39), jobs):
            members = Members(b, member_logdir(root, b))
            made.append(Lane(b, job, members, []))
            # The administration scenario first: its standalone commits are quick when the
            # broker is not yet busy starting the members' JVMs.
            scenarios: list[Scenario] = [AdminScenario(b, members)]
            scenarios += [MembershipScenario(b, members, "classic", a) for a in CLASSIC_ASSIGNORS]
            scenarios += [MembershipScenario(b, members, "consumer", a) for a in SERVER_ASSIGNORS]
            if b.version.startswith("4."):
                scenarios.append(ConversionScenario(b, members))
            made[-1].scenarios = scenarios
        # The lanes are independent (own broker, job, clients): side by side, each at its pace.
        with concurrent.futures.ThreadPoolExecutor(len(made)) as pool:
            list(pool.map(_run_lockstep, made))
        print(f"kafka parity: {time.monotonic() - started:.0f} s for {STEPS} steps")
        for lane in made:
            print(f"  {lane.broker.version} seconds per step (the last: the command's look): "
                  + " ".join(f"{s:.1f}" for _, s in sorted(lane.step_s.items())))
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
    """Per step (CLI: the consumer-group command's look), what was unmet or different; a step
    that never ran (the lane stopped at an unsettled one) is a problem too."""
    out = {}
    for step in [*range(STEPS), CLI]:
        problems = lane.outcome.get((scenario, step), ["not run: the lane stopped at an earlier step"])
        if problems:
            out[step] = problems
    return out


@pytest.mark.parametrize("version", ["4.4.0", "3.9.2"])
@pytest.mark.parametrize("assignor", list(CLASSIC_ASSIGNORS))
def test_classic_group_matches_kafka(lanes, version, assignor):
    assert _problems(lanes[version], f"classic-{assignor}") == {}


@pytest.mark.parametrize("version", ["4.4.0", "3.9.2"])
@pytest.mark.parametrize("assignor", list(SERVER_ASSIGNORS))
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


@pytest.mark.parametrize("version", ["4.4.0", "3.9.2"])
def test_kafka_admin_view_shows_what_the_rules_assume(lanes, version):
    """Rules 2 and 4 of docs/kafka-parity.md through the AdminClient: every static member's
    instance id on both versions; KIP-848 group, target assignment and member epochs only on 4.x."""
    lane = lanes[version]
    for scenario in lane.scenarios:
        if isinstance(scenario, MembershipScenario):
            view = lane.last_admin[scenario.group]
            assert f"{scenario.group}-static" in {m.instance_id for m in view.members.values()}
            if scenario.protocol == "consumer":
                epochs = [view.epoch, view.target_epoch, *(m.epoch for m in view.members.values())]
                assert all(e is not None for e in epochs) if version.startswith("4.") else \
                    all(e is None for e in epochs)


@pytest.mark.parametrize("version", ["4.4.0", "3.9.2"])
def test_lag_per_member_was_compared(lanes, version):
    """The comparison of metrics.member_lag is not an empty one: at the last look through the
    AdminClient and through Kafka's command, every membership group's members that own
    committed partitions have a lag on both sides (equal: the tests above)."""
    lane = lanes[version]
    for scenario in lane.scenarios:
        if isinstance(scenario, MembershipScenario):
            for kafka in (lane.last_admin[scenario.group], lane.final_kafka[scenario.group]):
                assert kafka.member_lag, scenario.group
            assert set(lane.final_ours[scenario.group].member_lag) == \
                set(lane.final_kafka[scenario.group].member_lag)
