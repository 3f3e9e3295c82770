"""The classic rebalance-start estimator, downtime and the assignment maths, on known timings."""
from __future__ import annotations

from coordinator.state import assignment_quality, diff_assignments, estimate_start
from coordinator.state.estimator import REACTION_GAP_MS, downtime_seconds


def test_start_is_the_earliest_of_the_chained_last_commits_per_partition():
    # each partition's latest commit: 9.0 s, 9.5 s (reactions 0.5 s apart) and 4.0 s (a crashed
    # member's last periodic commit, more than a reaction gap before them)
    last = [9_500, 9_000, 9_500, 4_000, 9_500]
    assert estimate_start(last, 12_000, 11_000, 500, 300_000) == (9_000, "commit_burst")


def test_reactions_one_heartbeat_interval_apart_still_chain():
    last = [10_000, 10_000 - REACTION_GAP_MS, 10_000 - 2 * REACTION_GAP_MS, 10_000 - 3 * REACTION_GAP_MS - 1]
    assert estimate_start(last, 12_000, 11_000, None, 300_000) == (10_000 - 2 * REACTION_GAP_MS, "commit_burst")


def test_one_partition_is_the_last_commit_not_a_burst():
    assert estimate_start([9_000], 12_000, 11_000, 500, 300_000) == (9_000, "last_commit")


def test_commits_outside_the_generation_or_after_the_join_do_not_count():
    # 0.4 s is before the previous generation's record (0.5 s); 11.5 s is inside the sync phase
    assert estimate_start([400, 400, 11_500], 12_000, 11_000, 500, 300_000) == (11_000, "state_timestamp")


def test_commits_older_than_the_rebalance_timeout_do_not_count():
    assert estimate_start([1_000, 1_000], 100_000, 99_000, None, 30_000) == (99_000, "state_timestamp")
    # without a state timestamp (value v0/v1) the last commit of the generation is all there is
    assert estimate_start([1_000, 900], 100_000, None, None, 30_000) == (1_000, "last_commit")


def test_nothing_known_gives_a_zero_length_estimate():
    assert estimate_start([], 5_000, None, None, None) == (5_000, "state_timestamp")
    assert estimate_start([], 5_000, -1, None, None) == (5_000, "state_timestamp")


def test_without_a_state_timestamp_the_window_ends_at_the_record():
    assert estimate_start([4_000, 4_100, 4_100], 5_000, None, None, None) == (4_000, "commit_burst")


def test_default_rebalance_timeout_applies_when_unknown():
    assert estimate_start([1_000, 1_000], 301_000, 300_500, None, None) == (1_000, "commit_burst")
    assert estimate_start([1_000, 1_000], 302_000, 301_500, None, None) == (301_500, "state_timestamp")


def test_downtime_runs_from_the_last_commit_to_the_hand_over():
    assert downtime_seconds(12_500, 14_100) == 1.6
    assert downtime_seconds(None, 14_100) is None
    assert downtime_seconds(15_000, 14_100) is None   # a commit stamped after the hand-over says nothing


def test_diff_of_two_assignments():
    old = {"a": {("t", 0), ("t", 1)}, "b": {("t", 2)}, "gone": {("t", 3)}}
    new = {"a": {("t", 0)}, "b": {("t", 1), ("t", 2)}, "c": {("t", 3), ("t", 4)}}
    assert diff_assignments(old, new) == {
        "members_joined": ["c"], "members_left": ["gone"], "members_kept": ["a", "b"],
        "partitions_revoked": [["t", 1], ["t", 3]],
        "partitions_assigned": [["t", 1], ["t", 3], ["t", 4]],
        "partitions_kept": [["t", 0], ["t", 2]],
        "partitions_moved": [["t", 1], ["t", 3]],
    }


def test_a_partition_released_earlier_moves_when_another_member_gets_it():
    # cooperative: B gave up t-1 in the previous rebalance; nobody owned it in between
    old = {"a": {("t", 0)}, "b": set()}
    new = {"a": {("t", 0)}, "b": {("t", 2)}, "c": {("t", 1)}}
    diff = diff_assignments(old, new, released={("t", 1): "b", ("t", 2): "b"})
    assert diff["partitions_assigned"] == [["t", 1], ["t", 2]]
    assert diff["partitions_moved"] == [["t", 1]]          # t-2 went back to the member that released it
    assert diff_assignments(old, new)["partitions_moved"] == []


def test_quality_without_partition_counts_has_no_unowned_figure():
    q = assignment_quality({"a": [("t", 0)], "b": []}, {"a": ["t"], "b": ["t"]}, None)
    assert q == {"members": 2, "min_partitions": 0, "max_partitions": 1, "skew": 1, "idle_members": 1,
                 "unowned_partitions": None}
    assert assignment_quality({}, {}, {"t": 3})["members"] == 0
