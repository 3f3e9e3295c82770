"""Group members as real Java clients: Kafka's VerifiableConsumer, one JVM each, started, closed
cleanly (SIGTERM: its shutdown hook closes the consumer, which leaves the group) or crashed
(SIGKILL: the coordinator notices only when the session times out)."""
from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from tests.support.kafka_broker import KafkaBroker

VERIFIABLE_CONSUMER = "org.apache.kafka.tools.VerifiableConsumer"
CLASSIC_ASSIGNORS = {
    "range": "org.apache.kafka.clients.consumer.RangeAssignor",
    "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
    "sticky": "org.apache.kafka.clients.consumer.StickyAssignor",
    "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor",
}


class Members:
    """Named VerifiableConsumer processes on one broker; their JSON events go to files in
    `logdir` (drained by the OS, so a chatty consumer never blocks on a full pipe)."""

    def __init__(self, broker: KafkaBroker, logdir: Path) -> None:
        self.broker = broker
        self.logdir = logdir
        self.running: dict[str, subprocess.Popen] = {}

    def start(self, name: str, group: str, topic: str, protocol: str = "classic",
              assignor: str | None = None, instance_id: str | None = None,
              session_timeout_ms: int = 6000) -> None:
        """`assignor`: a classic client-side assignor (CLASSIC_ASSIGNORS key) or, for the
        consumer protocol, a server-side one (uniform, range)."""
        args = ["--topic", topic, "--group-id", group, "--bootstrap-server", self.broker.bootstrap,
                "--group-protocol", protocol]
        if protocol == "classic":
            # The consumer protocol takes the session timeout from the broker, not the client.
            args += ["--session-timeout", str(session_timeout_ms)]
            if assignor:
                args += ["--assignment-strategy", CLASSIC_ASSIGNORS[assignor]]
        elif assignor:
            args += ["--group-remote-assignor", assignor]
        if instance_id:
            args += ["--group-instance-id", instance_id]
        out = open(self.logdir / f"{name}.jsonl", "ab")
        try:
            self.running[name] = self.broker.start_tool(VERIFIABLE_CONSUMER, *args, stdout=out,
                                                        stderr=subprocess.STDOUT)
        finally:
            out.close()

    def stop(self, name: str) -> None:
        """A clean close: the member leaves the group (a static member does not: KIP-345)."""
        process = self.running.pop(name)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)

    def kill(self, name: str) -> None:
        """A crash: no LeaveGroup; the coordinator waits for the session timeout."""
        process = self.running.pop(name)
        process.kill()
        process.wait(timeout=10)

    def kill_all(self) -> None:
        for name in list(self.running):
            self.kill(name)
