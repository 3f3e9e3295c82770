"""Offset bookkeeping shared by the Kafka sources: parsing, rate limiting and splitting.

Offsets travel through Spark's checkpoints as `{topic: {"<partition>": next_offset}}`, the layout
of Spark's own Kafka source, so a checkpoint reads the same whichever client fetched the data.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Mapping

EARLIEST = -2  # the markers Spark's Kafka source uses inside startingOffsets JSON
LATEST = -1

PartitionOffsets = dict[int, int]


@dataclass(frozen=True)
class OffsetRange:
    """Records [start, end) of one partition: the unit of work of one Spark task."""

    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def parse_starting_offsets(text: str, topic: str) -> str | PartitionOffsets:
    """"earliest", "latest", or a JSON object `{"<topic>": {"<partition>": offset}}` in which
    -2 means earliest and -1 means latest. Raises ValueError naming the problem."""
    value = (text or "").strip()
    if value.lower() in ("earliest", "latest"):
        return value.lower()
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        raise ValueError(f"startingOffsets must be earliest, latest or JSON "
                         f'{{"{topic}": {{"0": 42}}}}, got {text!r}') from None
    if not isinstance(parsed, dict) or set(parsed) != {topic} or not isinstance(parsed[topic], dict):
        raise ValueError(f'startingOffsets JSON must have exactly one key, the topic "{topic}", '
                         f"mapping partitions to offsets; got {text!r}")
    offsets: PartitionOffsets = {}
    for partition, offset in parsed[topic].items():
        if not str(partition).isdigit() or isinstance(offset, bool) or not isinstance(offset, int) \
                or offset < EARLIEST:
            raise ValueError(f"startingOffsets: partition {partition!r} -> {offset!r} is not "
                             "a partition number and an offset (>= 0, or -2 earliest, -1 latest)")
        offsets[int(partition)] = offset
    return offsets


def to_offset_dict(topic: str, offsets: Mapping[int, int]) -> dict:
    return {topic: {str(p): int(offsets[p]) for p in sorted(offsets)}}


def from_offset_dict(topic: str, offset: Mapping) -> PartitionOffsets:
    return {int(p): int(o) for p, o in (offset.get(topic) or {}).items()}


def limit_end(start: Mapping[int, int], end: Mapping[int, int], max_records: int
              ) -> PartitionOffsets:
    """Pull `end` back so that at most `max_records` records lie between `start` and it.

    The budget is shared in proportion to each partition's backlog (like Spark's Kafka source);
    leftover records from rounding go to the largest backlogs, so a small limit still makes
    progress on some partition every trigger.
    """
    backlog = {p: max(0, end[p] - start.get(p, 0)) for p in end}
    total = sum(backlog.values())
    if total <= max_records:
        return dict(end)
    share = {p: backlog[p] * max_records // total for p in backlog}
    leftover = max_records - sum(share.values())
    for p in sorted(backlog, key=lambda q: (-(backlog[q] - share[q]), q)):
        if leftover == 0:
            break
        if share[p] < backlog[p]:
            share[p] += 1
            leftover -= 1
    return {p: (start.get(p, 0) + share[p] if backlog[p] else end[p]) for p in end}


def plan_ranges(start: Mapping[int, int], end: Mapping[int, int], records_per_split: int
                ) -> list[OffsetRange]:
    """Non-empty ranges per partition, long ones cut into near-equal pieces of at most
    `records_per_split` records so both cores can work on one busy partition."""
    ranges = []
    for partition in sorted(end):
        first, stop = start.get(partition, 0), end[partition]
        if stop <= first:
            continue
        pieces = -(-(stop - first) // max(1, records_per_split))
        step = -(-(stop - first) // pieces)
        for lo in range(first, stop, step):
            ranges.append(OffsetRange(partition, lo, min(stop, lo + step)))
    return ranges


def pack_ranges(ranges: list[OffsetRange], records_per_task: int, min_tasks: int = 2
                ) -> list[list[OffsetRange]]:
    """Consecutive ranges grouped into near-even tasks: as few as keep a task near
    `records_per_task` records, and a multiple of `min_tasks` (the cores that read them), so no
    task is left to run alone at the end; never more tasks than ranges. A task costs Spark a
    Python worker round trip and the reader a client connection, so a trigger with a little
    data in many partitions is read by `min_tasks` tasks rather than one per partition."""
    if not ranges:
        return []
    total = sum(rng.size for rng in ranges)
    tasks = -(-total // max(1, records_per_task))
    tasks = -(-tasks // min_tasks) * min_tasks
    return _even_split(ranges, total, min(tasks, len(ranges)))


def _even_split(ranges: list[OffsetRange], total: int, parts: int) -> list[list[OffsetRange]]:
    """Consecutive ranges in `parts` tasks of near-equal records: each range goes to the part
    its middle record falls in."""
    tasks: list[list[OffsetRange]] = [[] for _ in range(parts)]
    before = 0
    for rng in ranges:
        middle = before + rng.size / 2
        tasks[min(parts - 1, int(middle * parts / max(1, total)))].append(rng)
        before += rng.size
    return [task for task in tasks if task]
