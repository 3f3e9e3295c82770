"""The lag part's text kept in blocks of lines, so that a render writes only what changed.

At 10^6 group-partitions the lag part is about a gigabyte of text, and writing it (Arrow's string
kernels, then deflate) was most of every render: about 2.2 CPU-s after each end-offset poll
(docs/performance.md). Between two renders most lines of a large estate are the same: an idle
group's committed offset, commit time and status do not move, nor does a family whose values
depend on nothing that changed. So each family's lines are cut into blocks of `BLOCK_LINES`, and
a block is written (and compressed) again only when one of its lines would differ: its values, or
its labels. A block's lines are known by a digest of what they are made of, so no copy of the
values is kept between renders. A family's blocks are served one after another (each large one a
gzip member of its own: streaming.exporter.gzip_member).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
from streaming.exporter.gzip_member import GzipMember, kept
from streaming.exporter.lag_render import ColumnFamily, IndexedNames, RowText

BLOCK_LINES = 1 << 15  # about 4 MB of text a block at partition granularity

Piece = bytes | memoryview | GzipMember


def _digest(*arrays: np.ndarray) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for array in arrays:
        h.update(np.ascontiguousarray(array).view(np.uint8))
    return h.digest()


@dataclass
class _Rendered:
    shape: tuple               # what every line shares: name, value type, the labels' make
    held: list                 # the objects `shape` names by identity, held so it stays theirs
    digests: list[bytes]       # per block: what its lines are made of
    pieces: list[Piece]        # per block: its text as kept


class LagBlocks:
    """Per family, the blocks of its last render (`render` replaces them)."""

    def __init__(self, block_lines: int = BLOCK_LINES) -> None:
        self.block_lines = block_lines
        self._rendered: dict[str, _Rendered] = {}
        self.written_lines = 0  # lines written by the last `start()`'s renders (for benchmarks)

    def start(self) -> None:
        """A new render begins: counts from here."""
        self.written_lines = 0

    def keep_only(self, names: set[str]) -> None:
        """Forget the families not named (no longer served)."""
        for name in list(self._rendered):
            if name not in names:
                del self._rendered[name]

    def render(self, family: ColumnFamily) -> tuple[Piece, ...]:
        """`family`'s text as blocks, each written again only when its lines changed."""
        shape, columns, held = _shape(family)
        n, size = len(family), self.block_lines
        starts = range(0, n, size)
        digests = [_digest(*(column[first:first + size] for column in columns))
                   for first in starts]
        before = self._rendered.get(family.name)
        same = before is not None and before.shape == shape
        pieces: list[Piece] = []
        for i, first in enumerate(starts):
            if same and i < len(before.digests) and before.digests[i] == digests[i]:
                pieces.append(before.pieces[i])
                continue
            pieces.append(kept(_block(family, first, min(n, first + size)).text()))
            self.written_lines += min(n, first + size) - first
        self._rendered[family.name] = _Rendered(shape, held, digests, pieces)
        return tuple(pieces)


def _shape(family: ColumnFamily) -> tuple[tuple, list[np.ndarray], list]:
    """What all of a family's lines share, the columns each line is made of, and the objects
    the first names by identity. A label text built for these rows (`prefix`; of some of its
    rows, `RowText`, known by their positions) and a table of names stand for their text by
    identity: the caller keeps them while the rows and names stay (lag_render.lag_families), so
    a render that builds them anew writes every block again."""
    values = np.asarray(family.values)
    shape: list = [family.exposed, family.floats, values.dtype.str]
    columns, held = [values], []
    prefix = family.prefix
    if isinstance(prefix, RowText):
        shape.append(("rows of", id(prefix.base)))
        if prefix.rows is not None:
            columns.append(prefix.rows)
        return tuple(shape), columns, [prefix.base]
    if prefix is not None:
        shape.append(("prefix", id(prefix)))
        return tuple(shape), columns, [prefix]
    for name, label in family.labels:
        if isinstance(label, str):
            shape.append((name, label))
        elif isinstance(label, IndexedNames):
            shape.append((name, id(label.table)))
            held.append(label.table)
            columns.append(np.asarray(label.index))
        else:
            shape.append((name, "int"))
            columns.append(np.asarray(label))
    return tuple(shape), columns, held


def _block(family: ColumnFamily, first: int, end: int) -> ColumnFamily:
    part = slice(first, end)
    labels = tuple((name, label if isinstance(label, str)
                    else IndexedNames(label.table, label.index[part])
                    if isinstance(label, IndexedNames) else label[part])
                   for name, label in family.labels)
    prefix = None if family.prefix is None else family.prefix.slice(first, end - first)
    return ColumnFamily(family.name, family.exposed, labels, family.values[part], family.floats,
                        prefix)
