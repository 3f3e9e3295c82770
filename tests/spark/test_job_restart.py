"""Kill the job with SIGKILL in the middle of a stream, or stop it with SIGTERM or Ctrl-C's
SIGINT, start it again from its checkpoint, and compare with an uninterrupted run: same group
state, same counters, same history, nothing lost and nothing counted twice. SIGTERM and SIGINT,
sent to `groupscope run` or to its whole process group as service managers and terminals do,
end it by itself, with exit status 0 and no error in its output, wherever in a micro-batch they
land."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import yaml

from coordinator.simulator import Simulation, load_scenario
from streaming.job.history import latest_snapshots, read_history, unique_events
from streaming.job.history_layout import highest_batch
from streaming.job.lifecycle import Job, restore_view
from streaming.exporter.view import MonitorView
from streaming.job.checkpoint_layout import STATE_LAYOUT_FILE
from streaming.pipeline import state_stage
from streaming.pipeline.shard_state import (BUCKET_MAP, GROUP_MAP, STATE_SHARDS, bucket_of,
                                            unpack_entries)
from tests.support.job_support import replay_config
from tests.support.jvm_children import children_of
from tests.support.paths import ROOT

REPO = str(ROOT)


def _capture(path: str) -> int:
    """A simulated group with several rebalances, in the capture format."""
    result = Simulation(load_scenario("join-one"), "cooperative-sticky", seed=3).run()
    with open(path, "w", encoding="utf-8") as fh:
        for record in result.records:
            fh.write(json.dumps(record.to_capture()) + "\n")
    return len(result.records)


def _run_in_process(spark, tmp, capture: str, max_records: int | None = None) -> Job:
    extra = {"GROUPSCOPE_SOURCE__MAX_RECORDS_PER_TRIGGER": str(max_records)} if max_records else {}
    job = Job(replay_config(tmp, capture, **extra), spark=spark, start_exporter=False,
              start_poller=False)
    job.start().processAllAvailable()
    job.stop()
    return job


def _committed_batches(checkpoint: str) -> int:
    commits = os.path.join(checkpoint, "query", "commits")
    if not os.path.isdir(commits):
        return 0
    return len([name for name in os.listdir(commits) if name.isdigit()])


def _outcome(job: Job, history: str):
    snapshots = latest_snapshots(read_history(history, "snapshots"))
    events = unique_events(read_history(history, "events"))
    rebalances = {name: (g.rebalances, g.partitions_moved, g.rebalance_duration.count)
                  for name, g in job.view.groups.items()}
    return snapshots, events, rebalances, dict(job.view.records_total)


def _several_events_per_record(events) -> bool:
    positions = [(e["partition"], e["offset"]) for e in events]
    return len(set(positions)) < len(positions)


def _process_tree(pid: int) -> list[int]:
    """`pid` and its descendants: the driver, its JVM (in a session of its own) and the
    processes that started."""
    tree = [pid]
    for parent in tree:
        tree.extend(children_of(parent, ""))
    return tree


def _signal(pids, sig) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="module")
def uninterrupted(spark, tmp_path_factory):
    """(capture, its record count, what an uninterrupted run makes of it), the same for every
    way of stopping the job: the capture is a seeded simulation."""
    tmp = tmp_path_factory.mktemp("uninterrupted")
    capture = str(tmp / "capture.jsonl")
    total = _capture(capture)
    assert total > 100
    reference = _run_in_process(spark, tmp / "reference", capture)
    expected = _outcome(reference, str(tmp / "reference" / "history"))
    # The uninterrupted run wrote each event once, several of them from one record (the first
    # generation's members): reading the history back keeps them all.
    assert len(expected[1]) == len(read_history(str(tmp / "reference" / "history"), "events"))
    assert _several_events_per_record(expected[1])
    return capture, total, expected


# SIGINT to the process group (Ctrl-C) takes the same handler as SIGTERM to it; the demo's test
# sends it (tests/spark/test_demo.py).
@pytest.mark.parametrize("sig, target", [(signal.SIGKILL, "tree"), (signal.SIGTERM, "group"),
                                         (signal.SIGTERM, "process")],
                         ids=["SIGKILL", "SIGTERM-group", "SIGTERM"])
def test_a_stop_mid_stream_then_restart_matches_an_uninterrupted_run(spark, tmp_path, sig,
                                                                      target, uninterrupted):
    capture, total, expected = uninterrupted

    # The interrupted run: its own Spark, small batches; killed with SIGKILL (JVM included), or
    # stopped by a signal to it or to its process group.
    work = tmp_path / "killed"
    work.mkdir()
    config = {
        "spark": {"master": "local[1]", "conf": {"spark.sql.shuffle.partitions": "2",
                                                  "spark.ui.enabled": "false",
                                                  "spark.python.authenticate.socketTimeout": "120s"}},
        "source": {"type": "replay", "replay_path": capture, "max_records_per_trigger": 20},
        "checkpoint": {"path": str(work / "checkpoint")},
        "history": {"path": str(work / "history")},
        "exporter": {"listen": "127.0.0.1:0"},
        "trigger": {"interval": "200ms"},
    }
    config_path = work / "config.yaml"
    config_path.write_text(yaml.safe_dump(config))
    # The job picks its workers' interpreter itself, as under `groupscope run`.
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_PYTHON"}
    log = open(work / "run.log", "wb")
    process = subprocess.Popen([sys.executable, "-m", "streaming.cli.main", "run", "-c", str(config_path)],
                               cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while _committed_batches(str(work / "checkpoint")) < 3:
            assert process.poll() is None, (work / "run.log").read_text()
            assert time.monotonic() < deadline, "the job made no progress"
            time.sleep(0.2)
        started = (work / "run.log").read_text()
        if target == "tree":
            _signal(_process_tree(process.pid), sig)
        elif target == "group":  # the JVM and Spark's Python processes too, were they in it
            os.killpg(process.pid, sig)
        else:
            process.send_signal(sig)
        if sig != signal.SIGKILL:
            assert process.wait(timeout=120) == 0, (work / "run.log").read_text()
    finally:
        if process.poll() is None:
            _signal(_process_tree(process.pid), signal.SIGKILL)
            process.wait(timeout=60)
        log.close()
    # A normal start is quiet: no warning from Spark's log or from Python. Only a batch that
    # outlasts the 200 ms trigger on a busy machine may say so.
    noise = [line for line in started.splitlines()
             if re.search(r"\bWARN\b|Warning:", line) and "is falling behind" not in line
             and "Using incubator modules" not in line]  # the JVM's own line, not Spark's
    assert not noise, "\n".join(noise)
    if sig != signal.SIGKILL:
        output = (work / "run.log").read_text()
        assert "Traceback" not in output and "Exception in thread" not in output, output
        # No error logged from Python (groupscope, py4j). Spark's own log may name the tasks it
        # cancels, an interrupted shuffle read even at ERROR.
        assert not re.search(r"^\d{4}-\d\d-\d\d [\d:,]+ ERROR ", output, re.M), output
    done = _committed_batches(str(work / "checkpoint"))
    assert done * 20 < total, "killed too late to test anything: make the capture longer"

    # Restart from the same checkpoint and history, here, and let it finish.
    job = Job(replay_config(work, capture), spark=spark, start_exporter=False, start_poller=False)
    job.start().processAllAvailable()
    job.stop()
    got = _outcome(job, str(work / "history"))

    assert got[0] == expected[0]          # every group's last snapshot
    assert got[1] == expected[1]          # every rebalance / membership event, once
    assert restore_view(MonitorView(), str(work / "history")) == len(expected[1])
    assert got[2] == expected[2]          # exporter counters: rebalances, moved, histogram counts
    assert got[3] == expected[3]          # records counted once each


def _offsets_in_view(view: MonitorView) -> dict[str, dict[tuple[str, int], int]]:
    return {name: view.committed(name) for name in view.groups}


@pytest.mark.parametrize("map_after, layout",
                         [(state_stage.MAP_AFTER_GROUPS, BUCKET_MAP), (0, BUCKET_MAP), (0, GROUP_MAP)],
                         ids=["shard-values", "bucket-maps", "group-maps"])
def test_a_restart_serves_each_group_as_the_state_store_left_it(spark, tmp_path, monkeypatch,
                                                                map_after, layout):
    """A group that only committed offsets since its last history snapshot comes back with its
    latest offsets, read from the checkpoint's state store, not with the snapshot's: whether
    its shard keeps its groups in one value or (past MAP_AFTER_GROUPS) in a map, of buckets of
    groups (a new checkpoint's layout) or of groups (what earlier checkpoints recorded)."""
    monkeypatch.setattr(state_stage, "MAP_AFTER_GROUPS", map_after)
    if layout != BUCKET_MAP:
        os.makedirs(tmp_path / "checkpoint")
        (tmp_path / "checkpoint" / STATE_LAYOUT_FILE).write_text(
            json.dumps({"state_shards": STATE_SHARDS, "groups": layout}))
    capture = str(tmp_path / "capture.jsonl")
    _capture(capture)
    extra = {"GROUPSCOPE_SOURCE__MAX_RECORDS_PER_TRIGGER": "20",
             "GROUPSCOPE_HISTORY__SNAPSHOT_INTERVAL": "86400s"}
    first = Job(replay_config(tmp_path, capture, **extra), spark=spark, start_exporter=False,
                start_poller=False)
    first.start().processAllAvailable()
    first.stop()
    expected = _offsets_in_view(first.view)
    assert expected and all(expected.values())
    # The history's last snapshot of the group predates its last commits.
    snapshots = latest_snapshots(read_history(str(tmp_path / "history"), "snapshots"))
    stale = {name: {(o["topic"], int(o["partition"])): int(o["offset"]) for o in snap["offsets"]}
             for name, snap in snapshots.items()}
    assert stale != expected
    reader = spark.read.format("statestore").option("path", str(tmp_path / "checkpoint" / "query"))
    if layout == GROUP_MAP:
        in_maps = {row.group for row in reader.option("stateVarName", "groups").load()
                   .select("user_map_key.group").collect()}
    else:
        in_maps = {group for row in reader.option("stateVarName", "buckets").load()
                   .select("user_map_key.bucket", "user_map_value.blob").collect()
                   for group in unpack_entries(bytes(row.blob))
                   if bucket_of(group) == row.bucket}
    assert in_maps >= set(expected) if map_after == 0 else not in_maps

    second = Job(replay_config(tmp_path, capture, **extra), spark=spark, start_exporter=False,
                 start_poller=False)
    try:
        second.start()  # nothing new to read: what it serves is what it restored
        restored = _offsets_in_view(second.view)
    finally:
        second.stop()
    assert restored == expected


def test_a_restart_with_nothing_new_is_ready_from_the_checkpoints_progress(spark, tmp_path):
    """A restart with nothing new in the log runs no batch; how far the checkpoint's last batch
    read decides readiness at once, and the state store's counters are served from the start.
    A log that has grown since keeps the restarted job not ready until it is read."""
    capture = str(tmp_path / "capture.jsonl")
    _capture(capture)
    ends: dict[int, int] = {}
    with open(capture, encoding="utf-8") as fh:
        for line in fh:
            record = json.loads(line)
            ends[record["partition"]] = max(ends.get(record["partition"], 0), record["offset"] + 1)
    config = replay_config(tmp_path, capture)

    def run(target: dict[int, int], catch_up: bool) -> MonitorView:
        job = Job(config, spark=spark, start_exporter=False, start_poller=False,
                  progress_target=lambda: target)
        try:
            query = job.start()
            if catch_up:
                query.processAllAvailable()
        finally:
            job.stop()
        return job.view

    first = run(ends, catch_up=True)
    assert first.ready and sum(first.records_total.values()) == sum(1 for _ in open(capture))
    restarted = run(ends, catch_up=False)
    assert _committed_batches(str(tmp_path / "checkpoint")) > 0
    assert restarted.ready
    assert dict(restarted.records_total) == dict(first.records_total)
    assert restarted.records_skipped == first.records_skipped
    grown = run({p: end + 5 for p, end in ends.items()}, catch_up=False)
    assert not grown.ready


def test_a_batch_in_the_history_that_spark_did_not_commit_counts_once(spark, tmp_path,
                                                                     uninterrupted):
    """The history is written before Spark commits the batch: a stop or crash in between
    leaves a history that already holds a batch the next start runs again. The restart
    restores its counters from that history and must not count the batch's events twice."""
    capture, _, expected = uninterrupted
    _run_in_process(spark, tmp_path, capture)
    commits = tmp_path / "checkpoint" / "query" / "commits"
    batches = sorted(int(name) for name in os.listdir(commits) if name.isdigit())
    # The whole capture fits one batch: it wrote every event, and it is the batch to run again.
    assert batches == [0] and highest_batch(str(tmp_path / "history")) == 0
    assert read_history(str(tmp_path / "history"), "events")
    for name in os.listdir(commits):
        os.remove(commits / name)

    job = Job(replay_config(tmp_path, capture), spark=spark, start_exporter=False,
              start_poller=False)
    job.start().processAllAvailable()
    job.stop()
    assert sorted(int(n) for n in os.listdir(commits) if n.isdigit()) == [0]  # it ran again
    got = _outcome(job, str(tmp_path / "history"))
    assert got == expected
