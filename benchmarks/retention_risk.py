"""What the retention risk, rates and catch-up forecast cost the driver, in process.

A view of `--groups` groups (`--partitions` committed partitions each, two groups a topic) fed
30 end-offset polls and 10 commit rounds, every topic's retention settings known. It prints the
CPU of one evaluation and render of the risk families (done with the lag part: after an
end-offset poll a scrape reads, and when a scrape finds the view changed), beside the rest of
the lag part, and as a share of one core at one render per `lag.poll_interval` (5 s), the most
the poller renders; the CPU of reading a DescribeConfigs answer for every topic (once a
`lag.metadata_interval`, 60 s); and how many risk evaluations scrapes of an unchanged view make
(none: they serve the rendered text).

Usage (from the repository root):
    python -m benchmarks.retention_risk [--groups 2000] [--partitions 10]
"""
from __future__ import annotations

import argparse
import time
import timeit
from types import SimpleNamespace

from coordinator.retention import parse_config
from streaming.exporter import risk_render
from streaming.exporter.evaluation import lag_part
from streaming.exporter.lag_frame import evaluate
from streaming.exporter.metrics_cache import MetricsCache
from streaming.exporter.view import MonitorView, ViewSettings
from streaming.kafka.topic_configs import read_answer

START_S = 1_700_000_000.0
POLLS, COMMITS = 30, 10
POLL_INTERVAL_S, METADATA_INTERVAL_S = 5.0, 60.0


def _snapshot(group: str, topic: str, partitions: int, commit_round: int) -> dict:
    commit_ms = int((START_S + commit_round * 10) * 1000)
    return {"group": group, "group_type": "classic", "protocol_type": "consumer",
            "protocol": "range", "state": "Empty", "generation": 1, "assignment_epoch": None,
            "leader": None, "current_state_timestamp_ms": commit_ms, "coordinator_partition": 0,
            "members": [], "subscribed_topics": [topic], "last_rebalance": None,
            "updated_ms": commit_ms,
            "offsets": [{"topic": topic, "partition": p, "offset": 900 * commit_round + p,
                         "leader_epoch": 0, "metadata": "", "commit_timestamp_ms": commit_ms,
                         "topic_id": None} for p in range(partitions)]}


def _view(groups: int, partitions: int) -> tuple[MonitorView, list[str], list[float]]:
    clock = [START_S]
    view = MonitorView(ViewSettings(cluster="bench"), clock=lambda: clock[0])
    topics = [f"topic-{t:05d}" for t in range((groups + 1) // 2)]
    view.update_topic_metadata({}, {t: partitions for t in topics})
    named = [(f"group-{g:06d}", topics[g // 2]) for g in range(groups)]
    poll = 0
    for commit_round in range(COMMITS):
        view.update_groups([_snapshot(name, topic, partitions, commit_round)
                            for name, topic in named])
        for _ in range(POLLS // COMMITS):
            ends = {(t, p): 1000 * (poll // 3 + 1) + p + 500 for t in topics
                    for p in range(partitions)}
            view.update_end_offsets(ends, {key: 0 for key in ends}, START_S + poll * 3.3, 0.2)
            poll += 1
    clock[0] = START_S + COMMITS * 10
    with view.lock:
        view.retention.update({t: parse_config({"retention.ms": "86400000"}) for t in topics}, 0)
    return view, topics, clock


def _cpu(fn, repeat: int = 3) -> float:
    """The lowest CPU seconds of `repeat` calls (a shared machine's steadiest figure)."""
    return min(timeit.repeat(fn, timer=time.process_time, number=1, repeat=repeat))


def run(groups: int, partitions: int) -> None:
    view, topics, clock = _view(groups, partitions)
    now = clock[0]
    print(f"groups={len(view.groups)} committed partitions={len(view.table)} "
          f"topic partitions={len(view.ends)} topics={len(topics)}")
    with view.lock:
        frame = evaluate(view, now)
        kept: dict = {}  # what the lag part keeps between renders (its label text)
        lag = _cpu(lambda: lag_part(view, now, kept))
        risk = _cpu(lambda: [f.text() for f in risk_render.risk_families(
            view, frame, now, view.topic_table(), kept)])
    print(f"lag part with the risk families, evaluated (text not rendered): "
          f"{lag * 1000:.1f} ms CPU; the risk families alone, evaluated and rendered: "
          f"{risk * 1000:.1f} ms CPU")
    print(f"  at one render per {POLL_INTERVAL_S:.0f} s poll: {risk / POLL_INTERVAL_S * 100:.2f}% "
          f"of a core")
    answer = [SimpleNamespace(resource_name=t, error_code=0, error_message=None,
                              configs=[SimpleNamespace(name="retention.ms", value="86400000"),
                                       SimpleNamespace(name="cleanup.policy", value="delete")])
              for t in topics]
    configs = _cpu(lambda: read_answer(answer))
    print(f"DescribeConfigs answer for {len(topics)} topics read: {configs * 1000:.1f} ms CPU, "
          f"once a {METADATA_INTERVAL_S:.0f} s: {configs / METADATA_INTERVAL_S * 100:.3f}% of a "
          f"core (one request to the cluster)")
    cache = MetricsCache(view)
    cache.refresh()
    counted = [0]
    evaluate_risk = risk_render.evaluate_risk

    def counting(*args):
        counted[0] += 1
        return evaluate_risk(*args)

    risk_render.evaluate_risk = counting
    try:
        started = time.process_time()
        for _ in range(3):
            cache.text()
        scrapes = time.process_time() - started
    finally:
        risk_render.evaluate_risk = evaluate_risk
    print(f"3 scrapes of the unchanged view: {counted[0]} risk evaluations, "
          f"{scrapes / 3 * 1000:.0f} ms CPU each (the rendered text, joined)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=2000)
    parser.add_argument("--partitions", type=int, default=10)
    args = parser.parse_args()
    run(args.groups, args.partitions)


if __name__ == "__main__":
    main()
