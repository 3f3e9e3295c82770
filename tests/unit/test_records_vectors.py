"""The record codec against Kafka's own serializer output and against bytes captured in the wild."""
from __future__ import annotations

import re

import pytest

from tests.support.records_support import (EMBEDDED_KEYS, expected_value, real_vectors, serializer_vectors, snake,
                              snake_tree, without_embedded)
from coordinator.records import DecodeError, Record, decode, encode
from coordinator.records.layouts import TYPE_NAMES

SERIALIZER = serializer_vectors()


def _id(i: int) -> str:
    v = SERIALIZER[i]
    return f"{i}-t{v['type']}-{v['kafka_branch']}-v{v['value_version']}-{v['case']}"


@pytest.mark.parametrize("i", range(len(SERIALIZER)), ids=_id)
def test_serializer_vector_decodes_to_kafka_fields_and_reencodes_exactly(i):
    vec = SERIALIZER[i]
    key = bytes.fromhex(vec["key_hex"])
    value = None if vec["value_hex"] is None else bytes.fromhex(vec["value_hex"])
    rec = decode(key, value)
    assert rec.type == vec["type"]
    assert rec.type_name == TYPE_NAMES[vec["type"]]
    assert rec.key == snake_tree(vec["fields"]["key"])
    assert without_embedded(rec.value) == expected_value(vec)
    if rec.value is not None:
        assert next(iter(rec.value)) == "version"
    assert encode(rec) == (key, value)
    assert encode(rec.to_dict()) == (key, value)
    assert Record.from_dict(rec.to_dict()) == rec


def test_serializer_vectors_cover_every_released_type_and_both_share_layouts():
    seen = {(v["type"], v["kafka_branch"]) for v in SERIALIZER}
    assert {t for t, _ in seen} == set(range(24)) - {18}
    for t in (11, 15):
        assert {(t, "4.0"), (t, "4.4")} <= seen


@pytest.mark.parametrize("t,branch,present,absent", [
    (11, "4.4", "metadata_hash", None), (11, "4.0", None, "metadata_hash"),
    (15, "4.4", "initializing_topics", None), (15, "4.0", None, "initializing_topics"),
])
def test_share_layouts_of_40_and_41plus_are_told_apart_by_the_bytes(t, branch, present, absent):
    vecs = [v for v in SERIALIZER if v["type"] == t and v["kafka_branch"] == branch and not v["tombstone"]]
    assert len(vecs) == 20
    for v in vecs:
        value = decode(bytes.fromhex(v["key_hex"]), bytes.fromhex(v["value_hex"])).value
        assert present is None or present in value
        assert absent is None or absent not in value


def _consumer_group_vectors():
    return [v for v in SERIALIZER if v["type"] == 2 and not v["tombstone"]
            and v["fields"]["value"]["protocolType"] == "consumer" and v.get("embedded")]


def test_group_metadata_members_carry_the_decoded_consumer_protocol():
    vecs = _consumer_group_vectors()
    assert len(vecs) > 20
    for vec in vecs:
        rec = decode(bytes.fromhex(vec["key_hex"]), bytes.fromhex(vec["value_hex"]))
        for emb in vec["embedded"]:
            member = rec.value["members"][emb["member_index"]]
            assert member["subscription_decoded"] == {"version": emb["subscription_version"],
                                                      **snake_tree(emb["subscription"])}
            assert member["assignment_decoded"] == {"version": emb["assignment_version"],
                                                    **snake_tree(emb["assignment"])}


def test_non_consumer_groups_get_no_decoded_protocol():
    vecs = [v for v in SERIALIZER if v["type"] == 2 and not v["tombstone"]
            and v["fields"]["value"]["protocolType"] != "consumer" and v["fields"]["value"]["members"]]
    assert vecs
    for vec in vecs:
        rec = decode(bytes.fromhex(vec["key_hex"]), bytes.fromhex(vec["value_hex"]))
        assert all(k not in m for m in rec.value["members"] for k in EMBEDDED_KEYS)


def test_encode_ignores_the_decoded_protocol_keys():
    vec = _consumer_group_vectors()[0]
    key, value = bytes.fromhex(vec["key_hex"]), bytes.fromhex(vec["value_hex"])
    d = decode(key, value).to_dict()
    d["value"]["members"][0]["subscription_decoded"] = {"version": 99, "topics": ["not-encoded"]}
    assert encode(d) == (key, value)


# --- real-vectors.jsonl -----------------------------------------------------------------------

REAL = [v for v in real_vectors() if not v["record_type"].startswith("ConsumerProtocol")]
# The vectors' notes mark these as not byte-exact Kafka output; a Kafka-conformant reader rejects them.
MALFORMED_MARKERS = ("NOT BYTE-EXACT", "Hand-written and TRUNCATED")
_TYPE_BY_NAME = {name: t for t, name in sorted(TYPE_NAMES.items(), reverse=True)}  # offset_commit -> 1
# tagged fields whose documented default the vector spells out although the bytes omit the tag
_TAG_DEFAULTS = {("metadata_hash", 0), ("assignment_timestamp", 0)}


def _record_type(vec: dict) -> int:
    return _TYPE_BY_NAME[snake(re.sub(r"(Key|Value)$", "", vec["record_type"]))]


def _key_for(t: int) -> bytes:
    key = {0: {"group": "g", "topic": "t", "partition": 0}, 1: {"group": "g", "topic": "t", "partition": 0},
           2: {"group": "g"}, 5: {"group_id": "g", "member_id": "m"}, 7: {"group_id": "g", "member_id": "m"},
           8: {"group_id": "g", "member_id": "m"}}.get(t, {"group_id": "g"})
    return encode({"type": t, "key": key, "value": None})[0]


def _burrow_partitions(expected: dict) -> dict:
    return expected.get("partitions", {k: v for k, v in expected.items() if isinstance(v, list)})


def _assert_matches(expected, got) -> None:
    """`expected` is the research notation: Kafka/Burrow names, `_hex` suffixes, defaults spelled out."""
    if isinstance(expected, list):
        assert len(expected) == len(got)
        for e, g in zip(expected, got):
            _assert_matches(e, g)
        return
    if not isinstance(expected, dict):
        assert expected == got
        return
    for k, v in expected.items():
        name = snake(k).removesuffix("_hex")
        if name == "tagged_fields":
            assert v == {} and "unknown_tagged_fields" not in got
        elif isinstance(v, str) and v.startswith("absent"):
            assert name not in got
        elif name not in got:
            assert (name, v) in _TAG_DEFAULTS, name
        elif name in ("subscription", "assignment") and isinstance(v, dict):
            decoded = got[f"{name}_decoded"]  # Burrow asserts the embedded protocol, in its own shape
            if "version" in v:
                assert decoded["version"] == v["version"]
            if name == "subscription":
                assert decoded["topics"] == v["topics"]
            else:
                assert {tp["topic"]: tp["partitions"] for tp in decoded["assigned_partitions"]} == \
                    _burrow_partitions(v)
        else:
            _assert_matches(v, got[name])


@pytest.mark.parametrize("vec", REAL, ids=[f"{i}-{v['record_type']}" for i, v in enumerate(REAL)])
def test_real_vector(vec):
    raw = bytes.fromhex(vec["hex"])
    if vec["record_type"].startswith("ControlRecordKey"):
        with pytest.raises(DecodeError) as err:
            decode(raw, None)
        assert err.value.reason == "control_record"
        return
    if vec["kind"] == "key":
        rec = decode(raw, None)
        assert rec.type == vec["version"]
        _assert_matches(vec["expected"], rec.key)
        assert encode(rec) == (raw, None)
        return
    key = _key_for(_record_type(vec))
    if any(marker in vec["notes"] for marker in MALFORMED_MARKERS):
        with pytest.raises(DecodeError) as err:
            decode(key, raw)
        assert err.value.reason == "truncated"
        return
    rec = decode(key, raw)
    assert rec.value["version"] == vec["version"]
    _assert_matches(vec["expected"], rec.value)
    assert encode(rec) == (key, raw)


def test_real_vectors_include_the_malformed_ones():
    assert sum(any(m in v["notes"] for m in MALFORMED_MARKERS) for v in REAL) == 2


def test_offset_commit_fast_path_agrees_with_the_schema_engine():
    from coordinator.records.codec import _OFFSETS, _decode  # the generic, table-driven path

    vecs = [v for v in SERIALIZER if v["type"] in (0, 1)]
    assert len(vecs) > 300
    for vec in vecs:
        key = bytes.fromhex(vec["key_hex"])
        value = None if vec["value_hex"] is None else bytes.fromhex(vec["value_hex"])
        assert decode(key, value) == _decode(key, value, _OFFSETS)


def test_records_pickle():
    import pickle

    vec = _consumer_group_vectors()[0]
    rec = decode(bytes.fromhex(vec["key_hex"]), bytes.fromhex(vec["value_hex"]))
    assert pickle.loads(pickle.dumps(rec)) == rec


def test_embedded_protocol_vectors_match_the_group_metadata_they_were_cut_from():
    vectors = real_vectors()
    embedded = [v for v in vectors if v["record_type"].startswith("ConsumerProtocol") and "(members[" in v["source"]]
    assert embedded
    for vec in embedded:
        parent_source, where = vec["source"].split(" (")
        index, field = re.fullmatch(r"members\[(\d+)\]\.(\w+)\)", where).groups()
        parent = next(v for v in vectors if v["source"] == parent_source)
        rec = decode(_key_for(2), bytes.fromhex(parent["hex"]))
        member = rec.value["members"][int(index)]
        assert member[field] == vec["hex"]
        _assert_matches(vec["expected"], member[f"{field}_decoded"])
