"""Malformed input: the decoder raises DecodeError (with a reason) and nothing else."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from tests.support.records_support import serializer_vectors
from coordinator.errors import DecodeError, UnknownRecordType, UnsupportedVersion
from coordinator.records import decode, encode
from coordinator.records.layouts import VALUES

# every 4th serializer record with a value: all types, versions and cases are represented
SAMPLE = [v for v in serializer_vectors() if not v["tombstone"]][::4]
GOOD_KEY = encode({"type": 1, "key": {"group": "g", "topic": "t", "partition": 0}, "value": None})[0]
GROUP_KEY = encode({"type": 2, "key": {"group": "g"}, "value": None})[0]


def _vector_bytes(vec):
    return bytes.fromhex(vec["key_hex"]), bytes.fromhex(vec["value_hex"])


def _may_fit_an_older_layout(vec) -> bool:
    return len(VALUES[vec["type"]][vec["value_version"]]) > 1


def test_truncation_at_every_byte_raises_decode_error():
    checked = 0
    for vec in SAMPLE:
        key, value = _vector_bytes(vec)
        for cut in range(len(key)):
            with pytest.raises(DecodeError):
                decode(key[:cut], value)
            checked += 1
        for cut in range(len(value)):
            try:
                rec = decode(key, value[:cut])
            except DecodeError as exc:
                assert exc.reason
            else:
                # a 4.1+ record cut short can be a complete record of the older layout that
                # shares its version number (e.g. type 11 without MetadataHash); nothing else may parse
                assert _may_fit_an_older_layout(vec), (vec["type"], cut)
                assert encode(rec) == (key, value[:cut])
            checked += 1
    assert checked > 10_000


@settings(max_examples=200, deadline=None)
@given(key=st.binary(max_size=40), value=st.none() | st.binary(max_size=80))
def test_random_bytes_raise_only_decode_error(key, value):
    try:
        rec = decode(key, value)
    except DecodeError as exc:
        assert isinstance(exc.reason, str) and exc.reason
    else:
        encode(rec)  # whatever decodes is a valid record


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_mutated_vectors_raise_only_decode_error(data):
    vec = data.draw(st.sampled_from(SAMPLE))
    key, value = _vector_bytes(vec)
    raw = bytearray(value)
    for _ in range(data.draw(st.integers(1, 4))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    tail = data.draw(st.binary(max_size=4))
    try:
        rec = decode(key, bytes(raw) + tail)
    except DecodeError:
        return
    encode(rec)


@settings(max_examples=200, deadline=None)
@given(type_=st.integers(25, 32767) | st.integers(-32768, -1), body=st.binary(max_size=20))
def test_unknown_types_raise_unknown_record_type(type_, body):
    with pytest.raises(UnknownRecordType) as err:
        decode(type_.to_bytes(2, "big", signed=True) + body, b"\x00\x00")
    assert err.value.record_type == type_ and err.value.reason == "unknown_type"


@pytest.mark.parametrize("t,version", [(1, 5), (1, -1), (2, 5), (3, 1), (8, -1), (23, 7)])
def test_unknown_value_versions_raise_unsupported_version(t, version):
    key = GOOD_KEY if t == 1 else (GROUP_KEY if t == 2 else encode(
        {"type": t, "key": {"group_id": "g", **({"member_id": "m"} if t == 8 else {})}, "value": None})[0])
    with pytest.raises(UnsupportedVersion) as err:
        decode(key, version.to_bytes(2, "big", signed=True) + b"\x00" * 8)
    assert (err.value.record_type, err.value.value_version) == (t, version)
    assert err.value.reason == "unsupported_version"


@pytest.mark.parametrize("key_hex", ["00000001", "00000000"])
def test_control_record_keys_are_rejected(key_hex):
    for value in (None, bytes.fromhex("0000" "00000005")):
        with pytest.raises(DecodeError) as err:
            decode(bytes.fromhex(key_hex), value)
        assert err.value.reason == "control_record"


V3 = bytes.fromhex("0003" "0000000000000064" "ffffffff" "0000" "0000018579eff58c")


@pytest.mark.parametrize("key,value,reason", [
    (b"", None, "truncated"),
    (b"\x00", None, "truncated"),
    (GOOD_KEY + b"\x00", V3, "trailing_bytes"),
    (GOOD_KEY, b"\x00", "truncated"),
    (GOOD_KEY, b"", "truncated"),
    # v4 value: one byte after the (empty) tagged-field section
    (GOOD_KEY, bytes.fromhex("0004" "0000000000000001" "ffffffff" "01" "0000000000000002" "00" "00"),
     "trailing_bytes"),
    # v4 value: the metadata length varint never ends
    (GOOD_KEY, bytes.fromhex("0004" "0000000000000001" "ffffffff" "ffffffffff0f"), "varint_overflow"),
    # metadata declares 0x7fff bytes but the buffer has 8 left
    (GOOD_KEY, bytes.fromhex("0003" "0000000000000064" "ffffffff" "7fff" "0000018579eff58c"), "truncated"),
    (GOOD_KEY, bytes.fromhex("0003" "0000000000000064" "ffffffff" "fffe" "0000018579eff58c"), "negative_length"),
    (GOOD_KEY, bytes.fromhex("0003" "0000000000000064" "ffffffff" "ffff" "0000018579eff58c"), "null_not_allowed"),
    (GOOD_KEY, bytes.fromhex("0003" "0000000000000064" "ffffffff" "0002" "c328" "0000018579eff58c"), "invalid_utf8"),
    (bytes.fromhex("0001" "0001" "ff" "0001" "74" "00000000"), None, "invalid_utf8"),
    # group metadata member with a 2 GiB subscription: must fail without allocating it
    (GROUP_KEY, bytes.fromhex("0000" "0001" "63" "00000001" "ffff" "ffff" "00000001" "0001" "6d"
                              "0001" "63" "0001" "68" "00002710" "7fffffff"), "truncated"),
    # a 2^31-element array claimed in a 20-byte value
    (GROUP_KEY, bytes.fromhex("0000" "0001" "63" "00000001" "ffff" "ffff" "7fffffff"), "truncated"),
    ("0001", None, "not_bytes"),
    (None, None, "not_bytes"),
])
def test_malformed_inputs_have_specific_reasons(key, value, reason):
    with pytest.raises(DecodeError) as err:
        decode(key, value)
    assert err.value.reason == reason


@pytest.mark.parametrize("tags,ok", [
    ("01" "05" "01aa", True),
    ("02" "05" "01aa" "06" "01bb", True),
    ("02" "05" "01aa" "05" "01bb", False),   # duplicate
    ("02" "06" "01aa" "05" "01bb", False),   # descending
])
def test_tags_must_be_strictly_ascending(tags, ok):
    key = encode({"type": 3, "key": {"group_id": "g"}, "value": None})[0]
    value = bytes.fromhex("0000" "00000007" + tags)
    if ok:
        assert encode(decode(key, value)) == (key, value)
    else:
        with pytest.raises(DecodeError) as err:
            decode(key, value)
        assert err.value.reason == "tags_out_of_order"


def test_known_tag_with_a_payload_of_the_wrong_shape_is_kept_as_unknown():
    # a 4-byte payload under type 6's tag 0 (AssignmentTimestamp is an int64): written by a
    # release that did not know the tag, so it must survive untouched
    key = encode({"type": 6, "key": {"group_id": "g"}, "value": None})[0]
    value = bytes.fromhex("0000" "00000003" "01" "00" "04" "01020304")
    rec = decode(key, value)
    assert rec.value == {"version": 0, "assignment_epoch": 3,
                         "unknown_tagged_fields": [{"tag": 0, "data": "01020304"}]}
    assert encode(rec) == (key, value)


def test_trailing_bytes_after_a_non_flexible_value_are_a_warning():
    # forward compatibility: accepted with a warning; the vectors' malformed values are all truncations, which raise
    rec = decode(GOOD_KEY, V3 + b"\xde\xad")
    assert rec.value["offset"] == 100 and rec.warnings == ("trailing_bytes:2",)
    assert encode(rec) == (GOOD_KEY, V3 + b"\xde\xad")
    assert encode(rec.to_dict()) == (GOOD_KEY, V3)
    assert decode(GOOD_KEY, V3).warnings == ()


def test_unexpected_internal_failures_are_wrapped(monkeypatch):
    import coordinator.records.codec as codec

    def boom(*_args):
        raise KeyError("bug")
    monkeypatch.setattr(codec, "_decode_value", boom)
    with pytest.raises(DecodeError) as err:
        decode(GROUP_KEY, b"\x00\x03")
    assert err.value.reason == "internal_error"


def test_known_tag_in_non_canonical_form_is_kept_verbatim():
    # ClassicMemberMetadata (type 5, tag 0) with presence marker 2 instead of 1: readable, but
    # writing it back would change the bytes, so it stays an unknown tag and round-trips
    key = encode({"type": 5, "key": {"group_id": "g", "member_id": "m"}, "value": None})[0]
    body = "0000" "00" "00" "0263" "0268" "01" "00" "000003e8" "00"
    tagged = body + "01" "00" "07" "{marker}" "00007530" "01" "00"
    ok = bytes.fromhex(tagged.format(marker="01"))
    odd = bytes.fromhex(tagged.format(marker="02"))
    assert decode(key, ok).value["classic_member_metadata"] == {"session_timeout_ms": 30000,
                                                                 "supported_protocols": []}
    rec = decode(key, odd)
    assert "classic_member_metadata" not in rec.value
    assert rec.value["unknown_tagged_fields"] == [{"tag": 0, "data": "02000075300100"}]
    assert encode(rec) == (key, odd)
