"""groupscope's rebalance and time-lag figures against real Java consumers' own clocks.

The canary scenario, once per strategy (classic range, roundrobin, sticky, cooperative-sticky;
KIP-848 uniform and range): a group of N consumers (50) on a 50-partition topic fed at ~600
messages/s is doubled, halved back, then K of them (10) are restarted (closed, then started again
under the same names), and finally the same K crash (close without leaving the group, so their
partitions stall until their sessions expire: the phase where messages wait more than 3 s). The consumers run in jvm/harness (tests/support/client_harness.py) and
report their callbacks, coordinator metrics and message waits; one `groupscope run` watches all the
groups. Every phase prints the clients' truth next to groupscope's figures for the same window:

  clients     duration (first revocation or join .. last assignment), per-client rebalance latency
              (their rebalance-latency metric, median/max), partitions that changed owner, the
              longest wait of a message (how long a partition went unconsumed), messages that
              waited > 3 s
  groupscope  duration (first start .. last end of its `rebalance` events in the window), sync
              phase, partitions moved, per-partition downtime (`rebalance_downtime`), and an
              estimate of messages delayed > 3 s, made here from groupscope's figures: each stalled
              partition's produce rate x (stall - 3 s), a stall being its downtime, or for eager
              assignors (which revoke every partition) the rebalance's duration for partitions that
              kept their owner; groupscope exports no such count itself

then the errors against the targets, and the simulator's predictions for the same phases
(benchmarks/simulator_vs_clients.py) before and after its calibration. The time-lag check compares kafka_consumergroup_lag_seconds
with the true age of the oldest unconsumed message (known from produce timestamps) on a busy topic
and a quiet one (a message every 30 s), for a job of each `--time-methods` (lag.time_method:
estimated from end offsets, or read from the record itself); `--strategies none` runs that check
alone.

    .venv/bin/python -m benchmarks.rebalance_truth [--consumers 50] [--scale 0.2] [--strategies range,kip848-uniform]

--scale multiplies the consumers, the restarted count and the message rate (0.2: 10 -> 20 -> 10
consumers, 2 restarted, 120 messages/s), so a small run takes a few minutes.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks._stopping import stop_everything_at_exit
from benchmarks.simulator_vs_clients import compare, print_comparison
from streaming.job.history import read_history, unique_events
from tests.support.client_harness import (STRATEGIES, ClientHarness, ClientLog, HarnessConfig,
                                          Rebalance, strategy_name)
from tests.support.groupscope_job import GroupscopeJob, start_groupscope_job
from tests.support.kafka_broker import create_topic, start_kafka

EAGER = ("range", "roundrobin", "sticky")   # classic assignors that revoke everything
SLOW_S = 3.0


@dataclass
class Phase:
    strategy: str
    name: str
    protocol: str
    truth: Rebalance
    latency_ms: list[float]              # per client: mean rebalance latency in the phase
    waits: dict[int, dict[str, int]]     # per partition: messages, slow, max_wait_ms
    events: list[dict[str, Any]]         # groupscope's rebalance events in the window
    downtime: dict[int, float]           # groupscope's per-partition downtime (s), longest per partition
    gs_owners: dict[str, set[int]]
    rate_per_partition: float
    since_ms: float = 0.0                # the phase's action began (wall clock)
    until_ms: float = 0.0                # the clients had settled
    down_ms: float | None = None         # restart: from the stop to the start again
    starts_ms: list[float] = field(default_factory=list)  # consumers started in it: subscribe, ms after since
    stops_ms: list[float] = field(default_factory=list)   # consumers stopped in it: close begins, likewise
    baseline_wait_s: float | None = None # a message's longest wait in the quiet seconds before it
    first_message_ms: float | None = None  # the run's median from an assignment to its first message
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The phase's figures as JSON, for `--save` (and the simulator comparison)."""
        t = self.truth
        return {"strategy": self.strategy, "phase": self.name, "protocol": self.protocol,
                "since_ms": self.since_ms, "until_ms": self.until_ms, "down_ms": self.down_ms, "notes": self.notes,
                "starts_ms": self.starts_ms, "stops_ms": self.stops_ms, "baseline_wait_s": self.baseline_wait_s,
                "first_message_ms": self.first_message_ms,
                "truth": {"start_ms": t.start_ms, "end_ms": t.end_ms, "duration_s": t.duration_s,
                          "generations": t.generations, "moved": sorted(t.moved),
                          "latency_ms": self.latency_ms, "longest_wait_s": self.longest_wait_s(),
                          "delayed": self.true_delayed(),
                          "waits": {str(p): w for p, w in sorted(self.waits.items())}},
                "groupscope": {"duration_s": self.gs_duration, "sync_s": self.gs_sync,
                               "moved": sorted(self.gs_moved), "assignment_exact": self.gs_owners == t.owners,
                               "downtime": {str(p): s for p, s in sorted(self.downtime.items())},
                               "delayed_estimate": self.gs_delayed()},
                "rate_per_partition": self.rate_per_partition}

    @property
    def gs_duration(self) -> float | None:
        if not self.events:
            return None
        return (max(e["end_ms"] for e in self.events) - min(e["start_ms"] for e in self.events)) / 1000.0

    @property
    def gs_sync(self) -> float | None:
        syncs = [e["sync_seconds"] for e in self.events if e["sync_seconds"] is not None]
        return sum(syncs) if syncs else None

    @property
    def gs_moved(self) -> set[int]:
        return {p for e in self.events for _t, p in e["partitions_moved"]}

    def gs_delayed(self) -> float:
        stalls = dict(self.downtime)
        if self.strategy in EAGER and self.gs_duration is not None:
            for p in self.waits:
                stalls.setdefault(p, self.gs_duration)
        return sum(self.rate_per_partition * max(0.0, s - SLOW_S) for s in stalls.values())

    def true_delayed(self) -> int:
        return sum(w["slow"] for w in self.waits.values())

    def longest_wait_s(self) -> float:
        return max((w["max_wait_ms"] for w in self.waits.values()), default=0) / 1000.0

    def downtime_errors(self) -> list[float]:
        """|groupscope downtime - longest message wait| per partition groupscope measured."""
        return [abs(s - self.waits[p]["max_wait_ms"] / 1000.0) for p, s in self.downtime.items() if p in self.waits]


# ----- driving one group ------------------------------------------------------------------------

def starts_after(log: ClientLog, since_ms: float, until_ms: float, event: str = "subscribed") -> list[float]:
    """When the consumers started in a phase subscribed (or, with `event="closing"`, the
    stopped ones began to close), in ms after the phase's action."""
    return [e["t"] - since_ms for e in log.events if e["ev"] == event and since_ms <= e["t"] <= until_ms]


def first_message_ms(log: ClientLog) -> float | None:
    """The median time from a partition's assignment callback to the first message the consumer
    processed from it (the committed-offset lookup and the first fetch), over the whole log."""
    delays, pending = [], {}
    for e in log.events:
        if e["ev"] == "assigned":
            for p in e["parts"]:
                pending[(e["c"], p)] = e["t"]
        elif e["ev"] in ("revoked", "lost"):
            for p in e["parts"]:
                pending.pop((e["c"], p), None)
        elif e["ev"] == "sample":
            for p, (n, _slow, _max, first, _last) in e["parts"].items():
                at = pending.get((e["c"], int(p)))
                if at is not None and n > 0 and first >= at:
                    delays.append(first - pending.pop((e["c"], int(p))))
    return statistics.median(delays) if delays else None


def baseline_wait(log: ClientLog, since_ms: float, seconds: float = 5.0) -> float | None:
    """The median over partitions of a message's longest wait in the `seconds` before a phase:
    how long messages wait when nothing rebalances (poll loop and fetch), which a partition's
    longest wait in a rebalance includes on top of its stall."""
    waits = [w["max_wait_ms"] for w in log.waits(since_ms - seconds * 1000, since_ms).values()]
    return statistics.median(waits) / 1000.0 if waits else None


def _settled(log: ClientLog, members: set[str], partitions: int, quiet_ms: int) -> bool:
    now = time.time() * 1000
    owners = log.owners_at(now)
    covered = sorted(p for c in members for p in owners.get(c, ()))
    last = max((e["t"] for e in log.events if e["ev"] in ("revoked", "assigned", "lost", "subscribed", "closing", "closed")), default=now)
    return set(owners) == members and covered == list(range(partitions)) and now - last >= quiet_ms


def _wait_settled(h: ClientHarness, members: set[str], partitions: int, quiet_ms: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _settled(h.log(), members, partitions, quiet_ms):
            return True
        time.sleep(0.5)
    return False


def _latencies(log: ClientLog, members: set[str], since_ms: float, until_ms: float) -> list[float]:
    """Each member's mean rebalance latency over the phase, from its rebalance-latency-total and
    rebalance-total before and after (a member new in the phase starts from zero)."""
    out = []
    for c in members:
        samples = [e for e in log.events if e["ev"] == "sample" and e["c"] == c and e["metrics"]]
        before = [e["metrics"] for e in samples if e["t"] <= since_ms]
        after = [e["metrics"] for e in samples if e["t"] <= until_ms + 2000]
        if not after:
            continue
        b = before[-1] if before else {"rebalance-total": 0.0, "rebalance-latency-total": 0.0}
        n = after[-1].get("rebalance-total", 0) - b.get("rebalance-total", 0)
        if n > 0:
            out.append((after[-1].get("rebalance-latency-total", 0) - b.get("rebalance-latency-total", 0)) / n)
    return out


def _groupscope_view(job: GroupscopeJob, group: str, since_ms: float, until_ms: float,
                     owners: dict[str, set[int]], timeout_s: float = 60) -> tuple[list, dict, dict]:
    """(rebalance events, downtime by partition, owners by client id) once groupscope's snapshot
    shows the clients' assignment (or after `timeout_s`)."""
    deadline = time.monotonic() + timeout_s
    while True:
        snap = job.snapshots().get(group, {"members": []})
        gs_owners = {m["client_id"]: {p for _t, p in m["assigned"]} for m in snap["members"]}
        if gs_owners == owners or time.monotonic() > deadline:
            break
        time.sleep(1)
    time.sleep(1)   # the events of the batch that carried the last record
    rows = unique_events(read_history(job.history_path, "events", group=group))
    # Up to the clients' settling only: the coordinator writes a rebalance's records before the
    # clients' callbacks run, and the next phase starts soon after.
    window = [e for e in rows if since_ms < e["timestamp_ms"] <= until_ms]
    events = [e for e in window if e["event"] == "rebalance"]
    downtime: dict[int, float] = {}
    for e in window:
        if e["event"] == "rebalance_downtime":
            downtime[e["partition_id"]] = max(downtime.get(e["partition_id"], 0.0), e["downtime_seconds"])
    return events, downtime, gs_owners


def run_canary(bootstrap: str, job: GroupscopeJob, protocol: str, assignor: str, args: argparse.Namespace,
               workdir: Path, topic: str) -> list[Phase]:
    name = strategy_name(protocol, assignor)
    n, k = args.n, args.k
    config = HarnessConfig(bootstrap, topic, topic, protocol=protocol, assignor=assignor,
                           session_ms=args.session_ms, heartbeat_ms=args.heartbeat_ms,
                           auto_commit_ms=args.auto_commit_ms)
    h = ClientHarness(config, workdir / f"{topic}.jsonl", heap_mb=min(1024, 128 + 8 * 2 * n))
    names = [f"{name}-m{i:03d}" for i in range(2 * n)]
    rate_pp = args.rate / args.partitions
    quiet = max(4000, 2 * args.heartbeat_ms)
    phases: list[Phase] = []
    down: dict[str, float] = {}

    def phase(label: str, members: set[str], action: Any) -> None:
        since = time.time() * 1000
        action()
        ok = _wait_settled(h, members, args.partitions, quiet, args.phase_timeout)
        until = time.time() * 1000
        log = h.log()
        truth = log.rebalance_between(since, until, join_from_latency=protocol == "classic")
        events, downtime, gs_owners = _groupscope_view(job, topic, since, until, truth.owners)
        p = Phase(name, label, protocol, truth, _latencies(log, members, since, until), log.waits(since, until + 1500),
                  events, downtime, gs_owners, rate_pp, since, until, down.get(label),
                  starts_after(log, since, until), starts_after(log, since, until, "closing"),
                  baseline_wait(log, since))
        if not ok:
            p.notes.append(f"not settled within {args.phase_timeout}s")
        phases.append(p)

    try:
        first, second = set(names[:n]), set(names[n:])
        phase("form", first, lambda: h.add(*sorted(first)))
        phase("double", first | second, lambda: h.add(*sorted(second)))
        phase("halve", first, lambda: h.stop(*sorted(second)))
        restarted = sorted(first)[:k]

        def restart() -> None:
            stopped = time.time() * 1000
            h.stop(*restarted)
            h.wait_closed(restarted)
            down["restart"] = time.time() * 1000 - stopped
            h.add(*restarted)
        phase("restart", first, restart)
        # A crash: the same K close without leaving, and the group waits for their sessions to
        # expire (45 s for classic, the broker's 10 s for KIP-848) while their partitions stall.
        phase("crash", first - set(restarted), lambda: h.kill(*restarted))
    finally:
        h.close()
    fetch_start = first_message_ms(h.log())
    for p in phases:
        p.first_message_ms = fetch_start
    return phases


# ----- producing --------------------------------------------------------------------------------

class Producer:
    """Background producer: `rates` messages/s per topic spread over its partitions, produce
    timestamps remembered per offset (for the time-lag truth)."""

    def __init__(self, bootstrap: str) -> None:
        from kafka import KafkaProducer

        self.producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=10)
        self.stop = threading.Event()
        self.produced: dict[tuple[str, int], dict[int, int]] = {}
        self.lock = threading.Lock()
        self.threads: list[threading.Thread] = []

    def feed(self, topic: str, partitions: int, per_second: float, remember: bool = False) -> None:
        def loop() -> None:
            i, start = 0, time.monotonic()
            while not self.stop.is_set():
                ts = int(time.time() * 1000)
                future = self.producer.send(topic, value=b"x", partition=i % partitions, timestamp_ms=ts)
                if remember:
                    future.add_callback(self._remember, topic, ts)
                i += 1
                delay = start + i / per_second - time.monotonic()
                if delay > 0:
                    self.stop.wait(delay)
        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        self.threads.append(thread)

    def _remember(self, topic: str, ts: int, meta: Any) -> None:
        with self.lock:
            self.produced.setdefault((topic, meta.partition), {})[meta.offset] = ts

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=5)
        self.producer.close()


# ----- time lag ---------------------------------------------------------------------------------

@dataclass
class LagSample:
    case: str
    truth_s: float
    ours_s: float
    method: float
    time_method: str = "estimate"  # the job's lag.time_method


def time_lag_check(bootstrap: str, jobs: dict[str, GroupscopeJob], producer: Producer,
                   seconds: float, quiet_every_s: float, run: str) -> list[LagSample]:
    """Three groups that commit by hand (kafka-python): on a busy topic one that stays ~8 s behind
    (re-committing every 10 s), on a quiet topic (a message every `quiet_every_s`) one a message
    behind and one caught up. Samples taken within 3 s of a group's commit are skipped: the job
    has not read that commit yet, which is its own (separate) delay. `jobs`: by lag.time_method,
    each sampled at the same moments."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    from tests.support.scrape_support import parse, scrape

    busy, quiet = f"lag-busy-{run}", f"lag-quiet-{run}"
    create_topic(bootstrap, busy, 4)
    create_topic(bootstrap, quiet, 1)
    producer.feed(busy, 4, 50, remember=True)
    producer.feed(quiet, 1, 1.0 / quiet_every_s, remember=True)
    groups = {"busy-behind": (f"lag-busy-behind-{run}", busy, 4), "quiet-behind": (f"lag-quiet-behind-{run}", quiet, 1),
              "quiet-caught-up": (f"lag-quiet-caught-{run}", quiet, 1)}
    clients = {case: KafkaConsumer(bootstrap_servers=bootstrap, group_id=g, enable_auto_commit=False)
               for case, (g, _t, _n) in groups.items()}
    committed: dict[str, dict[int, int]] = {case: {} for case in groups}
    commit_ms: dict[str, float] = {case: 0.0 for case in groups}
    samples: list[LagSample] = []

    def table(topic: str, p: int) -> dict[int, int]:
        with producer.lock:
            return dict(producer.produced.get((topic, p), {}))

    def target(case: str, topic: str, p: int, now_ms: float) -> int | None:
        offsets = table(topic, p)
        if not offsets:
            return None
        end = max(offsets) + 1
        if case == "quiet-caught-up":
            return end
        if case == "quiet-behind":
            return max(0, end - 1)
        behind = [o for o, ts in offsets.items() if ts <= now_ms - 8000]
        return max(behind) if behind else None

    deadline = time.monotonic() + seconds
    next_busy_commit = 0.0
    try:
        while time.monotonic() < deadline:
            now_ms = time.time() * 1000
            for case, (group, topic, parts) in groups.items():
                if case == "busy-behind" and time.monotonic() < next_busy_commit:
                    continue
                wanted = {p: target(case, topic, p, now_ms) for p in range(parts)}
                wanted = {p: c for p, c in wanted.items() if c is not None}
                if wanted and wanted != committed[case]:
                    clients[case].commit({TopicPartition(topic, p): OffsetAndMetadata(c, "", -1)
                                          for p, c in wanted.items()})
                    committed[case], commit_ms[case] = wanted, time.time() * 1000
            if time.monotonic() >= next_busy_commit:
                next_busy_commit = time.monotonic() + 10
            for time_method, job in jobs.items():
                text = scrape(job.port)[1]
                at_ms = time.time() * 1000
                data = parse(text)
                values = data.get("kafka_consumergroup_lag_seconds", {})
                methods = data.get("kafka_consumergroup_lag_seconds_method", {})
                for case, (group, topic, _parts) in groups.items():
                    if at_ms - commit_ms[case] < 3000:
                        continue
                    for p, c in committed[case].items():
                        key = frozenset({("cluster", "parity"), ("group", group), ("topic", topic),
                                         ("partition", str(p))})
                        if key not in values:
                            continue
                        offsets = table(topic, p)
                        truth = (at_ms - offsets[c]) / 1000.0 if c in offsets else 0.0
                        samples.append(LagSample(case, truth, values[key],
                                                 methods.get(key, math.nan), time_method))
            time.sleep(2)
    finally:
        for client in clients.values():
            client.close()
    return samples


# ----- reporting --------------------------------------------------------------------------------

def _fmt(value: float | None, unit: str = "s") -> str:
    return "-" if value is None else f"{value:.2f}{unit}"


def print_phase(p: Phase) -> None:
    t = p.truth
    lat = sorted(p.latency_ms)
    errs = p.downtime_errors()
    print(f"\n{p.strategy} / {p.name}" + (f"  ({'; '.join(p.notes)})" if p.notes else ""))
    print(f"  {'':24}{'clients':>16}{'groupscope':>16}")
    rows = [
        ("rebalances", f"gens {t.generations}"[:16], str(len(p.events))),
        ("duration", _fmt(t.duration_s), _fmt(p.gs_duration)),
        ("sync phase", "", _fmt(p.gs_sync)),
        ("client latency med/max", f"{_fmt(statistics.median(lat) / 1000 if lat else None)}/{_fmt(lat[-1] / 1000 if lat else None)}", ""),
        ("partitions moved", str(len(t.moved)), str(len(p.gs_moved))),
        ("moved sets equal", "", str(set(t.moved) == p.gs_moved)),
        ("assignment exact", "", str(p.gs_owners == t.owners)),
        ("longest unconsumed", _fmt(p.longest_wait_s()), _fmt(max(p.downtime.values(), default=None))),
        ("downtime err median", "", _fmt(statistics.median(errs) if errs else None)),
        ("messages waited > 3 s", str(p.true_delayed()), f"{p.gs_delayed():.0f}"),
    ]
    for label, ours, theirs in rows:
        print(f"  {label:24}{ours:>16}{theirs:>16}")


# A crash's rebalance starts when the session expires; the clients date it from the crash.
TIMED = ("double", "halve", "restart")


def summary(phases: list[Phase]) -> None:
    scored = [p for p in phases if p.name != "form"]
    timed = [p for p in scored if p.name in TIMED]
    print("\n== targets (phases double, halve, restart; the crash for moves, downtime and delays) ==")
    classic = [(p, abs(p.gs_duration - p.truth.duration_s)) for p in timed
               if p.protocol == "classic" and p.gs_duration is not None]
    if classic:
        errs = sorted(e for _p, e in classic)
        rel = sorted(e / max(p.truth.duration_s, 1e-9) for p, e in classic)
        bound = max(0.1 * statistics.median(p.truth.duration_s for p, _e in classic), 0.5)
        print(f"classic duration: median abs error {statistics.median(errs):.2f}s (target <= {bound:.2f}s), "
              f"p90 relative {rel[int(0.9 * (len(rel) - 1))]:.0%} (target <= 25%)")
    for p in timed:
        if p.protocol == "consumer" and p.gs_duration is not None:
            err = abs(p.gs_duration - p.truth.duration_s)
            print(f"{p.strategy}/{p.name}: KIP-848 duration error {err:.2f}s (target <= 0.2s)")
    exact = [p for p in scored if set(p.truth.moved) == p.gs_moved and p.gs_owners == p.truth.owners]
    print(f"moved sets and per-member assignment exact: {len(exact)}/{len(scored)} phases")
    errs = [e for p in scored for e in p.downtime_errors()]
    if errs:
        print(f"per-partition downtime: median error {statistics.median(errs):.2f}s over {len(errs)} "
              f"partitions (target <= 0.5s)")
    for p in scored:
        true, est = p.true_delayed(), p.gs_delayed()
        if true or est:
            print(f"{p.strategy}/{p.name}: delayed messages {true} vs estimate {est:.0f} "
                  f"({(est - true) / true:+.0%} , target within 20%)" if true else
                  f"{p.strategy}/{p.name}: delayed messages 0 vs estimate {est:.0f}")


def lag_summary(samples: list[LagSample]) -> None:
    print("\n== time lag: kafka_consumergroup_lag_seconds vs the oldest unconsumed message's age ==")
    for case, time_method in sorted({(s.case, s.time_method) for s in samples}):
        mine = [s for s in samples if (s.case, s.time_method) == (case, time_method)]
        errs = sorted(abs(s.ours_s - s.truth_s) for s in mine if not math.isnan(s.ours_s))
        nans = sum(math.isnan(s.ours_s) for s in mine)
        truth = statistics.median(s.truth_s for s in mine)
        methods = sorted({int(s.method) for s in mine if not math.isnan(s.method)})
        dishonest = sum(1 for s in mine if (s.truth_s > 0) == (s.method == 0))
        bound = max(0.1 * truth, 1.0)
        print(f"{case:16} {time_method:8} samples {len(mine):3}  true age median {truth:6.1f}s  abs error median "
              f"{statistics.median(errs) if errs else math.nan:5.2f}s max {max(errs, default=math.nan):5.2f}s "
              f"(target <= {bound:.1f}s)  NaN {nans}  methods {methods}  label mismatches {dishonest}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--consumers", type=int, default=50)
    parser.add_argument("--restarted", type=int, default=10)
    parser.add_argument("--rate", type=float, default=600.0, help="messages/s on the canary topic")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--partitions", type=int, default=50)
    parser.add_argument("--strategies", default="all",
                        help="comma-separated: range,roundrobin,sticky,cooperative-sticky,kip848-uniform,kip848-range")
    parser.add_argument("--parallel", type=int, default=6, help="strategies run at once")
    parser.add_argument("--heartbeat-ms", type=int, default=3000, help="classic (the client default)")
    parser.add_argument("--session-ms", type=int, default=45000, help="classic (the client default)")
    parser.add_argument("--auto-commit-ms", type=int, default=5000)
    parser.add_argument("--phase-timeout", type=float, default=180.0)
    parser.add_argument("--lag-seconds", type=float, default=120.0, help="0 skips the time-lag check")
    parser.add_argument("--quiet-every", type=float, default=30.0)
    parser.add_argument("--time-methods", default="estimate,exact",
                        help="lag.time_method of the jobs the time-lag check compares (one job each)")
    parser.add_argument("--save", type=Path, help="write every phase's figures to this JSON file")
    args = parser.parse_args(argv)
    args.n = max(2, round(args.consumers * args.scale))
    args.k = max(1, round(args.restarted * args.scale))
    args.rate = args.rate * args.scale
    chosen = [(pr, a) for pr, a in STRATEGIES
              if args.strategies == "all" or strategy_name(pr, a) in args.strategies.split(",")]
    run = uuid.uuid4().hex[:6]
    print(f"canary: {args.n} -> {2 * args.n} -> {args.n} consumers, {args.k} restarted, "
          f"{args.rate:.0f} msg/s on {args.partitions} partitions; strategies {[strategy_name(*s) for s in chosen]}")

    workdir = Path(tempfile.mkdtemp(prefix="rebalance-truth-"))
    broker = start_kafka("4.4.0")
    jobs: dict[str, GroupscopeJob] = {}
    producer = Producer(broker.bootstrap)
    try:
        time_methods = args.time_methods.split(",")
        for method in time_methods:
            jobs[method] = start_groupscope_job(broker.bootstrap, workdir / f"job-{method}",
                                                time_method=method)
        job = jobs[time_methods[0]]  # the rebalance figures come from the first
        topics = {s: f"canary-{strategy_name(*s)}-{run}" for s in chosen}
        for topic in topics.values():
            create_topic(broker.bootstrap, topic, args.partitions)
            producer.feed(topic, args.partitions, args.rate)
        phases: list[Phase] = []
        with ThreadPoolExecutor(max(1, args.parallel)) as pool:
            futures = [pool.submit(run_canary, broker.bootstrap, job, pr, a, args, workdir, topics[(pr, a)])
                       for pr, a in chosen]
            for future in futures:
                phases.extend(future.result())
        for p in phases:
            print_phase(p)
        if phases:
            summary(phases)
        saved = {"settings": {k: v for k, v in vars(args).items() if k != "save"},
                 "phases": [p.to_dict() for p in phases]}
        if args.save:
            args.save.write_text(json.dumps(saved, indent=1, default=str))
            print(f"phases saved to {args.save}")
        if phases:
            print_comparison(compare(saved, calibrated=False), ", before calibration")
            print_comparison(compare(saved))
        if args.lag_seconds > 0:
            lag_summary(time_lag_check(broker.bootstrap, jobs, producer, args.lag_seconds,
                                       args.quiet_every, run))
    finally:
        producer.close()
        for started in jobs.values():
            started.stop()
        broker.stop()
    print(f"\nclient logs: {workdir}")


if __name__ == "__main__":
    stop_everything_at_exit()
    main()
