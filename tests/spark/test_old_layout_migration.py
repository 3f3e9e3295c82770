"""A checkpoint written before the offsets lane (its groups' states hold their offsets) starts
with the current job: its offsets move to the lane at the first start, are served as the old job
served them, and stay whenever the group lane applies records of their groups again."""
from __future__ import annotations

import json
import tarfile
from pathlib import Path

from streaming.job.checkpoint_layout import STATE_LAYOUT_FILE
from tests.support.job_support import (T0, mixed_timeline, reference_groups, replay_to_end,
                                       timeline_lines, write_capture)
from tests.support.paths import ROOT
from tests.support.state_timeline import group_metadata, member

FIXTURE = ROOT / "tests" / "data" / "old-layout-checkpoint.tar.gz"
WRITTEN_AT = "file:/tmp/groupscope-old-layout/work/"  # tests/data/README.md


def _unpacked(into: Path) -> str:
    with tarfile.open(FIXTURE) as archive:
        archive.extractall(into, filter="data")
    # Spark's state metadata names the folder it was written in (its checksum goes with it:
    # Hadoop reads a file without one unchecked).
    metadata = into / "checkpoint" / "query" / "state" / "0" / "_metadata" / "v2" / "0"
    metadata.write_text(metadata.read_text().replace(WRITTEN_AT, f"file:{into}/"))
    (metadata.parent / ".0.crc").unlink()
    return str(into / "capture.jsonl")


def _served(job) -> dict[str, dict[tuple[str, int], int]]:
    return {name: job.view.committed(name) for name, group in job.view.groups.items()
            if group.dead_since_s is None}


def _reference_offsets(timeline) -> dict[str, dict[tuple[str, int], int]]:
    """Each live group's committed offsets as one reducer fed every record holds them."""
    return {name: {(e["topic"], e["partition"]): e["offset"] for e in state["offsets"]}
            for name, state in reference_groups(timeline).items() if state["state"] != "Dead"}


def test_an_old_layout_checkpoint_moves_its_offsets_to_the_lane(spark, tmp_path):
    capture = _unpacked(tmp_path)
    layout = tmp_path / "checkpoint" / STATE_LAYOUT_FILE
    assert "offsets" not in json.loads(layout.read_text())  # as the old code wrote it
    expected = _reference_offsets(mixed_timeline())
    assert expected["orders-app"] and expected["payments"]

    first = replay_to_end(spark, tmp_path, capture)
    assert _served(first) == expected
    assert json.loads(layout.read_text())["offsets"] == "lane"
    assert any(p.name.startswith("base-") for p in (tmp_path / "checkpoint" / "offsets").iterdir())

    # Group records of a moved group, a batch each: the first one finds the offsets its old
    # state holds, the group lane stores it back without them, and the next one must find them
    # in the lane.
    timeline = mixed_timeline()
    for generation in (3, 4):
        timeline.add(group_metadata("orders-app", generation, [
            member("m1", ["orders"], [("orders", p) for p in range(4)])]), T0 + 60_000 + generation)
        write_capture(capture, timeline_lines(timeline))
        again = replay_to_end(spark, tmp_path, capture)
        assert again.view.groups["orders-app"].snapshot["generation"] == generation
        assert _served(again) == expected == _reference_offsets(timeline)
