"""One Python worker daemon serves the whole job, and the job starts it early."""
from __future__ import annotations

from tests.support.job_support import mixed_timeline, replay_to_end, timeline_lines, write_capture
from tests.support.jvm_children import jvm_children
from streaming.localmode.daemon_prestart import run_python_task, start_worker_daemon


def _worker_daemons(spark) -> set[int]:
    """The JVM's child processes that run groupscope's worker daemon."""
    return set(jvm_children(spark, "-m streaming.localmode.spark_daemon"))


def test_the_early_start_the_read_tasks_and_the_state_stage_share_one_daemon(spark, tmp_path):
    early = run_python_task(spark)
    capture = write_capture(str(tmp_path / "capture.jsonl"), timeline_lines(mixed_timeline()))
    job = replay_to_end(spark, tmp_path, capture)
    assert job.query.exception() is None
    assert "orders-app" in job.view.groups  # both stages ran
    assert _worker_daemons(spark) == {early}


def test_the_daemon_is_started_once_per_application(spark):
    first = start_worker_daemon(spark)
    if first is not None:  # no Job has started in this test session yet
        first.join(120)
    assert start_worker_daemon(spark) is None
