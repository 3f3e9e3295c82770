"""coordinator.deflate (ISA-L's deflate, installed with groupscope) reads what Python's zlib
wrote and writes what it reads: group state in checkpoints written before it, and the gzip
members a scrape sends to readers that use zlib (Prometheus's Go reader, curl, Python's gzip)."""
from __future__ import annotations

import gzip
import zlib

from coordinator.deflate import deflate
from coordinator.state.group import GroupState
from streaming.exporter.gzip_member import GzipMember, gzipped, plain


def _state() -> GroupState:
    state = GroupState("orders-app", 50)
    state.updated_ms = 1_764_000_000_000
    state.positions = {7: 123_456}
    return state


def test_isal_is_what_groupscope_installs():
    assert deflate.__name__.endswith("isal_zlib")


def test_group_state_from_a_zlib_checkpoint_and_back():
    state = _state()
    written_before = zlib.compress(
        deflate.decompress(state.to_bytes()), 1)  # the same state as zlib wrote it
    assert GroupState.from_bytes(written_before).to_state() == state.to_state()
    assert zlib.decompress(state.to_bytes()) == deflate.decompress(written_before)


def test_kept_members_read_by_zlib_and_inflated_back():
    text = b"".join(b'kafka_consumergroup_lag{group="g%d",partition="%d"} %d\n' % (g, p, g * p)
                    for g in range(300) for p in range(50))
    member = GzipMember(text)
    assert gzip.decompress(member.data) == text
    assert b"".join(plain([member])) == text
    stream = b"".join(gzipped([b"# HELP x\n", member, b"x 1\n"]))
    assert gzip.decompress(stream) == b"# HELP x\n" + text + b"x 1\n"
