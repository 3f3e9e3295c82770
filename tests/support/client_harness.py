"""Driving jvm/harness (ClientHarness.java): many real Java KafkaConsumers per JVM, each
reporting its rebalance callbacks, coordinator metrics and per-partition message waits with its
own clock. Built by scripts/fetch-jvm-deps.sh into .cache/harness.

`ClientHarness` starts one JVM for one group and scripts it (add / stop / kill consumers);
`ClientLog` reads what the consumers reported and answers the questions the truth comparisons ask
(who owns what after a moment, which partitions changed owner, when a rebalance started and ended
as the clients saw it, how long messages waited).
"""
from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from tests.support.jvm_archives import dumping, ended
from tests.support.kafka_broker import CACHE, JVM_FAST

HARNESS_DIR = CACHE / "harness"
MAIN_CLASS = "groupscope.harness.ClientHarness"
CLASSIC_ASSIGNORS = ("range", "roundrobin", "sticky", "cooperative-sticky")
SERVER_ASSIGNORS = ("uniform", "range")
# Strategy names used by the test and the benchmark: the classic assignors, then KIP-848's.
STRATEGIES: tuple[tuple[str, str], ...] = (tuple(("classic", a) for a in CLASSIC_ASSIGNORS)
                                           + tuple(("consumer", a) for a in SERVER_ASSIGNORS))


def strategy_name(protocol: str, assignor: str) -> str:
    return assignor if protocol == "classic" else f"kip848-{assignor}"


def harness_classpath() -> str:
    jar = HARNESS_DIR / "client-harness.jar"
    if not jar.is_file():
        raise RuntimeError(f"{jar} is missing: run scripts/fetch-jvm-deps.sh (it builds jvm/harness)")
    return f"{jar}:{HARNESS_DIR / 'lib'}/*"


@dataclass
class HarnessConfig:
    bootstrap: str
    topic: str
    group: str
    protocol: str = "classic"          # classic | consumer (KIP-848)
    assignor: str | None = None        # classic: CLASSIC_ASSIGNORS; consumer: SERVER_ASSIGNORS
    static: bool = False               # group.instance.id = the consumer's name
    session_ms: int = 10_000           # classic only: the consumer protocol takes the broker's
    heartbeat_ms: int = 1_000          # classic only
    auto_commit_ms: int = 5_000
    max_poll_records: int = 500
    max_poll_interval_ms: int = 300_000
    sample_ms: int = 1_000
    slow_ms: int = 3_000

    def args(self) -> list[str]:
        out = ["--bootstrap", self.bootstrap, "--topic", self.topic, "--group", self.group,
               "--protocol", self.protocol, "--static", str(self.static).lower(),
               "--session-ms", str(self.session_ms), "--heartbeat-ms", str(self.heartbeat_ms),
               "--auto-commit-ms", str(self.auto_commit_ms), "--max-poll-records", str(self.max_poll_records),
               "--max-poll-interval-ms", str(self.max_poll_interval_ms), "--sample-ms", str(self.sample_ms),
               "--slow-ms", str(self.slow_ms)]
        if self.assignor:
            out += ["--assignor", self.assignor]
        return out


class ClientHarness:
    """One harness JVM; its JSON lines go to `log_path` (a file, so a busy JVM never blocks on a
    pipe the test is not reading)."""

    def __init__(self, config: HarnessConfig, log_path: Path, heap_mb: int = 512) -> None:
        self.config = config
        self.log_path = log_path
        self.running: set[str] = set()
        classpath = harness_classpath()
        # Its class archive is written by the first harness that quits cleanly (close).
        self._archive = dumping(classpath, MAIN_CLASS)
        with open(log_path, "ab") as out, open(log_path.with_suffix(".stderr"), "ab") as err:
            # Serial GC and C1, as for the test broker: 2 cores shared by many JVMs.
            self.process = subprocess.Popen(
                ["java", *JVM_FAST, *self._archive, f"-Xmx{heap_mb}m", "-Xss512k", "-cp", classpath,
                 MAIN_CLASS, *config.args()], stdin=subprocess.PIPE, stdout=out, stderr=err, text=True)
        self._wait_for(lambda e: e["ev"] == "ready", 60, "harness start")

    def _send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def _wait_for(self, match: Any, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if any(match(e) for e in self.log().events):
                return
            if self.process.poll() is not None:
                raise RuntimeError(f"client harness exited ({self.process.returncode}) before {what}: "
                                   f"{self.log_path.with_suffix('.stderr').read_text()[-2000:]}")
            time.sleep(0.1)
        raise TimeoutError(f"client harness: no {what} within {timeout_s}s")

    def add(self, *names: str, **settings: object) -> None:
        """Consumers with client.id `names`; `settings` their own in place of the config's
        (ClientHarness.java's `add NAME k=v`: group, topic, protocol, regex...)."""
        own = "".join(f" {k.replace('_', '-')}={v}" for k, v in settings.items())
        for name in names:
            self._send(f"add {name}{own}")
            self.running.add(name)

    def stop(self, *names: str) -> None:
        """Graceful close: the consumers commit, revoke and leave the group."""
        for name in names:
            self._send(f"stop {name}")
            self.running.discard(name)

    def kill(self, *names: str) -> None:
        """Close without leaving: the group waits for the session to expire."""
        for name in names:
            self._send(f"kill {name}")
            self.running.discard(name)

    def wait_closed(self, names: Iterable[str], timeout_s: float = 60) -> None:
        wanted = set(names)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            closed = {e["c"] for e in self.log().events if e["ev"] == "closed"}
            if wanted <= closed:
                return
            time.sleep(0.1)
        raise TimeoutError(f"client harness: {sorted(wanted)} not closed within {timeout_s}s")

    def log(self) -> "ClientLog":
        return ClientLog.read(self.log_path)

    def close(self, timeout_s: float = 60) -> None:
        """Every consumer leaves (quit), then the JVM exits; killed if it does not."""
        if self.process.poll() is None:
            try:
                self._send("quit")
                self.process.stdin.close()  # type: ignore[union-attr]
                self.process.wait(timeout=timeout_s)
            except (subprocess.TimeoutExpired, BrokenPipeError, OSError):
                self.process.kill()
                self.process.wait(timeout=10)
        ended(self.process, self._archive)


@dataclass
class Rebalance:
    """What the clients went through between two moments (see `ClientLog.rebalance_between`)."""

    start_ms: int
    end_ms: int
    generations: list[int]
    moved: dict[int, tuple[str, str]] = field(default_factory=dict)   # partition -> (from, to): "name#start"
    owners: dict[str, set[int]] = field(default_factory=dict)          # after it, by consumer name

    @property
    def duration_s(self) -> float:
        return (self.end_ms - self.start_ms) / 1000.0


@dataclass
class ClientLog:
    events: list[dict[str, Any]]

    @classmethod
    def read(cls, path: Path) -> "ClientLog":
        events = []
        if path.exists():
            for line in path.read_text(errors="replace").splitlines():
                if line.startswith("{"):
                    try:
                        events.append(json.loads(line))
                    except json.JSONDecodeError:
                        pass   # a line being written
        # Threads stamp their lines before taking the output lock: restore time order.
        events.sort(key=lambda e: e["t"])
        return cls(events)

    def callbacks(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e["ev"] in ("revoked", "assigned", "lost")]

    def owners_at(self, when_ms: float, incarnations: bool = False) -> dict[str, set[int]]:
        """Who owned which partitions at `when_ms`, replaying the callbacks (eager assignors
        revoke everything and assign the full set; cooperative ones revoke and add increments).
        With `incarnations`, a consumer restarted under the same name counts as another member
        (it is one to the group: a new member id): keys become "name#n", n its starts so far."""
        owned: dict[str, set[int]] = {}
        starts: dict[str, int] = {}
        for e in self.events:
            if e["t"] > when_ms:
                break
            if e["ev"] == "subscribed":
                starts[e["c"]] = starts.get(e["c"], 0) + 1
            if e["ev"] == "assigned":
                owned.setdefault(e["c"], set()).update(e["parts"])
            elif e["ev"] in ("revoked", "lost"):
                owned.setdefault(e["c"], set()).difference_update(e["parts"])
            elif e["ev"] == "closed":
                owned.pop(e["c"], None)
        alive = self._alive_at(when_ms)
        return {f"{c}#{starts.get(c, 0)}" if incarnations else c: parts
                for c, parts in owned.items() if parts or c in alive}

    def _alive_at(self, when_ms: float) -> set[str]:
        alive: set[str] = set()
        for e in self.events:
            if e["t"] > when_ms:
                break
            if e["ev"] == "subscribed":
                alive.add(e["c"])
            elif e["ev"] == "closed":
                alive.discard(e["c"])
        return alive

    def rebalance_between(self, since_ms: float, until_ms: float, join_from_latency: bool) -> Rebalance:
        """The rebalance(s) the clients went through in (since_ms, until_ms], as one: from the first
        sign (a revocation or loss, a consumer joining or closing) to the last assignment callback
        (KIP-848: or the last member's first poll at its final epoch, when that came later); moved
        and owners compare the assignments at both ends.

        A joining consumer's sign is, with `join_from_latency` (classic), when it began joining by
        its own clock: its first assignment minus the rebalance-latency-max it sampled next (the
        classic consumer measures that from the start of its join; its start-up before the
        JoinGroup is left out); else (KIP-848) its first poll holding a member epoch: the group
        knows of a member from its first heartbeat, not from its subscribe call."""
        window = [e for e in self.events if since_ms < e["t"] <= until_ms]
        assigned = [e for e in window if e["ev"] == "assigned"]
        signs = [e["t"] for e in window if e["ev"] in ("revoked", "lost", "closing")]
        for e in window:
            if e["ev"] == "subscribed" and join_from_latency:
                signs.append(self._join_ms(e, window))
            elif e["ev"] == "joined" and not join_from_latency:
                signs.append(e["t"])
        if not assigned and not signs:
            raise ValueError(f"no assignment callback nor member change in ({since_ms}, {until_ms}]")
        moved = moved_partitions(self.owners_at(since_ms, incarnations=True),
                                 self.owners_at(until_ms, incarnations=True))
        # A KIP-848 member whose partitions stay the same moves to the new epoch without a
        # callback: its rebalance ends when its poll first sees that epoch ("epoch" events).
        steps = [e["t"] for e in window if e["ev"] == "epoch"] if not join_from_latency else []
        ends = [e["t"] for e in assigned] + steps
        end = max(ends) if ends else max(signs)
        generations = {e["gen"] for e in assigned} | {e["gen"] for e in window if e["ev"] == "epoch"}
        return Rebalance(int(min(signs, default=end)), int(end), sorted(generations), moved, self.owners_at(until_ms))

    def first_reaction_ms(self, since_ms: float, until_ms: float, members: Iterable[str]) -> float | None:
        """When the first of `members` (consumers in the group before `since_ms`) began rejoining
        in (since_ms, until_ms], by its own clock: its last assignment there minus the rebalance
        latency its metrics added meanwhile (rebalance-latency-total; over a cooperative pair of
        rebalances, which it rejoins back to back, no earlier than its first join); None when
        its metrics tell nothing. A classic member
        rejoins once the commit it makes on hearing of the rebalance (onJoinPrepare) is answered:
        that commit, sent before this (`first_rejoin_commit_ms`; 0.5 s before on a busy machine),
        is the first trace of a join in `__consumer_offsets`; what comes before it, the
        newcomer's own JoinGroup and the wait for the others' next heartbeat, the coordinator
        writes nowhere."""
        members = set(members)
        window = [e for e in self.events if since_ms < e["t"] <= until_ms]
        times = []
        for name in members:
            samples = [e for e in self.events if e["c"] == name and e["ev"] == "sample"
                       and "rebalance-latency-total" in e["metrics"] and "rebalance-total" in e["metrics"]]
            assigned = [e for e in window if e["c"] == name and e["ev"] == "assigned"]
            before = [e for e in samples if e["t"] <= since_ms]
            after = [e for e in samples if assigned and e["t"] >= assigned[-1]["t"]]
            if not before or not after:
                continue
            first, last = before[-1]["metrics"], after[0]["metrics"]
            if last["rebalance-total"] - first["rebalance-total"] == len({e["gen"] for e in assigned}):
                times.append(assigned[-1]["t"] - (last["rebalance-latency-total"] - first["rebalance-latency-total"]))
        return min(times, default=None)

    def first_rejoin_commit_ms(self, since_ms: float, until_ms: float, members: Iterable[str]) -> float | None:
        """Classic: no later than when the first of `members` sent the offset commit it makes
        before rejoining in (since_ms, until_ms]: the earliest "sent_by_ms" of their "rejoining"
        events there (ClientHarness.java's Member.rejoining: the start of onJoinPrepare, which
        sends that commit, or of the poll call in which it began). That commit is the first
        record of the rebalance in `__consumer_offsets`, so the coordinator dated it no earlier;
        `first_reaction_ms`, by the rebalance latency, starts only at the JoinGroup sent once the
        commit was answered. None when none of them reported one (a KIP-848 consumer, or a
        kafka-clients whose internals the harness cannot read)."""
        members = set(members)
        return min((float(e["sent_by_ms"]) for e in self.events if e["ev"] == "rejoining"
                    and e["c"] in members and since_ms < e["t"] <= until_ms), default=None)

    def last_heard(self, since_ms: float, until_ms: float) -> tuple[float, str] | None:
        """KIP-848: when the last step of the rebalance(s) in (since_ms, until_ms] reached its
        consumer, and that consumer: the latest over the steps `rebalance_between` ends at. An
        assignment callback is dated by the heartbeat response that carried it: the callback's
        time minus the latency of its reconciliation (the consumer's rebalance-latency runs from
        that response, RECONCILING, to the callbacks' completion; the "reconciled" event of its
        next poll, when it completed one reconciliation). An epoch step without a callback stays
        dated by the poll that saw it. None when nothing in the window ends a step."""
        window = [e for e in self.events if since_ms < e["t"] <= until_ms]
        heard = [(e["t"], e["c"]) for e in window if e["ev"] == "epoch"]
        for e in window:
            if e["ev"] != "assigned":
                continue
            done = next((r for r in self.events if r["c"] == e["c"] and r["ev"] == "reconciled"
                         and r["t"] >= e["t"]), None)
            # Several reconciliations completed before one poll: their latencies are one sum.
            one = done is not None and done["count"] == 1
            heard.append((e["t"] - done["latency_ms"] if one else e["t"], e["c"]))
        return max(heard, default=None)

    def first_sign(self, since_ms: float, until_ms: float) -> tuple[float, str] | None:
        """KIP-848: the first sign of the rebalance(s) in (since_ms, until_ms] (the start
        `rebalance_between` takes: a member's first poll at a member epoch, a revocation, a
        loss, a close) and whose it was."""
        return min(((e["t"], e["c"]) for e in self.events if since_ms < e["t"] <= until_ms
                    and e["ev"] in ("joined", "revoked", "lost", "closing")), default=None)

    def heartbeat_sent_ms(self, member: str, answered_ms: float) -> float:
        """No later than when `member` sent the heartbeat answered at `answered_ms` (KIP-848:
        one heartbeat in flight at a time): the earlier of that moment minus
        heartbeat-response-time-max at its next poll (a windowed max, at least this request's
        time) and the member's previous heartbeat event or subscription (the request went out
        after the previous answer, which that poll had seen, give or take the poll). The earlier,
        since each is off by a poll's lag behind the answer it dates: on a busy machine the
        first dated a newcomer's join request 0.37 s after the coordinator had written the join.
        Where the member heartbeated before, that is its previous heartbeat, so the span's
        longest side is wider by up to a heartbeat interval than with the later of the two."""
        mine = [e for e in self.events if e["c"] == member]
        beat = next((e for e in mine if e["ev"] == "heartbeat" and e["t"] >= answered_ms), None)
        before = [e["t"] for e in mine if e["ev"] in ("heartbeat", "subscribed") and e["t"] < answered_ms]
        candidates = [answered_ms - float(beat["max_ms"])] if beat is not None else []
        if before:
            candidates.append(before[-1])
        return min([answered_ms, *candidates])

    def kip848_span_s(self, since_ms: float, until_ms: float) -> tuple[float, float] | None:
        """KIP-848: the shortest and the longest the coordinator's account of the rebalance(s)
        in (since_ms, until_ms] can be, in seconds, by the clients' clocks. The coordinator
        writes each step between the heartbeat request that brought it and the response that
        told the member: the first step no later than its response reached the member (the
        first sign) and no earlier than that heartbeat's request; the last step no later than
        `last_heard` and no earlier than that heartbeat's request."""
        first, last = self.first_sign(since_ms, until_ms), self.last_heard(since_ms, until_ms)
        if first is None or last is None:
            return None
        (start, starter), (end, ender) = first, last
        start_sent = self.heartbeat_sent_ms(starter, start)
        end_sent = self.heartbeat_sent_ms(ender, end)
        return max(0.0, end_sent - start) / 1000.0, (end - start_sent) / 1000.0

    @staticmethod
    def _join_ms(subscribed: dict[str, Any], window: list[dict[str, Any]]) -> float:
        mine = [e for e in window if e["c"] == subscribed["c"] and e["t"] >= subscribed["t"]]
        first = next((e for e in mine if e["ev"] == "assigned"), None)
        if first is None:
            return subscribed["t"]
        sample = next((e for e in mine if e["ev"] == "sample" and e["t"] >= first["t"]
                       and "rebalance-latency-max" in e["metrics"]), None)
        if sample is None:
            return subscribed["t"]
        return max(subscribed["t"], first["t"] - sample["metrics"]["rebalance-latency-max"])

    def waits(self, since_ms: float, until_ms: float) -> dict[int, dict[str, int]]:
        """Per partition, over samples taken in [since_ms, until_ms]: messages processed, how many
        waited longer than the harness's --slow-ms, and the longest wait (ms)."""
        out: dict[int, dict[str, int]] = {}
        for e in self.events:
            if e["ev"] != "sample" or not since_ms <= e["t"] <= until_ms:
                continue
            for p, (n, slow, max_wait, _first, _last) in e["parts"].items():
                acc = out.setdefault(int(p), {"messages": 0, "slow": 0, "max_wait_ms": 0})
                acc["messages"] += n
                acc["slow"] += slow
                acc["max_wait_ms"] = max(acc["max_wait_ms"], max_wait)
        return out

    def latest_metrics(self) -> dict[str, dict[str, float]]:
        """Each consumer's last sampled coordinator metrics (rebalance-latency-avg/max/total, ...)."""
        out: dict[str, dict[str, float]] = {}
        for e in self.events:
            if e["ev"] == "sample" and e["metrics"]:
                out[e["c"]] = e["metrics"]
        return out


def moved_partitions(before: dict[str, set[int]], after: dict[str, set[int]]) -> dict[int, tuple[str, str]]:
    """Partitions whose owner differs between two assignments (by consumer name): partition ->
    (old owner, new owner). A partition nobody owned before does not count as moved."""
    old = {p: c for c, parts in before.items() for p in parts}
    new = {p: c for c, parts in after.items() for p in parts}
    return {p: (old[p], c) for p, c in sorted(new.items()) if p in old and old[p] != c}
