"""Which `__consumer_offsets` partition holds a group: `abs(String.hashCode(group)) % partitions`,
as Kafka's `GroupCoordinatorService.partitionFor` computes it."""
from __future__ import annotations

_MIN_INT = -(1 << 31)


def java_string_hash(s: str) -> int:
    """Java's String.hashCode: over UTF-16 code units, wrapped to a signed 32-bit int."""
    units = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, num_partitions: int = 50) -> int:
    """Kafka's `Utils.abs(groupId.hashCode()) % numPartitions` (MIN_VALUE maps to 0)."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, got {num_partitions}")
    h = java_string_hash(group_id)
    return 0 if h == _MIN_INT else abs(h) % num_partitions
