"""Every document a comment or docstring cites is in the repository, so a reader who follows a
citation finds the page (no pointer to notes that live elsewhere)."""
from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

from tests.support.paths import ROOT

SOURCE_DIRS = ("coordinator", "streaming", "tests", "scripts", "benchmarks", "dashboards", "deploy")
# A path ending in .md, read whole: it starts after a space or punctuation other than a slash.
CITED = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*[\w-]+\.md)\b")


def _python_files() -> list[Path]:
    return sorted(p for d in SOURCE_DIRS for p in (ROOT / d).rglob("*.py"))


def cited_documents(source: str) -> list[str]:
    """Documents named in comments and strings; a string that is nothing but a file name is code
    building a path (`ROOT / "README.md"`), not a citation."""
    cited = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in (tokenize.COMMENT, tokenize.STRING):
            continue
        literal = token.string.lstrip("rbuRBUfF").strip("\"'")
        cited += [path for path in CITED.findall(token.string) if path != literal]
    return cited


def _resolves(cited: str, source: Path) -> bool:
    # A citation names a path from the repository root, or a file beside the citing module.
    return (ROOT / cited).is_file() or (source.parent / cited).is_file()


def test_the_pattern_reads_whole_paths():
    source = ('# see docs/contracts.md, README.md beside this file\n'
              'path = ROOT / "README.md"\n'
              '"""Tuning: streaming/localmode/README.md."""\n')
    assert cited_documents(source) == ["docs/contracts.md", "README.md",
                                       "streaming/localmode/README.md"]


def test_every_cited_document_exists():
    missing = [f"{path.relative_to(ROOT)}: {cited}"
               for path in _python_files()
               for cited in cited_documents(path.read_text(encoding="utf-8"))
               if not _resolves(cited, path)]
    assert missing == []
