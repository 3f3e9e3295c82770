"""A restart no scraper notices: `groupscope run` on a real broker's `__consumer_offsets`, with a
live classic group that has rebalanced and keeps committing, is stopped (SIGTERM) and started
again on its checkpoint. Scraped every half second from before the stop to well after the start,
no counter of the group (rebalances, moved partitions, the rebalance histograms' counts), no
generation and no committed offset ever goes down: the checkpoint's groups are served before the
launch seed adds the groups it lacks, and a value the seed cannot know is absent, never 0."""
from __future__ import annotations

import time
import uuid

import pytest

from tests.support.groupscope_job import start_groupscope_job
from tests.support.kafka_broker import create_topic, produce_raw
from tests.support.parity_clients import Members
from tests.support.waiting import until

PARTITIONS = 4
WATCHED = ("kafka_consumergroup_rebalances_total",
           "kafka_consumergroup_rebalance_partitions_moved_total",
           "kafka_consumergroup_rebalance_duration_seconds_count", "kafka_consumergroup_generation",
           "kafka_consumergroup_committed_offset")
AFTER_READY_S = 5.0  # scraped this long after the restarted job is ready


def _watched(samples, group: str) -> dict[tuple, float]:
    out = {}
    for name in WATCHED:
        for labels, value in samples.get(name, {}).items():
            labels = dict(labels)
            if labels.get("group") == group:
                out[(name, labels.get("topic"), labels.get("partition"))] = value
    return out


@pytest.mark.timeout(420)
def test_a_restart_never_serves_a_counter_or_an_offset_going_back(broker, tmp_path):
    tag = uuid.uuid4().hex[:8]
    topic, group = f"restart-data-{tag}", f"restart-{tag}"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    produce_raw(broker.bootstrap, topic, [(p, None, b"x", int(time.time() * 1000))
                                          for p in range(PARTITIONS) for _ in range(50)])
    (tmp_path / "members").mkdir()
    members = Members(broker, tmp_path / "members")
    job = None
    seen: list[dict[tuple, float]] = []
    try:
        job = start_groupscope_job(broker.bootstrap, tmp_path / "job")

        def rebalanced(count: int):
            samples = job.scrape()
            return job.caught_up(samples) and (_watched(samples, group).get(
                ("kafka_consumergroup_rebalances_total", None, None)) or 0) >= count

        members.start("c1", group, topic, "classic", "range")
        until("the group's first rebalance served", lambda: rebalanced(1), timeout_s=180,
              poll_s=0.5)
        members.start("c2", group, topic, "classic", "range")
        until("the group's second rebalance served", lambda: rebalanced(2), timeout_s=180,
              poll_s=0.5)
        for _ in range(6):  # the group keeps committing: offsets move on while it is watched
            seen.append(_watched(job.scrape(), group))
            time.sleep(0.5)
        job.stop()  # SIGTERM, as a service manager stops it
        job = start_groupscope_job(broker.bootstrap, tmp_path / "job")
        # Watched through every step of the start: the checkpoint's groups served, the launch
        # seed adding the groups they lack, the catch-up; the seed ends when the job is ready,
        # after which nothing of the start is left to serve. A few scrapes more after that.
        deadline, settled = time.monotonic() + 180, None
        while settled is None or time.monotonic() < settled + AFTER_READY_S:
            assert time.monotonic() < deadline, "the restarted job never caught up and ended its seed"
            samples = job.scrape()
            seen.append(_watched(samples, group))
            if settled is None and job.caught_up(samples) and not any(
                    samples.get("groupscope_seeded_groups", {}).values()):
                settled = time.monotonic()
            time.sleep(0.5)
    finally:
        members.kill_all()
        if job is not None:
            job.stop()
    assert seen[0][("kafka_consumergroup_rebalances_total", None, None)] >= 2
    highest: dict[tuple, float] = {}
    for i, scrape in enumerate(seen):
        for key, value in scrape.items():
            assert value >= highest.get(key, value), (
                f"{key} went from {highest[key]} to {value} at scrape {i} of {len(seen)}")
            highest[key] = value
    # Served after the restart, not only absent.
    assert seen[-1].get(("kafka_consumergroup_rebalances_total", None, None), 0) >= 2
