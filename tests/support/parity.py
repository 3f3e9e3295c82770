"""groupscope's view of consumer groups against Kafka's own, field by field (docs/kafka-parity.md).

Both sides are brought to one shape, `GroupView`, and `differences` lists every field they
disagree on. Kafka's side comes from the broker's ListGroups (kafka-python: which groups exist,
their type and protocol type) and, for everything else, either Kafka's AdminClient in a
long-lived harness JVM (`kafka_views`, every look) or Kafka's consumer-group command
(`kafka_views_from_command`, one look per lane, so the command's path stays covered).
groupscope's side comes from its `/metrics` and, for what no series carries (which partitions
each member owns), from the job's history snapshots.
"""
from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from tests.support.groupscope_job import CLUSTER, GroupscopeJob, Samples
from tests.support.kafka_broker import KafkaBroker
from tests.support.kafka_tools import parse_members, parse_offsets, parse_state

TP = tuple[str, int]
TIMEOUT = ("--timeout", "30000")  # the command's default, 5 s, is short on a busy machine


@dataclass
class MemberView:
    client_id: str
    host: str
    instance_id: str | None  # None: this side does not show it
    assigned: tuple[TP, ...]
    target: tuple[TP, ...] | None = None  # KIP-848 target assignment, where shown
    epoch: int | None = None              # KIP-848 member epoch, where shown


@dataclass
class GroupView:
    group_type: str        # classic | consumer
    protocol_type: str
    state: str
    protocol: str          # classic: the chosen assignor; KIP-848: the server assignor
    epoch: int | None      # KIP-848 group epoch (Kafka does not show a classic generation)
    target_epoch: int | None
    members: dict[str, MemberView] | None  # None: this side did not describe the members
    instance_ids_shown: bool = True  # False: Kafka's view cannot tell static members (rule 4)
    committed: dict[TP, int] = field(default_factory=dict)
    log_end: dict[TP, int] = field(default_factory=dict)
    lag: dict[TP, int] = field(default_factory=dict)
    # member id -> the lags of its assigned partitions that have one, summed
    member_lag: dict[str, int] = field(default_factory=dict)

    def sum_member_lag(self) -> None:
        """`member_lag` from the members' assignments and `lag` (Kafka's side)."""
        for mid, member in (self.members or {}).items():
            lags = [self.lag[tp] for tp in member.assigned if tp in self.lag]
            if lags:
                self.member_lag[mid] = sum(lags)


Views = dict[str, GroupView]


def _pairs(assignment: dict[str, list[int]]) -> tuple[TP, ...]:
    return tuple(sorted((topic, p) for topic, parts in assignment.items() for p in parts))


# -- Kafka's side ----------------------------------------------------------------------------

def _admin(broker: KafkaBroker):
    from kafka import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)


def _classic_members(described: dict[str, Any]) -> dict[str, MemberView]:
    out = {}
    for m in described.get("members") or ():
        assignment = m.get("member_assignment") or {}
        assigned = tuple(sorted((tp["topic"], p) for tp in assignment.get("assigned_partitions") or ()
                                for p in tp["partitions"]))
        out[m["member_id"]] = MemberView(m["client_id"], m["client_host"], m.get("group_instance_id"),
                                         assigned)
    return out


def _listed(broker: KafkaBroker, groups: Iterable[str]) -> dict[str, dict[str, Any]]:
    """ListGroups rows of those of `groups` Kafka knows."""
    wanted = set(groups)
    admin = _admin(broker)
    try:
        return {g["group_id"]: g for g in admin.list_groups() if g["group_id"] in wanted}
    finally:
        admin.close()


def _admin_pairs(pairs: list[list[Any]] | None) -> tuple[TP, ...] | None:
    return None if pairs is None else tuple(sorted((t, p) for t, p in pairs))


def kafka_views(broker: KafkaBroker, describe: Callable[[list[str]], dict[str, dict[str, Any]]],
                groups: Iterable[str]) -> Views:
    """Kafka's view of `groups` through its AdminClient (`describe`: a harness JVM's, see
    tests/support/parity_clients.py); absent: Kafka does not know the group."""
    listed = _listed(broker, groups)
    described = describe(sorted(listed)) if listed else {}
    views: Views = {}
    for name, row in listed.items():
        d = described[name]
        if "error" in d:  # e.g. deleted between the listing and the description: look again
            raise RuntimeError(f"AdminClient could not describe {name}: {d['error']}")
        members = {m["id"]: MemberView(m["client"], m["host"], m["instance"], _admin_pairs(m["assigned"]) or (),
                                       _admin_pairs(m["target"]), m["epoch"])
                   for m in d["members"]}
        view = GroupView(row["group_type"], row["protocol_type"], d["state"], d["assignor"],
                         d["group_epoch"], d["target_epoch"], members)
        view.committed = {(t, p): o for t, p, o in d["committed"]}
        view.log_end = {(t, p): o for t, p, o in d["log_end"]}
        # As the command computes it: the log end minus the committed offset.
        view.lag = {tp: view.log_end[tp] - o for tp, o in view.committed.items() if tp in view.log_end}
        view.sum_member_lag()
        views[name] = view
    return views


def kafka_views_from_command(broker: KafkaBroker, groups: Iterable[str]) -> Views:
    """Kafka's view of `groups` through ListGroups, DescribeGroups (classic groups) and Kafka's
    consumer-group command (absent: Kafka does not know the group)."""
    listed = _listed(broker, groups)
    classic = [g for g, row in listed.items() if row["group_type"] == "classic"]
    admin = _admin(broker)
    try:
        described = admin.describe_groups(classic) if classic else {}
    finally:
        admin.close()
    modern = sorted(g for g, row in listed.items() if row["group_type"] == "consumer")
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        offsets_job = pool.submit(broker.consumer_groups, "--describe", "--all-groups", "--offsets",
                                  *TIMEOUT)
        modern_args = [arg for g in modern for arg in ("--group", g)]
        state_job = members_job = None
        if modern:
            state_job = pool.submit(broker.consumer_groups, "--describe", *modern_args, "--state",
                                    "--verbose", *TIMEOUT)
            members_job = pool.submit(broker.consumer_groups, "--describe", *modern_args,
                                      "--members", "--verbose", *TIMEOUT)
        offsets = parse_offsets(offsets_job.result().stdout)
        states = {s.group: s for s in parse_state(state_job.result().stdout)} if state_job else {}
        members_out = parse_members(members_job.result().stdout) if members_job else []
    state_rows = _state_rows(state_job.result().stdout) if state_job else {}
    views: Views = {}
    for name, row in listed.items():
        if row["group_type"] == "classic":
            desc = described.get(name) or {}
            views[name] = GroupView("classic", row["protocol_type"], row["group_state"],
                                    desc.get("protocol_data") or "", None, None, _classic_members(desc))
        else:
            state = states.get(name)
            extra = state_rows.get(name, {})
            members = {m.consumer_id: MemberView(m.client_id, m.host, _instance_id(m.extra),
                                                 _pairs(m.assignment),
                                                 None if m.target_assignment is None else _pairs(m.target_assignment),
                                                 m.current_epoch)
                       for m in members_out if m.group == name}
            epoch = _int(extra.get("GROUP-EPOCH"))
            views[name] = GroupView("consumer", row["protocol_type"], row["group_state"],
                                    (state.assignment_strategy or "") if state else "",
                                    epoch, _int(extra.get("TARGET-ASSIGNMENT-EPOCH")),
                                    members, instance_ids_shown=epoch is not None)
    for row in offsets:
        view = views.get(row.group)
        if view is None:
            continue
        tp = (row.topic, row.partition)
        if row.current_offset is not None:
            view.committed[tp] = row.current_offset
        if row.log_end_offset is not None:
            view.log_end[tp] = row.log_end_offset
        if row.lag is not None:
            view.lag[tp] = row.lag
            if row.consumer_id is not None:  # the command's own owner of the partition
                view.member_lag[row.consumer_id] = view.member_lag.get(row.consumer_id, 0) + row.lag
    return views


def _instance_id(extra: dict[str, str]) -> str | None:
    """4.4's command prints GROUP-INSTANCE-ID when some member is static; 3.9's never does."""
    if "GROUP-INSTANCE-ID" not in extra:
        return None
    return None if extra["GROUP-INSTANCE-ID"] == "-" else extra["GROUP-INSTANCE-ID"]


def _state_rows(stdout: str) -> dict[str, dict[str, str]]:
    from tests.support.kafka_tools import parse_tables

    return {row["GROUP"]: row for row in parse_tables(stdout)}


def _int(text: str | None) -> int | None:
    return None if text in (None, "-", "") else int(text)


# -- groupscope's side -----------------------------------------------------------------------

def _series(samples: Samples, name: str) -> list[tuple[dict[str, str], float]]:
    return [(dict(labels), value) for labels, value in samples.get(name, {}).items()
            if dict(labels).get("cluster") == CLUSTER]


def groupscope_views(job: GroupscopeJob, groups: Iterable[str],
                     samples: Samples | None = None) -> Views:
    """groupscope's view of `groups` (absent, or state Dead: groupscope knows it was deleted)."""
    wanted = set(groups)
    samples = job.scrape() if samples is None else samples
    snapshots = job.snapshots()
    views: Views = {}
    for labels, _ in _series(samples, "kafka_consumergroup_info"):
        name = labels["group"]
        if name in wanted:
            views[name] = GroupView(labels["group_type"], labels["protocol_type"], labels["state"],
                                    labels["protocol"], None, None, {})
    for labels, value in _series(samples, "kafka_consumergroup_generation"):
        view = views.get(labels["group"])
        if view is not None and view.group_type != "classic":
            view.epoch = int(value)
    for labels, value in _series(samples, "kafka_consumergroup_member_assigned_partitions"):
        view = views.get(labels["group"])
        if view is None:
            continue
        snapshot_members = {m["member_id"]: m for m in
                            (snapshots.get(labels["group"]) or {}).get("members") or ()}
        member = snapshot_members.get(labels["member_id"], {})
        assigned = tuple(sorted((t, p) for t, p in member.get("assigned") or ()))
        if len(assigned) != int(value):  # the series and the history disagree: show both
            assigned = assigned + (("<series says>", int(value)),)
        target = member.get("target")
        view.members[labels["member_id"]] = MemberView(  # type: ignore[index]
            labels["client_id"], labels["client_host"], labels["instance_id"] or None, assigned,
            None if target is None else tuple(sorted((t, p) for t, p in target)),
            member.get("member_epoch") if view.group_type != "classic" else None)
    for name, view in views.items():
        if view.group_type != "classic":
            view.target_epoch = (snapshots.get(name) or {}).get("assignment_epoch")
    log_end = {(l["topic"], int(l["partition"])): int(v)
               for l, v in _series(samples, "kafka_partition_log_end_offset")}
    for labels, value in _series(samples, "kafka_consumergroup_committed_offset"):
        view = views.get(labels["group"])
        if view is not None:
            tp = (labels["topic"], int(labels["partition"]))
            view.committed[tp] = int(value)
            if tp in log_end:
                view.log_end[tp] = log_end[tp]
    for labels, value in _series(samples, "kafka_consumergroup_lag"):
        view = views.get(labels["group"])
        if view is not None:
            view.lag[(labels["topic"], int(labels["partition"]))] = int(value)
    for labels, value in _series(samples, "kafka_consumergroup_member_lag"):
        view = views.get(labels["group"])
        if view is not None:
            view.member_lag[labels["member_id"]] = int(value)
    return views


# -- comparison ------------------------------------------------------------------------------

def _same_assignment(kafka: tuple[TP, ...], ours: tuple[TP, ...]) -> bool:
    """Kafka 3.9's command prints a KIP-848 member's partitions without the topic name ("")."""
    if any(topic == "" for topic, _ in kafka):
        return sorted(p for _, p in kafka) == sorted(p for _, p in ours)
    return kafka == ours


def differences(kafka: Views, ours: Views, groups: Iterable[str],
                member_lag: bool = False) -> list[str]:
    """Every field on which groupscope disagrees with Kafka, by the rules of docs/kafka-parity.md
    (`member_lag`: the job serves metrics.member_lag, so lag per member is compared too)."""
    out: list[str] = []
    for name in sorted(groups):
        k, g = kafka.get(name), ours.get(name)
        if k is None:
            # Rule 1: Kafka forgets a deleted group; groupscope shows it Dead (no members, no offsets).
            if g is not None and (g.state != "Dead" or g.members or g.committed):
                out.append(f"{name}: Kafka does not know it, groupscope shows {g.state} "
                           f"members={sorted(g.members or ())} offsets={g.committed}")
            continue
        if g is None:
            out.append(f"{name}: Kafka shows {k.group_type} {k.state}, groupscope does not know it")
            continue
        out += _group_differences(name, k, g, member_lag)
    return out


def _group_differences(name: str, k: GroupView, g: GroupView, member_lag: bool) -> list[str]:
    out = []

    def check(what: str, kafka_value: Any, our_value: Any) -> None:
        if kafka_value != our_value:
            out.append(f"{name}: {what}: Kafka {kafka_value!r}, groupscope {our_value!r}")

    check("group_type", k.group_type, g.group_type)
    check("protocol_type", k.protocol_type, g.protocol_type)
    check("state", k.state, g.state)
    if k.group_type == "classic" or k.members:
        # Rule 3: an Empty KIP-848 group has no assignor in the log; Kafka names its default.
        check("protocol", k.protocol, g.protocol)
    if k.epoch is not None:  # Rule 2: Kafka shows no classic generation, and 3.9 no epochs
        check("group epoch", k.epoch, g.epoch)
        check("target assignment epoch", k.target_epoch, g.target_epoch)
    if k.members is not None:
        check("member ids", sorted(k.members), sorted(g.members or {}))
        for mid in sorted(set(k.members) & set(g.members or {})):
            km, gm = k.members[mid], g.members[mid]  # type: ignore[index]
            check(f"member {mid} client_id", km.client_id, gm.client_id)
            check(f"member {mid} host", km.host, gm.host)
            if k.instance_ids_shown:  # Rule 4: not on 3.9's command
                check(f"member {mid} instance_id", km.instance_id, gm.instance_id)
            if not _same_assignment(km.assigned, gm.assigned):
                check(f"member {mid} assigned", km.assigned, gm.assigned)
            if km.target is not None and not _same_assignment(km.target, gm.target or ()):
                check(f"member {mid} target", km.target, gm.target)
            if km.epoch is not None:
                check(f"member {mid} epoch", km.epoch, gm.epoch)
    check("committed offsets", k.committed, g.committed)
    # Log end offsets and lag: where both sides have a committed offset (Kafka also lists the
    # assigned partitions nobody committed yet; groupscope has no series for those).
    for tp in sorted(set(k.committed) & set(g.committed)):
        check(f"log end offset {tp}", k.log_end.get(tp), g.log_end.get(tp))
        check(f"lag {tp}", k.lag.get(tp), g.lag.get(tp))
    if member_lag and k.members is not None:
        check("lag per member", k.member_lag, g.member_lag)
    return out
