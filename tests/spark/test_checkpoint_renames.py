"""A checkpoint on the local disk is written with plain renames (streaming/localmode/checkpoint_renames.py);
any other file system, or a manager the user chose, keeps Spark's choice."""
from __future__ import annotations

import pytest

from tests.support.job_support import mixed_timeline, reference_groups, replay_to_end, timeline_lines, write_capture
from streaming.job.history import read_history
from tests.support.tuning import local_tuning_on
from streaming.localmode.checkpoint_renames import MANAGER_KEY, PLAIN_RENAMES, use_plain_renames


@pytest.fixture
def unset(spark):
    """The session without a chosen manager, and as it was afterwards."""
    before = spark.conf.get(MANAGER_KEY, None)
    spark.conf.unset(MANAGER_KEY)
    yield spark
    if before is None:
        spark.conf.unset(MANAGER_KEY)
    else:
        spark.conf.set(MANAGER_KEY, before)


def _manager_spark_uses(spark, path: str) -> str:
    """The class Spark's own factory picks for `path` with the session's settings."""
    jvm = spark._jvm
    factory = getattr(jvm.org.apache.spark.sql.execution.streaming.checkpointing,
                      "CheckpointFileManager$")
    conf = spark._jsparkSession.sessionState().newHadoopConf()
    manager = getattr(factory, "MODULE$").create(jvm.org.apache.hadoop.fs.Path(path), conf)
    return manager.getClass().getName()


def test_a_local_checkpoint_gets_plain_renames(unset, tmp_path):
    assert "FileContext" in _manager_spark_uses(unset, str(tmp_path))
    for path in (str(tmp_path / "a"), f"file://{tmp_path}/b"):
        unset.conf.unset(MANAGER_KEY)
        assert use_plain_renames(unset, path) is True
        assert unset.conf.get(MANAGER_KEY) == PLAIN_RENAMES
        assert _manager_spark_uses(unset, path) == PLAIN_RENAMES


def test_other_file_systems_and_the_users_choice_are_kept(unset, tmp_path):
    assert use_plain_renames(unset, "http://127.0.0.1:9/checkpoint") is False
    assert unset.conf.get(MANAGER_KEY, None) is None
    chosen = "org.apache.spark.sql.execution.streaming.checkpointing." \
             "FileContextBasedCheckpointFileManager"
    unset.conf.set(MANAGER_KEY, chosen)
    assert use_plain_renames(unset, str(tmp_path)) is False
    assert unset.conf.get(MANAGER_KEY) == chosen


@local_tuning_on
def test_the_job_checkpoints_with_plain_renames_and_resumes(spark, tmp_path):
    assert spark.conf.get(MANAGER_KEY) == PLAIN_RENAMES  # set as the job's session was built
    tl = mixed_timeline()
    lines = timeline_lines(tl)
    capture = write_capture(str(tmp_path / "capture.jsonl"), lines[: len(lines) // 2])
    replay_to_end(spark, tmp_path, capture)
    commits = tmp_path / "checkpoint" / "query" / "commits"
    assert [p.name for p in commits.iterdir() if p.name.isdigit()]
    assert not [p.name for p in commits.iterdir() if p.name.endswith(".tmp")]
    # The rest of the capture, from the checkpoint the first run left: each group's last
    # snapshot is what the pure reducer makes of the whole timeline.
    with open(capture, "a", encoding="utf-8") as fh:
        fh.writelines(line + "\n" for line in lines[len(lines) // 2:])
    second = replay_to_end(spark, tmp_path, capture)
    last = {r["group"]: r["payload"] for r in read_history(str(tmp_path / "history"), "snapshots")}
    expected = reference_groups(tl)
    assert {name: last[name] for name in expected} == expected
    assert sum(second.view.records_total.values()) == len(lines)
