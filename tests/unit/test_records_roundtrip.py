"""Property tests: for every record type, value version and layout, random canonical dicts
survive encode -> decode unchanged, and the bytes survive decode -> encode unchanged."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from tests.support.records_support import without_embedded
from coordinator.records import DecodeError, EncodeError, Record, decode, encode
from coordinator.records.layouts import KEYS, TYPE_NAMES, VALUES
from coordinator.records.schema import (Array, Bool, Bytes, Int, Nullable, String, Struct, Uuid,
                                        uuid_to_str)

_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


def strategy(t, flexible: bool, tagged: bool = False):
    """A hypothesis strategy for canonical values of schema type `t`."""
    if isinstance(t, Int):
        lo, hi = (0, 0xFFFF) if t.unsigned else (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1)
        return st.integers(lo, hi)
    if isinstance(t, Bool):
        return st.booleans()
    if isinstance(t, Uuid):
        return st.binary(min_size=16, max_size=16).map(uuid_to_str)
    if isinstance(t, String):
        return st.none() | _TEXT if t.nullable else _TEXT
    if isinstance(t, Bytes):
        s = st.binary(max_size=12).map(bytes.hex)
        return st.none() | s if t.nullable else s
    if isinstance(t, Array):
        s = st.lists(strategy(t.elem, flexible), max_size=2)
        return st.none() | s if t.nullable else s
    if isinstance(t, Nullable):
        return st.none() | strategy(t.struct, flexible, tagged)
    if isinstance(t, Struct):
        return struct_strategy(t, flexible)
    raise TypeError(t)


@st.composite
def struct_strategy(draw, t: Struct, flexible: bool, top_level_version: int | None = None):
    d = {} if top_level_version is None else {"version": top_level_version}
    for name, ft in t.fields:
        d[name] = draw(strategy(ft, flexible))
    if not flexible:
        return d
    for tag in t.tags:
        if draw(st.booleans()):
            d[tag.name] = draw(strategy(tag.type, True, tagged=True))
    known = {tag.tag for tag in t.tags}
    unknown = draw(st.lists(st.integers(0, 600).filter(lambda n: n not in known), max_size=2, unique=True))
    if unknown:
        d["unknown_tagged_fields"] = [{"tag": n, "data": draw(st.binary(max_size=6)).hex()}
                                      for n in sorted(unknown)]
    return d


def _reads_whole(layout, value: bytes) -> bool:
    """Whether `layout` reads all of the value's bytes: the decoder then takes it."""
    try:
        return layout.codec.read_into(value, 2, {"version": 0}) == len(value)
    except DecodeError:
        return False


CASES = [(t, v, i) for t, versions in VALUES.items() for v, layouts in versions.items()
         for i in range(len(layouts))]


def _case_id(case) -> str:
    t, v, i = case
    label = VALUES[t][v][i].label
    return f"t{t}-v{v}" + (f"-{label}" if label else "")


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_canonical_records_round_trip(case, data):
    t, version, index = case
    layouts = VALUES[t][version]
    layout = layouts[index]
    key = data.draw(struct_strategy(KEYS[t].struct, False), label="key")
    value = data.draw(struct_strategy(layout.struct, layout.flexible, version), label="value")
    if t == 2 and data.draw(st.booleans()):
        value["protocol_type"] = "consumer"  # exercises the embedded-protocol path too
    canonical = {"type": t, "type_name": TYPE_NAMES[t], "key": key, "value": value}

    kb, vb = encode(canonical)
    if index > 0:
        # An older layout sharing a version number: realistic records never also fit a newer
        # layout, but random ones occasionally do; the decoder then (correctly) prefers the
        # newer, and its bytes again are the newer layout's.
        assume(not any(_reads_whole(newer, vb) for newer in layouts[:index]))
    rec = decode(kb, vb)
    assert encode(rec) == (kb, vb)
    assert rec.type == t and rec.type_name == TYPE_NAMES[t]
    assert rec.key == key
    assert without_embedded(rec.value) == value
    assert next(iter(rec.value)) == "version"
    assert without_embedded(rec.to_dict()["value"]) == value


@pytest.mark.parametrize("t", sorted(KEYS))
@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_tombstones_round_trip(t, data):
    key = data.draw(struct_strategy(KEYS[t].struct, False))
    kb, vb = encode(Record.from_dict({"type": t, "key": key, "value": None}))
    assert vb is None
    rec = decode(kb, None)
    assert rec.to_dict() == {"type": t, "type_name": TYPE_NAMES[t], "key": key, "value": None}


def test_every_type_of_the_spec_has_a_layout():
    assert set(KEYS) == set(VALUES) == set(range(25))
    assert set(VALUES[0]) == set(VALUES[1]) == set(VALUES[2]) == set(range(5))
    assert all(set(VALUES[t]) == {0} for t in range(3, 25))


def test_null_and_absent_tagged_fields_are_different_bytes():
    base = {"type": 8, "key": {"group_id": "g", "member_id": "m"},
            "value": {"version": 0, "member_epoch": 1, "previous_member_epoch": 0, "state": 0,
                      "assigned_partitions": [{"topic_id": "AQIDBAUGBwgJCgsMDQ4PEA", "partitions": [0]}],
                      "partitions_pending_revocation": []}}
    absent = encode(base)[1]
    base["value"]["assigned_partitions"][0]["assignment_epochs"] = None
    null = encode(base)[1]
    assert null != absent
    # Kafka's bytes for the same two records (Redpanda oracle vectors)
    assert absent.hex() == "0000000000010000000000020102030405060708090a0b0c0d0e0f100200000000000100"
    assert null.hex() == "0000000000010000000000020102030405060708090a0b0c0d0e0f100200000000010001000100"
    assert "assignment_epochs" not in decode(encode(base)[0], absent).value["assigned_partitions"][0]
    assert decode(encode(base)[0], null).value["assigned_partitions"][0]["assignment_epochs"] is None


def test_37_early_access_layouts_are_decoded_by_fallback():
    key = {"group_id": "g", "member_id": "m"}
    v37 = {"version": 0, "member_epoch": 5, "previous_member_epoch": 4, "target_member_epoch": 6,
           "assigned_partitions": [{"topic_id": "AQIDBAUGBwgJCgsMDQ4PEA", "partitions": [1, 2]}],
           "partitions_pending_revocation": [], "partitions_pending_assignment": [],
           "error": 0, "metadata_version": 0, "metadata_bytes": ""}
    kb, vb = encode({"type": 8, "key": key, "value": v37})
    assert decode(kb, vb).value == v37
    epoch37 = {"version": 0, "epoch": 3, "topics": []}
    kb, vb = encode({"type": 4, "key": {"group_id": "g"}, "value": epoch37})
    assert vb.hex() == "0000" "00000003" "01" "00"
    assert decode(kb, vb).value == epoch37


@pytest.mark.parametrize("mutate,match", [
    (lambda d: d["value"].pop("offset"), "missing field 'offset'"),
    (lambda d: d["value"].update(bogus=1), "unexpected field"),
    (lambda d: d["value"].update(offset="12"), "integer"),
    (lambda d: d["value"].update(leader_epoch=1 << 31), "integer"),
    (lambda d: d["value"].update(topic_id="not-a-uuid"), "uuid"),
    (lambda d: d["value"].update(version=9), "unsupported value version"),
    (lambda d: d.update(type=99), "unknown record type"),
    (lambda d: d.update(type_name="group_metadata"), "type_name"),
    (lambda d: d["key"].update(group=None), "non-nullable"),
    (lambda d: d["value"].update(unknown_tagged_fields=[{"tag": 0, "data": "00"}]), "tag 0 given twice"),
    (lambda d: d["value"].update(unknown_tagged_fields=[{"tag": 7, "data": "zz"}]), "hex"),
])
def test_encode_rejects_invalid_canonical_dicts(mutate, match):
    d = {"type": 1, "type_name": "offset_commit", "key": {"group": "g", "topic": "t", "partition": 0},
         "value": {"version": 4, "offset": 1, "leader_epoch": -1, "metadata": "", "commit_timestamp": 2,
                   "topic_id": "AQIDBAUGBwgJCgsMDQ4PEA"}}
    encode(d)
    mutate(d)
    with pytest.raises(EncodeError, match=match):
        encode(d)
