"""groupscope side by side with Burrow (LinkedIn's consumer-lag monitor, Debian's 1.2.1) and
klag-exporter (a Rust exporter that polls the Admin API), on one real Kafka broker and the same
commits (benchmarks/commit_load.py: made through the OffsetCommit API, so the broker writes
`__consumer_offsets`). Prints figures; asserts nothing.

Each system runs as its users run it: `groupscope run -c FILE` with the job's default settings
(trigger, exporter, end-offset poller), and `Burrow -config-dir DIR` with its kafka cluster and
consumer modules reading `__consumer_offsets` from the start and its in-memory storage. Burrow
1.2 needs a ZooKeeper for its own coordination: one from Debian's `zookeeper` package runs beside
it, counted apart. "Served" means: every group's every partition shows its final committed
offset, in groupscope's /metrics (`kafka_consumergroup_committed_offset`) or in Burrow's
`/v3/kafka/<cluster>/consumer/<group>`. groupscope serves the groups from one Admin API look at
launch (`source.admin_seed`) until it has read the log itself: "log read" is when its
`groupscope_ready` turns 1, and its catch-up CPU and memory are taken from then on.

Phases, in one run: launch to served after `--commits` and after `--commits-large` preloaded
commits (and launch to the first group served, and to half of them; CPU-seconds of the
catch-up, then memory once settled: RSS, PSS summed over the process tree, process count);
steady load at `--rate` commits/s for `--steady-seconds`, twice: CPU-seconds per minute of each
while groupscope is scraped every `--prometheus-interval` seconds (15, as Prometheus would) and
memory at the end of that load, then groupscope's commit-to-exporter latency, scraped every
`--scrape-interval` seconds; restart with the large checkpoint and `--restart-commits` new
commits; memory growth per group-partition from `--groups` to `--groups-large` groups. Then, on
a broker of its own, `--many-groups` x `--many-partitions` (100,000 x 10): the catch-up of
`--many-commits`, memory, and under `--many-rate` commits/s CPU per minute and latency for
both (`many_groups_phase`), and a gzip scrape of groupscope; then groupscope alone at each rate
of `--ceiling` (10,000 to 80,000 commits/s by default: the rate the broker acknowledged and
groupscope's latency at each, `ceiling_steps`); then, with every broker stopped,
the many-groups targets that need none (benchmarks/_targets.py: a render of as many
group-partitions from scratch, the state stage's batch of 1,000 touched groups at 2,000 and at
`--many-groups` held, and memory growth per group-partition from `--many-growth-from` groups),
and a last table of every target, met or missed. The broker keeps the whole backlog uncompacted
(BENCH_BROKER).

Needs `apt-get install burrow zookeeper` for Burrow's side and `scripts/install-klag-exporter.sh`
for klag-exporter's (the benchmark installs nothing; it measures without the one that is missing,
and says so). klag-exporter runs with its Admin API poll every 10 s, as Burrow's offsets refresh
here (every `--klag-many-poll` in the many-groups phase), at partition granularity; its catch-ups, memory, steady CPU and restart are measured, not
its latency (which its poll interval sets).

Usage (from the repository root; a quick run: --commits 200000 --commits-large 400000 --groups 500
--groups-large 2000 --steady-seconds 20 --many-groups 5000 --many-commits 50000):
    python -m benchmarks.burrow [--commits N] [--commits-large N] [--groups N] [--groups-large N]
        [--partitions N] [--rate R] [--steady-seconds S] [--restart-commits N]
        [--many-groups N] [--many-partitions N] [--many-commits N] [--many-rate R]
        [--ceiling R,R,...] [--ceiling-seconds S]
        [--no-many-targets] [--many-growth-from N] [--kafka-version V] [--settle S]
"""
from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from benchmarks._process_cpu import CpuAccount
from benchmarks._stopping import descendants, stop_everything_at_exit
from benchmarks._targets import Target, at_most, offline_targets
from benchmarks._targets import table as targets_table
from benchmarks.cluster import percentile
from benchmarks.commit_load import (Connection, add_load_arguments, create_topics, final_offset,
                                    group_name, group_request, preload, steady, topic_of)
from tests.support.kafka_broker import (DEFAULT_VERSION, JVM_FAST, KAFKA3_VERSION, REPO_ROOT,
                                        free_port, start_kafka)
from tests.support.processes import stop_gracefully

BURROW = Path("/usr/bin/Burrow")  # Debian's package names the binary with a capital B
ZOOKEEPER_CLASSPATH = "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar"
KLAG = REPO_ROOT / ".cache" / "klag-exporter" / "bin" / "klag-exporter"
# How often klag-exporter polls the Admin API: Burrow here refreshes offsets every 10 s too
# (`offset-refresh`); klag-exporter's own default is 30 s.
KLAG_POLL_INTERVAL = "10s"
GROUPSCOPE = REPO_ROOT / ".venv" / "bin" / "groupscope"
CLUSTER = "bench"
# Burrow 1.2.1's sarama knows Kafka versions up to 2.1.0; 2.0.0's requests (Fetch v8, ListOffsets
# v2, Metadata v5, OffsetCommit not used) are all above what Kafka 4.0 removed (KIP-896).
BURROW_KAFKA_VERSION = "2.0.0"
PROBE = "import time;t=time.time();sum(i*i for i in range(10**7));print(round(time.time()-t,2))"

Expected = Callable[[int], int]  # group number -> its last round

# The test broker rolls `__consumer_offsets` segments at 1 MiB so that tests see compaction; its
# log cleaner would then compact the backlog while it is loaded, and 3M commits would cost a
# monitor little more than 1M. Here the whole backlog stays in one active segment, which the
# cleaner never touches: what a monitor meets after a burst of commits, before compaction.
BENCH_BROKER = {"offsets.topic.segment.bytes": str(1 << 30)}
# The test broker's 512 MB heap holds the committed offsets of 10^5 group-partitions; at 10^6 its
# group coordinator spent most of its time in full collections and took commits at a crawl.
BENCH_HEAP = ("-Xms512m", "-Xmx3g")
# The many-groups phase judges a sample of the groups (every SAMPLE_STRIDE-th, and the last
# groups written): one HTTP request per group to Burrow, or parsing a million series per
# scrape, would load the cores the monitors share.
SAMPLE_STRIDE = 100


def cpu_probe() -> str:
    return subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True).stdout.strip()


# -- process trees: CPU and memory ---------------------------------------------------------------

def tree_pids(root: int) -> list[int]:
    return [root] + descendants(root)


@dataclass
class Memory:
    rss_mb: float
    pss_mb: float
    processes: int

    def __str__(self) -> str:
        return f"RSS {self.rss_mb:,.0f} MB, PSS {self.pss_mb:,.0f} MB, {self.processes} processes"


def process_rss_pss(pid: int) -> tuple[int, int] | None:
    """(RSS kB, PSS kB) of a live process (/proc/<pid>/smaps_rollup); None once it is gone."""
    rss = pss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as fh:
            for line in fh:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
    except OSError:
        return None
    return rss, pss


def tree_memory(root: int) -> Memory:
    """RSS and PSS summed over `root`'s process tree."""
    pids = tree_pids(root)
    seen = [m for m in map(process_rss_pss, pids) if m is not None]
    return Memory(sum(r for r, _ in seen) / 1024, sum(p for _, p in seen) / 1024, len(pids))


def _get(url: str, timeout: float = 30) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read()


# -- the two systems ----------------------------------------------------------------------------

class Monitor:
    """A monitoring process under test: launch, offsets it serves, stop."""
    name = ""
    process: subprocess.Popen | None = None
    _account: CpuAccount | None = None

    def __init__(self, workdir: Path, bootstrap: str) -> None:
        self.workdir, self.bootstrap = workdir, bootstrap
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()

    def launch(self) -> None:
        raise NotImplementedError

    def unserved(self, groups: list[int], expected: Expected, partitions: int) -> list[int]:
        """The groups in `groups` whose served offsets are not yet their final ones."""
        raise NotImplementedError

    def visible(self) -> bool:
        """Whether any group's offsets are served yet."""
        raise NotImplementedError

    def reconciled(self) -> bool:
        """Whether what is served comes from the monitor's own reading of the log."""
        return True

    def stop(self) -> None:
        if self.process:
            stop_gracefully(self.process, 60)
        if self._account is not None:
            self._account.close()

    def cpu(self) -> float:
        return self._account.seconds(self.process.pid)

    def memory(self) -> Memory:
        return tree_memory(self.process.pid)

    def log_tail(self) -> str:
        path = self.workdir / f"{self.name}.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def _start(self, command: list[str]) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GROUPSCOPE_")}
        self._account = CpuAccount(self.name)
        with open(self.workdir / f"{self.name}.log", "ab") as log:
            self.process = subprocess.Popen(command, cwd=self.workdir, stdout=log,
                                            preexec_fn=self._account.join,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            env=env)


# Gzip scrapes of the many-groups phase, one --prometheus-interval apart: the last is timed.
PACED_SCRAPES = 4


# A group's partition 0 alone: the latency phase reads it from each scrape, and reading all
# 50,000 series in Python took longer than the scrape itself, on the cores the monitors share.
_FIRST_PARTITION = re.compile(r'^kafka_consumergroup_committed_offset\{[^}]*group="([^"]*)"'
                              r'[^}]*partition="0"[^}]*\} (\S+)$', re.M)


def first_partition_offsets(text: str) -> dict[str, float]:
    """group -> committed offset of its partition 0, from an exposition's text."""
    return {group: float(value) for group, value in _FIRST_PARTITION.findall(text)}


_COMMITTED = "kafka_consumergroup_committed_offset{"
_PARTITION_VALUE = re.compile(r'partition="(\d+)"[^}]*\} (\S+)')


def sampled_offsets(text: str, groups: list[str]) -> dict[tuple[str, int], float]:
    """(group, partition) -> committed offset for `groups` only. groupscope writes a family's
    series group after group in name order, so one forward pass finds them all; a group found
    out of that order reads as not served."""
    out: dict[tuple[str, int], float] = {}
    at = text.find(_COMMITTED)
    end = text.find("\n# ", at) if at >= 0 else -1
    end = len(text) if end < 0 else end
    for group in sorted(groups):
        needle = f'group="{group}"'
        found = text.find(needle, at, end) if at >= 0 else -1
        if found < 0:
            continue
        line = text.rfind("\n", 0, found) + 1
        while line < end and text.startswith(_COMMITTED, line):
            stop = text.find("\n", line, end)
            stop = end if stop < 0 else stop
            row = text[line:stop]
            if needle not in row:
                break
            match = _PARTITION_VALUE.search(row)
            if match:
                out[(group, int(match.group(1)))] = float(match.group(2))
            line = stop + 1
        at = line
    return out


class Groupscope(Monitor):
    name = "groupscope"
    spark_conf: dict[str, str] = {}   # --spark-conf: settings beside the job's defaults
    # source.partitions: a shard's slice of `__consumer_offsets` (empty: the whole topic)
    source_partitions: list[int] = []

    def launch(self) -> None:
        config = self.workdir / "groupscope.yaml"
        shard = f", partitions: {sorted(self.source_partitions)}" if self.source_partitions else ""
        # the job's defaults, except where it reads, listens and keeps its state
        config.write_text(f"""cluster: {{name: {CLUSTER}}}
source: {{bootstrap_servers: "{self.bootstrap}"{shard}}}
checkpoint: {{path: "{self.workdir / 'checkpoint'}"}}
history: {{path: "{self.workdir / 'history'}"}}
exporter: {{listen: "127.0.0.1:{self.port}"}}
""" + (f"spark: {{conf: {json.dumps(self.spark_conf)}}}\n" if self.spark_conf else ""))
        self._start([str(GROUPSCOPE), "run", "-c", str(config)])

    def visible(self) -> bool:
        return f"\n{_COMMITTED}" in self.scrape_text()[0]

    def reconciled(self) -> bool:
        """The log read to the end seen at launch (until then groups may be served from the
        launch's Admin API look, source.admin_seed)."""
        return re.search(r"^groupscope_ready\{[^}]*\} 1(\.0)?$", self.scrape_text()[0], re.M) is not None

    def scrape_text(self, committed_only: bool = False) -> tuple[str, float]:
        """The exposition ('' when unreachable) and the moment its response ended, asked for
        gzipped as Prometheus asks (at 10^5 groups the plain text is most of a gigabyte); with
        `committed_only`, only the committed offsets (`name[]`: a ninth of it)."""
        query = f"?name[]={_COMMITTED[:-1]}" if committed_only else ""
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/metrics{query}",
                                         headers={"Accept-Encoding": "gzip"})
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                body = response.read()
                if response.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
            text = body.decode()
        except (urllib.error.URLError, ConnectionError, OSError, EOFError):
            text = ""
        return text, time.time()

    def offsets(self, group: str) -> dict[tuple[str, int], int] | None:
        """(topic, partition) -> committed offset groupscope serves for `group` (`/groups/<group>`,
        one request a group, as Burrow is asked); None when it does not serve it."""
        try:
            (doc,) = json.loads(_get(f"http://127.0.0.1:{self.port}/groups/{group}"))
        except (urllib.error.URLError, ConnectionError, OSError, ValueError):
            return None
        return {(o["topic"], o["partition"]): o["committed_offset"] for o in doc["offsets"]}

    def gzip_scrape_seconds(self) -> tuple[float, int]:
        """A whole scrape as Prometheus makes it (gzip): seconds to the response's last byte,
        and its size on the wire."""
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/metrics",
                                         headers={"Accept-Encoding": "gzip"})
        started = time.perf_counter()
        with urllib.request.urlopen(request, timeout=120) as response:
            size = len(response.read())
        return time.perf_counter() - started, size

    def unserved(self, groups: list[int], expected: Expected, partitions: int) -> list[int]:
        served = sampled_offsets(self.scrape_text(committed_only=True)[0],
                                 [group_name(g) for g in groups])
        return [g for g in groups if any(
            served.get((group_name(g), p)) != final_offset(expected(g), p)
            for p in range(partitions))]


class Burrow(Monitor):
    name = "burrow"

    def __init__(self, workdir: Path, bootstrap: str, zookeeper: str) -> None:
        super().__init__(workdir, bootstrap)
        self.zookeeper = zookeeper

    def launch(self) -> None:
        servers = f'["{self.bootstrap}"]'
        (self.workdir / "burrow.toml").write_text(f"""[general]
pidfile="{self.workdir / 'burrow.pid'}"

[logging]
level="warn"

[zookeeper]
servers=["{self.zookeeper}"]
timeout=6
root-path="/burrow-{self.port}"

[client-profile.bench]
client-id="burrow-bench"
kafka-version="{BURROW_KAFKA_VERSION}"

[cluster.{CLUSTER}]
class-name="kafka"
servers={servers}
client-profile="bench"
topic-refresh=60
offset-refresh=10

[consumer.{CLUSTER}]
class-name="kafka"
cluster="{CLUSTER}"
servers={servers}
client-profile="bench"
start-latest=false

[httpserver.default]
address="127.0.0.1:{self.port}"

[storage.default]
class-name="inmemory"
workers=20
intervals=10
expire-group=604800
min-distance=1

[evaluator.default]
class-name="caching"
expire-cache=10
""")
        (self.workdir / "burrow.pid").unlink(missing_ok=True)
        self._start([str(BURROW), "-config-dir", str(self.workdir)])

    def offsets(self, group: str) -> dict[tuple[str, int], int] | None:
        """(topic, partition) -> newest offset Burrow holds for `group`; None when unknown."""
        try:
            body = json.loads(_get(f"http://127.0.0.1:{self.port}/v3/kafka/{CLUSTER}/consumer/"
                                   f"{group}"))
        except (urllib.error.URLError, ConnectionError, OSError, ValueError):
            return None
        if body.get("error"):
            return None
        out = {}
        for topic, partitions in (body.get("topics") or {}).items():
            for p, partition in enumerate(partitions):
                ring = [o["offset"] for o in (partition.get("offsets") or []) if o]
                if ring:  # commits here only move forward, so the newest is the largest
                    out[(topic, p)] = max(ring)
        return out

    def visible(self) -> bool:
        try:
            body = json.loads(_get(f"http://127.0.0.1:{self.port}/v3/kafka/{CLUSTER}/consumer"))
        except (urllib.error.URLError, ConnectionError, OSError, ValueError):
            return False
        return bool(body.get("consumers"))

    def unserved(self, groups: list[int], expected: Expected, partitions: int) -> list[int]:
        waiting = []
        for n, g in enumerate(groups):
            held = self.offsets(group_name(g))
            if held is None or any(held.get((topic_of(g), p)) != final_offset(expected(g), p)
                                   for p in range(partitions)):
                waiting += [g] + groups[n + 1:] if held is None else [g]
                if held is None:  # Burrow has not read this far: ask again next sweep
                    break
        return waiting


_KLAG_OFFSET = re.compile(r'^kafka_consumergroup_group_offset\{([^}]*)\} (\S+)$', re.M)
_KLAG_LABEL = re.compile(r'(group|partition)="([^"]*)"')


class Klag(Monitor):
    """klag-exporter (scripts/install-klag-exporter.sh): the Admin API polled every
    KLAG_POLL_INTERVAL, at partition granularity (its default, topic, serves no committed
    offset per partition)."""
    name = "klag-exporter"
    poll_interval = KLAG_POLL_INTERVAL

    def launch(self) -> None:
        (self.workdir / "config.toml").write_text(f"""[exporter]
poll_interval = "{self.poll_interval}"
http_port = {self.port}
http_host = "127.0.0.1"
granularity = "partition"

[[clusters]]
name = "{CLUSTER}"
bootstrap_servers = "{self.bootstrap}"
group_whitelist = [".*"]
topic_blacklist = ["^__.*"]
""")
        self._start([str(KLAG), "-c", str(self.workdir / "config.toml"), "-l", "warn"])

    def offsets(self, groups: set[str]) -> dict[tuple[str, int], float]:
        """(group, partition) -> committed offset served, for `groups`."""
        try:
            text = _get(f"http://127.0.0.1:{self.port}/metrics", timeout=120).decode()
        except (urllib.error.URLError, ConnectionError, OSError):
            return {}
        out = {}
        for labels, value in _KLAG_OFFSET.findall(text):
            found = dict(_KLAG_LABEL.findall(labels))
            if found.get("group") in groups:
                out[(found["group"], int(found["partition"]))] = float(value)
        return out

    def visible(self) -> bool:
        try:
            return b"\nkafka_consumergroup_group_offset{" in _get(
                f"http://127.0.0.1:{self.port}/metrics")
        except (urllib.error.URLError, ConnectionError, OSError):
            return False

    def unserved(self, groups: list[int], expected: Expected, partitions: int) -> list[int]:
        served = self.offsets({group_name(g) for g in groups})
        return [g for g in groups if any(
            served.get((group_name(g), p)) != final_offset(expected(g), p)
            for p in range(partitions))]


def new_monitor(name: str, workdir: Path, bootstrap: str, zookeeper: "ZooKeeper | None") -> Monitor:
    """A groupscope, Burrow or klag-exporter monitor (by `name`) working in `workdir`."""
    if name == Groupscope.name:
        return Groupscope(workdir, bootstrap)
    if name == Klag.name:
        return Klag(workdir, bootstrap)
    return Burrow(workdir, bootstrap, zookeeper.address)


def monitor_names(zookeeper: "ZooKeeper | None") -> tuple[str, ...]:
    """The monitors measured: Burrow too when its ZooKeeper runs, klag-exporter when built."""
    return ((Groupscope.name,) + ((Burrow.name,) if zookeeper else ())
            + ((Klag.name,) if KLAG.exists() else ()))


NAMES = ("groupscope", "burrow", "klag-exporter")  # the table's columns


class ZooKeeper:
    """Debian's ZooKeeper on 127.0.0.1, data in a temporary directory (Burrow's coordination)."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        data = workdir / "zookeeper"
        data.mkdir(parents=True)
        command = ["java", *JVM_FAST, "-Xmx128m", "-Dzookeeper.admin.enableServer=false",
                   "-Dzookeeper.4lw.commands.whitelist=ruok", "-cp", ZOOKEEPER_CLASSPATH,
                   "org.apache.zookeeper.server.ZooKeeperServerMain", str(self.port), str(data)]
        with open(workdir / "zookeeper.log", "ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while not self._ok():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ZooKeeper did not start: {(workdir / 'zookeeper.log').read_text()[-2000:]}")
            time.sleep(0.2)

    def _ok(self) -> bool:
        import socket
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"ruok")
                return sock.recv(4) == b"imok"
        except OSError:
            return False

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        stop_gracefully(self.process, 30)


# -- measurements ---------------------------------------------------------------------------------

@dataclass
class CatchUp:
    seconds: float
    cpu: float
    memory: Memory | None = None
    first_visible: float | None = None  # launch to the first group's offsets served
    half_served: float | None = None  # launch to half the groups' final offsets served
    log_read: float | None = None  # launch to serving from its own reading of the log


def sample_groups(groups: int) -> list[int]:
    """Every SAMPLE_STRIDE-th group and the last 50 (the last commits written)."""
    return sorted(set(range(0, groups, SAMPLE_STRIDE)) | set(range(max(0, groups - 50), groups)))


def catch_up(monitor: Monitor, groups: int, partitions: int, expected: Expected,
             settle: float, timeout: float, launch: bool = True,
             only: list[int] | None = None) -> CatchUp:
    """Launch `monitor` (unless running) and wait until it serves every group's final offsets
    (or those of the groups in `only`); then, after `settle` seconds, its memory."""
    started = time.perf_counter()
    if launch:
        monitor.launch()
    try:
        return _served(monitor, groups, partitions, expected, settle, timeout, started,
                       0.0 if launch else monitor.cpu(), only)
    except BaseException:   # an error or a stop: a monitor launched here ends here too
        if launch:
            monitor.stop()
        raise


def _served(monitor: Monitor, groups: int, partitions: int, expected: Expected, settle: float,
            timeout: float, started: float, cpu_before: float, only: list[int] | None) -> CatchUp:
    """catch_up's wait, from `started`, on a running monitor."""
    waiting = list(only) if only is not None else list(range(groups))
    half = len(waiting) // 2
    first_visible = half_served = None
    while waiting:
        if monitor.process.poll() is not None:
            raise RuntimeError(f"{monitor.name} exited with {monitor.process.returncode}:\n"
                               f"{monitor.log_tail()}")
        if time.perf_counter() - started > timeout:
            raise RuntimeError(f"{monitor.name}: {len(waiting)} groups not served after "
                               f"{timeout:.0f}s (first: {group_name(waiting[0])}, expected round "
                               f"{expected(waiting[0])}):\n{monitor.log_tail()}")
        if first_visible is None:
            if not monitor.visible():
                time.sleep(0.1)
                continue
            first_visible = time.perf_counter() - started
        waiting = monitor.unserved(waiting, expected, partitions)
        if half_served is None and len(waiting) <= half:
            half_served = time.perf_counter() - started
        if waiting:
            time.sleep(0.5)
    served = time.perf_counter() - started
    while not monitor.reconciled():
        if time.perf_counter() - started > timeout:
            raise RuntimeError(f"{monitor.name}: log not read after {timeout:.0f}s:\n"
                               f"{monitor.log_tail()}")
        time.sleep(0.2)
    result = CatchUp(served, monitor.cpu() - cpu_before, first_visible=first_visible,
                     half_served=half_served, log_read=time.perf_counter() - started)
    if settle:
        time.sleep(settle)
        result.memory = monitor.memory()
    return result


def _steady_process(queue, bootstrap: str, rate: float, seconds: float, groups: int,
                    partitions: int, first_round: int) -> None:
    result = steady(bootstrap, rate, seconds, groups, partitions, first_round)
    queue.put((result.commits, result.seconds, result.sent_at))


@dataclass
class Steady:
    rate: float
    cpu_per_minute: dict[str, float]
    latencies: list[float]
    last_rounds: dict[int, int]  # group -> its last round after the load
    burrow_latencies: list[float] | None = None
    stalled: bool = False  # the broker did not take the load's commits in time (steady_phase)
    watched_sent: int = 0  # commits of the watched groups the load made


# How long past its end a steady load may go on before it counts as stalled. At 10^5 groups the
# load was still running here in two runs out of two when it sent over one connection, which
# Kafka 3.9 answered at ~90 requests a second of the 1,000 asked: see
# commit_load.STEADY_REQUESTS_PER_CONNECTION.
STALL_GRACE_S = 180.0


def steady_phase(monitors: list[Monitor], gs: Groupscope | list[Groupscope] | None,
                 bootstrap: str, args, first_round: int, scrape_interval: float,
                 watched: list[int] | None = None, burrow: Burrow | None = None,
                 tail: float = 5.0, may_stall: bool = False,
                 by_group: bool = False) -> Steady:
    """`args.rate` commits/s for `args.steady_seconds` from another process; meanwhile groupscope
    is scraped every `scrape_interval` s (and `burrow`, when given, asked for each watched
    group; several groupscope jobs, shards of one estate, are scraped one after the other, and a
    group is found only in the scrape of the job that serves it): a commit's latency is the end
    of the first read that shows its offset minus the moment it was sent. Only the groups in
    `watched` (default: all) are timed; reads go on for `tail` seconds after the load. A load
    still running STALL_GRACE_S after its end is stopped: with `may_stall` the result says so
    (and holds only the CPU), else it is an error. With `by_group`, groupscope is asked for each
    watched group (`/groups/<group>`), as Burrow is: a latency phase. Its whole scrape of 10^6
    group-partitions, read every second in Python, took half a core of the two the job shares."""
    queue = multiprocessing.get_context("fork").Queue()
    load = multiprocessing.get_context("fork").Process(target=_steady_process, args=(
        queue, bootstrap, args.rate, args.steady_seconds, args.groups, args.partitions,
        first_round))
    cpu_before = {m.name: m.cpu() for m in monitors}
    shown: dict[tuple[int, int], float] = {}  # (group, round) -> end of the scrape that showed it
    shown_burrow: dict[tuple[int, int], float] = {}
    timed = list(range(args.groups)) if watched is None else watched
    readers = [] if gs is None else [gs] if isinstance(gs, Groupscope) else list(gs)

    def note(into: dict, g: int, offset: float | None, at: float) -> None:
        if offset is not None and offset // 1000 >= first_round:
            into.setdefault((g, int(offset) // 1000), at)

    def ask_each(monitor: "Groupscope | Burrow", into: dict) -> None:
        """Each watched group's partition 0, one request a group."""
        for g in timed:
            note(into, g, (monitor.offsets(group_name(g)) or {}).get((topic_of(g), 0)),
                 time.time())

    def observe() -> None:
        for reader in readers:
            if by_group:
                ask_each(reader, shown)
                continue
            text, at = reader.scrape_text()
            served = first_partition_offsets(text)
            for g in timed:
                note(shown, g, served.get(group_name(g)), at)

    def cpu_per_minute(elapsed: float) -> dict[str, float]:
        return {m.name: (m.cpu() - cpu_before[m.name]) * 60 / elapsed for m in monitors}

    started = time.time()
    load.start()
    # until the load is done, then `tail` seconds (a trigger interval by default) more
    give_up = started + args.steady_seconds + tail + STALL_GRACE_S
    while queue.empty() or time.time() < started + args.steady_seconds + tail:
        if queue.empty() and not load.is_alive():  # a crash (its traceback above), not a stall
            raise RuntimeError(f"the steady load exited with code {load.exitcode} before its end")
        if queue.empty() and time.time() > give_up:
            load.terminate()
            load.join()
            elapsed = time.time() - started
            if not may_stall:
                raise RuntimeError(f"the steady load stalled: not done {elapsed:.0f}s after it began")
            return Steady(0.0, cpu_per_minute(elapsed), [],
                          {g: first_round - 1 for g in range(args.groups)}, stalled=True)
        if readers:
            observe()
        if burrow is not None:
            ask_each(burrow, shown_burrow)
        time.sleep(scrape_interval)
    commits, seconds, sent_at = queue.get()
    load.join()
    cpu = cpu_per_minute(time.time() - started)
    latencies = sorted(at - sent_at[key] for key, at in shown.items() if key in sent_at)
    last = {g: first_round - 1 for g in range(args.groups)}
    for g, r in sent_at:
        last[g] = max(last[g], r)
    burrow_latencies = (sorted(at - sent_at[key] for key, at in shown_burrow.items()
                               if key in sent_at) if burrow is not None else None)
    watched_set = set(timed)
    return Steady(commits / seconds, cpu, latencies, last, burrow_latencies,
                  watched_sent=sum(1 for g, _ in sent_at if g in watched_set))


def restart_commits(bootstrap: str, last: dict[int, int], requests: int, partitions: int) -> None:
    """`requests` group commits, group after group, each one round past the newest; `last`
    updated."""
    top = max(last.values())
    link = Connection(bootstrap)
    try:
        for n in range(requests):
            g = n % len(last)
            last[g] = top + 1 + n // len(last)
            link.send(group_request(g, partitions).request(n + 1, 1000 * last[g]))
        link.drain()
    finally:
        link.close()


def many_groups_phase(args, workdir: Path, zookeeper: "ZooKeeper | None",
                      targets: list[Target]) -> list[str]:
    """`--many-groups` x `--many-partitions` on a broker of their own: launch to served after
    `--many-commits` preloaded commits, memory settled, a gzip scrape of groupscope, then
    `--many-rate` commits/s for `--steady-seconds` with both running: CPU per minute and
    commit-to-served latency, timed on a sample of the groups (`sample_groups`) for both
    systems. Returns the table's rows; the issue's targets go to `targets`."""
    groups, partitions = args.many_groups, args.many_partitions
    rounds = max(1, args.many_commits // (groups * partitions))
    # Its collection of every group must end within one poll interval: at 10^5 groups not one
    # did within 10 s (docs/performance.md), so here it polls as its advice for large clusters says.
    Klag.poll_interval = args.klag_many_poll
    broker = start_kafka(args.kafka_version, extra_props=BENCH_BROKER, heap=BENCH_HEAP)
    rows: list[str] = []
    running: list[Monitor] = []
    shape = f"{groups:,} groups x {partitions}"
    try:
        create_topics(broker.bootstrap, groups, partitions)
        t0 = time.perf_counter()
        commits = preload(broker.bootstrap, groups, partitions, rounds, connections=32)
        print(f"many groups: preloaded {commits:,} commits ({shape} partitions) in "
              f"{time.perf_counter() - t0:.1f}s")
        sample = sample_groups(groups)
        results: dict[str, CatchUp] = {}
        for name in monitor_names(zookeeper):
            monitor = new_monitor(name, workdir / f"{name}-many", broker.bootstrap, zookeeper)
            running.append(monitor)
            try:
                result = results[name] = catch_up(monitor, groups, partitions, lambda g: rounds,
                                                  args.settle, args.timeout, only=sample)
            except RuntimeError as exc:
                if name == Groupscope.name:
                    raise
                print(f"  {name}: not measured at this size: {str(exc)[:300]}")
                running.remove(monitor)
                monitor.stop()
                continue
            print(f"  {name}: {commits:,} commits served in {result.seconds:.1f}s (first group "
                  f"after {result.first_visible:.1f}s, log read after {result.log_read:.1f}s), "
                  f"CPU {result.cpu:.1f}s; settled: {result.memory}")
        for key, what in (("first_visible", "launch to first group served"),
                          ("seconds", "launch to served"),
                          ("log_read", "launch to log read (groupscope: ready)"),
                          ("cpu", "CPU-seconds of catch-up")):
            rows.append(_row(f"{shape}: {what}", {n: getattr(r, key) for n, r in results.items()},
                             "s"))
        rows.append(_row(f"{shape}: settled PSS MB",
                         {n: r.memory.pss_mb for n, r in results.items()}, ""))
        gs = running[0]
        bw = next((m for m in running if isinstance(m, Burrow)), None)
        mine, burrows = results[Groupscope.name], results.get(Burrow.name)
        targets.append(at_most("launch to every group served, s", mine.seconds,
                               burrows and burrows.seconds, "at most Burrow's",
                               burrows and burrows.seconds))
        targets.append(at_most("memory settled, PSS MB", mine.memory.pss_mb,
                               burrows and burrows.memory.pss_mb, "at most Burrow's",
                               burrows and burrows.memory.pss_mb))
        # Scraped as a Prometheus server scrapes it, every --prometheus-interval: the job
        # renders for the last end-offset poll before a scrape once it knows the scrapes' pace,
        # and the first scrape after a pause renders what changed before it answers.
        scrapes = []
        for n in range(PACED_SCRAPES):
            if n:  # one interval from the start of the last, as Prometheus keeps its pace
                time.sleep(max(0.0, args.prometheus_interval - scrapes[-1][0]))
            scrapes.append(gs.gzip_scrape_seconds())
        print(f"  groupscope: gzip scrapes of every series every {args.prometheus_interval:g}s: "
              + ", ".join(f"{seconds:.2f}s" for seconds, _ in scrapes)
              + f"; {scrapes[-1][1] / 1e6:.1f} MB on the wire")
        targets.append(at_most("a full gzip scrape of the running job, s", scrapes[-1][0], 2.0,
                               "under 2 s"))
        load_args = argparse.Namespace(**{**vars(args), "groups": groups,
                                          "partitions": partitions, "rate": args.many_rate})
        watched = sample[::5]
        # CPU first, groupscope scraped whole as Prometheus scrapes it; then the latency, its
        # watched groups asked one by one, as Burrow's are (CPU a user's Prometheus does not
        # spend: not reported)
        cost = steady_phase(running, gs, broker.bootstrap, load_args, rounds + 1,
                            args.prometheus_interval, watched=watched, burrow=bw, tail=30.0,
                            may_stall=True)
        if cost.stalled:
            print(f"  steady: the load stalled (not done {STALL_GRACE_S:.0f}s past its end); "
                  f"no latency. CPU-s per minute meanwhile: {_per_minute(cost.cpu_per_minute)}")
            return rows
        print(f"  steady: {cost.rate:,.0f} commits/s achieved (asked {args.many_rate:,.0f}); "
              f"CPU-s per minute (groupscope scraped every {args.prometheus_interval:g}s): "
              f"{_per_minute(cost.cpu_per_minute)}")
        steady_result = steady_phase(running, gs, broker.bootstrap, load_args,
                                     max(cost.last_rounds.values()) + 1, args.scrape_interval,
                                     watched=watched, burrow=bw, tail=30.0, may_stall=True,
                                     by_group=True)
        latencies = {"groupscope": steady_result.latencies,
                     "burrow": steady_result.burrow_latencies}
        for name, values in latencies.items():
            if values:
                print(f"  {name} commit-to-served latency p50 {percentile(values, .5):.2f}s, p99 "
                      f"{percentile(values, .99):.2f}s over {len(values):,} commits of {len(watched)} "
                      f"watched groups (read back to back; {steady_result.watched_sent:,} made)")
        rows.append(_row(f"{shape}: steady {cost.rate:,.0f}/s, CPU-s per minute",
                         cost.cpu_per_minute, "s"))
        rows.append(_row(f"{shape}: steady latency p50", {
            n: percentile(values, .5) for n, values in latencies.items() if values}, "s"))
        cpu = cost.cpu_per_minute
        theirs = cpu.get(Burrow.name)
        targets.append(at_most(f"steady {cost.rate:,.0f}/s: CPU-s per minute",
                               cpu.get(Groupscope.name), theirs and theirs / 2,
                               "at most half of Burrow's", theirs))
        for q, limit in ((.5, 5.0), (.99, 10.0)):  # the targets at 100,000 groups
            got = {n: percentile(values, q) if values else None for n, values in latencies.items()}
            what = f"steady: commit-to-served latency p{round(q * 100)}, s"
            if got["groupscope"] is None:  # no watched commit served within the window: missed
                targets.append(Target(what, None, got["burrow"], f"under {limit:.0f} s", False))
            else:
                targets.append(at_most(what, got["groupscope"], limit, f"under {limit:.0f} s",
                                       got["burrow"]))
        if args.ceiling:
            if bw is not None:  # the ceiling is groupscope's alone
                running.remove(bw)
                bw.stop()
            rows += ceiling_steps(args, gs, broker.bootstrap, load_args, watched,
                                  max(steady_result.last_rounds.values()) + 1, shape)
    finally:
        for monitor in running:
            monitor.stop()
        broker.stop()
    return rows


def ceiling_steps(args, gs: "Groupscope", bootstrap: str, load_args, watched: list[int],
                  first_round: int, shape: str) -> list[str]:
    """groupscope alone at each rate of `--ceiling` for `--ceiling-seconds`: the rate the broker
    acknowledged and the commit-to-served latency of the watched groups at each. A step whose
    load the broker does not take in time ends the steps (the broker is the limit there)."""
    rows = []
    for rate in args.ceiling:
        step_args = argparse.Namespace(**{**vars(load_args), "rate": rate,
                                          "steady_seconds": args.ceiling_seconds})
        step = steady_phase([gs], gs, bootstrap, step_args, first_round, args.scrape_interval,
                            watched=watched, tail=30.0, may_stall=True, by_group=True)
        if step.stalled:
            print(f"  ceiling {rate:,.0f}/s: the broker did not take the load within "
                  f"{STALL_GRACE_S:.0f}s of its end: the broker is the limit here")
            break
        first_round = max(step.last_rounds.values()) + 1
        got = step.latencies
        p50, p99 = (percentile(got, .5), percentile(got, .99)) if got else (None, None)
        print(f"  ceiling {rate:,.0f}/s asked: the broker acknowledged {step.rate:,.0f}/s; "
              f"groupscope " + (f"p50 {p50:.2f}s, p99 {p99:.2f}s" if got else "served none")
              + f" over {len(got):,} of {step.watched_sent:,} watched commits served; "
              f"{step.cpu_per_minute.get(Groupscope.name, 0.0):.1f} CPU-s a minute")
        rows.append(_row(f"{shape}: ceiling {rate:,.0f}/s asked, {step.rate:,.0f}/s acked, p50",
                         {Groupscope.name: p50}, "s"))
        rows.append(_row(f"{shape}: ceiling {rate:,.0f}/s asked, p99",
                         {Groupscope.name: p99}, "s"))
    return rows


def same_shape_phases(args, workdir: Path, zookeeper: "ZooKeeper | None") -> list[str]:
    """The phases on `--groups` x `--partitions`: catch-ups of `--commits` and
    `--commits-large`, the steady load, the restart, and memory growth up to `--groups-large`
    groups. Returns the table's rows."""
    per_round = args.groups * args.partitions
    broker = start_kafka(args.kafka_version, extra_props=BENCH_BROKER, heap=BENCH_HEAP)
    rows: list[str] = []
    kept: list[Monitor] = []
    try:
        create_topics(broker.bootstrap, args.groups_large, args.partitions)
        rounds = 0
        results: dict[str, dict[str, CatchUp]] = {}
        for label, commits in (("small", args.commits), ("large", args.commits_large)):
            more = commits // per_round - rounds
            t0 = time.perf_counter()
            preload(broker.bootstrap, args.groups, args.partitions, more, first_round=rounds + 1)
            rounds += more
            print(f"preloaded {more * per_round:,} commits through OffsetCommit "
                  f"({rounds * per_round:,} in all, {args.groups} groups x {args.partitions} "
                  f"partitions) in {time.perf_counter() - t0:.1f}s")
            final = rounds
            results[label] = {}
            for name in monitor_names(zookeeper):
                monitor = new_monitor(name, workdir / f"{name}-{label}", broker.bootstrap,
                                      zookeeper)
                result = catch_up(monitor, args.groups, args.partitions, lambda g: final,
                                  args.settle, args.timeout)
                results[label][monitor.name] = result
                print(f"  {monitor.name}: {rounds * per_round:,} commits served in "
                      f"{result.seconds:.1f}s (first group after {result.first_visible:.1f}s, "
                      f"log read after {result.log_read:.1f}s), CPU {result.cpu:.1f}s; "
                      f"settled: {result.memory}")
                if label == "large":  # kept for the steady load and the restart
                    kept.append(monitor)
                else:
                    monitor.stop()
            for key, what in (("first_visible", "launch to first group served"),
                              ("half_served", "launch to half the groups served"),
                              ("seconds", "launch to served"),
                              ("log_read", "launch to log read (groupscope: ready)"),
                              ("cpu", "CPU-seconds of catch-up")):
                got = {n: getattr(r, key) for n, r in results[label].items()}
                rows.append(_row(f"{what}, {rounds * per_round:,} commits", got, "s"))
            mem = {n: r.memory for n, r in results[label].items()}
            for key in ("rss_mb", "pss_mb", "processes"):
                rows.append(_row(f"settled {key}, {rounds * per_round:,} commits",
                                 {n: getattr(m, key) for n, m in mem.items()}, ""))

        # steady load: both running, same commits. CPU first, groupscope scraped as Prometheus
        # scrapes it; then its latency, scraped every second (each scrape costs it CPU that a
        # user's Prometheus does not ask for, so that phase's CPU is not reported).
        running = kept
        gs = next(m for m in running if isinstance(m, Groupscope))
        cost = steady_phase(running, gs, broker.bootstrap, args, rounds + 1,
                            args.prometheus_interval)
        steady_memory = {m.name: m.memory() for m in running}
        print(f"steady: {cost.rate:,.0f} commits/s achieved (asked {args.rate:,.0f}); CPU-s per "
              f"minute (groupscope scraped every {args.prometheus_interval:g}s): "
              + _per_minute(cost.cpu_per_minute)
              + "; memory at its end: " + ", ".join(f"{n} {m}" for n, m in steady_memory.items()))
        result = steady_phase(running, gs, broker.bootstrap, args,
                              max(cost.last_rounds.values()) + 1, args.scrape_interval)
        if result.latencies:
            print(f"  groupscope commit-to-exporter latency p50 {percentile(result.latencies, .5):.2f}s, "
                  f"p99 {percentile(result.latencies, .99):.2f}s over {len(result.latencies):,} group "
                  f"commits at {result.rate:,.0f} commits/s (its default trigger, 5 s; scraped "
                  f"every {args.scrape_interval:g}s)")
        rows.append(_row(f"steady {cost.rate:,.0f} commits/s: CPU-s per minute",
                         cost.cpu_per_minute, "s"))
        rows.append(_row("steady: PSS MB at the end of the load",
                         {n: m.pss_mb for n, m in steady_memory.items()}, ""))
        if result.latencies:
            rows.append(_row("steady: groupscope latency p50 (default trigger)",
                             {"groupscope": percentile(result.latencies, .5)}, "s"))

        # restart: the large checkpoint, plus new commits made while both are stopped
        for m in running:
            m.stop()
        last = dict(result.last_rounds)
        new_requests = args.restart_commits // args.partitions
        restart_commits(broker.bootstrap, last, new_requests, args.partitions)
        print(f"restart: {new_requests * args.partitions:,} new commits while stopped")
        for m in running:
            r = catch_up(m, args.groups, args.partitions, last.__getitem__, 0, args.timeout)
            print(f"  {m.name} restarted: every group served in {r.seconds:.1f}s, CPU {r.cpu:.1f}s")
            results.setdefault("restart", {})[m.name] = r
            m.stop()
        got = {n: r.seconds for n, r in results["restart"].items()}
        rows.append(_row("restart: launch to served", got, "s"))

        # memory growth per group-partition: more groups, one round each
        t0 = time.perf_counter()
        preload_more = preload(broker.bootstrap, args.groups_large, args.partitions, 1,
                               first_group=args.groups)
        print(f"growth: {preload_more:,} commits of {args.groups_large - args.groups:,} more "
              f"groups in {time.perf_counter() - t0:.1f}s")
        for g in range(args.groups, args.groups_large):
            last[g] = 1
        growth = {}
        for label in monitor_names(zookeeper):
            m = new_monitor(label, workdir / f"{label}-growth", broker.bootstrap, zookeeper)
            r = catch_up(m, args.groups_large, args.partitions, last.__getitem__,
                         args.settle, args.timeout)
            m.stop()
            base = results["small"][label].memory
            extra = (args.groups_large - args.groups) * args.partitions
            growth[label] = (r.memory.pss_mb - base.pss_mb) * 1024 * 1024 / extra
            print(f"  {label}: {args.groups_large:,} groups served in {r.seconds:.1f}s; settled "
                  f"{r.memory}; PSS growth {growth[label]:,.0f} bytes per group-partition")
        rows.append(_row(f"PSS growth per group-partition, {args.groups:,} -> "
                         f"{args.groups_large:,} groups", growth, " B"))
    finally:
        for m in kept:
            m.stop()
        broker.stop()
    return rows


# -- the run ---------------------------------------------------------------------------------------

def _per_minute(cpu: dict[str, float]) -> str:
    return ", ".join(f"{name} {seconds:.1f}" for name, seconds in cpu.items())


def _row(label: str, got: dict[str, float | None], unit: str) -> str:
    """A table row: each monitor's figure, and groupscope's over Burrow's."""
    def cell(v: float | None) -> str:
        return "-" if v is None else f"{v:,.2f}{unit}"
    gs, bw = got.get("groupscope"), got.get("burrow")
    ratio = f"{gs / bw:.2f}" if gs is not None and bw else "-"
    cells = " ".join(f"{cell(got.get(n)):>14s}" for n in NAMES)
    return f"{label:<52s} {cells} {ratio:>8s}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--commits", type=int, default=1_000_000)
    parser.add_argument("--commits-large", type=int, default=3_000_000)
    add_load_arguments(parser)
    parser.add_argument("--groups-large", type=int, default=20_000)
    parser.add_argument("--steady-seconds", type=float, default=60.0)
    parser.add_argument("--scrape-interval", type=float, default=1.0,
                        help="seconds between scrapes of groupscope while its latency is measured")
    parser.add_argument("--prometheus-interval", type=float, default=15.0,
                        help="seconds between scrapes of groupscope while CPU is measured")
    parser.add_argument("--restart-commits", type=int, default=10_000)
    parser.add_argument("--settle", type=float, default=20.0,
                        help="seconds after the catch-up before memory is measured")
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting for groupscope beside its defaults (experiments)")
    parser.add_argument("--kafka-version", default=None,
                        help=f"default: {KAFKA3_VERSION} with Burrow, {DEFAULT_VERSION} without")
    parser.add_argument("--many-groups", type=int, default=100_000,
                        help="groups of the many-groups phase (0: skip it)")
    parser.add_argument("--many-partitions", type=int, default=10)
    parser.add_argument("--many-commits", type=int, default=1_000_000)
    parser.add_argument("--many-rate", type=float, default=10_000.0,
                        help="steady commits/s of the many-groups phase")
    parser.add_argument("--klag-many-poll", default="120s",
                        help="klag-exporter's poll interval in the many-groups phase")
    parser.add_argument("--many-groups-only", action="store_true",
                        help="skip the same-shape phases")
    parser.add_argument("--many-targets", action=argparse.BooleanOptionalAction, default=True,
                        help="after the many-groups phase, measure its targets that need no "
                             "broker (benchmarks.exporter, state_stage, memory)")
    parser.add_argument("--ceiling", type=lambda s: [float(x) for x in s.split(",") if x],
                        default=[10_000.0, 20_000.0, 40_000.0, 80_000.0],
                        help="after the many-groups latency, groupscope alone at each of these "
                             "commits/s (comma-separated; empty: no steps)")
    parser.add_argument("--ceiling-seconds", type=float, default=30.0,
                        help="seconds of load at each ceiling step")
    parser.add_argument("--many-growth-from", type=int, default=20_000,
                        help="memory growth per group-partition is measured from this many "
                             "groups to --many-groups (0: not measured)")
    args = parser.parse_args()
    Groupscope.spark_conf = dict(item.split("=", 1) for item in args.spark_conf)
    print(f"CPU probe at start: {cpu_probe()} s")
    with_burrow = BURROW.exists()
    if not with_burrow:
        print(f"{BURROW} is missing (apt-get install burrow zookeeper): measuring without Burrow")
    if not KLAG.exists():
        print(f"{KLAG} is missing (scripts/install-klag-exporter.sh builds it): measuring without "
              f"klag-exporter")
    # Burrow 1.2.1 cannot read Kafka 4.4: the broker writes OffsetCommitValue v4, which Burrow
    # skips ("failed to decode ... value version 4"), and closes the connection on the
    # ListOffsets request of Burrow's sarama. Side by side, both read Kafka 3.9.
    args.kafka_version = args.kafka_version or (KAFKA3_VERSION if with_burrow else DEFAULT_VERSION)
    workdir = Path(tempfile.mkdtemp(prefix="groupscope-burrow-"))
    zookeeper = None
    targets: list[Target] = []
    try:
        zookeeper = ZooKeeper(workdir) if with_burrow else None
        rows = [] if args.many_groups_only else same_shape_phases(args, workdir, zookeeper)
        if args.many_groups:
            rows += many_groups_phase(args, workdir, zookeeper, targets)
            if args.many_targets:
                print("targets measured without the broker, one benchmark at a time:")
                targets += offline_targets(args.many_groups, args.many_partitions,
                                           args.many_growth_from)
    finally:
        if zookeeper:
            zookeeper.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"\n{'':<52s} {'groupscope':>14s} {'Burrow 1.2.1':>14s} {'klag 0.1.29':>14s} "
          f"{'gs/Burrow':>8s}")
    print("\n".join(rows))
    print(f"(Kafka {args.kafka_version}; Burrow's ZooKeeper is not counted)")
    if targets:
        print()
        print(targets_table(targets, f"{args.many_groups:,} groups x {args.many_partitions}"))
    print(f"CPU probe at end: {cpu_probe()} s")


if __name__ == "__main__":
    stop_everything_at_exit()
    main()
