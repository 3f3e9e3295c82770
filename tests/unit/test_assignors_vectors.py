"""Every case of tests/data/kafka-assignors.jsonl: outcomes of Kafka's own assignor classes.

Range and RoundRobin lists are compared in order (ours reproduce Kafka's list order); the
sticky family and the server assignors are compared as sets per member, as tests/data/README.md
advises. Cooperative-sticky cases also replay the follow-up round (`final_result`).
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from coordinator.assignors import assign
from tests.support.paths import DATA

VECTORS = DATA / "kafka-assignors.jsonl"
CASES = [json.loads(line) for line in VECTORS.read_text().splitlines() if line.strip()]
ORDERED = {"range", "roundrobin"}


def _case_id(case: dict) -> str:
    return f"{case['strategy']}:{case['case_id']}:r{case['round']}"


def _inputs(case: dict) -> dict:
    subscriptions = case["subscriptions"]
    if case["strategy"].startswith("server"):
        # Kafka iterated hash tables here; the vectors record the order it saw.
        topic_order = case["topic_iteration_order"]
        subscriptions = {m: topic_order[m] for m in case["member_iteration_order"]}
    return dict(partitions_per_topic=case["partitions_per_topic"], subscriptions=subscriptions,
                previous=case["owned"], generations=case.get("generations"), topic_ids=case.get("topic_ids"))


def _as_lists(assignment: dict) -> dict:
    return {m: [list(tp) for tp in tps] for m, tps in assignment.items()}


def _as_sets(assignment: dict) -> dict:
    return {m: {tuple(tp) for tp in tps} for m, tps in assignment.items()}


def _same(strategy: str, got: dict, expected: dict) -> bool:
    if strategy in ORDERED:
        return _as_lists(got) == expected
    return _as_sets(got) == _as_sets(expected)


def test_vector_file_is_complete():
    counts = Counter(c["strategy"] for c in CASES)
    assert sum(counts.values()) == 1813
    assert counts == {"range": 302, "roundrobin": 303, "sticky": 304, "cooperative-sticky": 304,
                      "server-uniform": 300, "server-range": 300}


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_matches_kafka(case):
    got = assign(case["strategy"], **_inputs(case))
    assert _same(case["strategy"], got, case["result"]), (got, case["result"])
    if "final_result" in case:
        generation = case["final_generation"]
        follow_up = assign(case["strategy"], case["partitions_per_topic"], case["subscriptions"],
                           previous=got, generations={m: generation for m in case["subscriptions"]})
        assert _same(case["strategy"], follow_up, case["final_result"]), (follow_up, case["final_result"])
        assert (_as_sets(follow_up) != _as_sets(got)) == case["final_differs"]


ORDER_SENSITIVE = [c for c in CASES if c["strategy"] == "server-uniform" and c["input_order_sensitive"]]


def test_server_uniform_depends_on_given_iteration_order():
    """Feeding the members in another order than Kafka saw must be able to change the result,
    otherwise the recorded order would not be what makes the port match."""
    changed = 0
    for case in ORDER_SENSITIVE:
        inputs = _inputs(case)
        inputs["subscriptions"] = dict(reversed(list(inputs["subscriptions"].items())))
        if _as_sets(assign(case["strategy"], **inputs)) != _as_sets(case["result"]):
            changed += 1
    assert ORDER_SENSITIVE and changed > 0
