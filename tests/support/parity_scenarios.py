"""Scenarios for the Kafka parity tests (tests/broker/test_kafka_parity.py), run in lockstep.

Each scenario owns its topics and groups. `act(step)` changes something (members join, leave,
crash, an administrator deletes or resets); `expect(step, views)` says what Kafka must show once
that change has settled, so that a quiet point is not mistaken for the moment before the change.
Every scenario has the same steps, 0 to STEPS - 1, and the runner waits at each step until Kafka
shows every expectation met and groupscope agrees with Kafka (tests/support/parity.py).
"""
from __future__ import annotations

import time
import uuid
from pathlib import Path

from tests.support.kafka_broker import KafkaBroker, create_topic, produce_raw
from tests.support.parity import GroupView, Views
from tests.support.parity_clients import Members

STEPS = 5
PARTITIONS = 6
RECORDS = 5  # per partition, written before anyone consumes
T0 = int(time.time() * 1000) - 600_000  # record timestamps: T0 + offset seconds (reset to a time)


def _suffix() -> str:
    return uuid.uuid4().hex[:6]


def _prepare_topic(broker: KafkaBroker, topic: str, partitions: int, records: int = RECORDS) -> None:
    create_topic(broker.bootstrap, topic, partitions)
    produce_raw(broker.bootstrap, topic, [(p, None, b"r%d" % i, T0 + 1000 * i)
                                          for p in range(partitions) for i in range(records)])


def _settled(view: GroupView | None, members: int, group_type: str) -> list[str]:
    """Kafka shows the group of `group_type`, Stable with `members` members, every member
    holding partitions, KIP-848 members reconciled to the target."""
    if view is None:
        return ["Kafka does not know the group yet"]
    unmet = []
    if view.group_type != group_type:
        unmet.append(f"type {view.group_type}, want {group_type}")
    if view.state != "Stable":
        unmet.append(f"state {view.state}")
    if len(view.members or ()) != members:
        unmet.append(f"{len(view.members or ())} members, want {members}")
    owned = sorted(tp for m in (view.members or {}).values() for tp in m.assigned)
    if members and len(owned) != PARTITIONS:
        unmet.append(f"partitions owned {owned}")
    for mid, m in (view.members or {}).items():
        if m.target is not None and m.target != m.assigned:
            unmet.append(f"{mid} not reconciled")
    return unmet


class Scenario:
    name = ""
    groups: tuple[str, ...] = ()

    def act(self, step: int) -> None:
        raise NotImplementedError

    def expect(self, step: int, views: Views) -> list[str]:
        raise NotImplementedError

    def close(self) -> None:
        pass


class MembershipScenario(Scenario):
    """Three members start (one static); one joins; one leaves cleanly; one crashes (session
    timeout); the static member goes and comes back within its session timeout, under a new
    member id. Classic: it crashes and restarts. KIP-848: it closes (a static member's leave,
    epoch -2, keeps its place) and restarts: after a crash the broker refuses the instance id
    to a new member until the old one's session expires (UnreleasedInstanceIdException, seen
    on 4.4 and 3.9)."""

    def __init__(self, broker: KafkaBroker, members: Members, protocol: str, assignor: str) -> None:
        self.name = f"{protocol}-{assignor}"
        self.group = f"p-{protocol[:2]}-{assignor}-{_suffix()}"
        self.groups = (self.group,)
        self.topic = self.group
        self.protocol, self.assignor = protocol, assignor
        self.members = members
        self.static_ids: list[str] = []  # member ids Kafka gave the static instance, in order
        _prepare_topic(broker, self.topic, PARTITIONS)

    def _start(self, name: str, static: bool = False, crashes_with: str | None = None) -> None:
        self.members.start(f"{self.group}-{name}", self.group, self.topic, self.protocol, self.assignor,
                           instance_id=f"{self.group}-static" if static else None,
                           crashes_with=crashes_with)

    def act(self, step: int) -> None:
        if step == 0:
            self._start("a")
            # Every scenario's b crashes at step 3 and s at step 4: one JVM each (parity_clients).
            self._start("b", crashes_with="crash-b")
            classic = self.protocol == "classic"
            self._start("s", static=True, crashes_with="crash-s" if classic else None)
        elif step == 1:
            self._start("c")
        elif step == 2:
            self.members.stop(f"{self.group}-a")
        elif step == 3:
            self.members.kill(f"{self.group}-b")
        elif step == 4:
            if self.protocol == "classic":
                self.members.kill(f"{self.group}-s")
            else:
                self.members.stop(f"{self.group}-s", wait=True)
            self._start("s2", static=True)

    def expect(self, step: int, views: Views) -> list[str]:
        view = views.get(self.group)
        unmet = _settled(view, [3, 4, 3, 2, 2][step], self.protocol)
        if view is not None:
            static = [mid for mid, m in (view.members or {}).items()
                      if m.instance_id == f"{self.group}-static"]
            if step == 0 and static and not self.static_ids:
                self.static_ids.append(static[0])
            if step == 4 and (not static or static[0] in self.static_ids):
                unmet.append("the restarted static member has not replaced the old one yet")
        return unmet


class ConversionScenario(Scenario):
    """Kafka 4.x: a classic group upgraded by rolling its members to the consumer protocol, and a
    classic member joining (then leaving) a consumer-protocol group."""

    def __init__(self, broker: KafkaBroker, members: Members) -> None:
        self.name = "conversion"
        suffix = _suffix()
        self.upgrade, self.mixed = f"p-up-{suffix}", f"p-mix-{suffix}"
        self.groups = (self.upgrade, self.mixed)
        self.members = members
        for group in self.groups:
            _prepare_topic(broker, group, PARTITIONS)

    def _start(self, group: str, name: str, protocol: str) -> None:
        self.members.start(f"{group}-{name}", group, group, protocol,
                           "range" if protocol == "classic" else "uniform")

    def act(self, step: int) -> None:
        if step == 0:
            for name in ("c1", "c2"):
                self._start(self.upgrade, name, "classic")
                self._start(self.mixed, name.replace("c", "k"), "consumer")
        elif step == 1:
            self._start(self.upgrade, "k1", "consumer")   # the classic group becomes a consumer group
            self._start(self.mixed, "c1", "classic")      # a classic member in a consumer group
        elif step == 2:
            self.members.stop(f"{self.upgrade}-c1")
            self.members.stop(f"{self.mixed}-c1")
        elif step == 3:
            self.members.stop(f"{self.upgrade}-c2")
            self._start(self.upgrade, "k2", "consumer")

    def expect(self, step: int, views: Views) -> list[str]:
        up = _settled(views.get(self.upgrade), [2, 3, 2, 2, 2][step],
                      "classic" if step == 0 else "consumer")
        mixed = _settled(views.get(self.mixed), [2, 3, 2, 2, 2][step], "consumer")
        return [f"{self.upgrade}: {u}" for u in up] + [f"{self.mixed}: {u}" for u in mixed]


class AdminScenario(Scenario):
    """Administration with Kafka's consumer-group command: offsets reset (earliest, a time),
    offsets deleted for one topic, a group deleted, a topic deleted under a group's offsets; and
    groups that only commit offsets (no membership)."""

    def __init__(self, broker: KafkaBroker, members: Members) -> None:
        self.name = "admin"
        suffix = _suffix()
        self.broker, self.members = broker, members
        self.only, self.deleted, self.orphan = f"p-ad-only-{suffix}", f"p-ad-del-{suffix}", f"p-ad-orph-{suffix}"
        self.groups = (self.only, self.deleted, self.orphan)
        self.x, self.y, self.z, self.w = (f"p-ad-{t}-{suffix}" for t in "xyzw")
        _prepare_topic(broker, self.x, 2, 10)
        _prepare_topic(broker, self.y, 1, 10)
        _prepare_topic(broker, self.z, PARTITIONS)
        _prepare_topic(broker, self.w, 1, 10)

    def _commit(self, group: str, offsets: dict[tuple[str, int], int]) -> None:
        """A standalone consumer: assign() and commit, no group membership."""
        from kafka import KafkaConsumer, TopicPartition
        from kafka.structs import OffsetAndMetadata

        from kafka.errors import KafkaTimeoutError

        consumer = KafkaConsumer(bootstrap_servers=self.broker.bootstrap, group_id=group,
                                 enable_auto_commit=False)
        try:
            tps = {TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()}
            consumer.assign(list(tps))
            for attempt in range(6):  # a new broker creates __consumer_offsets at the first group
                try:
                    consumer.commit(tps, timeout_ms=10000)
                    return
                except KafkaTimeoutError:
                    if attempt == 5:
                        raise
        finally:
            consumer.close(autocommit=False)

    def _command(self, *args: str) -> None:
        # The command's own --timeout (5 s) is short for a busy 2-core machine.
        done = self.broker.consumer_groups(*args, "--timeout", "30000")
        if done.returncode != 0 or "Error" in done.stdout:
            raise RuntimeError(f"consumer-groups {args} failed:\n{done.stdout}\n{done.stderr[-2000:]}")

    def act(self, step: int) -> None:
        if step == 0:
            self._commit(self.only, {(self.x, 0): 5, (self.x, 1): 7, (self.y, 0): 3})
            self._commit(self.orphan, {(self.w, 0): 4})
            self.members.start(f"{self.deleted}-m", self.deleted, self.z)
        elif step == 1:
            self.members.stop(f"{self.deleted}-m")
            self._command("--reset-offsets", "--group", self.only, "--topic", self.x, "--to-earliest",
                          "--execute")
        elif step == 2:
            self._command("--delete", "--group", self.deleted)
            self._command("--delete-offsets", "--group", self.only, "--topic", self.y)
            _delete_topic(self.broker, self.w)
        elif step == 3:
            at = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((T0 + 3000) / 1000)) + ".000"
            self._command("--reset-offsets", "--group", self.only, "--topic", self.x,
                          "--to-datetime", at, "--execute")

    def expect(self, step: int, views: Views) -> list[str]:
        only, deleted, orphan = (views.get(g) for g in self.groups)
        unmet = []
        want_only = [{(self.x, 0): 5, (self.x, 1): 7, (self.y, 0): 3},
                     {(self.x, 0): 0, (self.x, 1): 0, (self.y, 0): 3},
                     {(self.x, 0): 0, (self.x, 1): 0},
                     {(self.x, 0): 3, (self.x, 1): 3},
                     {(self.x, 0): 3, (self.x, 1): 3}][step]
        if only is None or only.committed != want_only:
            unmet.append(f"{self.only}: offsets {only and only.committed}, want {want_only}")
        if step == 0:
            unmet += _settled(deleted, 1, "classic")
            if deleted is not None and len(deleted.committed) != PARTITIONS:
                unmet.append(f"{self.deleted}: not every partition committed yet")
        elif step == 1 and (deleted is None or deleted.state != "Empty"):
            unmet.append(f"{self.deleted}: not Empty yet")
        elif step >= 2 and deleted is not None:
            unmet.append(f"{self.deleted}: still known to Kafka")
        want_orphan = {(self.w, 0): 4} if step < 2 else {}
        if orphan is not None and orphan.committed != want_orphan:
            unmet.append(f"{self.orphan}: offsets {orphan.committed}, want {want_orphan}")
        return unmet


def _delete_topic(broker: KafkaBroker, topic: str) -> None:
    from kafka import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.delete_topics([topic])
    finally:
        admin.close()


def member_logdir(root: Path, broker: KafkaBroker) -> Path:
    path = root / f"members-{broker.version}"
    path.mkdir(parents=True, exist_ok=True)
    return path
