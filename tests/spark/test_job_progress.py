"""Progress on `__consumer_offsets`: lag per partition, the backlog seen at start, readiness;
the number of state partitions the job starts with, and the checkpoint's number of shards."""
from __future__ import annotations

import json
import os

import pytest

from tests.support.job_support import (mixed_timeline, reference_groups, replay_config, replay_to_end,
                         timeline_lines, write_capture)
from streaming.pipeline import shard_state
from streaming.job.checkpoint_layout import (LEGACY_STATE_SHARDS, OFFSETS_IN_GROUPS, OFFSETS_LANE,
                                             STATE_LAYOUT_FILE, StateLayout,
                                             checkpoint_lineage, state_layout)
from streaming.pipeline.shard_state import BUCKET_MAP, GROUP_MAP, SHARD_VALUE
from streaming.job.history import read_history
from streaming.job.lifecycle import Job, OffsetsTopicProgress
from streaming.job.session import state_partitions


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


def test_end_offsets_are_read_again_only_after_the_interval():
    now = [100.0]
    calls = []

    def target():
        calls.append(now[0])
        if len(calls) == 2:
            raise ConnectionError("broker away")
        return {0: 10 * len(calls)}

    progress = OffsetsTopicProgress(target, min_interval_s=5.0, clock=lambda: now[0])
    progress.refresh_target()
    now[0] = 104.0
    progress.refresh_target()                     # too soon: no call
    assert calls == [100.0] and progress.latest_ends == {0: 10}
    now[0] = 105.0
    progress.refresh_target()                     # due, but the broker is away
    now[0] = 105.5
    progress.refresh_target()                     # a failed call is retried at once
    assert calls == [100.0, 105.0, 105.5] and progress.latest_ends == {0: 30}
    assert progress.start_ends == {0: 10}


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


def test_the_state_layout_is_the_checkpoints_own(spark, tmp_path):
    fresh = str(tmp_path / "fresh")
    assert state_layout(spark, fresh, 16) == StateLayout(16, BUCKET_MAP, OFFSETS_LANE)
    assert json.loads((tmp_path / "fresh" / STATE_LAYOUT_FILE).read_text()) == {
        "state_shards": 16, "groups": BUCKET_MAP, "offsets": OFFSETS_LANE}
    # recorded: a new default does not move groups
    assert state_layout(spark, fresh, 8) == StateLayout(16, BUCKET_MAP)
    # A checkpoint that recorded a map of groups, before the buckets, keeps it.
    (tmp_path / "group-map").mkdir()
    (tmp_path / "group-map" / STATE_LAYOUT_FILE).write_text(
        json.dumps({"state_shards": 16, "groups": GROUP_MAP}))
    assert state_layout(spark, str(tmp_path / "group-map"), 8) == StateLayout(
        16, GROUP_MAP, OFFSETS_IN_GROUPS)  # and its offsets in its groups' states

    # Group state but no record: written before the record existed, with 64 shards, each a value.
    (tmp_path / "older" / "query" / "state" / "0").mkdir(parents=True)
    assert state_layout(spark, str(tmp_path / "older"), 16) == StateLayout(
        LEGACY_STATE_SHARDS, SHARD_VALUE, OFFSETS_IN_GROUPS) == StateLayout(64, SHARD_VALUE,
                                                                            OFFSETS_IN_GROUPS)
    assert state_layout(spark, str(tmp_path / "older"), 16) == StateLayout(64, SHARD_VALUE,
                                                                           OFFSETS_IN_GROUPS)

    # A record from before the group layout was recorded: its shards were values.
    (tmp_path / "recorded").mkdir()
    (tmp_path / "recorded" / STATE_LAYOUT_FILE).write_text('{"state_shards": 16}')
    assert state_layout(spark, str(tmp_path / "recorded"), 8) == StateLayout(16, SHARD_VALUE,
                                                                             OFFSETS_IN_GROUPS)

    for broken in ('{"state_shards": "many"}', '{"state_shards": 4, "groups": "heap"}', "[]",
                   '{"state_shards": 4, "offsets": "attic"}'):
        (tmp_path / "broken").mkdir(exist_ok=True)
        (tmp_path / "broken" / STATE_LAYOUT_FILE).write_text(broken)
        with pytest.raises(ValueError, match=STATE_LAYOUT_FILE):
            state_layout(spark, str(tmp_path / "broken"), 16)


@pytest.mark.parametrize("groups", [BUCKET_MAP, SHARD_VALUE])
def test_a_restart_keeps_the_state_layout_the_checkpoint_started_with(spark, tmp_path,
                                                                      monkeypatch, groups):
    """A checkpoint started by a version with another number of shards, or with its groups in
    one value per shard: read with today's number or layout, every group that hashes to another
    shard, or every group, would start from empty."""
    tl = mixed_timeline()
    lines = timeline_lines(tl)
    capture = str(tmp_path / "capture.jsonl")
    half = len(lines) // 2
    write_capture(capture, lines[:half])
    if groups == SHARD_VALUE:  # as the versions before the group map recorded it
        (tmp_path / "checkpoint").mkdir()
        (tmp_path / "checkpoint" / STATE_LAYOUT_FILE).write_text('{"state_shards": 5}')

    monkeypatch.setattr(shard_state, "STATE_SHARDS", 5)
    replay_to_end(spark, tmp_path, capture)
    monkeypatch.undo()
    with open(capture, "a", encoding="utf-8") as fh:
        fh.writelines(line + "\n" for line in lines[half:])
    replay_to_end(spark, tmp_path, capture)
    recorded = json.loads((tmp_path / "checkpoint" / STATE_LAYOUT_FILE).read_text())
    assert (recorded["state_shards"], recorded.get("groups", SHARD_VALUE)) == (5, groups)
    # Each group's last snapshot is exactly what the pure reducer makes of the whole timeline.
    last = {r["group"]: r["payload"] for r in read_history(str(tmp_path / "history"), "snapshots")}
    expected = reference_groups(tl)
    assert {name: last[name] for name in expected} == expected


def test_a_checkpoint_keeps_its_lineage_and_a_new_one_gets_another(spark, tmp_path):
    first = checkpoint_lineage(spark, str(tmp_path / "a"))
    assert checkpoint_lineage(spark, str(tmp_path / "a")) == first
    assert checkpoint_lineage(spark, str(tmp_path / "b")) != first
