"""groupscope's rebalance figures against what real Java consumers saw with their own clocks.

10 partitions, 4 consumers, a fifth joins; once per strategy (the four classic client-side
assignors and KIP-848's two server-side ones), all six groups at once on their own topics while one
groupscope job watches them. The clients (jvm/harness, driven by tests/support/client_harness.py)
report every revocation and assignment; from those come the truth: which partitions changed owner,
who owns what afterwards, and when the rebalance started (the first revocation or the newcomer's
join) and ended (the last assignment).

A classic join leaves no trace in `__consumer_offsets` until the existing members hear of it at
their next heartbeat (every 200 ms here) and commit before they rejoin (coordinator/state/
estimator.py): the newcomer's first JoinGroup is answered MEMBER_ID_REQUIRED and its second one
puts the group in PreparingRebalance, and the coordinator writes neither. On a busy machine that
lead is no longer bounded by the heartbeat interval (the heartbeat thread and the poll loop wait
for a core: 0.6-1.0 s were seen), so a classic rebalance is compared from the first existing
member's rejoin by its own clock, and the newcomer's lead is printed beside it. That rejoin is
itself a span: groupscope's start is the commit the member sends before its JoinGroup
(`commit_burst`), its rebalance latency starts at the JoinGroup, once that commit is answered
(`ClientLog.first_reaction_ms`), and a busy machine put 0.55 s between the two. So the clients'
classic account runs from the JoinGroup (shortest) or from when that commit was sent (longest,
`ClientLog.first_rejoin_commit_ms`: the harness reads the consumer's coordinator as it rejoins)
to the last assignment. groupscope's duration cannot exceed the longest: its start is one of
the members' rejoin commits, none sent earlier, and its end the generation's record, written
before any member hears of it (the 0.5 s bound is slack there). It must reach the shortest within
max(10 %, 0.5 s), the bound kept for this side: its end comes before the clients' by the SyncGroup
answer's way to the last member and that member's next poll, which runs the callback (printed as
the end's lag), and the shortest starts late by what a cooperative member spends between its two
rebalances (its rebalance latency counts both joins, not the second rejoin commit between them).

A KIP-848 rebalance ends, in `__consumer_offsets`, at the heartbeat that hands a member its last
partitions: the coordinator writes the member STABLE with that assignment and answers; once the
consumer has run its callbacks and acknowledged, nothing more is written. What follows the answer
(the background thread's reconciliation, the callback in the next poll) is the client's and, on a
busy machine, took 0.17-0.25 s; it is left out (`ClientLog.last_heard`: the callback's time
minus that reconciliation's rebalance latency, which the consumer measures from the answer).
Likewise at the start: the coordinator dates the newcomer's join when it handles its first
heartbeat, and on a busy machine the answer reached the member up to 0.4 s later (every member of
the group heard of the new epoch in the same few milliseconds: the broker or the clients' JVM had
waited for a core). So the clients' account is a span, not a point: each step was written between
the heartbeat request that brought it and the response that told the member
(`ClientLog.kip848_span_s`, the requests dated by the consumer's heartbeat-response-time-max).
groupscope's duration must fall in that span, give or take 0.2 s: one poll of the client (0.1 s;
the join and an epoch step without a callback are dated by the poll that saw them) and a
hand-over between its threads. On an idle machine the span is a few milliseconds wide.
"""
from __future__ import annotations

import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from streaming.job.history import read_history
from tests.support.client_harness import (STRATEGIES, ClientHarness, ClientLog, HarnessConfig,
                                          strategy_name)
from tests.support.groupscope_job import run_groupscope_job
from tests.support.kafka_broker import create_topic

PARTITIONS = 10
FIRST = ("c1", "c2", "c3", "c4")
NEWCOMER = "c5"
RATE_PER_TOPIC = 40   # messages/s: every member has something to commit


def _settled(log: ClientLog, members: tuple[str, ...], quiet_ms: int = 2_000) -> bool:
    """Every member owns some partitions, together all of them, and no callback for `quiet_ms`."""
    now = time.time() * 1000
    owners = log.owners_at(now)
    covered = sorted(p for c in members for p in owners.get(c, ()))
    last = max((e["t"] for e in log.callbacks()), default=now)
    return covered == list(range(PARTITIONS)) and all(owners.get(c) for c in members) \
        and now - last >= quiet_ms


def _wait(predicate: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.25)


def _drive(harness: ClientHarness) -> tuple[float, float]:
    """Four consumers settle, a fifth joins and the five settle; returns (join, settled) times (ms)."""
    harness.add(*FIRST)
    _wait(lambda: _settled(harness.log(), FIRST), 90, f"{harness.config.group}: first four never settled")
    joined_ms = time.time() * 1000
    harness.add(NEWCOMER)
    _wait(lambda: _settled(harness.log(), FIRST + (NEWCOMER,)), 90,
          f"{harness.config.group}: five never settled")
    return joined_ms, time.time() * 1000


def _produce(bootstrap: str, topics: list[str], stop: threading.Event) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=20)
    n = 0
    try:
        while not stop.is_set():
            for topic in topics:
                producer.send(topic, value=b"x", partition=n % PARTITIONS)
            n += 1
            time.sleep(1.0 / RATE_PER_TOPIC)
    finally:
        producer.close()


def _groupscope_rebalances(history: str, group: str, since_ms: float) -> list[dict[str, Any]]:
    return [row["payload"] for row in read_history(history, "events", group=group)
            if row["kind"] == "rebalance" and row["payload"]["end_ms"] >= since_ms]


def _groupscope_owners(snapshot: dict[str, Any]) -> dict[str, set[int]]:
    return {m["client_id"]: {p for _t, p in m["assigned"]} for m in snapshot["members"]}


def _await_assignments(job, final: dict[str, dict[str, set[int]]],
                       timeout_s: float = 60) -> dict[str, dict[str, set[int]]]:
    """groupscope's per-member assignment of each group (by client id) once it equals the clients'
    (it has then read the rebalance), or as it stands after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        snapshots = job.snapshots()
        seen = {g: _groupscope_owners(snapshots.get(g, {"members": []})) for g in final}
        if seen == final or time.monotonic() > deadline:
            return seen
        time.sleep(0.5)


@pytest.fixture()
def job(spark, broker, tmp_path):
    running = run_groupscope_job(spark, broker.bootstrap, tmp_path / "job")
    yield running
    running.stop()


def test_rebalance_truth_every_strategy(broker, job, tmp_path: Path) -> None:
    run = uuid.uuid4().hex[:6]
    configs = {}
    for protocol, assignor in STRATEGIES:
        name = f"truth-{strategy_name(protocol, assignor)}-{run}"
        create_topic(broker.bootstrap, name, PARTITIONS)
        configs[name] = HarnessConfig(broker.bootstrap, name, name, protocol=protocol, assignor=assignor,
                                      session_ms=6_000, heartbeat_ms=200, auto_commit_ms=1_000)
    stop = threading.Event()
    producer = threading.Thread(target=_produce, args=(broker.bootstrap, list(configs), stop), daemon=True)
    producer.start()
    harnesses = {g: ClientHarness(c, tmp_path / f"{g}.jsonl", heap_mb=192) for g, c in configs.items()}
    try:
        with ThreadPoolExecutor(len(harnesses)) as pool:
            joined = dict(zip(harnesses, pool.map(_drive, harnesses.values())))
        logs = {g: h.log() for g, h in harnesses.items()}
        final = {g: logs[g].owners_at(joined[g][1]) for g in harnesses}
        seen = _await_assignments(job, final)
    finally:
        stop.set()
        for h in harnesses.values():
            h.close()
        producer.join(timeout=10)

    failures = [f"{g}: groupscope's members own {seen[g]}, the clients {final[g]}"
                for g in harnesses if seen[g] != final[g]]
    for group, log in logs.items():
        since, until = joined[group]
        truth = log.rebalance_between(since, until, join_from_latency=configs[group].protocol == "classic")
        ours = _groupscope_rebalances(job.history_path, group, since)
        assert ours, f"{group}: groupscope reported no rebalance after the join"
        moved = sorted({p for event in ours for _t, p in event["partitions_moved"]})
        assert truth.moved, f"{group}: the clients saw no partition change owner when a fifth joined"
        if moved != sorted(truth.moved):
            failures.append(f"{group}: moved {moved}, clients saw {sorted(truth.moved)}")
        start, end = min(e["start_ms"] for e in ours), max(e["end_ms"] for e in ours)
        duration = (end - start) / 1000.0
        lead = 0.0  # of the clients' duration, what no record can show (the module docstring)
        tail = 0.0  # likewise, after the coordinator's last answer (KIP-848)
        sent = None  # classic: no later than the first rejoin commit's request (the module docstring)
        if configs[group].protocol == "classic":
            reacted = log.first_reaction_ms(since, until, FIRST)
            lead = 0.0 if reacted is None else max(0.0, (reacted - truth.start_ms) / 1000.0)
            sent = log.first_rejoin_commit_ms(since, until, FIRST)
        span = None  # (shortest, longest) the coordinator's account can be (the module docstring)
        if configs[group].protocol == "consumer":
            heard = log.last_heard(since, until)
            tail = 0.0 if heard is None else max(0.0, (truth.end_ms - heard[0]) / 1000.0)
            span = log.kip848_span_s(since, until)
        visible = truth.duration_s - lead - tail
        if sent is not None:
            span = visible, max(visible, (truth.end_ms - sent) / 1000.0)
        bound = 0.2 if configs[group].protocol == "consumer" else max(0.1 * truth.duration_s, 0.5)
        shortest, longest = span if span is not None else (visible, visible)
        # groupscope's start after the rejoin commit's request (>= 0 by construction) and its end
        # before the clients' last callback: how much of the bound each side takes.
        after_sent = "-" if sent is None else f"{(start - sent) / 1000.0:.3f}s"
        print(f"{group}: moved {moved} (clients {sorted(truth.moved)}), duration {duration:.3f}s "
              f"(clients {truth.duration_s:.3f}s, {visible:.3f}s without the newcomer's lead of "
              f"{lead:.3f}s and the last reconciliation's {tail:.3f}s; span {shortest:.3f}-{longest:.3f}s; "
              f"start {after_sent} after the rejoin commit, end's lag {(truth.end_ms - end) / 1000.0:.3f}s), "
              f"methods {[e['start_method'] for e in ours]}, sync {[e['sync_seconds'] for e in ours]}")
        if configs[group].protocol == "consumer":
            # Kafka 4.4 dates each target assignment (KIP-1263): the sync phase runs from it
            syncs = [(e["sync_seconds"], e["duration_seconds"]) for e in ours]
            if any(sync is None or not 0.0 <= sync <= duration for sync, duration in syncs):
                failures.append(f"{group}: (sync, duration) {syncs}: a sync phase within each rebalance expected")
        if not shortest - bound <= duration <= longest + bound:
            failures.append(f"{group}: duration {duration:.3f}s, clients {visible:.3f}s "
                            f"(of {truth.duration_s:.3f}s; span {shortest:.3f}-{longest:.3f}s) "
                            f"(bound {bound:.2f}s; events {[(e['start_method'], e['duration_seconds']) for e in ours]})")
    assert not failures, "\n".join(failures)
