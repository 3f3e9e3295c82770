"""A share-partition's delivery state, rebuilt from `__share_group_state` as Kafka's share
coordinator rebuilds it when it loads the topic: a ShareSnapshot replaces the state, a ShareUpdate
is merged into it, a null value removes it.

The state batches cover offsets at or past the share-partition start offset (SPSO) whose state
the partition leader wrote: available (released, or its acquisition lock expired: to be delivered
again), acknowledged, or archived (rejected, or delivered as often as the group allows). Records
a consumer holds (acquired) are kept by the leader in memory and appear here only once they
change state again.
"""
from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any, Iterable, Iterator, Mapping

AVAILABLE, ACKNOWLEDGED, ARCHIVED = 0, 2, 4
STATE_NAMES: dict[int, str] = {AVAILABLE: "available", ACKNOWLEDGED: "acknowledged",
                               ARCHIVED: "archived"}
UNKNOWN = -1  # Kafka's value for a start offset or a delivery-complete count not (yet) known


@dataclass(frozen=True, slots=True)
class StateBatch:
    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int

    @property
    def size(self) -> int:
        return self.last_offset - self.first_offset + 1


@dataclass(frozen=True, slots=True)
class SharePartition:
    group: str
    topic_id: str
    partition: int
    start_offset: int
    delivery_complete_count: int
    batches: tuple[StateBatch, ...]
    snapshot_epoch: int = 0
    state_epoch: int = UNKNOWN
    leader_epoch: int = UNKNOWN
    archived_seen: int = 0   # offsets seen entering the archived state (counted records only)
    updated_ms: int = 0      # the timestamp of the last record applied
    # The offsets the last record applied added to archived_seen, as (first, last) ranges: some
    # may hold no record (a transaction marker a consumer acknowledged as a gap), which only
    # the topic's own batches tell (`without_gaps`).
    archived_new: tuple[tuple[int, int], ...] = ()
    # Kafka's own share lag where the share-partition was polled (source.type admin:
    # DescribeShareGroupOffsets; UNKNOWN where Kafka has none), whose delivery state is then
    # not known: no batches, no archived count. None: rebuilt from __share_group_state.
    polled_lag: int | None = None

    @property
    def key(self) -> tuple[str, str, int]:
        return self.group, self.topic_id, self.partition


def combine_batches(so_far: Iterable[StateBatch], new: Iterable[StateBatch],
                    start_offset: int) -> tuple[StateBatch, ...]:
    """The union of two batch lists, clipped at `start_offset` (unless UNKNOWN), as Kafka's share
    coordinator combines them: where batches overlap, the higher delivery count wins, then the
    higher state; neighbours with the same (state, count) become one batch."""
    batches = []
    for b in (*so_far, *new):
        if start_offset != UNKNOWN and b.last_offset < start_offset:
            continue
        if start_offset != UNKNOWN and b.first_offset < start_offset:
            b = replace(b, first_offset=start_offset)
        batches.append(b)
    if len(batches) < 2:
        return tuple(batches)
    bounds = sorted({b.first_offset for b in batches} | {b.last_offset + 1 for b in batches})
    winner: list[tuple[int, int] | None] = [None] * (len(bounds) - 1)  # per piece: (count, state)
    for b in batches:
        rank = (b.delivery_count, b.delivery_state)
        for i in range(bisect.bisect_left(bounds, b.first_offset),
                       bisect.bisect_left(bounds, b.last_offset + 1)):
            if winner[i] is None or rank > winner[i]:
                winner[i] = rank
    out: list[StateBatch] = []
    for i, rank in enumerate(winner):
        if rank is None:
            continue
        first, last = bounds[i], bounds[i + 1] - 1
        if out and out[-1].last_offset + 1 == first and \
                (out[-1].delivery_count, out[-1].delivery_state) == rank:
            out[-1] = replace(out[-1], last_offset=last)
        else:
            out.append(StateBatch(first, last, rank[1], rank[0]))
    return tuple(out)


def _batches(value: Mapping[str, Any]) -> tuple[StateBatch, ...]:
    return tuple(StateBatch(int(b["first_offset"]), int(b["last_offset"]), int(b["delivery_state"]),
                            int(b["delivery_count"])) for b in value.get("state_batches") or ())


def _past(batches: Iterable[StateBatch], start: int) -> Iterator[tuple[StateBatch, int, int]]:
    """Each batch with offsets at or past `start` (UNKNOWN, -1: all), and its first and last
    such offset."""
    for b in batches:
        if b.last_offset >= start:
            yield b, max(b.first_offset, start), b.last_offset


def _archived(batches: Iterable[StateBatch], from_offset: int) -> list[tuple[int, int]]:
    return [(first, last) for b, first, last in _past(batches, from_offset)
            if b.delivery_state == ARCHIVED]


def _newly_archived(before: SharePartition | None, batches: tuple[StateBatch, ...]
                    ) -> tuple[tuple[int, int], ...]:
    """Offsets archived in `batches` that `before` did not hold as archived (nor had passed),
    as ranges."""
    floor = before.start_offset if before is not None and before.start_offset != UNKNOWN else UNKNOWN
    ranges = _archived(batches, floor)
    if not ranges:
        return ()
    known = _archived(before.batches, floor) if before is not None else []
    out = []
    for first, last in ranges:
        pieces = [(first, last)]
        for k_first, k_last in known:
            pieces = [piece for a, b in pieces for piece in
                      ((a, min(b, k_first - 1)), (max(a, k_last + 1), b)) if piece[0] <= piece[1]]
        out.extend(pieces)
    return tuple(out)


def _size(ranges: Iterable[tuple[int, int]]) -> int:
    return sum(last - first + 1 for first, last in ranges)


def without_gaps(sp: SharePartition, gaps: Iterable[int]) -> SharePartition:
    """`sp` with the offsets of `gaps` (offsets that hold no record) taken out of what it
    counted as newly archived."""
    gaps = set(gaps)
    held = sum(1 for o in gaps if any(first <= o <= last for first, last in sp.archived_new))
    return replace(sp, archived_seen=sp.archived_seen - held, archived_new=())


def apply_share_record(before: SharePartition | None, type_name: str, key: Mapping[str, Any],
                       value: Mapping[str, Any] | None, timestamp_ms: int,
                       counted: bool = True, archived_before: int = 0) -> SharePartition | None:
    """The share-partition after one `__share_group_state` record (None: it is gone). With
    `counted` false (a record from before the job started), offsets it archives change the state
    but not `archived_seen`: a counter that began again from the backlog at each start would
    read as new archives. `archived_before`: the counter a share-partition new to `before`
    starts from (what an earlier run of the job had counted)."""
    if value is None:
        return None
    group, topic_id, partition = key["group_id"], key["topic_id"], int(key["partition"])
    complete = int(value.get("delivery_complete_count", UNKNOWN))
    seen = before.archived_seen if before is not None else archived_before
    if type_name == "share_snapshot":
        batches = _batches(value)
        same_epoch = before is not None and before.state_epoch == int(value["state_epoch"])
        new = _newly_archived(before if same_epoch else None, batches) if counted else ()
        return SharePartition(group, topic_id, partition, int(value["start_offset"]), complete, batches,
                              int(value["snapshot_epoch"]), int(value["state_epoch"]),
                              int(value["leader_epoch"]), seen + _size(new), timestamp_ms, new)
    # a ShareUpdate: -1 leaves the start offset and the leader epoch as they were
    start = int(value["start_offset"])
    leader = int(value["leader_epoch"])
    if before is not None:
        start = before.start_offset if start == UNKNOWN else start
        leader = before.leader_epoch if leader == UNKNOWN else leader
    written = _batches(value)
    batches = combine_batches(before.batches if before is not None else (), written, start)
    new = _newly_archived(before, combine_batches((), written, start)) if counted else ()
    return SharePartition(group, topic_id, partition, start, complete, batches,
                          int(value["snapshot_epoch"]),
                          before.state_epoch if before is not None else UNKNOWN, leader,
                          seen + _size(new), timestamp_ms, new)


def records_by_state(sp: SharePartition) -> dict[str, int]:
    """Records at or past the start offset in each written state (every state, zeros included;
    none for a polled share-partition, whose states are not known)."""
    if sp.polled_lag is not None:
        return {}
    counts = {name: 0 for name in STATE_NAMES.values()}
    for b, first, last in _past(sp.batches, sp.start_offset):
        name = STATE_NAMES.get(b.delivery_state)
        if name is not None:
            counts[name] += last - first + 1
    return counts


def records_by_delivery_count(sp: SharePartition) -> dict[int, int]:
    """Records at or past the start offset by how often they were delivered (counts above 0)."""
    counts: Counter[int] = Counter()
    for b, first, last in _past(sp.batches, sp.start_offset):
        if b.delivery_count > 0:
            counts[b.delivery_count] += last - first + 1
    return dict(sorted(counts.items()))


def share_lag(sp: SharePartition, end_offset: int | None) -> int | None:
    """Kafka's share-partition lag (KIP-1226): the partition's end offset (the high watermark)
    minus the start offset minus the records past it whose delivery is complete, never
    negative (an end offset polled before the group moved on is older than its state); None
    where Kafka reports it unknown."""
    if sp.polled_lag is not None:
        return None if sp.polled_lag == UNKNOWN else max(0, sp.polled_lag)
    if end_offset is None or sp.start_offset == UNKNOWN or sp.delivery_complete_count == UNKNOWN:
        return None
    return max(0, end_offset - sp.start_offset - sp.delivery_complete_count)


def polled_share_partition(group: str, topic_id: str, partition: int, start_offset: int,
                           lag: int) -> SharePartition:
    """A share-partition as DescribeShareGroupOffsets shows it: its start offset and Kafka's
    lag, its delivery state unknown."""
    return SharePartition(group, topic_id, partition, start_offset, UNKNOWN, (),
                          polled_lag=lag)
