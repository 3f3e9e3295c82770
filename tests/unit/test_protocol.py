"""Embedded group protocols: consumer (v0-v3), Connect (V0/V1/V2), StickyAssignor, Streams."""
from __future__ import annotations

import json
import struct

import pytest
from tests.support.records_support import DATA, real_vectors, snake_tree
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.errors import DecodeError
from coordinator.protocol import consumer
from coordinator.protocol import (
    Assignment,
    ConnectAssignment,
    ConnectorTasks,
    ConnectWorkerMetadata,
    StickyUserData,
    Subscription,
    TopicPartitions,
    decode_assignment,
    decode_connect_assignment,
    decode_connect_metadata,
    decode_sticky_user_data,
    decode_subscription,
    encode_assignment,
    encode_connect_assignment,
    encode_connect_metadata,
    encode_sticky_user_data,
    encode_subscription,
    group_partitions,
    is_streams_user_data,
)

KAFKA_VECTORS = [json.loads(line) for line in (DATA / "kafka-consumer-protocol.jsonl").read_text().splitlines()]
REAL_VECTORS = real_vectors()


# --- Kafka's own serializer output -------------------------------------------------------------

@pytest.mark.parametrize("vector", KAFKA_VECTORS,
                         ids=[f"{v['kind']}-v{v['version']}-{i}" for i, v in enumerate(KAFKA_VECTORS)])
def test_kafka_vectors_decode_to_fields_and_encode_back(vector):
    blob = bytes.fromhex(vector["hex"])
    decode, encode = ((decode_subscription, encode_subscription) if vector["kind"] == "subscription"
                      else (decode_assignment, encode_assignment))
    decoded = decode(blob)
    assert decoded.to_dict() == {"version": vector["version"], **snake_tree(vector["fields"])}
    assert encode(decoded) == blob
    assert encode(decoded.to_dict()) == blob
    assert json.loads(json.dumps(decoded.to_dict())) == decoded.to_dict()


def test_kafka_vectors_cover_every_version_and_kind():
    assert {(v["kind"], v["version"]) for v in KAFKA_VECTORS} == {
        (kind, version) for kind in ("subscription", "assignment") for version in range(4)}


def test_owned_partitions_grouping_matches_kafka_writer():
    # Kafka sorts OwnedPartitions by topic then partition, and keeps AssignedPartitions as given.
    pairs = [("b", 3), ("a", 2), ("b", 1), ("a", 0)]
    assert group_partitions(pairs) == (TopicPartitions("a", (0, 2)), TopicPartitions("b", (1, 3)))
    assert group_partitions(pairs, sort=False) == (TopicPartitions("b", (3, 1)), TopicPartitions("a", (2, 0)))
    sorted_vectors = [v for v in KAFKA_VECTORS if v["fields"].get("ownedPartitions")]
    assert sorted_vectors
    for vector in sorted_vectors:
        owned = decode_subscription(bytes.fromhex(vector["hex"])).owned_partitions
        pairs = [(tp.topic, p) for tp in owned for p in tp.partitions]
        assert group_partitions(pairs) == owned


# --- captured / third-party vectors ----------------------------------------------------------

def _real(record_type: str) -> list[dict]:
    return [v for v in REAL_VECTORS if v["record_type"] == record_type]


def _expected_embedded(expected: dict) -> dict:
    out = {k: v for k, v in expected.items() if k != "user_data_hex"}
    out["user_data"] = expected["user_data_hex"]
    return out


@pytest.mark.parametrize("vector", _real("ConsumerProtocolSubscription"), ids=lambda v: v["source"][-40:])
def test_real_subscriptions(vector):
    blob = bytes.fromhex(vector["hex"])
    decoded = decode_subscription(blob)
    expected = _expected_embedded(vector["expected"])
    if expected.get("owned_partitions") == "missing (truncated)":
        # sarama's groupMemberMetadataV1Bad: v1 header, no OwnedPartitions. Kafka's Java reader throws;
        # groupscope reads it with the default and flags it.
        expected["owned_partitions"] = []
        assert decoded.truncated
        assert encode_subscription(decoded) == blob + b"\x00\x00\x00\x00"
    else:
        assert not decoded.truncated
        assert encode_subscription(decoded) == blob
    assert decoded.to_dict() == expected


@pytest.mark.parametrize("vector", _real("ConsumerProtocolAssignment"), ids=lambda v: v["source"][-40:])
def test_real_assignments(vector):
    blob = bytes.fromhex(vector["hex"])
    decoded = decode_assignment(blob)
    assert decoded.to_dict() == _expected_embedded(vector["expected"])
    assert encode_assignment(decoded) == blob


def test_real_group_metadata_members_embedded_blobs():
    members = [m for v in _real("GroupMetadataValue") for m in v["expected"].get("members", [])
               if "subscription_hex" in m and "assignment_hex" in m]
    assert len(members) >= 5
    for member in members:
        sub = bytes.fromhex(member["subscription_hex"])
        asg = bytes.fromhex(member["assignment_hex"])
        assert decode_subscription(sub).to_dict() == {"version": 1, "topics": [member_topic(asg)],
                                                      "user_data": "", "owned_partitions": []}
        assert encode_subscription(decode_subscription(sub)) == sub
        assert encode_assignment(decode_assignment(asg)) == asg


def member_topic(assignment: bytes) -> str:
    (topic,) = {tp.topic for tp in decode_assignment(assignment).assigned_partitions}
    return topic


def test_burrow_truncated_v1_subscription_inside_v3_group():
    # Burrow's v3 fixture: member subscription 0001 00000001 0006 "topic1" 00000000, no owned partitions.
    blob = bytes.fromhex("0001000000010006746f7069633100000000")
    decoded = decode_subscription(blob)
    assert decoded.to_dict() == {"version": 1, "topics": ["topic1"], "user_data": "", "owned_partitions": []}
    assert decoded.truncated


# --- leniency --------------------------------------------------------------------------------

def test_zero_length_blobs_are_nothing():
    sub, asg = decode_subscription(b""), decode_assignment(b"")
    assert sub.to_dict() == {"version": None, "topics": [], "user_data": None}
    assert asg.to_dict() == {"version": None, "assigned_partitions": [], "user_data": None}
    assert encode_subscription(sub) == b"" and encode_assignment(asg.to_dict()) == b""


def test_newer_version_is_read_as_v3_and_keeps_trailing_bytes():
    v3 = Subscription(3, ("t",), b"\x01", (TopicPartitions("t", (0,)),), 7, "r1")
    extra = b"\xca\xfe\xba\xbe"
    blob = struct.pack(">h", 9) + encode_subscription(v3)[2:] + extra
    decoded = decode_subscription(blob)
    assert decoded.to_dict() == {**v3.to_dict(), "version": 9}
    assert decoded.trailing == extra
    assert encode_subscription(decoded) == blob

    asg_blob = struct.pack(">h", 5) + encode_assignment(Assignment(3, (TopicPartitions("t", (1, 2)),), None))[2:] + extra
    assert decode_assignment(asg_blob).to_dict() == {
        "version": 5, "assigned_partitions": [{"topic": "t", "partitions": [1, 2]}], "user_data": None}
    assert encode_assignment(decode_assignment(asg_blob)) == asg_blob


def test_missing_trailing_fields_take_defaults():
    full = encode_subscription(Subscription(3, ("a", "b"), b"xy", (TopicPartitions("a", (1,)),), 12, "rack"))
    no_rack = full[:-len(b"\x00\x04rack")]
    assert decode_subscription(no_rack).to_dict()["rack_id"] is None
    only_topics = encode_subscription(Subscription(0, ("a", "b")))[:-4]  # drop the user-data length
    decoded = decode_subscription(struct.pack(">h", 3) + only_topics[2:])
    assert decoded.truncated
    assert decoded.to_dict() == {"version": 3, "topics": ["a", "b"], "user_data": None,
                                 "owned_partitions": [], "generation_id": -1, "rack_id": None}
    asg = encode_assignment(Assignment(0, (TopicPartitions("a", (1,)),), None))[:-4]
    assert decode_assignment(asg).to_dict()["user_data"] is None


@pytest.mark.parametrize("blob, reason", [
    (b"\x00", "malformed"),                       # half a version
    (b"\xff\xff\x00\x00\x00\x00", "unsupported_version"),
    (b"\x00\x00", "malformed"),                   # topics missing entirely
    (b"\x00\x00\xff\xff\xff\xff", "malformed"),   # null topics array
    (b"\x00\x00\x00\x00\x00\x01\x00\x05ab", "malformed"),  # topic cut in the middle
    (b"\x00\x00\x00\x00\x00\x01\x00\x02\xc3\x28\xff\xff\xff\xff", "malformed"),  # invalid UTF-8
    (b"\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff\xff\xff", "malformed"),  # absurd owned count
])
def test_malformed_subscriptions_raise_decode_error(blob, reason):
    with pytest.raises(DecodeError) as info:
        decode_subscription(blob)
    assert info.value.reason == reason


# --- property tests --------------------------------------------------------------------------

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
int32s = st.integers(-2**31, 2**31 - 1)
topic_partitions = st.builds(TopicPartitions, names, st.lists(int32s, max_size=6).map(tuple))
user_data = st.none() | st.binary(max_size=20)


@st.composite
def subscriptions(draw):
    version = draw(st.integers(0, 3))
    return Subscription(
        version, tuple(draw(st.lists(names, max_size=5))), draw(user_data),
        tuple(draw(st.lists(topic_partitions, max_size=4))) if version >= 1 else (),
        draw(int32s) if version >= 2 else -1,
        draw(st.none() | names) if version >= 3 else None)


assignments = st.builds(Assignment, st.integers(0, 3), st.lists(topic_partitions, max_size=4).map(tuple), user_data)


@settings(max_examples=200)
@given(subscriptions())
def test_subscription_round_trip(sub):
    blob = encode_subscription(sub)
    assert decode_subscription(blob) == sub
    assert encode_subscription(decode_subscription(blob).to_dict()) == blob


@settings(max_examples=200)
@given(assignments)
def test_assignment_round_trip(asg):
    blob = encode_assignment(asg)
    assert decode_assignment(blob) == asg
    assert encode_assignment(decode_assignment(blob).to_dict()) == blob


def _same_as_careful_reader(blob: bytes) -> None:
    """The straight-line fast path, when it accepts a blob, must agree with the careful reader."""
    for plain, careful in ((consumer._plain_subscription, consumer._careful_subscription),
                           (consumer._plain_assignment, consumer._careful_assignment)):
        try:
            fast = plain(blob)
        except consumer._NOT_PLAIN:
            continue
        assert fast == careful(blob)


def _decodes_or_decode_error(decode, blob, *args):
    try:
        decode(blob, *args)
    except DecodeError:
        pass


@settings(max_examples=150)
@given(subscriptions(), assignments, st.data())
def test_truncated_and_corrupted_blobs_only_raise_decode_error(sub, asg, data):
    for decode, blob in ((decode_subscription, encode_subscription(sub)),
                         (decode_assignment, encode_assignment(asg))):
        for cut in range(len(blob)):
            _decodes_or_decode_error(decode, blob[:cut])
            _same_as_careful_reader(blob[:cut])
        position = data.draw(st.integers(0, len(blob) - 1))
        corrupted = bytearray(blob)
        corrupted[position] = data.draw(st.integers(0, 255))
        _decodes_or_decode_error(decode, bytes(corrupted))
        _same_as_careful_reader(bytes(corrupted))


@settings(max_examples=200)
@given(st.binary(max_size=64))
def test_random_bytes_only_raise_decode_error(blob):
    _decodes_or_decode_error(decode_subscription, blob)
    _decodes_or_decode_error(decode_assignment, blob)
    for protocol in ("default", "compatible", "sessioned"):
        _decodes_or_decode_error(decode_connect_metadata, blob, protocol)
        _decodes_or_decode_error(decode_connect_assignment, blob, protocol)
    _decodes_or_decode_error(decode_sticky_user_data, blob)


# --- Kafka Connect ---------------------------------------------------------------------------

def _string(value: str) -> bytes:
    raw = value.encode()
    return struct.pack(">h", len(raw)) + raw


def test_connect_v0_bytes_by_hand():
    metadata = struct.pack(">h", 0) + _string("http://w1:8083/") + struct.pack(">q", 42)
    assert decode_connect_metadata(metadata, "default").to_dict() == {
        "version": 0, "url": "http://w1:8083/", "config_offset": 42}
    assignment = (struct.pack(">hh", 0, 0) + _string("worker-1") + _string("http://w1:8083/")
                  + struct.pack(">q", 42) + struct.pack(">i", 1) + _string("jdbc")
                  + struct.pack(">iii", 2, -1, 3))
    decoded = decode_connect_assignment(assignment, "default")
    assert decoded.to_dict() == {"version": 0, "error": 0, "leader": "worker-1", "leader_url": "http://w1:8083/",
                                 "config_offset": 42, "assignment": [{"connector": "jdbc", "tasks": [-1, 3]}]}
    assert encode_connect_assignment(decoded) == assignment
    assert encode_connect_metadata(decode_connect_metadata(metadata, "default")) == metadata


def test_connect_v1_truncated_and_nullable_fields():
    head = struct.pack(">hh", 1, 0) + _string("w2") + _string("http://w2/") + struct.pack(">q", 7)
    truncated = decode_connect_assignment(head, "compatible")
    assert truncated.to_dict() == {"version": 1, "error": 0, "leader": "w2", "leader_url": "http://w2/",
                                   "config_offset": 7, "assignment": None, "revoked": None, "scheduled_delay": 0}
    full = head + struct.pack(">i", -1) + struct.pack(">i", 1) + _string("s3") + struct.pack(">ii", 1, 0) \
        + struct.pack(">i", 5000)
    decoded = decode_connect_assignment(full, "sessioned")
    assert decoded.assignment is None
    assert decoded.revoked == (ConnectorTasks("s3", (0,)),)
    assert decoded.scheduled_delay == 5000
    assert encode_connect_assignment(decoded.to_dict()) == full
    # Worker metadata without the allocation field (a V1 blob cut after the config offset).
    meta = struct.pack(">h", 2) + _string("http://w2/") + struct.pack(">q", 7)
    assert decode_connect_metadata(meta, "sessioned").to_dict() == {
        "version": 2, "url": "http://w2/", "config_offset": 7, "allocation": None}
    with pytest.raises(DecodeError):
        decode_connect_assignment(head[:-3], "compatible")  # config offset cut: no default exists


def test_connect_protocol_name_selects_layout():
    v1 = ConnectAssignment(1, 0, "l", "u", 3, (ConnectorTasks("c", (-1, 0)),), (), 10, cooperative=True)
    blob = encode_connect_assignment(v1)
    assert decode_connect_assignment(blob, "compatible") == v1
    # Read with the eager layout, the same bytes end after `assignment`, the rest is ignored.
    eager = decode_connect_assignment(blob, "default")
    assert not eager.cooperative and eager.assignment == v1.assignment
    with pytest.raises(DecodeError) as info:
        decode_connect_assignment(struct.pack(">h", -1) + blob[2:], "compatible")
    assert info.value.reason == "unsupported_version"


connector_tasks = st.builds(ConnectorTasks, names, st.lists(st.integers(-1, 500), max_size=5).map(tuple))


@st.composite
def connect_assignments(draw, cooperative=None):
    coop = draw(st.booleans()) if cooperative is None else cooperative
    tasks = st.lists(connector_tasks, max_size=4).map(tuple)
    return ConnectAssignment(
        draw(st.integers(1, 2) if coop else st.just(0)), draw(st.integers(-1, 5)), draw(names), draw(names),
        draw(st.integers(-1, 2**63 - 1)), draw(st.none() | tasks) if coop else draw(tasks),
        draw(st.none() | tasks) if coop else None, draw(int32s) if coop else 0, cooperative=coop)


@settings(max_examples=150)
@given(connect_assignments())
def test_connect_assignment_round_trip(asg):
    protocol = draw_protocol(asg.cooperative)
    blob = encode_connect_assignment(asg)
    assert decode_connect_assignment(blob, protocol) == asg
    assert encode_connect_assignment(decode_connect_assignment(blob, protocol).to_dict()) == blob


@settings(max_examples=150)
@given(st.booleans(), names, st.integers(-1, 2**63 - 1), st.none() | connect_assignments(cooperative=True))
def test_connect_metadata_round_trip(cooperative, url, offset, allocation):
    meta = ConnectWorkerMetadata(1 if cooperative else 0, url, offset,
                                 allocation if cooperative else None, cooperative=cooperative)
    protocol = draw_protocol(cooperative)
    blob = encode_connect_metadata(meta)
    assert decode_connect_metadata(blob, protocol) == meta
    assert encode_connect_metadata(decode_connect_metadata(blob, protocol).to_dict()) == blob


def draw_protocol(cooperative: bool) -> str:
    return "sessioned" if cooperative else "default"


# --- StickyAssignor and Streams user data ----------------------------------------------------

def test_sticky_user_data_with_and_without_generation():
    previous = (TopicPartitions("t0", (0, 1)), TopicPartitions("t1", (2,)))
    v1 = encode_sticky_user_data(StickyUserData(previous, 5))
    assert decode_sticky_user_data(v1).to_dict() == {
        "previous_assignment": [{"topic": "t0", "partitions": [0, 1]}, {"topic": "t1", "partitions": [2]}],
        "generation": 5}
    v0 = v1[:-4]
    assert decode_sticky_user_data(v0) == StickyUserData(previous, None)
    assert encode_sticky_user_data(decode_sticky_user_data(v0).to_dict()) == v0
    assert decode_sticky_user_data(v1[:-2]) == StickyUserData(previous, None)  # Kafka falls back to v0
    with pytest.raises(DecodeError):
        decode_sticky_user_data(v0[:-1])


def test_sticky_user_data_from_kafka_assignor_vectors():
    lines = [json.loads(line) for line in (DATA / "kafka-assignors.jsonl").read_text().splitlines()]
    sticky = [line for line in lines if line["strategy"] == "sticky" and line.get("subscription_hex")
              and line.get("owned")]
    assert sticky
    checked = 0
    for line in sticky[:40]:
        for member, hex_blob in line["subscription_hex"].items():
            user = decode_subscription(bytes.fromhex(hex_blob)).user_data
            owned = line["owned"].get(member)
            if not user or owned is None:
                continue
            decoded = decode_sticky_user_data(user)
            assert sorted((tp.topic, p) for tp in decoded.previous_assignment for p in tp.partitions) == \
                sorted(map(tuple, owned))
            assert decoded.generation == line["generations"][member]
            checked += 1
    assert checked


def test_streams_user_data_is_recognised_not_decoded():
    info = struct.pack(">ii", 11, 11) + bytes(16)
    assert is_streams_user_data("stream", info)
    assert not is_streams_user_data("range", info)
    assert not is_streams_user_data("stream", struct.pack(">i", 12))
    assert not is_streams_user_data("stream", b"\x00\x00")
    assert not is_streams_user_data("stream", None)
    sub = decode_subscription(encode_subscription(Subscription(3, ("in",), info)))
    assert sub.user_data == info
