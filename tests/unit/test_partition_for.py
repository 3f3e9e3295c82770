"""partition_for against check values computed with Java's String.hashCode on OpenJDK 17."""
from __future__ import annotations

import pytest

from coordinator import partition_for
from coordinator.partitioning import java_string_hash


@pytest.mark.parametrize("group,hash_code,partition", [
    ("", 0, 0),
    ("Aa", 2112, 12),
    ("BB", 2112, 12),
    ("testgroup", -1172783827, 27),
    ("my-group", -1906497762, 12),
    ("console-consumer-12345", 158455506, 6),
    ("polygenelubricants", -2147483648, 0),
    ("grüße", 98768023, 23),
    ("\U0001F600", 1772899, 49),
    ("kafkesc-devcluster-group-id", -1180938146, 46),
    ("ivan-experimental-consumer", -131952696, 46),
])
def test_check_table(group, hash_code, partition):
    assert java_string_hash(group) == hash_code
    assert partition_for(group, 50) == partition
    assert partition_for(group) == partition


def test_other_partition_counts():
    # 2112 % 7 == 5; MIN_VALUE always maps to partition 0 whatever the count
    assert partition_for("Aa", 7) == 5
    assert partition_for("polygenelubricants", 7) == 0
    assert partition_for("testgroup", 1) == 0


@pytest.mark.parametrize("n", [0, -3])
def test_rejects_non_positive_partition_counts(n):
    with pytest.raises(ValueError):
        partition_for("g", n)
