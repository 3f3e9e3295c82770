"""The state stage's per-shard value: groups' state bytes packed under their ids, read back
exactly, and a damaged value refused with a reason rather than misread."""
from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from streaming.pipeline.shard_state import CorruptShardState, pack_entries, unpack_entries

entries = st.dictionaries(st.text(min_size=0, max_size=40), st.binary(max_size=300), max_size=30)


@given(entries)
def test_entries_read_back_exactly_and_in_order(original):
    packed = pack_entries(original)
    back = unpack_entries(packed)
    assert back == original
    assert list(back) == list(original)


def test_group_ids_beyond_ascii_and_empty_states():
    original = {"paiements-été": b"", "注文": b"\x00\x01", "\u0000groupscope-monitor": b"{}"}
    assert unpack_entries(pack_entries(original)) == original


@given(entries.filter(bool), st.data())
def test_a_cut_value_is_refused(original, data):
    packed = pack_entries(original)
    cut = data.draw(st.integers(0, len(packed) - 1))
    with pytest.raises(CorruptShardState):
        unpack_entries(packed[:cut])


def test_trailing_bytes_are_refused():
    with pytest.raises(CorruptShardState, match="left over"):
        unpack_entries(pack_entries({"g": b"state"}) + b"\x00")
