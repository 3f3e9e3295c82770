"""Groups through the Kafka Admin API (kafka-python), for clusters whose `__consumer_offsets`
cannot be read: ListGroups, DescribeGroups (classic groups), ConsumerGroupDescribe (KIP-848
groups), ShareGroupDescribe and DescribeShareGroupOffsets (share groups), StreamsGroupDescribe
(streams groups) and OffsetFetch, one request per group coordinator each. kafka-python has no
request for the KIP-848, share and streams ones: they are built from streaming/kafka/schemas.

What comes back is plain data (`coordinator.admin_groups.PolledGroup`), for the pure code that
turns two polls into state and events.
"""
from __future__ import annotations

import logging
from collections import defaultdict
from typing import Iterable, Iterator

from kafka import KafkaAdminClient
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.consumer import OffsetFetchRequest

from coordinator.admin_groups import PolledGroup, PolledMember
from streaming.gc_pause import collector_paused
from streaming.kafka.offsets import kafka_topic_id
from streaming.kafka.kafka_python_net import admin, close

log = logging.getLogger("groupscope.admin")
CLASSIC_TYPES = ("classic",)
OFFSET_FETCH_GROUPS = 10_000  # groups an OffsetFetch asks about: answers of a few MB each


def _message(name: str) -> type[ApiMessage]:
    """A request or response class from its schema in streaming/kafka/schemas (kafka-python
    registers a response class as it is made, to read its request's answers with)."""
    return type(name, (ApiMessage,), {}, load_json="streaming.kafka.schemas")


(ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, ShareGroupDescribeRequest,
 ShareGroupDescribeResponse, DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse,
 StreamsGroupDescribeRequest, StreamsGroupDescribeResponse) = (
    _message(f"{api}{kind}") for api in ("ConsumerGroupDescribe", "ShareGroupDescribe",
                                         "DescribeShareGroupOffsets", "StreamsGroupDescribe")
    for kind in ("Request", "Response"))


class AdminGroups:
    """One admin connection; `poll()` describes every consumer group and its offsets."""

    def __init__(self, config: dict, timeout_s: float | None = None) -> None:
        settings = dict(config)
        if timeout_s is not None:
            settings["request_timeout_ms"] = int(timeout_s * 1000)
        self._admin: KafkaAdminClient = admin(**settings)
        self.requests = 0  # sent since the client was made: the poll's cost

    def poll(self) -> list[PolledGroup]:
        return next(self.poll_parts(0))

    def poll_parts(self, first: int) -> Iterator[list[PolledGroup]]:
        """Every group, described in two parts from one listing: the first `first` groups by
        name, then the rest (one part when `first` is 0 or covers them all), each sorted by
        name. The launch seed serves the first part while the rest is asked for."""
        with collector_paused():
            listed = self._admin.list_groups()
        self.requests += 1  # one per broker, in fact; counted as the call it is
        names = sorted(g["group_id"] for g in listed)
        cuts = [set(names[:first]), set(names[first:])] if 0 < first < len(names) else [None]
        for part in cuts:
            wanted = listed if part is None else [g for g in listed if g["group_id"] in part]
            # 10^5 groups' answers are millions of objects, no cycles: streaming.gc_pause
            with collector_paused():
                described = self._described_groups(wanted)
            yield described

    def _described_groups(self, listed: list[dict]) -> list[PolledGroup]:
        classic = {g["group_id"]: g.get("protocol_type") or "" for g in listed
                   if g.get("group_type", "classic") == "classic"
                   and g.get("protocol_type") in ("consumer", "")}
        modern, share, streams = ([g["group_id"] for g in listed if g.get("group_type") == kind]
                                  for kind in ("consumer", "share", "streams"))
        # An Empty classic group has no members, and Kafka describes it with nothing the
        # listing (ListGroups v4+) did not already say: most groups of a large estate are such
        # (consumers that assign their partitions themselves), so they are not described.
        empty = {g["group_id"] for g in listed if g.get("group_state") == "Empty"} & set(classic)
        offsets = self._offsets([*classic, *modern, *streams])
        groups = [*self._classic({g: t for g, t in classic.items() if g not in empty}, offsets),
                  *(_empty_classic(g, classic[g], offsets) for g in empty),
                  *self._consumer(modern, offsets), *self._share(share),
                  *self._streams(streams, offsets)]
        return sorted(groups, key=lambda g: g.group)

    # -- requests ----------------------------------------------------------------------------

    def _offsets(self, group_ids: list[str]) -> dict[str, tuple]:
        if not group_ids:
            return {}
        self.requests += 1
        manager = self._admin._manager
        if manager.broker_version_data.api_version(OffsetFetchRequest) < 8:
            # Kafka before 3.0: a request per group, which kafka-python's own call makes
            answer = self._admin.list_group_offsets(group_ids)
            return {group: tuple(sorted((tp.topic, tp.partition, o.offset, o.leader_epoch,
                                         o.metadata) for tp, o in by_tp.items() if o.offset >= 0))
                    for group, by_tp in answer.items()}
        return manager.run(self._fetch_offsets, group_ids)

    async def _fetch_offsets(self, group_ids: list[str]) -> dict[str, tuple]:
        """Every group's committed offsets, OffsetFetch v8+ (KIP-709: many groups a request),
        OFFSET_FETCH_GROUPS groups a request to each coordinator. The answer is read here rather
        than through kafka-python's list_group_offsets, which builds two objects per partition
        (a third of a poll's CPU at 10^5 groups, benchmarks/admin_poll.py) and fails the whole
        poll on one group's error; here that group is left out and the rest served."""
        as_group = OffsetFetchRequest.OffsetFetchRequestGroup
        out: dict[str, tuple] = {}

        def ask(node: int, ids: list[str]):
            request = OffsetFetchRequest(groups=[as_group(group_id=g, topics=None) for g in ids],
                                         min_version=8, max_version=8)
            return self._admin._manager.send(request, node_id=node)

        for node, ids in (await self._by_coordinator(group_ids)).items():
            chunks = [ids[first:first + OFFSET_FETCH_GROUPS]
                      for first in range(0, len(ids), OFFSET_FETCH_GROUPS)]
            # Two requests in flight: the coordinator answers the next while this process
            # decodes the one before (a connection's requests are answered in turn), and no more
            # than two answers' objects are held at once.
            flight = [ask(node, chunk) for chunk in chunks[:2]]
            for k in range(len(chunks)):
                response = await flight[k]
                flight[k] = None  # its answer is let go once read
                if k + 2 < len(chunks):
                    flight.append(ask(node, chunks[k + 2]))
                for group in response.groups:
                    if group.error_code:
                        log.debug("offsets of group %s: error %d", group.group_id,
                                  group.error_code)
                        continue
                    out[group.group_id] = tuple(sorted(
                        (t.name, p.partition_index, p.committed_offset,
                         p.committed_leader_epoch, p.metadata)
                        for t in group.topics for p in t.partitions
                        if not p.error_code and p.committed_offset >= 0))
        return out

    def _classic(self, protocol_types: dict[str, str], offsets) -> Iterable[PolledGroup]:
        if not protocol_types:
            return []
        self.requests += 1
        described = self._admin.describe_groups(list(protocol_types))
        out = []
        for group_id, d in described.items():
            if d.get("error"):
                log.debug("describing classic group %s: %s", group_id, d["error"])
                continue
            members = tuple(sorted((_classic_member(m) for m in d.get("members") or ()),
                                   key=lambda m: m.member_id))
            out.append(PolledGroup(group=group_id, group_type="classic",
                                   protocol_type=d.get("protocol_type")
                                   or protocol_types[group_id],
                                   protocol=d.get("protocol_data") or None,
                                   state=d.get("group_state") or "Unknown",
                                   group_epoch=None, assignment_epoch=None, members=members,
                                   offsets=offsets.get(group_id, ())))
        return out

    def _consumer(self, group_ids: list[str], offsets) -> Iterable[PolledGroup]:
        if not group_ids:
            return []
        self.requests += 1
        out = []
        for d in self._described(group_ids, ConsumerGroupDescribeRequest, 0, "consumer"):
            members = _sorted(_member_of(m, _pairs(m.assignment), _pairs(m.target_assignment),
                                         tuple(sorted(m.subscribed_topic_names or ())))
                              for m in d.members)
            out.append(PolledGroup(group=d.group_id, group_type="consumer",
                                   protocol_type="consumer", protocol=d.assignor_name or None,
                                   state=d.group_state, group_epoch=d.group_epoch,
                                   assignment_epoch=d.assignment_epoch, members=members,
                                   offsets=offsets.get(d.group_id, ())))
        return out

    async def _by_coordinator(self, group_ids: list[str]) -> dict[int, list[str]]:
        """The groups by their coordinator's node id, through kafka-python's own coordinator
        look-up (its describe_groups and list_group_offsets group them so too)."""
        by_node = defaultdict(list)
        for group_id, node in (await self._admin._find_coordinator_ids(group_ids)).items():
            by_node[node].append(group_id)
        return by_node

    def _share(self, group_ids: list[str]) -> Iterable[PolledGroup]:
        if not group_ids:
            return []
        self.requests += 2
        starts = self._admin._manager.run(self._share_offsets, group_ids)
        out = []
        for d in self._described(group_ids, ShareGroupDescribeRequest, 1, "share"):
            members = _sorted(_member_of(m, _pairs(m.assignment), None,
                                         tuple(sorted(m.subscribed_topic_names or ())))
                              for m in d.members)
            out.append(PolledGroup(group=d.group_id, group_type="share", protocol_type="share",
                                   protocol=d.assignor_name or None, state=d.group_state,
                                   group_epoch=d.group_epoch, assignment_epoch=d.assignment_epoch,
                                   members=members, offsets=(),
                                   share_offsets=starts.get(d.group_id, ())))
        return out

    def _streams(self, group_ids: list[str], offsets) -> Iterable[PolledGroup]:
        if not group_ids:
            return []
        self.requests += 1
        out = []
        for d in self._described(group_ids, StreamsGroupDescribeRequest, 0, "streams"):
            subtopologies = (d.topology.subtopologies or ()) if d.topology is not None else ()
            sources = tuple(sorted({t for s in subtopologies for t in s.source_topics}
                                   | {t.name for s in subtopologies
                                      for t in s.repartition_source_topics}))
            members = _sorted(_member_of(
                m, _tasks(m.assignment.active_tasks), _tasks(m.target_assignment.active_tasks),
                sources, extra=(
                    ("process_id", m.process_id), ("topology_epoch", m.topology_epoch),
                    ("standby_tasks", [list(t) for t in _tasks(m.assignment.standby_tasks)]),
                    ("warmup_tasks", [list(t) for t in _tasks(m.assignment.warmup_tasks)])))
                for m in d.members)
            out.append(PolledGroup(group=d.group_id, group_type="streams",
                                   protocol_type="streams", protocol=None, state=d.group_state,
                                   group_epoch=d.group_epoch, assignment_epoch=d.assignment_epoch,
                                   members=members, offsets=offsets.get(d.group_id, ())))
        return out

    def _described(self, group_ids: list[str], request, version: int, kind: str) -> list:
        """The groups' descriptions without those Kafka answered with an error."""
        out = []
        for d in self._admin._manager.run(self._describe, group_ids, request, version):
            if d.error_code:
                log.debug("describing %s group %s: error %d", kind, d.group_id, d.error_code)
                continue
            out.append(d)
        return out

    async def _describe(self, group_ids: list[str], request, version: int) -> list:
        groups = []
        for node, ids in (await self._by_coordinator(group_ids)).items():
            asked = request(group_ids=ids, include_authorized_operations=False,
                            min_version=version, max_version=version)
            response = await self._admin._manager.send(asked, node_id=node)
            groups.extend(response.groups)
        return groups

    async def _share_offsets(self, group_ids: list[str]) -> dict[str, tuple]:
        """Each share group's share-partitions: (topic, topic id, partition, start offset,
        Kafka's lag), DescribeShareGroupOffsets v1 (v0, before Kafka 4.2: no lag, -1)."""
        as_group = DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup
        out: dict[str, tuple] = {}
        for node, ids in (await self._by_coordinator(group_ids)).items():
            request = DescribeShareGroupOffsetsRequest(
                groups=[as_group(group_id=g, topics=None) for g in ids], max_version=1)
            response = await self._admin._manager.send(request, node_id=node)
            for group in response.groups:
                if group.error_code:
                    log.debug("share offsets of group %s: error %d", group.group_id,
                              group.error_code)
                    continue
                out[group.group_id] = tuple(sorted(
                    (t.topic_name, kafka_topic_id(t.topic_id), p.partition_index, p.start_offset,
                     getattr(p, "lag", -1))
                    for t in group.topics for p in t.partitions if not p.error_code))
        return out

    def close(self) -> None:
        close(self._admin)


def _empty_classic(group_id: str, protocol_type: str, offsets) -> PolledGroup:
    """An Empty classic group as DescribeGroups would show it (GroupMetadataManager.describeGroups
    in Kafka's group coordinator: no protocol, no members, outside the Stable state)."""
    return PolledGroup(group=group_id, group_type="classic", protocol_type=protocol_type,
                       protocol=None, state="Empty", group_epoch=None, assignment_epoch=None,
                       members=(), offsets=offsets.get(group_id, ()))


def _classic_member(m: dict) -> PolledMember:
    metadata = m.get("member_metadata") or {}
    assignment = m.get("member_assignment") or {}
    assigned = tuple(sorted((a["topic"], p) for a in (assignment.get("assigned_partitions") or ())
                            for p in a["partitions"])) if isinstance(assignment, dict) else ()
    topics = tuple(sorted(metadata.get("topics") or ())) if isinstance(metadata, dict) else ()
    rack = (metadata.get("rack_id") or None) if isinstance(metadata, dict) else None
    return PolledMember(member_id=m["member_id"], group_instance_id=m.get("group_instance_id"),
                        client_id=m.get("client_id", ""), client_host=m.get("client_host", ""),
                        rack=rack, subscribed_topics=topics, assigned=assigned)


def _member_of(m, assigned, target, subscribed: tuple[str, ...], extra=()) -> PolledMember:
    """A KIP-848, share or streams member as its group's describe answer gives it (a share
    member has no instance id, nor a target)."""
    return PolledMember(member_id=m.member_id, group_instance_id=getattr(m, "instance_id", None),
                        client_id=m.client_id, client_host=m.client_host, rack=m.rack_id,
                        subscribed_topics=subscribed, assigned=assigned,
                        member_epoch=m.member_epoch, target=target, extra=extra)


def _sorted(members: Iterable[PolledMember]) -> tuple[PolledMember, ...]:
    return tuple(sorted(members, key=lambda m: m.member_id))


def _tasks(tasks) -> tuple[tuple[str, int], ...]:
    """A streams member's tasks as (subtopology, partition), as the log path names them."""
    return tuple(sorted((t.subtopology_id, p) for t in tasks or () for p in t.partitions))


def _pairs(assignment) -> tuple[tuple[str, int], ...]:
    if assignment is None:
        return ()
    return tuple(sorted((t.topic_name, p) for t in assignment.topic_partitions
                        for p in t.partitions))
