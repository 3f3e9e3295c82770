"""Java ordering rules that Kafka's assignors depend on.

Kafka's assignors iterate `HashMap`s/`HashSet`s and sort with `String.compareTo`; where that
order changes a decision, a faithful port must reproduce it. Iteration order of a Java hash
table depends only on each key's `hashCode()`, the table capacity and, inside one bucket, the
order in which keys arrived (resizes keep that relative order), so it can be computed here
without simulating the table itself.
"""
from __future__ import annotations

import base64
from typing import Callable, Hashable, Iterable, TypeVar

K = TypeVar("K", bound=Hashable)

_LOAD_FACTOR = 0.75
_DEFAULT_CAPACITY = 16


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - 0x1_0000_0000 if value & 0x8000_0000 else value


def string_hash(text: str) -> int:
    """`String.hashCode()`: over UTF-16 code units, wrapping at 32 bits."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return _int32(h)


def string_key(text: str) -> bytes:
    """Sort key equal to `String.compareTo` (UTF-16 code unit order, not code point order)."""
    return text.encode("utf-16-be")


def topic_partition_hash(topic: str, partition: int) -> int:
    """`TopicPartition.hashCode()`."""
    return _int32(31 * (31 + partition) + string_hash(topic))


def _spread(h: int) -> int:
    h &= 0xFFFFFFFF
    return h ^ (h >> 16)


def _table_size_for(capacity: int) -> int:
    size = 1
    while size < capacity:
        size <<= 1
    return size


def hash_order(keys: Iterable[K], hash_fn: Callable[[K], int],
               initial_capacity: int = _DEFAULT_CAPACITY) -> list[K]:
    """Iteration order of a `HashMap`/`HashSet` after inserting `keys` in the given order.

    Assumes no bucket grows long enough to be turned into a tree (8+ colliding keys),
    which Kafka's small member/topic maps never reach.
    """
    distinct = list(dict.fromkeys(keys))
    capacity = _table_size_for(max(initial_capacity, 1))
    while len(distinct) > capacity * _LOAD_FACTOR:
        capacity <<= 1
    mask = capacity - 1
    position = {key: i for i, key in enumerate(distinct)}
    return sorted(distinct, key=lambda k: (_spread(hash_fn(k)) & mask, position[k]))


def string_hash_order(keys: Iterable[str], initial_capacity: int = _DEFAULT_CAPACITY) -> list[str]:
    return hash_order(keys, string_hash, initial_capacity)


class JavaHashSet:
    """Just enough of `java.util.HashSet` to answer "which element does iterator().next() give"."""

    def __init__(self, hash_fn: Callable[[Hashable], int]) -> None:
        self._hash_fn = hash_fn
        self._capacity = _DEFAULT_CAPACITY
        self._arrival: dict[Hashable, int] = {}
        self._counter = 0

    def add(self, item: Hashable) -> None:
        if item in self._arrival:
            return
        self._arrival[item] = self._counter
        self._counter += 1
        if len(self._arrival) > self._capacity * _LOAD_FACTOR:
            self._capacity <<= 1

    def discard(self, item: Hashable) -> None:
        self._arrival.pop(item, None)

    def __len__(self) -> int:
        return len(self._arrival)

    def __contains__(self, item: Hashable) -> bool:
        return item in self._arrival

    def first(self) -> Hashable:
        mask = self._capacity - 1
        return min(self._arrival, key=lambda k: (_spread(self._hash_fn(k)) & mask, self._arrival[k]))


def _signed64(value: int) -> int:
    return value - (1 << 64) if value & (1 << 63) else value


def uuid_bits(topic_id: str) -> tuple[int, int]:
    """(mostSignificantBits, leastSignificantBits) of a Kafka base64url topic id, as signed longs."""
    raw = base64.urlsafe_b64decode(topic_id + "=" * (-len(topic_id) % 4))
    if len(raw) != 16:
        raise ValueError(f"topic id {topic_id!r} is not a 16-byte base64url UUID")
    return (_signed64(int.from_bytes(raw[:8], "big")), _signed64(int.from_bytes(raw[8:], "big")))


def uuid_hash(topic_id: str) -> int:
    """`Uuid.hashCode()`."""
    msb, lsb = uuid_bits(topic_id)
    xor = (msb ^ lsb) & 0xFFFFFFFFFFFFFFFF
    return _int32((xor >> 32) ^ (xor & 0xFFFFFFFF))
