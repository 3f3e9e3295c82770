"""The classic rebalance-start estimator and the assignment maths, on known timings."""
from __future__ import annotations

from coordinator.state import assignment_quality, diff_assignments, estimate_start
from coordinator.state.estimator import COMMIT_HISTORY, record_commit


def test_burst_is_the_run_of_close_commits_before_the_join_ended():
    history = [[1_000, 4], [5_000, 4], [9_000, 2], [9_500, 3]]
    # 9.0 and 9.5 s are 0.5 s apart (one burst); 5.0 s is 4 s before it (the last periodic commit)
    assert estimate_start(history, 12_000, 11_000, 500, 300_000) == (9_000, "commit_burst")


def test_one_commit_record_is_the_last_commit_not_a_burst():
    assert estimate_start([[9_000, 1]], 12_000, 11_000, 500, 300_000) == (9_000, "last_commit")


def test_commits_outside_the_generation_or_after_the_join_do_not_count():
    history = [[400, 5], [11_500, 5]]
    # 0.4 s is before the previous generation's record (0.5 s); 11.5 s is inside the sync phase
    assert estimate_start(history, 12_000, 11_000, 500, 300_000) == (11_000, "state_timestamp")


def test_commits_older_than_the_rebalance_timeout_are_not_a_burst():
    history = [[1_000, 8]]
    assert estimate_start(history, 100_000, 99_000, None, 30_000) == (99_000, "state_timestamp")
    # without a state timestamp (value v0/v1) the last commit of the generation is all there is
    assert estimate_start(history, 100_000, None, None, 30_000) == (1_000, "last_commit")


def test_nothing_known_gives_a_zero_length_estimate():
    assert estimate_start([], 5_000, None, None, None) == (5_000, "state_timestamp")
    assert estimate_start([], 5_000, -1, None, None) == (5_000, "state_timestamp")


def test_without_a_state_timestamp_the_window_ends_at_the_record():
    assert estimate_start([[4_000, 2], [4_100, 1]], 5_000, None, None, None) == (4_000, "commit_burst")


def test_default_rebalance_timeout_applies_when_unknown():
    assert estimate_start([[1_000, 2]], 301_000, 300_500, None, None) == (1_000, "commit_burst")
    assert estimate_start([[1_000, 2]], 302_000, 301_500, None, None) == (301_500, "state_timestamp")


def test_history_counts_records_per_timestamp_and_is_bounded():
    history: list[list[int]] = []
    for ts in (1, 1, 2):
        record_commit(history, ts)
    assert history == [[1, 2], [2, 1]]
    for ts in range(3, 3 + COMMIT_HISTORY):
        record_commit(history, ts)
    assert len(history) == COMMIT_HISTORY and history[0] == [3, 1]


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


def test_quality_without_partition_counts_has_no_unowned_figure():
    q = assignment_quality({"a": [("t", 0)], "b": []}, {"a": ["t"], "b": ["t"]}, None)
    assert q == {"members": 2, "min_partitions": 0, "max_partitions": 1, "skew": 1, "idle_members": 1,
                 "unowned_partitions": None}
    assert assignment_quality({}, {}, {"t": 3})["members"] == 0
