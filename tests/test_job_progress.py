"""Progress on `__consumer_offsets`: lag per partition, the backlog seen at start, readiness;
and the number of state partitions the job starts with."""
from __future__ import annotations

import os

from streaming.job import OffsetsTopicProgress, state_partitions


def test_ready_once_the_backlog_seen_at_start_is_read():
    ends = iter([{0: 10, 1: 5, 2: 0}, {0: 12, 1: 5, 2: 3}])
    progress = OffsetsTopicProgress(lambda: next(ends))
    progress.refresh_target()
    assert not progress.ready() and progress.backlog() == (0, 15)
    progress.read.update({0: 9, 1: 2})            # highest offsets processed so far
    assert not progress.ready() and progress.backlog() == (13, 15)
    progress.refresh_target()                     # the topic grew meanwhile
    assert progress.lag() == {0: 2, 1: 2, 2: 3}
    progress.read[1] = 4
    # Ready: what existed at start is read; what was written since is only lag.
    assert progress.ready() and progress.backlog() == (15, 15)
    assert progress.lag() == {0: 2, 1: 0, 2: 3}


def test_a_failing_end_offset_lookup_keeps_the_last_answer():
    answers = [{0: 4}]

    def target():
        if not answers:
            raise ConnectionError("broker away")
        return answers.pop()

    progress = OffsetsTopicProgress(target)
    progress.refresh_target()
    progress.refresh_target()
    assert progress.latest_ends == {0: 4} and progress.start_ends == {0: 4}


def test_sources_without_an_end_are_always_ready():
    assert OffsetsTopicProgress(None).ready()


def test_state_partitions_follow_the_local_cores():
    assert state_partitions("local[2]") == 2
    assert state_partitions("local[3, 4]") == 3  # local[N, maxFailures]
    assert state_partitions("local") == 1
    assert state_partitions("local[*]") == (os.cpu_count() or 2)
    # A cluster master (or spark-submit's own) keeps groupscope's default.
    assert state_partitions("spark://host:7077") == 4
    assert state_partitions(None) == 4
