"""Kafka Connect worker metadata and assignments (the `connect` protocol type).

The group's `protocol` picks the layout, as in Connect itself: `default` is the eager V0 layout,
`compatible` (KIP-415) and `sessioned` (KIP-507) share the V1 layout. The version header is only
checked for `< 0`. V1 blobs may stop after any field that has a default (`allocation`,
`assignment`, `revoked`, `scheduled_delay`), because Connect declares its V1 schemas as
tolerating missing fields. Bytes after the last field are ignored, as Connect does. A zero-length
blob decodes to `version=None` ("nothing"), like the consumer protocol.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from coordinator.errors import DecodeError
from coordinator.protocol.wire import Reader, Writer

EAGER_PROTOCOL = "default"
COOPERATIVE_PROTOCOLS = ("compatible", "sessioned")
CONNECTOR_TASK = -1  # task id meaning "the connector instance itself"

# A connector entry with no tasks: int16 name length + int32 task count.
_MIN_CONNECTOR_TASKS = 6


@dataclass(frozen=True)
class ConnectorTasks:
    connector: str
    tasks: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"connector": self.connector, "tasks": list(self.tasks)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ConnectorTasks":
        return cls(data["connector"], tuple(int(t) for t in data["tasks"]))


@dataclass(frozen=True)
class ConnectAssignment:
    version: int | None
    error: int = 0
    leader: str = ""
    leader_url: str = ""
    config_offset: int = -1
    assignment: tuple[ConnectorTasks, ...] | None = ()
    revoked: tuple[ConnectorTasks, ...] | None = None
    scheduled_delay: int = 0
    cooperative: bool = False  # V1/V2 layout (revoked + scheduled_delay, nullable arrays)

    def to_dict(self) -> dict[str, Any]:
        if self.version is None:
            return {"version": None}
        out: dict[str, Any] = {
            "version": self.version, "error": self.error, "leader": self.leader,
            "leader_url": self.leader_url, "config_offset": self.config_offset,
            "assignment": _tasks_to_list(self.assignment),
        }
        if self.cooperative:
            out["revoked"] = _tasks_to_list(self.revoked)
            out["scheduled_delay"] = self.scheduled_delay
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ConnectAssignment":
        if data["version"] is None:
            return cls(version=None)
        cooperative = "revoked" in data or "scheduled_delay" in data
        return cls(
            version=data["version"], error=data["error"], leader=data["leader"],
            leader_url=data["leader_url"], config_offset=data["config_offset"],
            assignment=_tasks_from_list(data["assignment"]),
            revoked=_tasks_from_list(data.get("revoked")),
            scheduled_delay=data.get("scheduled_delay", 0), cooperative=cooperative)


@dataclass(frozen=True)
class ConnectWorkerMetadata:
    version: int | None
    url: str = ""
    config_offset: int = -1
    allocation: ConnectAssignment | None = None  # V1/V2 only: the worker's previous assignment
    cooperative: bool = False

    def to_dict(self) -> dict[str, Any]:
        if self.version is None:
            return {"version": None}
        out: dict[str, Any] = {"version": self.version, "url": self.url, "config_offset": self.config_offset}
        if self.cooperative:
            out["allocation"] = None if self.allocation is None else self.allocation.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ConnectWorkerMetadata":
        if data["version"] is None:
            return cls(version=None)
        allocation = data.get("allocation")
        return cls(version=data["version"], url=data["url"], config_offset=data["config_offset"],
                   allocation=None if allocation is None else ConnectAssignment.from_dict(allocation),
                   cooperative="allocation" in data)


def _tasks_to_list(tasks: tuple[ConnectorTasks, ...] | None) -> list[dict[str, Any]] | None:
    return None if tasks is None else [t.to_dict() for t in tasks]


def _tasks_from_list(items: Any) -> tuple[ConnectorTasks, ...] | None:
    return None if items is None else tuple(ConnectorTasks.from_dict(i) for i in items)


def is_cooperative(protocol: str | None, version: int) -> bool:
    """True when `protocol` selects the V1/V2 layout; unknown names fall back to the version."""
    if protocol == EAGER_PROTOCOL:
        return False
    if protocol in COOPERATIVE_PROTOCOLS:
        return True
    return version >= 1


def _read_header(reader: Reader) -> int:
    version = reader.int16("version")
    if version < 0:
        raise DecodeError(f"{reader.what}: unsupported version {version}", reason="unsupported_version")
    return version


def _read_connector_tasks(reader: Reader) -> ConnectorTasks:
    connector = reader.string("connector")
    return ConnectorTasks(connector, reader.int32_array("tasks"))


def _read_assignment(reader: Reader, protocol: str | None) -> ConnectAssignment:
    version = _read_header(reader)
    cooperative = is_cooperative(protocol, version)
    error = reader.int16("error")
    leader = reader.string("leader")
    leader_url = reader.string("leader_url")
    config_offset = reader.int64("config_offset")

    def tasks_array(field: str) -> tuple[ConnectorTasks, ...] | None:
        read = reader.nullable_array if cooperative else reader.array
        items = read(field, lambda: _read_connector_tasks(reader), _MIN_CONNECTOR_TASKS)
        return None if items is None else tuple(items)

    if not cooperative:
        return ConnectAssignment(version, error, leader, leader_url, config_offset, tasks_array("assignment"))
    assignment = None if reader.at_end() else tasks_array("assignment")
    revoked = None if reader.at_end() else tasks_array("revoked")
    delay = 0 if reader.at_end() else reader.int32("scheduled_delay")
    return ConnectAssignment(version, error, leader, leader_url, config_offset, assignment, revoked,
                             delay, cooperative=True)


def decode_connect_assignment(data: bytes, protocol: str | None) -> ConnectAssignment:
    """Decodes a Connect member assignment written for the group protocol `protocol`."""
    if len(data) == 0:
        return ConnectAssignment(version=None)
    return _read_assignment(Reader(data, "connect assignment"), protocol)


def decode_connect_metadata(data: bytes, protocol: str | None) -> ConnectWorkerMetadata:
    """Decodes Connect worker metadata (the member's JoinGroup metadata, stored as `subscription`)."""
    if len(data) == 0:
        return ConnectWorkerMetadata(version=None)
    reader = Reader(data, "connect worker metadata")
    version = _read_header(reader)
    url = reader.string("url")
    config_offset = reader.int64("config_offset")
    if not is_cooperative(protocol, version):
        return ConnectWorkerMetadata(version, url, config_offset)
    blob = None if reader.at_end() else reader.nullable_bytes("allocation")
    # The allocation is a complete V1 assignment with its own version header.
    allocation = None if blob is None else decode_connect_assignment(blob, "compatible")
    return ConnectWorkerMetadata(version, url, config_offset, allocation, cooperative=True)


def _write_assignment(asg: ConnectAssignment) -> bytes:
    writer = Writer().int16(asg.version).int16(asg.error).string(asg.leader).string(asg.leader_url)
    writer.int64(asg.config_offset)

    def write_tasks(tasks: ConnectorTasks) -> None:
        writer.string(tasks.connector).int32_array(tasks.tasks)

    if not asg.cooperative and asg.assignment is None:
        raise ValueError("the V0 (default) layout cannot carry a null assignment")
    writer.array(asg.assignment, write_tasks)
    if asg.cooperative:
        writer.array(asg.revoked, write_tasks)
        writer.int32(asg.scheduled_delay)
    return writer.getvalue()


def encode_connect_assignment(assignment: ConnectAssignment | Mapping[str, Any]) -> bytes:
    asg = assignment if isinstance(assignment, ConnectAssignment) else ConnectAssignment.from_dict(assignment)
    return b"" if asg.version is None else _write_assignment(asg)


def encode_connect_metadata(metadata: ConnectWorkerMetadata | Mapping[str, Any]) -> bytes:
    meta = metadata if isinstance(metadata, ConnectWorkerMetadata) else ConnectWorkerMetadata.from_dict(metadata)
    if meta.version is None:
        return b""
    writer = Writer().int16(meta.version).string(meta.url).int64(meta.config_offset)
    if meta.cooperative:
        writer.nullable_bytes(None if meta.allocation is None else encode_connect_assignment(meta.allocation))
    return writer.getvalue()
