"""The codec against the bytes a real Kafka 4.4 broker writes into `__consumer_offsets` for a
classic group and for a KIP-848 group subscribed by a regular expression: every record of theirs
decodes, encodes back to the same bytes, and carries what the clients did. Share and streams
groups' records are checked the same way in tests/broker/test_share_streams_groups.py; the table
of what Kafka 4.4 can write is docs/records.md."""
from __future__ import annotations

import time
import uuid

from tests.support.client_harness import ClientHarness, HarnessConfig
from tests.support.kafka_broker import create_topic
from tests.support.offsets_log import decoded_by_type, group_records, values
from tests.support.waiting import until

PARTITIONS = 3


def test_classic_and_regex_groups_records_decode_as_kafka_wrote_them(broker, tmp_path) -> None:
    tag = uuid.uuid4().hex[:8]
    topic, regex = f"real-{tag}-in", f"real-{tag}-.*"
    classic, modern = f"real-classic-{tag}", f"real-regex-{tag}"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    started_ms = time.time() * 1000
    harness = ClientHarness(HarnessConfig(broker.bootstrap, topic, classic, auto_commit_ms=500),
                            tmp_path / "harness.log")
    try:
        harness.add("c1")
        harness.add("k1", group=modern, protocol="consumer", regex=regex)

        def committed() -> dict[int, list]:
            by_type = decoded_by_type(group_records(broker.bootstrap, {classic, modern}))
            groups = {r.key["group"] for r in by_type.get(1, ())}
            return by_type if groups == {classic, modern} else {}

        until("both groups' offset commits in __consumer_offsets", committed, 60, 1.0)
    finally:
        harness.close()  # both members leave: Kafka writes their tombstones
    ended_ms = time.time() * 1000
    by_type = decoded_by_type(group_records(broker.bootstrap, {classic, modern}))

    # Types a classic group and a KIP-848 group write; 4 (ConsumerGroupPartitionMetadata) Kafka
    # 4.4 writes only as a tombstone of an older layout's record.
    assert sorted(by_type) == [1, 2, 3, 5, 6, 7, 8, 16]

    commits = values(by_type, 1)
    assert {(r.key["group"], r.key["topic"], r.key["partition"]) for r in by_type[1]} == \
        {(g, topic, p) for g in (classic, modern) for p in range(PARTITIONS)}
    assert all(v["version"] == 4 for v in commits)  # OffsetCommitValue v4: the topic id, 4.4+
    assert len({v["topic_id"] for v in commits}) == 1 and commits[0]["topic_id"]
    assert all(started_ms <= v["commit_timestamp"] <= ended_ms for v in commits)
    topic_id = commits[0]["topic_id"]

    stable = [v for v in values(by_type, 2) if v["members"]]
    assert stable and all(v["protocol_type"] == "consumer" and v["protocol"] == "range"
                          for v in stable)
    member = stable[-1]["members"][0]
    assert member["client_id"] == "c1" and stable[-1]["leader"] == member["member_id"]
    assert member["subscription_decoded"]["topics"] == [topic]
    assert sorted(p for t in member["assignment_decoded"]["assigned_partitions"]
                  for p in t["partitions"]) == list(range(PARTITIONS))

    assert all(r.key["group_id"] == modern for t in (3, 5, 6, 7, 8, 16) for r in by_type[t])
    epochs = [v["epoch"] for v in values(by_type, 3)]
    assert epochs == sorted(epochs) and epochs[0] >= 1
    assert any(v.get("metadata_hash") for v in values(by_type, 3))  # a tagged field, 4.1+
    (joined,) = values(by_type, 5)
    assert (joined["client_id"], joined["subscribed_topic_regex"], joined["subscribed_topic_names"]) \
        == ("k1", regex, [])
    # KIP-1263: the coordinator dates each target assignment it computes.
    dated = [v for v in values(by_type, 6) if "assignment_timestamp" in v]
    assert dated and all(started_ms <= v["assignment_timestamp"] <= ended_ms for v in dated)
    assert {v["assignment_epoch"] for v in dated} <= set(epochs)
    assert [t["partitions"] for v in values(by_type, 7) for t in v["topic_partitions"]
            if t["topic_id"] == topic_id] == [list(range(PARTITIONS))]
    # KIP-1251: each assigned partition carries the epoch it was assigned at.
    held = [(v["member_epoch"], t) for v in values(by_type, 8) for t in v["assigned_partitions"]]
    assert held and all(t["topic_id"] == topic_id for _, t in held)
    assert all(len(t["assignment_epochs"]) == len(t["partitions"])
               and max(t["assignment_epochs"]) <= epoch for epoch, t in held)
    (resolved,) = values(by_type, 16)
    assert by_type[16][0].key["regular_expression"] == regex and resolved["topics"] == [topic]
    # The member left: its records, and the regular expression no one uses now, are tombstoned.
    for record_type in (5, 7, 8, 16):
        assert by_type[record_type][-1].value is None, record_type
