"""Parse Kafka's `kafka-consumer-groups` (ConsumerGroupCommand) output into dataclasses: the oracle
that groupscope's metrics are compared against.

Output shapes seen (3.9.2 and 4.4.0): whitespace-aligned tables, one header line starting with
GROUP per group, "-" for an absent value, and notes like "Consumer group 'G' has no active
members." Columns differ by version and protocol; unknown ones land in `extra`:
  --offsets:           GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID
  --members --verbose: 3.9  ... #PARTITIONS ASSIGNMENT                       ASSIGNMENT "(0,1,2)": 3.9 prints no topic name
                       4.4  ... #PARTITIONS CURRENT-EPOCH CURRENT-ASSIGNMENT TARGET-EPOCH TARGET-ASSIGNMENT  ("t:0,1,2")
  --state:             GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS  (coordinator "host:port  (id)")
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class GroupOffset:
    group: str
    topic: str
    partition: int
    current_offset: int | None  # None: no committed offset
    log_end_offset: int | None
    lag: int | None
    consumer_id: str | None  # None: partition not assigned to an active member
    host: str | None
    client_id: str | None


@dataclass(frozen=True)
class GroupMember:
    group: str
    consumer_id: str
    host: str
    client_id: str
    partitions: int
    assignment: dict[str, list[int]]  # topic -> partitions ("" when 3.9 omits the topic name)
    target_assignment: dict[str, list[int]] | None = None  # 4.x, KIP-848 groups only
    current_epoch: int | None = None
    target_epoch: int | None = None
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class GroupState:
    group: str
    coordinator: str  # host:port
    coordinator_id: int
    assignment_strategy: str | None
    state: str
    members: int


def _none(value: str) -> str | None:
    return None if value == "-" else value


def _int(value: str) -> int | None:
    return None if value in ("-", "") else int(value)


def parse_tables(stdout: str) -> list[dict[str, str]]:
    """Every data row of every table in the output, as {column header: cell text}."""
    rows: list[dict[str, str]] = []
    header: list[str] | None = None
    for line in stdout.splitlines():
        if not line.strip():
            continue
        if line.startswith("GROUP ") or line.strip() == "GROUP":
            # "COORDINATOR (ID)" is the one header with a space in it
            header = line.replace("COORDINATOR (ID)", "COORDINATOR(ID)").split()
            continue
        if header is None or line.startswith(("Consumer group ", "Error", "Warning")):
            continue
        cells = line.split()
        # the coordinator cell "host:port  (id)" splits in two: join it back
        for i in range(len(cells) - 1, 0, -1):
            # (only in that table: 3.9 prints a one-partition assignment as "(0)")
            if "COORDINATOR(ID)" in header and re.fullmatch(r"\(\d+\)", cells[i]):
                cells[i - 1] += " " + cells.pop(i)
        if len(cells) == len(header) - 1 and "ASSIGNMENT-STRATEGY" in header:
            cells.insert(header.index("ASSIGNMENT-STRATEGY"), "-")  # an empty group has none
        if len(cells) == len(header) - 1 and "GROUP-INSTANCE-ID" in header:
            # 4.4 adds the column when some member is static; the others' cells are blank
            cells.insert(header.index("GROUP-INSTANCE-ID"), "-")
        if len(cells) != len(header):
            raise ValueError(f"cannot align {cells} with header {header}")
        rows.append(dict(zip(header, cells)))
    return rows


def parse_assignment(text: str) -> dict[str, list[int]]:
    """"t:0,1,2" (4.x), "t1(0,1),t2(3)" or "(0,1,2)" (3.9, no topic name), "-" -> {}."""
    if text in ("-", ""):
        return {}
    out: dict[str, list[int]] = {}
    if "(" in text:
        pairs = re.findall(r"([^,()]*)\(([^)]*)\)", text)
    else:
        pairs = [tuple(part.split(":", 1)) for part in text.split(";") if part]  # type: ignore[misc]
    for topic, parts in pairs:
        out.setdefault(topic, []).extend(int(p) for p in parts.split(",") if p)
    return out


def parse_offsets(stdout: str) -> list[GroupOffset]:
    """`--describe --group G --offsets` (also the default `--describe`)."""
    return [GroupOffset(
        group=r["GROUP"], topic=r["TOPIC"], partition=int(r["PARTITION"]),
        current_offset=_int(r["CURRENT-OFFSET"]), log_end_offset=_int(r["LOG-END-OFFSET"]),
        lag=_int(r["LAG"]), consumer_id=_none(r["CONSUMER-ID"]), host=_none(r["HOST"]),
        client_id=_none(r["CLIENT-ID"])) for r in parse_tables(stdout)]


_MEMBER_KNOWN = {"GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT",
                 "CURRENT-ASSIGNMENT", "TARGET-ASSIGNMENT", "CURRENT-EPOCH", "TARGET-EPOCH"}


def parse_members(stdout: str) -> list[GroupMember]:
    """`--describe --group G --members [--verbose]`."""
    members = []
    for r in parse_tables(stdout):
        current = r.get("CURRENT-ASSIGNMENT", r.get("ASSIGNMENT", "-"))
        target = r.get("TARGET-ASSIGNMENT")
        members.append(GroupMember(
            group=r["GROUP"], consumer_id=r["CONSUMER-ID"], host=r["HOST"], client_id=r["CLIENT-ID"],
            partitions=int(r["#PARTITIONS"]), assignment=parse_assignment(current),
            target_assignment=None if target in (None, "-") else parse_assignment(target),
            current_epoch=_int(r.get("CURRENT-EPOCH", "-")), target_epoch=_int(r.get("TARGET-EPOCH", "-")),
            extra={k: v for k, v in r.items() if k not in _MEMBER_KNOWN}))
    return members


def parse_state(stdout: str) -> list[GroupState]:
    """`--describe --group G --state`."""
    states = []
    for r in parse_tables(stdout):
        host, _, cid = r["COORDINATOR(ID)"].partition(" ")
        states.append(GroupState(group=r["GROUP"], coordinator=host, coordinator_id=int(cid.strip("()")),
                                 assignment_strategy=_none(r["ASSIGNMENT-STRATEGY"]), state=r["STATE"],
                                 members=int(r["#MEMBERS"])))
    return states


def parse_list(stdout: str) -> list[str]:
    """`--list`: one group id a line."""
    return [line.strip() for line in stdout.splitlines() if line.strip()]


# -- share groups (ShareGroupCommand) and streams groups (StreamsGroupCommand), 4.4 ----------------
# Share --members --verbose: GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS MEMBER-EPOCH ASSIGNMENT
#   (ASSIGNMENT "t:0,2"); --state --verbose: GROUP COORDINATOR (ID) STATE GROUP-EPOCH ASSIGNMENT-EPOCH
#   #MEMBERS. Both fit parse_tables.
# Streams --members --verbose: GROUP TARGET-ASSIGNMENT-EPOCH TOPOLOGY-EPOCH MEMBER MEMBER-PROTOCOL
#   MEMBER-EPOCH PROCESS CLIENT-ID ASSIGNMENTS, the last cell with spaces in it
#   ("ACTIVE: 0:[0,1,2]; TARGET-ACTIVE: 0:[0,1,2]; "); --state --verbose: GROUP COORDINATOR (ID)
#   ASSIGNOR STATE GROUP-EPOCH TARGET-ASSIGNMENT-EPOCH #MEMBERS.


def parse_last_column_rows(stdout: str) -> list[dict[str, str]]:
    """Rows of a table whose last column's cells may hold spaces (split on whitespace as many
    times as there are other columns)."""
    rows: list[dict[str, str]] = []
    header: list[str] | None = None
    for line in stdout.splitlines():
        if not line.strip():
            continue
        if line.startswith("GROUP "):
            header = line.split()
            continue
        if header is not None:
            rows.append(dict(zip(header, line.strip().split(None, len(header) - 1))))
    return rows


def parse_streams_tasks(text: str) -> dict[str, dict[str, list[int]]]:
    """"ACTIVE: 0:[0,1,2]; TARGET-ACTIVE: 0:[0,1]; " -> {"ACTIVE": {"0": [0, 1, 2]}, ...}: the
    tasks of each kind, by subtopology."""
    out: dict[str, dict[str, list[int]]] = {}
    for kind, tasks in re.findall(r"([A-Z-]+):((?:\s*[^;:\s]+:\[[^\]]*\])*)", text):
        out[kind] = {sub: [int(p) for p in parts.split(",") if p]
                     for sub, parts in re.findall(r"([^;:\s]+):\[([^\]]*)\]", tasks)}
    return out
