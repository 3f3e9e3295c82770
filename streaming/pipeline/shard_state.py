"""How the state stage keeps groups under its state keys (shards), and the value of the older
SHARD_VALUE layout: every group of one shard, each group's `GroupState` bytes under its id.

Groups are spread over a checkpoint's number of state keys (STATE_SHARDS for a new one;
streaming.job.checkpoint_layout) by a hash of the group id (`shard_column`), so a micro-batch pays
Spark's fixed per-key cost (a pandas frame, state-server round trips) once per shard it touches
rather than once per group. Only the touched groups are decoded and encoded again; the others
are carried through as bytes.

Layout: entry count, then per entry the UTF-8 group id and the state bytes, each preceded by its
length (big-endian unsigned 32-bit integers). Plain framing rather than pickle, so that reading a
checkpoint never runs code.
"""
from __future__ import annotations

import struct
import zlib

from pyspark.sql import Column
from pyspark.sql import functions as F

# State keys the groups of a new checkpoint are spread over. A checkpoint keeps the number it
# started with (streaming.job.checkpoint_layout). Fewer keys cost less per micro-batch (Spark's
# per-key cost is paid for every touched key), more keys rewrite less when few groups change.
STATE_SHARDS = 16
# The shard of the monitor's counters (never a hash bucket).
MONITOR_SHARD = -1
# How a shard's key keeps its groups, each checkpoint its own (streaming.job.checkpoint_layout):
# SHARD_VALUE, all of them in one value state ("shard", the layout below), rewritten whole when
# any of them changes, so a micro-batch costs more the more groups are held; GROUP_MAP, the same
# while the shard is small, then (past state_stage.MAP_AFTER_GROUPS groups) a map state
# ("groups") with an entry per group, of which a micro-batch reads and writes only those it
# touches, at a state-server round trip each.
# BUCKET_MAP, the same but past that size a map state ("buckets") keyed by one of
# BUCKETS_PER_SHARD hash buckets of the group id, each entry the groups of its bucket in the
# layout below: a micro-batch pays the two round trips once per bucket it touches, not once per
# group, and the bucket's other groups travel as bytes.
SHARD_VALUE, GROUP_MAP, BUCKET_MAP = "shard-value", "group-map", "bucket-map"
STATE_LAYOUTS = (SHARD_VALUE, GROUP_MAP, BUCKET_MAP)
# Buckets of one shard's map in BUCKET_MAP layout, part of what that layout means: a group's
# bucket never changes, so another count would be another layout. At 10^5 groups over
# STATE_SHARDS shards a bucket holds about 6 groups: a batch touching 15% of them makes 31% fewer
# round trips than with an entry per group, and one touching 1% reads and writes 5 neighbours
# of each group for nothing (benchmarks/state_stage.py: 22% cheaper, and 10-20% dearer).
BUCKETS_PER_SHARD = 1024

_COUNT = struct.Struct(">I")


class CorruptShardState(ValueError):
    """A stored shard value that does not follow the layout."""


def pack_entries(entries: dict[str, bytes]) -> bytes:
    parts = [_COUNT.pack(len(entries))]
    for group, blob in entries.items():
        name = group.encode()
        parts += (_COUNT.pack(len(name)), name, _COUNT.pack(len(blob)), blob)
    return b"".join(parts)


def unpack_entries(data: bytes) -> dict[str, bytes]:
    try:
        (count,) = _COUNT.unpack_from(data, 0)
        at = _COUNT.size
        entries: dict[str, bytes] = {}
        for _ in range(count):
            (size,) = _COUNT.unpack_from(data, at)
            at += _COUNT.size
            name = data[at:at + size].decode()
            at += size
            (size,) = _COUNT.unpack_from(data, at)
            at += _COUNT.size
            if at + size > len(data):
                raise CorruptShardState(f"entry {name!r} runs past the end of the shard value")
            entries[name] = data[at:at + size]
            at += size
    except (struct.error, UnicodeDecodeError) as exc:
        raise CorruptShardState(f"shard value does not follow the layout: {exc}") from exc
    if at != len(data):
        raise CorruptShardState(f"{len(data) - at} bytes left over after {count} entries")
    return entries


def bucket_of(group: str) -> int:
    """The BUCKET_MAP bucket of a group: CRC-32 of its UTF-8 id, the same in every process."""
    return zlib.crc32(group.encode()) % BUCKETS_PER_SHARD


def shard_column(group: Column, monitor_key: str, shards: int) -> Column:
    """The state key of each row: one of `shards` Murmur3 buckets of the group id (stable
    across Spark versions and restarts), or MONITOR_SHARD for the monitor's rows."""
    return (F.when(group == F.lit(monitor_key), F.lit(MONITOR_SHARD))
            .otherwise(F.pmod(F.hash(group), F.lit(shards))))
