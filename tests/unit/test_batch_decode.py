"""The Arrow batch decoder must agree with `coordinator.records.decode` on every record."""
from __future__ import annotations

import base64
import numpy as np
import pyarrow as pa
import pytest
from tests.support.records_support import serializer_vectors
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.batch_decode import BATCH_SCHEMA, decode_batch, row_to_record_dict
from coordinator.records import DecodeError, decode, encode

SERIALIZER = serializer_vectors()


def _arrays(records, binary_type=pa.binary()):
    keys = pa.array([k for k, _ in records], binary_type)
    values = pa.array([v for _, v in records], binary_type)
    return keys, values


def assert_matches_decode(records, table: pa.Table) -> None:
    assert table.schema == BATCH_SCHEMA
    assert table.num_rows == len(records)
    for (key, value), row in zip(records, table.to_pylist()):
        assert row["is_tombstone"] == (value is None)
        try:
            expected = decode(key, value) if key is not None else None
        except DecodeError as exc:
            assert row["error"] is not None and row["error"].startswith(exc.reason + ":"), (key, value, row)
            assert row["type_name"] is None
            continue
        if key is None:
            assert row["error"].startswith("null_key")
            continue
        assert row["error"] is None
        assert row_to_record_dict(row) == expected.to_dict(), (key.hex(), value and value.hex(), row)
        if expected.type in (0, 1):
            assert (row["group"], row["topic"], row["partition"]) == tuple(expected.key.values())


def test_every_serializer_vector():
    records = [(bytes.fromhex(v["key_hex"]), bytes.fromhex(v["value_hex"]) if v["value_hex"] else None)
               for v in SERIALIZER]
    table = decode_batch(*_arrays(records))
    assert_matches_decode(records, table)
    # Types 3+ are described by record_json only; offset commits by the typed columns.
    rows = table.to_pylist()
    assert all(r["record_json"] is not None for r, (k, _) in zip(rows, records) if k[1] >= 2)
    assert any(r["record_json"] is None and r["type"] == 1 for r in rows)


def test_typed_columns_for_a_v4_commit_with_topic_id():
    uuid = bytes(range(1, 17))
    topic_id = base64.urlsafe_b64encode(uuid).decode().rstrip("=")
    key, value = encode({"type": 1, "key": {"group": "g", "topic": "t", "partition": 7},
                         "value": {"version": 4, "offset": 42, "leader_epoch": 3, "metadata": "m",
                                   "commit_timestamp": 1700000000000, "topic_id": topic_id}})
    row = decode_batch(*_arrays([(key, value)])).to_pylist()[0]
    assert row == {"type": 1, "type_name": "offset_commit", "group": "g", "topic": "t", "partition": 7,
                   "value_version": 4, "offset": 42, "leader_epoch": 3, "metadata": "m",
                   "commit_timestamp": 1700000000000, "expire_timestamp": None, "topic_id": topic_id,
                   "is_tombstone": False, "record_json": None, "error": None}


def test_bad_records_become_error_rows():
    good = encode({"type": 1, "key": {"group": "g", "topic": "t", "partition": 0},
                   "value": {"version": 3, "offset": 1, "leader_epoch": -1, "metadata": "",
                             "commit_timestamp": 5}})
    records = [good, (b"\x00\x01\x00\x00", None), (b"\x00", b"\x00\x03"), (good[0], good[1][:-3]),
               (b"\x00\xff\x00\x01g", None), (None, good[1]), (good[0], b"\x00\x09" + good[1][2:])]
    rows = decode_batch(*_arrays(records)).to_pylist()
    assert rows[0]["error"] is None and rows[0]["offset"] == 1
    assert [r["error"].split(":")[0] for r in rows[1:]] == [
        "control_record", "truncated", decode_error_reason(*records[3]), "unknown_type", "null_key",
        "unsupported_version"]
    assert rows[4]["type"] == 255 and rows[4]["type_name"] is None
    assert_matches_decode(records, decode_batch(*_arrays(records)))


def decode_error_reason(key, value) -> str:
    with pytest.raises(DecodeError) as info:
        decode(key, value)
    return info.value.reason


def test_sliced_chunked_and_large_binary_inputs():
    records = [encode({"type": 1, "key": {"group": f"g{i}", "topic": "t", "partition": i},
                       "value": {"version": 3, "offset": i, "leader_epoch": i, "metadata": "x" * i,
                                 "commit_timestamp": i}}) for i in range(10)]
    records.insert(4, (records[3][0], None))
    keys, values = _arrays(records)
    sliced = decode_batch(keys.slice(3, 6), values.slice(3, 6))
    assert_matches_decode(records[3:9], sliced)
    chunked = decode_batch(pa.chunked_array([keys[:5], keys[5:]]), pa.chunked_array([values[:5], values[5:]]))
    assert chunked.equals(decode_batch(keys, values))
    large = decode_batch(*_arrays(records, pa.large_binary()))
    assert large.equals(decode_batch(keys, values))
    assert decode_batch(pa.array([], pa.binary()), pa.array([], pa.binary())).num_rows == 0


# --- random batches --------------------------------------------------------------------------

text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20)
long_text = st.one_of(text, st.text(alphabet="ab€", min_size=100, max_size=300),
                      st.just("z" * 17000))  # 2- and 3-byte uvarint lengths in v4
int32 = st.integers(-2**31, 2**31 - 1)
int64 = st.integers(-2**63, 2**63 - 1)
uuid = st.binary(min_size=16, max_size=16).map(lambda b: base64.urlsafe_b64encode(b).decode().rstrip("="))


@st.composite
def offset_commit(draw):
    version = draw(st.integers(0, 4))
    value = {"version": version, "offset": draw(int64)}
    if version >= 3:
        value["leader_epoch"] = draw(int32)
    value["metadata"] = draw(long_text)
    value["commit_timestamp"] = draw(int64)
    if version == 1:
        value["expire_timestamp"] = draw(int64)
    if version == 4 and draw(st.booleans()):
        value["topic_id"] = draw(uuid)
    if version == 4 and draw(st.integers(0, 5)) == 0:
        value["unknown_tagged_fields"] = [{"tag": draw(st.integers(1, 30)), "data": draw(st.binary(max_size=4)).hex()}]
    record = {"type": draw(st.sampled_from([0, 1])),
              "key": {"group": draw(text), "topic": draw(text), "partition": draw(int32)},
              "value": None if draw(st.integers(0, 6)) == 0 else value}
    return encode(record)


serializer_record = st.sampled_from(SERIALIZER).map(
    lambda v: (bytes.fromhex(v["key_hex"]), bytes.fromhex(v["value_hex"]) if v["value_hex"] else None))


@st.composite
def damaged(draw, base):
    key, value = draw(base)
    kind = draw(st.sampled_from(["cut_key", "cut_value", "extra_value", "extra_key", "flip", "bad_utf8",
                                 "random"]))
    if kind == "cut_key":
        return key[:draw(st.integers(0, max(len(key) - 1, 0)))], value
    if kind == "cut_value" and value:
        return key, value[:draw(st.integers(0, len(value) - 1))]
    if kind == "extra_value" and value is not None:
        return key, value + draw(st.binary(min_size=1, max_size=3))
    if kind == "extra_key":
        return key + b"\x00", value
    if kind == "flip" and value:
        pos = draw(st.integers(0, len(value) - 1))
        return key, value[:pos] + bytes([draw(st.integers(0, 255))]) + value[pos + 1:]
    if kind == "bad_utf8" and len(key) > 6:
        return key[:6] + b"\xff" + key[7:], value
    return draw(st.binary(max_size=12)), draw(st.none() | st.binary(max_size=30))


record = st.one_of(offset_commit(), offset_commit(), offset_commit(), serializer_record,
                   damaged(offset_commit()), damaged(serializer_record))


@settings(max_examples=120, deadline=None)
@given(st.lists(record, min_size=1, max_size=40))
def test_random_batches_match_the_record_decoder(records):
    assert_matches_decode(records, decode_batch(*_arrays(records)))


def test_base64_of_topic_ids_matches_python():
    rng = np.random.default_rng(7)
    raws = [bytes(rng.integers(0, 256, 16, dtype=np.uint8)) for _ in range(50)]
    records = [encode({"type": 1, "key": {"group": "g", "topic": "t", "partition": 0},
                       "value": {"version": 4, "offset": 0, "leader_epoch": 0, "metadata": "",
                                 "commit_timestamp": 0,
                                 "topic_id": base64.urlsafe_b64encode(r).decode().rstrip("=")}})
               for r in raws]
    column = decode_batch(*_arrays(records)).column("topic_id").to_pylist()
    assert column == [base64.urlsafe_b64encode(r).decode().rstrip("=") for r in raws]
    assert all(row["record_json"] is None for row in decode_batch(*_arrays(records)).to_pylist())


def test_plain_offset_commits_take_the_vectorised_path(monkeypatch):
    def no_general_decoder(key, value):
        raise AssertionError("the general decoder was called for a plain offset commit")

    monkeypatch.setattr("coordinator.batch_decode.decode", no_general_decoder)
    records = []
    for version in range(5):
        value = {"version": version, "offset": 10 + version, "metadata": "é" * version,
                 "commit_timestamp": 1000 + version}
        if version >= 3:
            value["leader_epoch"] = version
        if version == 1:
            value["expire_timestamp"] = 99
        records.append(encode({"type": 1, "key": {"group": "grp", "topic": "tp", "partition": version},
                               "value": value}))
    records.append((records[0][0], None))
    records.append(encode({"type": 1, "key": {"group": "g", "topic": "t", "partition": 0},
                           "value": {"version": 4, "offset": 0, "leader_epoch": 0, "metadata": "m" * 200,
                                     "commit_timestamp": 0}}))
    rows = decode_batch(*_arrays(records)).to_pylist()
    assert [r["value_version"] for r in rows] == [0, 1, 2, 3, 4, None, 4]
    assert [r["leader_epoch"] for r in rows] == [None, None, None, 3, 4, None, 0]
    assert [r["expire_timestamp"] for r in rows] == [None, 99, None, None, None, None, None]
    assert rows[4]["metadata"] == "éééé" and rows[6]["metadata"] == "m" * 200
    assert rows[5]["is_tombstone"] and rows[5]["offset"] is None and rows[5]["group"] == "grp"
