"""compact_json writes what json.dumps(separators=(",", ":"), ensure_ascii=False) writes for
the values the job keeps and sends, and reads what it wrote, so state written before reads the
same."""
from __future__ import annotations

import json

import pytest

from coordinator import compact_json


def _reference(value) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


@pytest.mark.parametrize("value", [
    {"group": "orders-🙂", "offsets": [["t", 0, [42, -1, "", 1_763_000_000_000, None]]],
     "members": {"m-1": {"assigned": {"t": [0, 1]}, "rack": None}}, "ok": True},
    {"lag_seconds": 0.1, "big": 1e21, "neg": -3.25},
    [9_223_372_036_854_775_807, -9_223_372_036_854_775_808, "quote \" and \\ and \n"],
])
def test_same_bytes_as_the_standard_library(value):
    assert compact_json.dumps_bytes(value) == _reference(value)
    assert compact_json.loads(compact_json.dumps(value)) == json.loads(_reference(value))


def test_tiny_floats_differ_only_in_how_the_exponent_is_written():
    value = {"rate": 1e-07}
    assert compact_json.dumps(value) == '{"rate":1e-7}' and _reference(value) == b'{"rate":1e-07}'
    assert compact_json.loads(compact_json.dumps(value)) == value


def test_integer_keys_become_strings_as_in_the_standard_library():
    assert compact_json.dumps({3: "a", "b": 1}) == '{"3":"a","b":1}'


def test_values_beyond_64_bits_fall_back_to_the_standard_library():
    assert compact_json.dumps({"n": 2 ** 70}) == '{"n":%d}' % 2 ** 70
