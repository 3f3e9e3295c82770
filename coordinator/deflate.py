"""Deflate, in zlib's and gzip's framing, from ISA-L (the `isal` package) when it is installed,
else from Python's zlib: the same functions and formats, and either reads what the other writes.

ISA-L's deflate at level 1 is about five times as fast as zlib's at level 1 on exposition text
(and compresses it a little better), and inflates about twice as fast; a render of 10^6
group-partitions deflates a gigabyte of text (docs/performance.md). `isal` is a dependency with
wheels for the usual platforms; zlib stands in where it cannot be installed.
"""
from __future__ import annotations

try:
    from isal import isal_zlib as deflate
except ImportError:  # no wheel for this platform: the same API, slower
    import zlib as deflate

__all__ = ["deflate"]
