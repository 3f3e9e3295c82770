"""Soak: `groupscope run` under a steady load for `--minutes`, sampled every `--sample-every`
seconds, to show that nothing grows (prints figures and verdicts; asserts nothing).

The job runs as users run it (benchmarks/burrow.py's `Groupscope`: `groupscope run -c FILE`, the
job's defaults except the broker, a checkpoint and history in a temporary folder and the exporter
on a free loopback port) against a real Kafka broker (tests/support/kafka_broker.py), while:

* `--rate` commits/s over `--groups` groups x `--partitions` partitions come through the
  OffsetCommit API (benchmarks/commit_load.py `steady`, in a process of its own);
* `--rebalance-groups` groups of real Java consumers (tests/support/client_harness.py, one JVM
  a group, classic and KIP-848 assignors in turn) rebalance: every `--rebalance-every` seconds
  one of them, in rotation, gains a member, loses one that leaves, gains one, loses one that
  crashes (its session expires);
* every minute `--churn` groups are created (an offset commit) and last minute's are deleted
  (DeleteGroups);
* /metrics is scraped every 15 s with `Accept-Encoding: gzip`, as Prometheus scrapes it.

Each sample (a row printed, all of them in samples.csv / samples.json in `--out`): PSS, open
descriptors and threads of each of the job's processes by role (the driver, the Spark JVM, the
zygote, Spark's Python workers) and the total; the JVM's heap after a full GC (`jcmd GC.run`,
then `GC.heap_info`); files and bytes under the checkpoint and the history; the mean micro-batch
duration since the last sample (groupscope_batch_duration_seconds); the commits the job read per
second (groupscope_records_total); commit-to-served latency of a marker group (a commit, then
/metrics read every second until it shows it).

The driver's Python heap is measured as the driver's anonymous memory (`Anonymous` in
/proc/PID/smaps_rollup: the Python objects' arenas and everything else the process allocated,
its libraries' code and files left out): the job exports no heap figure of its own, and
tracemalloc costs too much to leave on. With `--nmt` the driver JVM runs with Java's Native
Memory Tracking and each sample adds the memory it has committed by category (heap, class
metadata, threads, code, GC, ...), so that a JVM growing outside its heap shows where.

At the end: per series, the least-squares slope after the first 10 minutes (or after half of a
shorter run) in % of its mean per hour, against the target (memory, descriptors, threads and
batch duration under 1 %/h; the checkpoint and the history are given as growth per hour), then
SIGTERM (the job must exit 0 within 60 s), a restart, and a check that the restarted job serves
Kafka's own committed offsets (DescribeGroups' OffsetFetch) for a sample of the groups and every
rebalancing group; a PNG of the series (benchmarks/_soak_report.py).

Usage (from the repository root):
    python -m benchmarks.soak [--minutes 60] [--sample-every 60] [--rate 5000] [--groups 2000]
        [--partitions 25] [--rebalance-groups 5] [--rebalance-every 30] [--churn 3] [--out DIR]
        [--nmt]
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import multiprocessing
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks import _soak_report as report
from benchmarks._stopping import stop_everything_at_exit
from benchmarks.burrow import (Groupscope, cpu_probe, process_rss_pss, sample_groups,
                               sampled_offsets, tree_pids)
from benchmarks.commit_load import (Connection, add_load_arguments, create_topics, group_name,
                                    group_request, steady, wait_for_coordinators)
from tests.support.client_harness import STRATEGIES, ClientHarness, HarnessConfig
from tests.support.kafka_broker import KafkaBroker, create_topic, start_kafka

PROMETHEUS_INTERVAL = 15.0
REBALANCE_TOPIC = "soak-rebalance"
REBALANCE_PARTITIONS = 6
CHURN_PARTITIONS = 5
# A member joins, one leaves, one joins, one crashes: a group swings between 2 and 3 members.
REBALANCE_ACTIONS = ("join", "leave", "join", "crash")
ROLES = ("driver", "jvm", "zygote", "workers")
STOP_TIMEOUT_S = 60.0
RESTART_TIMEOUT_S = 600.0


# -- the job's processes ------------------------------------------------------------------------

def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _parent(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def role_of(pid: int, root: int) -> str:
    """Which of the job's processes `pid` is: the driver (the `groupscope` process), the Spark
    JVM, the zygote the driver starts (streaming/localmode), or a Python worker: the zygote's
    forks, which keep its command line, and their clients the JVM starts."""
    if pid == root:
        return "driver"
    command = _command(pid)
    if command.split(" ", 1)[0].endswith("java"):
        return "jvm"
    return "zygote" if "python_zygote" in command and _parent(pid) == root else "workers"


def _threads(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("Threads:"))
    except (OSError, StopIteration):
        return 0


def _fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def process_figures(root: int) -> dict[str, float]:
    """PSS (MB), open descriptors and threads of each role of `root`'s process tree (workers
    summed), their totals and the process counts."""
    out: dict[str, float] = {f"{what}_{role}": 0.0 for what in ("pss_mb", "fds", "threads", "n")
                             for role in ROLES}
    jvm = None
    for pid in tree_pids(root):
        memory = process_rss_pss(pid)
        if memory is None:
            continue  # a worker that ended meanwhile
        role = role_of(pid, root)
        jvm = pid if role == "jvm" else jvm
        out[f"pss_mb_{role}"] += memory[1] / 1024
        out[f"fds_{role}"] += _fds(pid)
        out[f"threads_{role}"] += _threads(pid)
        out[f"n_{role}"] += 1
    for what in ("pss_mb", "fds", "threads", "n"):
        out[f"{what}_total"] = sum(out[f"{what}_{role}"] for role in ROLES)
    out["jvm_pid"] = jvm or 0
    return out


_HEAP_USED = re.compile(r"used (\d+)K")


def jvm_heap_after_gc_mb(pid: int) -> float | None:
    """The JVM's used heap right after a full collection it is asked for (jcmd attaches; a
    collection a minute is part of what this benchmark costs the job)."""
    try:
        subprocess.run(["jcmd", str(pid), "GC.run"], capture_output=True, timeout=60, check=True)
        info = subprocess.run(["jcmd", str(pid), "GC.heap_info"], capture_output=True, text=True,
                              timeout=60, check=True).stdout
    except (subprocess.SubprocessError, OSError):
        return None
    match = _HEAP_USED.search(info)
    return int(match.group(1)) / 1024 if match else None


def anonymous_mb(pid: int) -> float | None:
    """The process's anonymous memory in MB (/proc/PID/smaps_rollup)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            kb = next(int(line.split()[1]) for line in fh if line.startswith("Anonymous:"))
    except (OSError, StopIteration):
        return None
    return kb / 1024


_NMT_LINE = re.compile(r"^-?\s*(Total|[A-Z][\w ]*?)\s*[:(]\s*reserved=\d+(?:KB)?, "
                       r"committed=(\d+)(KB)?", re.M)


def jvm_native_mb(pid: int) -> dict[str, float]:
    """Memory the JVM has committed by Native Memory Tracking category, in MB (`nmt_<category>`;
    nothing when the JVM runs without -XX:NativeMemoryTracking)."""
    try:
        text = subprocess.run(["jcmd", str(pid), "VM.native_memory", "summary", "scale=KB"],
                              capture_output=True, text=True, timeout=60, check=True).stdout
    except (subprocess.SubprocessError, OSError):
        return {}
    return {"nmt_" + name.strip().lower().replace(" ", "_"):
            int(committed) / (1024 if unit else 2**20)
            for name, committed, unit in _NMT_LINE.findall(text)}


def dir_usage(path: Path) -> tuple[int, int]:
    """(files, bytes) under `path`."""
    files = size = 0
    for folder, _, names in os.walk(path):
        for name in names:
            with contextlib.suppress(OSError):
                size += os.stat(os.path.join(folder, name)).st_size
                files += 1
    return files, size


# -- reading /metrics ------------------------------------------------------------------------------

def _scalar(text: str, series: str, labels: str = "") -> float | None:
    """The value of the first `series` line whose labels contain `labels`."""
    match = re.search(rf"^{re.escape(series)}\{{[^}}]*{re.escape(labels)}[^}}]*\}} (\S+)$", text,
                      re.M)
    return float(match.group(1)) if match else None


@dataclass
class Scraper:
    """/metrics every PROMETHEUS_INTERVAL s, as Prometheus asks (gzip), in a thread of its own;
    keeps the last answer's counters and each scrape's duration."""
    job: Groupscope
    stop: threading.Event = field(default_factory=threading.Event)
    durations: list[float] = field(default_factory=list)
    counters: dict[str, float] = field(default_factory=dict)

    def run(self) -> None:
        while not self.stop.wait(PROMETHEUS_INTERVAL):
            started = time.perf_counter()
            text, _ = self.job.scrape_text()
            if text:
                self.durations.append(time.perf_counter() - started)
                self.counters = metric_counters(text)

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, daemon=True, name="prometheus")
        thread.start()
        return thread


def metric_counters(text: str) -> dict[str, float]:
    """The cumulative figures a sample takes differences of."""
    found = {"batch_sum": _scalar(text, "groupscope_batch_duration_seconds_sum"),
             "batch_count": _scalar(text, "groupscope_batch_duration_seconds_count"),
             "commits_read": _scalar(text, "groupscope_records_total", 'type_name="offset_commit"'),
             "ready": _scalar(text, "groupscope_ready")}
    return {k: v for k, v in found.items() if v is not None}


def commit_to_served(job: Groupscope, link: Connection, group: int, offset: int,
                     timeout: float = 120.0) -> float | None:
    """Commit `offset` for partition 0 of `group`, then read /metrics every second until it
    shows it: the end of that read minus the commit's send (benchmarks/burrow.py's measure)."""
    name = group_name(group)
    sent = time.time()
    link.send(group_request(group, 1).request(offset // 1000, offset))
    link.drain()
    while time.time() - sent < timeout:
        text, at = job.scrape_text()
        if sampled_offsets(text, [name]).get((name, 0)) == offset:
            return at - sent
        time.sleep(1.0)
    return None


# -- the load beside the steady commits ------------------------------------------------------------

class Rebalancers:
    """Groups of real Java consumers (one harness JVM each) that one at a time, every call of
    `step`, gain or lose a member (REBALANCE_ACTIONS in turn)."""

    def __init__(self) -> None:
        self.harnesses: list[ClientHarness] = []
        self.members = 0
        self.steps = 0

    def start(self, bootstrap: str, workdir: Path, groups: int) -> None:
        """`groups` groups of two members each (`close` stops those started if this fails)."""
        create_topic(bootstrap, REBALANCE_TOPIC, REBALANCE_PARTITIONS)
        for i in range(groups):
            protocol, assignor = STRATEGIES[i % len(STRATEGIES)]
            config = HarnessConfig(bootstrap, REBALANCE_TOPIC, f"soak-rebalance-{i}", protocol,
                                   assignor, sample_ms=600_000)
            self.harnesses.append(ClientHarness(config, workdir / f"harness-{i}.jsonl",
                                                heap_mb=128))
            self.harnesses[-1].add(self._name(), self._name())

    @property
    def groups(self) -> list[str]:
        return [h.config.group for h in self.harnesses]

    def _name(self) -> str:
        self.members += 1
        return f"m{self.members:04d}"

    def step(self) -> str:
        harness = self.harnesses[self.steps % len(self.harnesses)]
        action = REBALANCE_ACTIONS[(self.steps // len(self.harnesses)) % len(REBALANCE_ACTIONS)]
        self.steps += 1
        if action == "join":
            harness.add(self._name())
        else:  # the oldest member goes
            (harness.stop if action == "leave" else harness.kill)(min(harness.running))
        return f"{harness.config.group} {action}"

    def close(self) -> None:
        for harness in self.harnesses:
            harness.close(timeout_s=30)


class Churn:
    """Groups that live a minute: each `tick` creates `per_tick` groups (an offset commit of
    CHURN_PARTITIONS partitions) and deletes the previous tick's."""

    def __init__(self, link: Connection, admin, first_group: int, per_tick: int) -> None:
        self.link, self.admin, self.next, self.per_tick = link, admin, first_group, per_tick
        self.alive: list[int] = []
        self.created = self.deleted = 0

    def tick(self) -> None:
        if self.alive:
            answers = self.admin.delete_groups(list(map(group_name, self.alive)))
            errors = {g: e for g, e in answers.items() if e != "OK"}  # group -> error's name
            if errors:
                print(f"  churn: deleting groups failed: {errors}")
            self.deleted += len(self.alive) - len(errors)
        self.alive = list(range(self.next, self.next + self.per_tick))
        self.next += self.per_tick
        for g in self.alive:
            self.link.send(group_request(g, CHURN_PARTITIONS).request(g, 1000))
        self.link.drain()
        self.created += len(self.alive)


def _load_process(queue, stop, bootstrap: str, rate: float, seconds: float, groups: int,
                  partitions: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C: the parent stops it through `stop`
    result = steady(bootstrap, rate, seconds, groups, partitions, stop=stop)
    queue.put((result.commits, result.seconds))


@dataclass
class Load:
    """benchmarks/commit_load.py's steady commits, in a process of its own (forked before any
    thread of this one starts)."""
    process: multiprocessing.Process
    queue: object
    stop: object
    rate: float | None = None

    @classmethod
    def start(cls, args, seconds: float) -> "Load":
        context = multiprocessing.get_context("fork")
        queue, stop = context.Queue(), context.Event()
        process = context.Process(target=_load_process, daemon=True, args=(
            queue, stop, args.bootstrap, args.rate, seconds, args.groups, args.partitions))
        process.start()
        return cls(process, queue, stop)

    def finish(self) -> float | None:
        """Stops it; the commit rate it reached (None if it died)."""
        if not self.process.is_alive() and self.rate is not None:
            return self.rate
        self.stop.set()
        self.process.join(timeout=60)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join()
        try:
            commits, seconds = self.queue.get(timeout=5)
        except Exception:  # noqa: BLE001  (queue.Empty: it died without a result)
            return None
        self.rate = commits / seconds if seconds else None
        return self.rate


# -- sampling ----------------------------------------------------------------------------------

@dataclass
class Sampler:
    job: Groupscope
    scraper: Scraper
    link: Connection
    marker: int
    nmt: bool = False  # the JVM runs with Native Memory Tracking: sample its categories
    started: float = field(default_factory=time.time)
    rows: list[dict[str, float]] = field(default_factory=list)
    _last: tuple[float, dict[str, float]] | None = None

    def sample(self) -> dict[str, float]:
        now = time.time()
        row: dict[str, float] = {"t_min": (now - self.started) / 60}
        row.update(process_figures(self.job.process.pid))
        row["jvm_heap_mb"] = jvm_heap_after_gc_mb(int(row["jvm_pid"])) if row["jvm_pid"] else None
        row["driver_anon_mb"] = anonymous_mb(self.job.process.pid)
        if self.nmt and row["jvm_pid"]:
            row.update(jvm_native_mb(int(row["jvm_pid"])))
        for name in ("checkpoint", "history"):
            files, size = dir_usage(self.job.workdir / name)
            row[f"{name}_files"], row[f"{name}_mb"] = files, size / 2**20
        row.update(self._rates(now))
        offset = 1000 * (len(self.rows) + 1)
        row["latency_s"] = commit_to_served(self.job, self.link, self.marker, offset)
        scrapes = self.scraper.durations[-4:]
        row["scrape_s"] = sum(scrapes) / len(scrapes) if scrapes else None
        self.rows.append(row)
        return row

    def _rates(self, now: float) -> dict[str, float | None]:
        """Mean micro-batch duration and commits read per second since the last sample."""
        counters = dict(self.scraper.counters)
        last, self._last = self._last, (now, counters)
        if last is None or not counters:
            return {"batch_s": None, "read_per_s": None}
        before = last[1]
        batches = counters.get("batch_count", 0) - before.get("batch_count", 0)
        read = counters.get("commits_read", 0) - before.get("commits_read", 0)
        return {"batch_s": (counters["batch_sum"] - before.get("batch_sum", 0)) / batches
                if batches else None, "read_per_s": read / (now - last[0])}


COLUMNS = (("t_min", "min", 5, 1), ("pss_mb_total", "PSS MB", 7, 0),
           ("pss_mb_driver", "driver", 7, 0), ("driver_anon_mb", "d.anon", 6, 0),
           ("pss_mb_jvm", "JVM", 6, 0),
           ("pss_mb_zygote", "zygote", 6, 0), ("pss_mb_workers", "workers", 7, 0),
           ("n_total", "procs", 5, 0), ("jvm_heap_mb", "heap MB", 7, 0),
           ("fds_total", "fds", 5, 0), ("threads_total", "thr", 5, 0),
           ("batch_s", "batch s", 7, 2), ("latency_s", "lat s", 6, 1),
           ("read_per_s", "read/s", 7, 0), ("checkpoint_files", "ck files", 8, 0),
           ("checkpoint_mb", "ck MB", 6, 1), ("history_files", "hi files", 8, 0),
           ("history_mb", "hi MB", 6, 1), ("scrape_s", "scrape s", 8, 2))


def header() -> str:
    return " ".join(f"{title:>{width}}" for _, title, width, _ in COLUMNS)


def format_row(row: dict[str, float | None]) -> str:
    def cell(value: float | None, width: int, digits: int) -> str:
        return f"{'-':>{width}}" if value is None else f"{value:>{width},.{digits}f}"
    return " ".join(cell(row.get(key), width, digits) for key, _, width, digits in COLUMNS)


# -- the end: stop, restart, compare with Kafka ------------------------------------------------------

def _start_time(pid: int) -> str | None:
    """The process's start (clock ticks after boot): with its pid, it names one process."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


@dataclass
class Stopped:
    code: int | None  # None: still running STOP_TIMEOUT_S after SIGTERM (then killed)
    seconds: float
    outlived: list[str]  # roles of the job's processes still alive 30 s after the driver ended


def stop_job(job: Groupscope) -> Stopped:
    """SIGTERM to the driver, SIGKILL after STOP_TIMEOUT_S; then the rest of its process tree
    gets 30 s to follow it (the JVM, the zygote and workers end with the driver) before it is
    killed, so that no process of the job outlives the benchmark."""
    root = job.process.pid
    tree = {pid: (_start_time(pid), role_of(pid, root)) for pid in tree_pids(root) if pid != root}
    started = time.perf_counter()
    job.process.send_signal(signal.SIGTERM)
    try:
        code: int | None = job.process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        job.process.kill()
        job.process.wait(timeout=10)
        code = None
    seconds = time.perf_counter() - started

    def alive() -> dict[int, str]:
        return {p: r for p, (start, r) in tree.items() if start and _start_time(p) == start}

    deadline = time.monotonic() + 30
    while alive() and time.monotonic() < deadline:
        time.sleep(0.5)
    outlived = alive()
    for pid in outlived:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return Stopped(code, seconds, sorted(outlived.values()))


def kafka_offsets(admin, groups: list[str]) -> dict[tuple[str, int], float]:
    """(group, partition) -> the offset Kafka holds (OffsetFetch); each group reads one topic."""
    out: dict[tuple[str, int], float] = {}
    for group, offsets in admin.list_group_offsets(groups).items():
        for tp, meta in offsets.items():
            if meta.offset >= 0:
                out[(group, tp.partition)] = float(meta.offset)
    return out


def restart_and_check(job: Groupscope, expected: dict[tuple[str, int], float]
                      ) -> tuple[float | None, float | None, list[str]]:
    """Launch again on the same checkpoint; (seconds to groupscope_ready 1, seconds until every
    offset in `expected` is served, the groups still differing at RESTART_TIMEOUT_S)."""
    groups = sorted({g for g, _ in expected})
    started = time.perf_counter()
    job.launch()
    ready = None
    differing = groups
    while time.perf_counter() - started < RESTART_TIMEOUT_S:
        if job.process.poll() is not None:
            raise RuntimeError(f"the restarted job exited with {job.process.returncode}:\n"
                               f"{job.log_tail()}")
        text, _ = job.scrape_text()
        if ready is None and metric_counters(text).get("ready") == 1:
            ready = time.perf_counter() - started
        served = sampled_offsets(text, groups) if text else {}
        differing = sorted({g for (g, p), offset in expected.items()
                            if served.get((g, p)) != offset})
        if ready is not None and not differing:
            return ready, time.perf_counter() - started, []
        time.sleep(1.0)
    return ready, None, differing


# -- the run ---------------------------------------------------------------------------------------

def soak(args, stack: contextlib.ExitStack, out: Path) -> list[dict[str, float]]:
    """Everything up to the samples; what it starts is stopped by `stack`."""
    from kafka import KafkaAdminClient

    workdir = Path(tempfile.mkdtemp(prefix="groupscope-soak-work-"))
    stack.callback(shutil.rmtree, workdir, ignore_errors=True)
    stack.callback(_keep_logs, workdir, out)
    broker: KafkaBroker = start_kafka()
    stack.callback(broker.stop)
    args.bootstrap = broker.bootstrap
    create_topics(broker.bootstrap, args.groups, args.partitions)
    wait_for_coordinators(broker.bootstrap, range(args.groups))
    load = Load.start(args, args.minutes * 60 + 300)  # stopped when the samples are taken
    stack.callback(load.finish)
    job = Groupscope(workdir / "job", broker.bootstrap)
    job.launch()
    stack.callback(stop_job, job)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    stack.callback(admin.close)
    link = Connection(broker.bootstrap, window=1)
    stack.callback(link.close)
    rebalancers = Rebalancers()
    stack.callback(rebalancers.close)
    rebalancers.start(broker.bootstrap, workdir, args.rebalance_groups)
    churn = Churn(link, admin, args.groups + 100, args.churn)
    scraper = Scraper(job)
    scraper.start()
    stack.callback(scraper.stop.set)
    sampler = Sampler(job, scraper, link, marker=args.groups, nmt=args.nmt)
    print(f"broker {broker.bootstrap}, job on 127.0.0.1:{job.port} (pid {job.process.pid}), "
          f"working in {workdir}; {args.rebalance_groups} rebalancing groups up")
    print(header())
    run_schedule(args, job, sampler, rebalancers, churn, out)
    rate = load.finish()
    print(f"load: {rate or 0:,.0f} commits/s reached (asked {args.rate:,.0f}); rebalancing "
          f"steps {rebalancers.steps}; churn: {churn.created} groups created, {churn.deleted} "
          f"deleted")
    rebalancers.close()
    scraper.stop.set()
    report.print_slopes(sampler.rows)
    final_check(job, admin, args, rebalancers.groups)
    return sampler.rows


def run_schedule(args, job: Groupscope, sampler: Sampler, rebalancers: Rebalancers,
                 churn: Churn, out: Path) -> None:
    """Samples, rebalancing steps and churn ticks, each at its period, until `--minutes` pass.
    The samples are saved as they come, so that an interrupted run keeps them."""

    def sample() -> None:
        print(format_row(sampler.sample()), flush=True)
        report.save(sampler.rows, out)

    started = time.monotonic()
    end = started + args.minutes * 60
    due = {"sample": started + args.sample_every, "rebalance": started + args.rebalance_every,
           "churn": started + 60.0}
    actions = {"sample": sample, "rebalance": rebalancers.step, "churn": churn.tick}
    periods = {"sample": args.sample_every, "rebalance": args.rebalance_every, "churn": 60.0}
    sampler.started = time.time()
    while True:
        name = min(due, key=due.get)
        if due[name] > end:
            return
        while time.monotonic() < due[name]:
            if job.process.poll() is not None:
                raise RuntimeError(f"the job exited with {job.process.returncode}:\n"
                                   f"{job.log_tail()}")
            time.sleep(min(1.0, max(0.0, due[name] - time.monotonic())))
        actions[name]()
        due[name] += periods[name]


def final_check(job: Groupscope, admin, args, rebalancing: list[str]) -> None:
    """SIGTERM, restart, and the restarted job's offsets against Kafka's."""
    stopped = stop_job(job)
    verdict = "OK" if stopped.code == 0 else "FAIL"
    print(f"SIGTERM: the job exited with {stopped.code} after {stopped.seconds:.1f}s (must be 0 "
          f"within {STOP_TIMEOUT_S:.0f}s): {verdict}"
          + (f"; processes of the job alive 30 s after it, killed: {stopped.outlived}"
             if stopped.outlived else ""))
    checked = [group_name(g) for g in sample_groups(args.groups)] + rebalancing
    expected = kafka_offsets(admin, checked)
    ready, served, differing = restart_and_check(job, expected)
    groups = len({g for g, _ in expected})
    print(f"restart: ready (groupscope_ready 1) after {ready or float('nan'):.1f}s; "
          + (f"{groups} groups ({len(expected):,} partitions, every rebalancing group) served "
             f"Kafka's committed offsets after {served:.1f}s: OK" if served is not None else
             f"{len(differing)} of {groups} groups differ from Kafka's offsets after "
             f"{RESTART_TIMEOUT_S:.0f}s: FAIL ({differing[:5]})"))


def _keep_logs(workdir: Path, out: Path) -> None:
    for log in [*workdir.glob("job/*.log"), *workdir.glob("harness-*.stderr")]:
        shutil.copy(log, out / log.name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--sample-every", type=float, default=60.0, help="seconds")
    add_load_arguments(parser)
    parser.add_argument("--rebalance-groups", type=int, default=5)
    parser.add_argument("--rebalance-every", type=float, default=30.0, help="seconds")
    parser.add_argument("--churn", type=int, default=3, help="groups created and deleted a minute")
    parser.add_argument("--out", type=Path, default=None, help="default: a new temporary folder")
    parser.add_argument("--nmt", action="store_true",
                        help="run the driver JVM with Native Memory Tracking and sample it")
    args = parser.parse_args()
    if args.nmt:
        # JDK 17's tracker aborts (virtualMemoryTracker.cpp ShouldNotReachHere) when it meets
        # the class cache's dynamic CDS archive mapped at start, so class sharing is off too.
        Groupscope.spark_conf = {**Groupscope.spark_conf, "spark.driver.extraJavaOptions":
                                 "-XX:NativeMemoryTracking=summary -Xshare:off"}
    out = args.out or Path(tempfile.mkdtemp(prefix="groupscope-soak-"))
    out.mkdir(parents=True, exist_ok=True)
    print(f"{datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}; "
          f"{shlex.join([sys.executable, '-m', 'benchmarks.soak', *sys.argv[1:]])}")
    print(f"CPU probe at start: {cpu_probe()} s; output in {out}")
    with contextlib.ExitStack() as stack:
        rows = soak(args, stack, out)
    plot = report.plot(rows, out)
    print(f"samples: {out / 'samples.csv'}, {out / 'samples.json'}; plot: {plot}")
    print(f"CPU probe at end: {cpu_probe()} s")
    (out / "args.json").write_text(json.dumps({k: str(v) for k, v in vars(args).items()}))


if __name__ == "__main__":
    stop_everything_at_exit()
    main()
