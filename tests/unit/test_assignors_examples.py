"""Hand-checked examples: each expected result below was worked out on paper from the
algorithm (Kafka's Javadoc examples, corrected where the Javadoc is wrong), not taken from a run.
"""
from __future__ import annotations

import pytest

from coordinator.assignors import AssignorError, assign
from coordinator.assignors.java_order import string_hash, string_hash_order, uuid_hash
from coordinator.assignors.quality import moved, quality


def _sets(assignment):
    return {m: set(tps) for m, tps in assignment.items()}


def test_range_two_members_two_topics_of_four():
    got = assign("range", {"t0": 4, "t1": 4}, {"C1": ["t0", "t1"], "C0": ["t0", "t1"]})
    assert _sets(got) == {"C0": {("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)},
                          "C1": {("t0", 2), ("t0", 3), ("t1", 2), ("t1", 3)}}


def test_range_gives_the_odd_partition_of_every_topic_to_the_first_member():
    got = assign("range", {"t0": 3, "t1": 3}, {"C0": ["t0", "t1"], "C1": ["t0", "t1"]})
    assert _sets(got) == {"C0": {("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)},
                          "C1": {("t0", 2), ("t1", 2)}}


def test_roundrobin_heterogeneous_subscriptions():
    # One cursor over C0, C1, C2 for all partitions: t0p0 -> C0, t1p0 -> C1, t1p1 -> C2; for
    # each t2 partition the cursor skips C0 and C1 (not subscribed) and lands on C2 again.
    subs = {"C0": ["t0"], "C1": ["t0", "t1"], "C2": ["t0", "t1", "t2"]}
    got = assign("roundrobin", {"t0": 1, "t1": 2, "t2": 3}, subs)
    assert got == {"C0": [("t0", 0)], "C1": [("t1", 0)],
                   "C2": [("t1", 1), ("t2", 0), ("t2", 1), ("t2", 2)]}


STICKY_TOPICS = {"t0": 2, "t1": 2, "t2": 2, "t3": 2}
ALL_TOPICS = ["t0", "t1", "t2", "t3"]
FIRST_ROUND = {"C0": {("t0", 0), ("t1", 1), ("t3", 0)},
               "C1": {("t0", 1), ("t2", 0), ("t3", 1)},
               "C2": {("t1", 0), ("t2", 1)}}


@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
def test_sticky_javadoc_example_first_round(strategy):
    # 8 partitions over 3 members: quotas 2..3, dealt round-robin in topic/partition order.
    got = assign(strategy, STICKY_TOPICS, {m: ALL_TOPICS for m in ("C0", "C1", "C2")})
    assert _sets(got) == FIRST_ROUND


@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
def test_sticky_javadoc_example_c1_leaves(strategy):
    # Quota is now 4 each. C0 keeps its 3, C2 its 2; C1's partitions t0p1, t2p0, t3p1 are dealt
    # round-robin: t0p1 fills C0, the other two go to C2. The Javadoc's "C0 +t2p0, C2 +t0p1,t3p1"
    # is not what Kafka does. Nothing was owned by a remaining member, so nothing is withheld.
    previous = {"C0": [("t0", 0), ("t1", 1), ("t3", 0)], "C2": [("t1", 0), ("t2", 1)]}
    got = assign(strategy, STICKY_TOPICS, {"C0": ALL_TOPICS, "C2": ALL_TOPICS},
                 previous=previous, generations={"C0": 1, "C2": 1})
    assert _sets(got) == {"C0": FIRST_ROUND["C0"] | {("t0", 1)},
                          "C2": FIRST_ROUND["C2"] | {("t2", 0), ("t3", 1)}}
    assert moved(previous, got) == []


def test_cooperative_sticky_withholds_a_moving_partition_until_the_next_round():
    # C0 owned all 4 partitions; C1 joins. Eager sticky moves two partitions at once; cooperative
    # first only revokes them, then hands them to C1 in the follow-up round.
    subs = {"C0": ["t0"], "C1": ["t0"]}
    previous = {"C0": [("t0", p) for p in range(4)], "C1": []}
    generations = {"C0": 3, "C1": -1}
    eager = assign("sticky", {"t0": 4}, subs, previous=previous, generations=generations)
    assert _sets(eager) == {"C0": {("t0", 0), ("t0", 1)}, "C1": {("t0", 2), ("t0", 3)}}
    first = assign("cooperative-sticky", {"t0": 4}, subs, previous=previous, generations=generations)
    assert _sets(first) == {"C0": {("t0", 0), ("t0", 1)}, "C1": set()}
    second = assign("cooperative-sticky", {"t0": 4}, subs, previous=first, generations={"C0": 4, "C1": 4})
    assert _sets(second) == _sets(eager)


def test_sticky_newer_generation_wins_a_double_claim():
    # C1's claim on t0p0 is from an older generation, so C0 keeps it and C1 keeps only t0p1.
    subs = {"C0": ["t0"], "C1": ["t0"]}
    previous = {"C0": [("t0", 0)], "C1": [("t0", 0), ("t0", 1)]}
    got = assign("sticky", {"t0": 2}, subs, previous=previous, generations={"C0": 5, "C1": 4})
    assert _sets(got) == {"C0": {("t0", 0)}, "C1": {("t0", 1)}}


def test_server_range_ignores_the_current_target():
    subs = {"C0": ["t0"], "C1": ["t0"]}
    got = assign("server-range", {"t0": 3}, subs, previous={"C0": [("t0", 2)], "C1": [("t0", 0), ("t0", 1)]})
    assert _sets(got) == {"C0": {("t0", 0), ("t0", 1)}, "C1": {("t0", 2)}}


def test_server_uniform_homogeneous_keeps_target_within_quota():
    # 5 partitions, 2 members: the first member in iteration order may keep 3.
    subs = {"C1": ["t0"], "C0": ["t0"]}
    got = assign("server-uniform", {"t0": 5}, subs, previous={"C1": [("t0", p) for p in range(5)]})
    assert _sets(got) == {"C1": {("t0", 0), ("t0", 1), ("t0", 2)}, "C0": {("t0", 3), ("t0", 4)}}


def test_rack_aware_range_prefers_partitions_with_a_local_replica():
    # Without racks C0 would get t0p0, t0p1. With racks each member takes the partitions whose
    # replica sits in its rack, spans kept at two each.
    racks = {"C0": "a", "C1": "b"}
    partition_racks = {("t0", 0): ["b"], ("t0", 1): ["a"], ("t0", 2): ["b"], ("t0", 3): ["a"]}
    got = assign("range", {"t0": 4}, {"C0": ["t0"], "C1": ["t0"]}, racks=racks, partition_racks=partition_racks)
    assert got == {"C0": [("t0", 1), ("t0", 3)], "C1": [("t0", 0), ("t0", 2)]}


def test_rack_aware_sticky_deals_partitions_within_racks():
    racks = {"C0": "a", "C1": "b"}
    partition_racks = {("t0", 0): ["b"], ("t0", 1): ["b"], ("t0", 2): ["a"], ("t0", 3): ["a"]}
    got = assign("sticky", {"t0": 4}, {"C0": ["t0"], "C1": ["t0"]}, racks=racks, partition_racks=partition_racks)
    assert _sets(got) == {"C0": {("t0", 2), ("t0", 3)}, "C1": {("t0", 0), ("t0", 1)}}


def test_java_hash_rules():
    assert string_hash("C0") == 67 * 31 + 48
    assert string_hash("polygenelubricants") == -2147483648  # a well-known Integer.MIN_VALUE hash
    # "C3".."C9" land in buckets 0..6 of a 16-slot table, "C0".."C2" in 13..15.
    assert string_hash_order(["C0", "C1", "C2", "C3", "C4"]) == ["C3", "C4", "C0", "C1", "C2"]
    assert uuid_hash("AAAAAAAAAAAAAAAAAAAAAA") == 0


def test_quality_figures():
    subs = {"A": ["t0"], "B": ["t0"], "C": ["t0", "t1"]}
    got = quality({"A": [("t0", 0), ("t0", 1), ("t0", 2)], "B": [], "C": [("t1", 0)]}, subs, {"t0": 4, "t1": 2})
    assert got.partitions_per_member == {"A": 3, "B": 0, "C": 1}
    assert (got.min_partitions, got.max_partitions, got.skew) == (0, 3, 3)
    assert got.idle_members == ("B",)
    assert got.unowned == {"t0": (3,), "t1": (1,)}
    assert got.to_dict()["unowned_partitions"] == {"t0": 1, "t1": 1}
    assert moved({"A": [("t0", 0)], "B": [("t0", 1)]}, {"A": [("t0", 1)], "B": [("t0", 2)]}) == [("t0", 1)]


@pytest.mark.parametrize("call, message", [
    (lambda: assign("bogus", {"t0": 1}, {"C0": ["t0"]}), "unknown assignor strategy"),
    (lambda: assign("range", {"t0": -1}, {"C0": ["t0"]}), "partitions_per_topic"),
    (lambda: assign("range", {"t0": 1}, {"C0": "t0"}), "subscriptions"),
    (lambda: assign("sticky", {"t0": 1}, {"C0": ["t0"]}, previous={"C0": [("t0",)]}), "previous"),
    (lambda: assign("sticky", {"t0": 1}, {"C0": ["t0"]}, generations={"C0": "x"}), "generations"),
    (lambda: assign("sticky", {"t0": 2}, {"C0": ["t0"]}, previous={"C0": [("t0", 2)]}), "does not exist"),
    (lambda: assign("server-uniform", {"t0": 1}, {"C0": ["t0"]}, topic_ids={"t0": "zz"}), "topic id"),
])
def test_bad_input_is_a_clear_error(call, message):
    with pytest.raises(AssignorError, match=message):
        call()


def test_empty_group_and_missing_topics():
    assert assign("range", {"t0": 2}, {}) == {}
    assert assign("roundrobin", {}, {"C0": ["gone"]}) == {"C0": []}
    assert assign("server-uniform", {}, {"C0": ["gone"]}) == {"C0": []}


# Rack-aware expectations from Kafka's own unit tests (RangeAssignorTest,
# AbstractStickyAssignorTest). Broker i sits in rack "abc..."[i]; partition p of the n-th
# partition overall (topics in name order) has replicas on brokers (p + offset + j) % brokers.
def _replica_racks(topics, replication, broker_racks):
    racks, offset = {}, 0
    for topic in sorted(topics):
        for p in range(topics[topic]):
            racks[(topic, p)] = [broker_racks[(p + offset + j) % len(broker_racks)] for j in range(replication)]
        offset += topics[topic]
    return racks


def _parse(text):
    return sorted((tp.rsplit("-", 1)[0], int(tp.rsplit("-", 1)[1])) for tp in text.split(", ")) if text else []


CO_PARTITIONED = {"t1": 6, "t2": 6, "t3": 2, "t4": 2}
THREE = {"t1": 6, "t2": 7, "t3": 2}
ALL3 = ["t1", "t2", "t3"]
UNIFORM = ["t1-0, t1-3, t2-0, t2-3, t2-6", "t1-1, t1-4, t2-1, t2-4, t3-0", "t1-2, t1-5, t2-2, t2-5, t3-1"]
MISALIGNED = ["t1-0, t1-1, t1-2, t1-3, t1-4", "t1-5, t2-0, t2-1, t2-2, t2-3", "t2-4, t2-5, t2-6, t3-0, t3-1"]
UNEVEN_SUBS = [ALL3, ALL3, ["t1", "t3"]]
UNEVEN_RF1 = ["t1-3, t2-0, t2-2, t2-3, t2-6", "t1-4, t2-1, t2-4, t2-5, t3-0", "t1-0, t1-1, t1-2, t1-5, t3-1"]
UNEVEN_RF2 = ["t1-3, t2-0, t2-2, t2-5, t2-6", "t1-0, t2-1, t2-3, t2-4, t3-0", "t1-1, t1-2, t1-4, t1-5, t3-1"]
UNEVEN_NO_RACKS = ["t1-5, t2-0, t2-2, t2-4, t2-6", "t1-3, t2-1, t2-3, t2-5, t3-0", "t1-0, t1-1, t1-2, t1-4, t3-1"]
KAFKA_RACK_CASES = [
    # strategy, topics, replication, broker racks, member racks, subscriptions, owned, expected
    ("range", CO_PARTITIONED, 1, "ab", "abba", [["t1", "t2"]] * 2 + [["t3", "t4"]] * 2, None,
     ["t1-0, t1-2, t1-4, t2-0, t2-2, t2-4", "t1-1, t1-3, t1-5, t2-1, t2-3, t2-5", "t3-1, t4-1", "t3-0, t4-0"]),
    ("range", CO_PARTITIONED, 1, "ab", "abba", [list(CO_PARTITIONED)] * 4, None,
     ["t1-0, t1-2, t2-0, t2-2, t3-0, t4-0", "t1-1, t1-3, t2-1, t2-3, t3-1, t4-1", "t1-5, t2-5", "t1-4, t2-4"]),
    ("range", CO_PARTITIONED, 1, "abc", "abba", [list(CO_PARTITIONED)] * 4, None,
     ["t1-0, t1-3, t2-0, t2-3, t3-0, t4-0", "t1-1, t1-4, t2-1, t2-4, t3-1, t4-1", "t1-2, t2-2", "t1-5, t2-5"]),
    ("sticky", THREE, 1, "abc", "abc", [ALL3] * 3, None, UNIFORM),
    ("sticky", THREE, 2, "abc", "abc", [ALL3] * 3, UNIFORM, UNIFORM),
    ("cooperative-sticky", THREE, 3, "ab", "abc", [ALL3] * 3, None, UNIFORM),
    ("cooperative-sticky", THREE, 1, "abc", "abc", [ALL3] * 3, MISALIGNED, ["t1-0, t1-3", "t2-1", "t2-5, t3-1"]),
    ("sticky", THREE, 1, "abc", "abc", UNEVEN_SUBS, None, UNEVEN_RF1),
    ("cooperative-sticky", THREE, 2, "abc", "abc", UNEVEN_SUBS, UNEVEN_RF2, UNEVEN_RF2),
    ("sticky", THREE, 3, "ab", "abc", UNEVEN_SUBS, None, UNEVEN_NO_RACKS),
    ("sticky", THREE, 3, "abc", "def", UNEVEN_SUBS, None, UNEVEN_NO_RACKS),
    ("cooperative-sticky", THREE, 1, "abc", "abc", UNEVEN_SUBS, MISALIGNED, ["t1-3", "t2-1", "t3-1"]),
    ("cooperative-sticky", THREE, 1, "abc", "abc", UNEVEN_SUBS, ["t1-3", "t2-1", "t3-1"], UNEVEN_RF1),
]


@pytest.mark.parametrize("strategy, topics, replication, brokers, racks, subs, owned, expected", KAFKA_RACK_CASES)
def test_rack_aware_cases_from_kafka_unit_tests(strategy, topics, replication, brokers, racks, subs, owned, expected):
    members = [f"consumer{i}" for i in range(len(subs))]
    got = assign(strategy, topics, dict(zip(members, subs)),
                 previous=dict(zip(members, map(_parse, owned))) if owned else None,
                 racks=dict(zip(members, racks)), partition_racks=_replica_racks(topics, replication, brokers))
    assert {m: sorted(tps) for m, tps in got.items()} == dict(zip(members, map(_parse, expected)))
