"""Large rendered text is kept gzipped (streaming/exporter/gzip_member.py): a gzip response is
plain pieces compressed on the way and kept members sent as they are, one stream of several
members; a plain response inflates them. Both must give back exactly the text."""
from __future__ import annotations

import gzip
import random
import zlib

from streaming.exporter.gzip_member import SLICE, WORTH_IT, GzipMember, gzipped, kept, plain


def _text(lines: int, seed: int) -> bytes:
    rng = random.Random(seed)
    return b"".join(b'kafka_consumergroup_lag{group="g%d",topic="t",partition="%d"} %d\n'
                    % (rng.randrange(10**5), n, rng.randrange(10**9)) for n in range(lines))


def test_members_and_plain_pieces_make_one_stream_of_the_text() -> None:
    large, other = _text(60_000, 1), _text(40_000, 2)  # several megabytes each
    pieces = [b"# HELP a\n", kept(memoryview(large)), b"", b"# HELP b\n", kept(other), b"end\n"]
    assert isinstance(pieces[1], GzipMember) and len(pieces[1].data) < len(large) / 3
    whole = b"# HELP a\n" + large + b"# HELP b\n" + other + b"end\n"
    assert gzip.decompress(b"".join(gzipped(pieces))) == whole
    inflated = list(plain(pieces))
    assert b"".join(inflated) == whole
    assert max(len(p) for p in inflated) <= SLICE  # never a whole family inflated at once


def test_small_text_is_kept_as_it_is_and_an_empty_scrape_is_valid_gzip() -> None:
    small = b"x 1\n" * 10
    assert len(small) < WORTH_IT and kept(small) is small
    assert gzip.decompress(b"".join(gzipped([]))) == b""
    assert zlib.decompress(b"".join(gzipped([kept(_text(5_000, 3))])), 16 + zlib.MAX_WBITS) \
        == _text(5_000, 3)
