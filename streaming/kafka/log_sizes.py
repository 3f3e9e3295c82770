"""Partitions' sizes on disk through DescribeLogDirs, for size-based retention risk.

DescribeLogDirs is asked of every broker (each answers for the replicas it holds) and needs
DESCRIBE on the CLUSTER resource. A partition's size is its largest replica's (the leader's,
unless a follower is behind): retention deletes from each replica alike, and the leader is the
one consumers read. Replicas being moved between a broker's directories (`is_future_key`) are
left out: they are copies, not the log.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from kafka.errors import for_code
from kafka.protocol.admin import DescribeLogDirsRequest

_CLUSTER_AUTHORIZATION_FAILED = 31


@dataclass(frozen=True)
class LogSizes:
    """One read: bytes of each (topic, partition) found; `refused`: DESCRIBE on the cluster
    was denied, so nothing was read."""
    sizes: dict[tuple[str, int], int] = field(default_factory=dict)
    refused: bool = False


def read_log_sizes(manager, partitions: Mapping[str, Sequence[int]]) -> LogSizes:
    """The sizes of `partitions` (topic -> partition ids), asked of every broker through
    kafka-python's connection manager."""
    if not partitions:
        return LogSizes()
    request = DescribeLogDirsRequest(topics=[(topic, list(ids))
                                             for topic, ids in sorted(partitions.items())])
    brokers = [broker.node_id for broker in manager.cluster.brokers()]

    async def ask():
        return [await manager.send(request, node_id=node) for node in brokers]

    return read_answers(manager.run(ask))


def read_answers(responses) -> LogSizes:
    """DescribeLogDirs answers (one a broker) as LogSizes. Before version 3 a denial answers
    no directories rather than an error; it then reads as no sizes, not as refused."""
    sizes: dict[tuple[str, int], int] = {}
    for response in responses:
        code = getattr(response, "error_code", 0)
        if code == _CLUSTER_AUTHORIZATION_FAILED:
            return LogSizes(refused=True)
        if code:
            raise for_code(code)("DescribeLogDirs")
        for log_dir in response.results:
            if log_dir.error_code:  # an offline directory: its replicas are served elsewhere
                continue
            for topic in log_dir.topics:
                for part in topic.partitions:
                    if not part.is_future_key:
                        key = (topic.name, part.partition_index)
                        sizes[key] = max(sizes.get(key, 0), part.partition_size)
    return LogSizes(sizes)
