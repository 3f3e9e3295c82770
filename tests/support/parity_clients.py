"""Real Java clients for the Kafka parity tests, several per JVM: the client harness
(jvm/harness, ClientHarness.java) run on each broker's own kafka-clients jar
(.cache/kafka-<version>/libs), so 3.9's lane has 3.9's clients and AdminClient.

`HarnessJvm` is one harness JVM: members of any group are added and stopped by stdin commands,
and `describe` asks Kafka's AdminClient for its view of groups (the parity oracle). `Members`
spreads a lane's members over a few such JVMs: a crash is a SIGKILL of the JVM that holds the
crashing members (no LeaveGroup, no closing commit), so members that crash together share one.
"""
from __future__ import annotations

import itertools
import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from tests.support.client_harness import HARNESS_DIR, MAIN_CLASS, harness_classpath
from tests.support.jvm_archives import mapping
from tests.support.kafka_broker import JVM_FAST, KafkaBroker

# Fast failure detection (the broker allows sessions from 1 s): a crashed classic member is gone
# 3 s later. KIP-848 members take the broker's group.consumer.session.timeout.ms instead.
SESSION_MS = 3000
HEARTBEAT_MS = 300


class HarnessJvm:
    """One harness JVM on `broker`'s kafka-clients; its event lines go to `log_path`."""

    def __init__(self, broker: KafkaBroker, log_path: Path) -> None:
        harness_classpath()  # fails with how to build it when the jar is missing
        # The broker's jars first: then the class archive of Kafka's tools on them applies
        # (a JVM maps an archive whose class path begins its own; tests/support/jvm_archives.py).
        classpath = f"{broker.libs}:{HARNESS_DIR / 'client-harness.jar'}"
        archive = mapping(broker.libs, MAIN_CLASS)
        self.log_path = log_path
        self._replies: dict[str, dict[str, Any]] = {}
        self._replied = threading.Condition()
        self._ids = itertools.count()
        with open(log_path.with_suffix(".stderr"), "ab") as err:
            # Serial GC and C1 (JVM_FAST): 2 cores shared by brokers, jobs and these JVMs.
            self.process = subprocess.Popen(
                ["java", *JVM_FAST, *archive, "-Xmx384m", "-Xss512k", broker._tool_log_config, "-cp", classpath,
                 MAIN_CLASS, "--bootstrap", broker.bootstrap, "--session-ms", str(SESSION_MS),
                 "--heartbeat-ms", str(HEARTBEAT_MS), "--auto-commit-ms", "1000",
                 "--sample-ms", "600000"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        """Drains stdout (a JVM never blocks on it): replies to `describe` are kept, every other
        line goes to the log file."""
        assert self.process.stdout is not None
        with open(self.log_path, "a") as log:
            for line in self.process.stdout:
                if '"ev":"described"' in line:
                    reply = json.loads(line)
                    with self._replied:
                        self._replies[reply["id"]] = reply
                        self._replied.notify_all()
                else:
                    log.write(line)
                    log.flush()

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def add(self, name: str, **settings: str | int) -> None:
        """A consumer with client.id `name`; settings as ClientHarness's `add NAME k=v`."""
        self.send(" ".join([f"add {name}", *(f"{k.replace('_', '-')}={v}" for k, v in settings.items())]))

    def describe(self, groups: list[str], timeout_s: float = 60.0) -> dict[str, dict[str, Any]]:
        """Kafka's AdminClient view of `groups`: per group a dict, or {"error": ...}."""
        request = str(next(self._ids))
        self.send(" ".join(["describe", request, *groups]))
        deadline = time.monotonic() + timeout_s
        with self._replied:
            while request not in self._replies:
                if self.process.poll() is not None:
                    raise RuntimeError(f"client harness exited ({self.process.returncode}): "
                                       f"{self.log_path.with_suffix('.stderr').read_text()[-2000:]}")
                if not self._replied.wait(timeout=max(0.0, deadline - time.monotonic())) \
                        and time.monotonic() >= deadline:
                    raise TimeoutError(f"no answer to describe {groups} within {timeout_s}s")
            reply = self._replies.pop(request)
        if "error" in reply:
            raise RuntimeError(f"describe failed: {reply['error']}")
        return reply["groups"]

    def wait_closed(self, name: str, timeout_s: float = 60.0) -> None:
        closed = json.dumps({"c": name, "ev": "closed"}, separators=(",", ":"))[1:-1]
        deadline = time.monotonic() + timeout_s
        while closed not in self.log_path.read_text(errors="replace"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name} not closed within {timeout_s}s")
            time.sleep(0.1)

    def crash(self) -> None:
        """SIGKILL: every member in this JVM crashes at once."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)

    def close(self, timeout_s: float = 60.0) -> None:
        if self.process.poll() is None:
            try:
                self.send("quit")
                self.process.wait(timeout=timeout_s)
            except (subprocess.TimeoutExpired, BrokenPipeError, OSError):
                self.crash()


class Members:
    """A lane's group members: most in one harness JVM (which also answers `describe`), those
    that will crash in a JVM per crash (`crashes_with`), killed as one."""

    def __init__(self, broker: KafkaBroker, logdir: Path) -> None:
        self.broker, self.logdir = broker, logdir
        self.main = HarnessJvm(broker, logdir / "main.jsonl")
        self.crashable: dict[str, HarnessJvm] = {}
        self.where: dict[str, HarnessJvm] = {}

    def start(self, name: str, group: str, topic: str, protocol: str = "classic",
              assignor: str | None = None, instance_id: str | None = None,
              crashes_with: str | None = None) -> None:
        """`assignor`: a classic client-side one (range, roundrobin, sticky, cooperative-sticky)
        or, for the consumer protocol, a server-side one (uniform, range). `crashes_with`: the
        member runs in the JVM of that name, which `kill` SIGKILLs."""
        jvm = self.main
        if crashes_with is not None:
            if crashes_with not in self.crashable:
                self.crashable[crashes_with] = HarnessJvm(self.broker, self.logdir / f"{crashes_with}.jsonl")
            jvm = self.crashable[crashes_with]
        settings: dict[str, str | int] = {"group": group, "topic": topic, "protocol": protocol}
        if assignor:
            settings["assignor"] = assignor
        if instance_id:
            settings["instance"] = instance_id
        jvm.add(name, **settings)
        self.where[name] = jvm

    def stop(self, name: str, wait: bool = False) -> None:
        """A clean close: the member leaves the group (a static member does not: KIP-345).
        `wait`: return once the consumer has closed."""
        jvm = self.where.pop(name)
        jvm.send(f"stop {name}")
        if wait:
            jvm.wait_closed(name)

    def kill(self, name: str) -> None:
        """A crash: the JVM holding `name` (and whatever else crashes with it) is SIGKILLed."""
        jvm = self.where.pop(name)
        if jvm is self.main:
            raise ValueError(f"{name} was not started to crash (crashes_with)")
        jvm.crash()

    def describe(self, groups: list[str]) -> dict[str, dict[str, Any]]:
        return self.main.describe(groups)

    def kill_all(self) -> None:
        for jvm in [self.main, *self.crashable.values()]:
            jvm.crash()
