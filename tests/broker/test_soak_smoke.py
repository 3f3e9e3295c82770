"""benchmarks.soak's sampling against a live `groupscope run`: the job's processes found by role,
the JVM heap read through jcmd, the checkpoint counted, the batch counters and a commit-to-served
latency read from /metrics, and the stop that leaves no process behind. A change to how the job
starts its processes or names its metrics shows here, not an hour into a soak."""
from __future__ import annotations

import time

from benchmarks.burrow import Groupscope
from benchmarks.commit_load import Connection, topic_of, wait_for_coordinators
from benchmarks.soak import (commit_to_served, dir_usage, jvm_heap_after_gc_mb, metric_counters,
                             process_figures, stop_job)
from tests.support.kafka_broker import create_topic

MARKER = 99_990  # a group number no other test commits for


def _served(job: Groupscope, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not job.scrape_text()[0]:
        assert job.process.poll() is None, job.log_tail()
        assert time.monotonic() < deadline, job.log_tail()
        time.sleep(0.5)


def test_soak_samples_a_live_job(broker, tmp_path):
    create_topic(broker.bootstrap, topic_of(MARKER), 1)
    wait_for_coordinators(broker.bootstrap, range(MARKER, MARKER + 1))
    job = Groupscope(tmp_path / "job", broker.bootstrap)
    job.launch()
    link = Connection(broker.bootstrap, window=1)
    try:
        _served(job, 120)
        assert commit_to_served(job, link, MARKER, 1000, timeout=120) is not None
        figures = process_figures(job.process.pid)
        assert (figures["n_driver"], figures["n_jvm"], figures["n_zygote"]) == (1, 1, 1), figures
        assert figures["pss_mb_jvm"] > 0 and figures["threads_jvm"] > 10 and figures["fds_jvm"] > 0
        assert jvm_heap_after_gc_mb(int(figures["jvm_pid"])) > 0
        assert dir_usage(job.workdir / "checkpoint")[0] > 0
        assert metric_counters(job.scrape_text()[0])["batch_count"] >= 1
    finally:
        link.close()
        stopped = stop_job(job)
    assert stopped.code == 0 and not stopped.outlived, stopped
