"""Rendered text kept gzipped until a scrape sends it.

The lag part of a million group-partitions is about a gigabyte of text (seven lines per
group-partition at `metrics.granularity: partition`, each repeating its labels), and the job
kept it between scrapes: about 1 KB a group-partition, the largest share of the driver's memory
(docs/performance.md). The text is highly repetitive and compresses about 30 to 1 at a fast
level (coordinator.deflate: ISA-L's, else zlib's), and Prometheus asks for gzip anyway, so each
large family of it is compressed once when rendered and kept as a gzip member. A gzip scrape
sends the members as they are (a gzip stream may hold several members back to back, RFC 1952
section 2.2, and Prometheus's reader, like curl's and Python's, reads them all); a plain one
inflates them a slice at a time.
"""
from __future__ import annotations

from typing import Iterable, Iterator

from coordinator.deflate import deflate

LEVEL = 1  # fast (zlib's fastest; ISA-L's second): the text compresses about 30 to 1 even so
SLICE = 1 << 20  # compressed or inflated a megabyte at a time: no whole copy in memory
WORTH_IT = 1 << 16  # smaller text is kept as it is


def _compressor():
    return deflate.compressobj(LEVEL, deflate.DEFLATED, 16 + deflate.MAX_WBITS)


class GzipMember:
    """One gzip member holding a piece of exposition text."""

    __slots__ = ("data", "size")

    def __init__(self, text: bytes | memoryview) -> None:
        compressor = _compressor()
        view = memoryview(text)
        out = [compressor.compress(view[first:first + SLICE])
               for first in range(0, len(view), SLICE)]
        out.append(compressor.flush())
        self.data = b"".join(out)
        self.size = len(view)  # of the text

    def __len__(self) -> int:
        return self.size

    def plain(self) -> Iterator[bytes]:
        """The text again, at most a slice at a time."""
        inflater = deflate.decompressobj(16 + deflate.MAX_WBITS)
        for first in range(0, len(self.data), SLICE):
            pending = self.data[first:first + SLICE]
            while pending:
                out = inflater.decompress(pending, SLICE)
                pending = inflater.unconsumed_tail
                if out:
                    yield out
        rest = inflater.flush()
        if rest:
            yield rest


def kept(text: bytes | memoryview) -> bytes | memoryview | GzipMember:
    """`text` as a render keeps it: gzipped when large."""
    return GzipMember(text) if len(text) >= WORTH_IT else text


def plain(pieces: Iterable[bytes | memoryview | GzipMember]) -> Iterator[bytes | memoryview]:
    """`pieces` with every gzip member inflated."""
    for piece in pieces:
        if isinstance(piece, GzipMember):
            yield from piece.plain()
        else:
            yield piece


def gzipped(pieces: Iterable[bytes | memoryview | GzipMember]) -> Iterator[bytes]:
    """`pieces` as one gzip stream: plain pieces compressed as they come, into a member that
    ends where a kept member is sent as it is."""
    compressor, fed, sent = _compressor(), False, False
    for piece in pieces:
        if isinstance(piece, GzipMember):
            if fed:
                yield compressor.flush()
                compressor, fed = _compressor(), False
            yield piece.data
            sent = True
        elif piece:
            fed = True
            out = compressor.compress(piece)
            if out:
                yield out
    if fed or not sent:  # an empty scrape is still one (empty) gzip member
        yield compressor.flush()
