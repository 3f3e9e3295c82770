"""The reconstructed state of one group, and its serialised form.

`GroupState` is the reducer's per-group state: the Spark job keeps one per state key and the
in-memory `GroupStore` is a dict of them. It is deliberately a mutable slotted object rather than
a frozen dataclass: offset commits arrive at 100k+/s and copying the offsets map per record would
dominate the cost. Only the functions in `coordinator.state.reducer` mutate it.

`to_dict()` is the public view (docs/contracts.md); `to_bytes()`/`from_bytes()` carry the complete
state, including what the view leaves out (pending transactions, released partitions, rebalance
baseline, idempotence positions).
"""
from __future__ import annotations

import copy
from typing import Any

from coordinator import compact_json, partition_for
from coordinator.deflate import deflate

CLASSIC, CONSUMER, SHARE, STREAMS = "classic", "consumer", "share", "streams"
STABLE, STREAMS_STABLE = 0, 1   # MemberState STABLE of consumer/share groups, and of streams groups

# Per-member fields a KIP-848/share/streams member view takes from its member-metadata record.
_MODERN_MEMBER_DEFAULTS: dict[str, Any] = {
    "group_instance_id": None, "client_id": "", "client_host": "", "rack": None,
    "session_timeout_ms": None, "rebalance_timeout_ms": None, "subscribed_topics": [],
    "subscribed_topic_regex": None, "extra": {},
}

# Offset entries are tuples (offset, leader_epoch, metadata, commit_timestamp_ms, topic_id).
OFFSET, LEADER_EPOCH, METADATA, COMMIT_TS, TOPIC_ID = range(5)

_SLOTS = (
    "group", "group_type", "coordinator_partition", "positions", "updated_ms", "dead",
    # classic
    "protocol_type", "protocol", "generation", "leader", "current_state_ts", "members",
    # KIP-848 / share / streams
    "group_epoch", "assignment_epoch", "metadata_hash", "assignment_ts", "modern_members", "target",
    "current", "regexes", "topic_names", "partition_counts", "topology", "share_topics",
    # committed offsets and transactions
    "offsets", "log_positions", "pending_txn", "graveyard",
    # rebalance tracking
    "generation_ts", "baseline", "in_progress", "last_rebalance", "released", "leave_start_ms",
)

# Fields whose dicts are keyed by (topic, partition) and need flattening for JSON.
_TP_KEYED = ("offsets", "log_positions", "graveyard", "released")


class GroupState:
    __slots__ = _SLOTS

    def __init__(self, group: str, num_partitions: int = 50) -> None:
        self.group = group
        self.group_type = CLASSIC
        self.coordinator_partition = partition_for(group, num_partitions)
        self.positions: dict[int, int] = {}
        self.updated_ms = 0
        self.dead = False
        self.protocol_type: str | None = None
        self.protocol: str | None = None
        self.generation = 0
        self.leader: str | None = None
        self.current_state_ts: int | None = None
        self.members: dict[str, dict[str, Any]] = {}
        self.group_epoch = 0
        self.assignment_epoch: int | None = None
        self.metadata_hash: int | None = None
        self.assignment_ts: int | None = None
        self.modern_members: dict[str, dict[str, Any]] = {}
        self.target: dict[str, dict[str, Any]] = {}
        self.current: dict[str, dict[str, Any]] = {}
        self.regexes: dict[str, list[str]] = {}
        self.topic_names: dict[str, str] = {}
        self.partition_counts: dict[str, int] = {}
        self.topology: dict[str, Any] | None = None
        self.share_topics: dict[str, Any] | None = None
        self.offsets: dict[tuple[str, int], tuple] = {}
        self.log_positions: dict[tuple[str, int], int] = {}
        self.pending_txn: dict[int, dict[tuple[str, int], list]] = {}
        self.graveyard: dict[tuple[str, int], tuple] | None = None
        self.generation_ts: int | None = None
        self.baseline: dict[str, Any] | None = None
        self.in_progress: dict[str, Any] | None = None
        self.last_rebalance: dict[str, Any] | None = None
        # Partitions a member gave up that nobody owns yet -> that member (classic: by topic name;
        # KIP-848: by topic id), to measure their downtime when someone else gets them.
        self.released: dict[tuple[str, int], str] = {}
        # KIP-848: when a member that is leaving gracefully stopped consuming (its closing commit),
        # until the epoch bump its leave causes starts the rebalance (modern.py).
        self.leave_start_ms: int | None = None

    # ----- views -----------------------------------------------------------------------------

    def topic_name(self, topic_id: str) -> str:
        """A topic id's name when known, else the id itself (unmapped ids stay visible)."""
        return self.topic_names.get(topic_id, topic_id)

    def named(self, pairs: list) -> list[list]:
        """[[topic_id, partition], ...] -> sorted [[topic, partition], ...] (streams tasks pass through)."""
        if self.group_type == STREAMS:
            return sorted([t, p] for t, p in pairs)
        return sorted([self.topic_name(t), p] for t, p in pairs)

    def member_views(self) -> dict[str, dict[str, Any]]:
        """Members in the contract's shape, keyed by member id."""
        if self.group_type == CLASSIC:
            return self.members
        out = {}
        for mid, meta in self.modern_members.items():
            view = {"member_id": mid}
            for name, default in _MODERN_MEMBER_DEFAULTS.items():
                view[name] = meta.get(name, default)
            regex = view["subscribed_topic_regex"]
            if regex is not None and regex in self.regexes:
                view["subscribed_topics"] = sorted(set(view["subscribed_topics"]) | set(self.regexes[regex]))
            cur = self.current.get(mid)
            tgt = self.target.get(mid)
            view["assigned"] = self.named(cur["assigned"]) if cur else []
            view["member_epoch"] = cur["member_epoch"] if cur else 0
            view["member_state"] = cur["state_name"] if cur else None
            view["target"] = self.named(tgt["assigned"]) if tgt else None
            view["pending_revocation"] = self.named(cur["pending"]) if cur and "pending" in cur else None
            extra = dict(view["extra"])
            if cur and cur.get("extra"):
                extra.update(cur["extra"])
            if tgt and tgt.get("extra"):
                extra["target_tasks"] = tgt["extra"]
            view["extra"] = extra
            out[mid] = view
        return out

    def owners(self) -> dict[str, set[tuple[str, int]]]:
        """member id -> the partitions (or Connect/Streams tasks) it owns now, by name."""
        if self.group_type == CLASSIC:
            return {mid: {(t, p) for t, p in m["assigned"]} for mid, m in self.members.items()}
        return {mid: {tuple(tp) for tp in self.named(self.current[mid]["assigned"])} if mid in self.current
                else set() for mid in self.modern_members}

    def subscriptions(self) -> dict[str, list[str]]:
        return {mid: m["subscribed_topics"] for mid, m in self.member_views().items()}

    def owners_snapshot(self) -> dict[str, list[list]]:
        """`owners()` in JSON-able form (sorted [topic, partition] lists)."""
        return {mid: sorted([t, p] for t, p in tps) for mid, tps in self.owners().items()}

    def baseline_owners(self) -> dict[str, set[tuple[str, int]]]:
        """The rebalance baseline's owners, named with the topic names known now. A KIP-848
        baseline keeps topic ids: a topic's name is often learnt (from the group's first commit)
        after the assignment it is compared with was taken, and ids named at different times would
        not match."""
        if self.baseline is None:
            return {}
        return {mid: {tuple(tp) for tp in self.named(tps)} for mid, tps in self.baseline["owners"].items()}

    def converged(self) -> bool:
        """KIP-848/share/streams: every member reconciled to the target of the current group epoch
        (`ModernGroupMember.isReconciledTo`: state STABLE and member epoch = assignment epoch)."""
        if not self.modern_members or self.assignment_epoch != self.group_epoch:
            return False
        stable = STREAMS_STABLE if self.group_type == STREAMS else STABLE
        for mid in self.modern_members:
            cur = self.current.get(mid)
            if cur is None or cur["state"] != stable or cur["member_epoch"] != self.assignment_epoch:
                return False
        return True

    def state_name(self) -> str:
        """The group state as Kafka reports it; for KIP-848 and streams groups derived from the
        epochs, as Kafka's `ConsumerGroup.maybeUpdateGroupState` does."""
        if self.dead:
            return "Dead"
        if self.group_type == CLASSIC:
            return "Stable" if self.members else "Empty"
        if not self.modern_members:
            return "Empty"
        if self.group_type == SHARE:
            return "Stable"
        if self.group_type == STREAMS and self.topology is None:
            return "NotReady"
        if self.group_epoch > (self.assignment_epoch or 0):
            return "Assigning"
        return "Stable" if self.converged() else "Reconciling"

    def to_dict(self) -> dict[str, Any]:
        # A Dead group keeps its last members internally (a conversion measures against them).
        members = {} if self.dead else self.member_views()
        subscribed = sorted({t for m in members.values() for t in m["subscribed_topics"]})
        classic = self.group_type == CLASSIC
        return {
            "group": self.group,
            "group_type": self.group_type,
            "protocol_type": self.protocol_type if classic else "consumer" if self.group_type == CONSUMER
            else self.group_type,
            "protocol": self.protocol if classic else server_assignor(members),
            "state": self.state_name(),
            "generation": self.generation if classic else self.group_epoch,
            "assignment_epoch": None if classic else self.assignment_epoch,
            "leader": self.leader if classic else None,
            "current_state_timestamp_ms": self.current_state_ts,
            "coordinator_partition": self.coordinator_partition,
            "members": [_copied(members[mid]) for mid in sorted(members)],
            "subscribed_topics": subscribed,
            "offsets": [offset_view(tp, e) for tp, e in sorted(self.offsets.items())],
            "last_rebalance": copy.deepcopy(self.last_rebalance),
            "updated_ms": self.updated_ms,
        }

    # ----- serialisation ---------------------------------------------------------------------

    def to_state(self) -> dict[str, Any]:
        """Every field, JSON-able (tuple-keyed maps become lists of [topic, partition, value])."""
        out: dict[str, Any] = {}
        for name in _SLOTS:
            value = getattr(self, name)
            if name in _TP_KEYED and value is not None:
                value = [[t, p, v] for (t, p), v in value.items()]
            elif name == "pending_txn":
                value = [[pid, [[t, p, v] for (t, p), v in entries.items()]] for pid, entries in value.items()]
            elif name == "positions":
                value = [[k, v] for k, v in value.items()]
            out[name] = value
        return out

    @classmethod
    def from_state(cls, data: dict[str, Any]) -> "GroupState":
        # Starts from a new group's defaults, so state saved before a field existed still loads.
        state = cls(data["group"])
        for name in _SLOTS:
            if name not in data:
                continue
            value = data[name]
            if name in _TP_KEYED and value is not None:
                value = {(t, p): tuple(v) if name in ("offsets", "graveyard") else v for t, p, v in value}
            elif name == "pending_txn":
                value = {pid: {(t, p): v for t, p, v in entries} for pid, entries in value}
            elif name == "positions":
                value = {k: v for k, v in value}
            setattr(state, name, value)
        return state

    def to_bytes(self) -> bytes:
        raw = compact_json.dumps_bytes(self.to_state())
        return deflate.compress(raw, 1)

    @classmethod
    def from_bytes(cls, data: bytes) -> "GroupState":
        return cls.from_state(compact_json.loads(deflate.decompress(data)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GroupState) and self.to_state() == other.to_state()

    def __repr__(self) -> str:
        return f"GroupState({self.group!r}, {self.group_type}, {self.state_name()})"


def _copied(member: dict[str, Any]) -> dict[str, Any]:
    """A member view the caller may change without changing the state."""
    out = dict(member)
    for name in ("subscribed_topics", "assigned", "target", "pending_revocation"):
        if out.get(name) is not None:
            out[name] = [list(x) if isinstance(x, list) else x for x in out[name]]
    out["extra"] = copy.deepcopy(out["extra"])
    return out


def offset_view(tp: tuple[str, int], entry: tuple) -> dict[str, Any]:
    return {"topic": tp[0], "partition": tp[1], "offset": entry[OFFSET], "leader_epoch": entry[LEADER_EPOCH],
            "metadata": entry[METADATA], "commit_timestamp_ms": entry[COMMIT_TS], "topic_id": entry[TOPIC_ID]}


def server_assignor(members: dict[str, dict[str, Any]]) -> str | None:
    """The server-side assignor a KIP-848 group's members ask for (the first by name if they differ)."""
    assignors = sorted({m["extra"].get("server_assignor") for m in members.values()} - {None})
    return assignors[0] if assignors else None
