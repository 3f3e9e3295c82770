"""Writes the configuration table into README.md between its config-table markers, from the
config dataclasses themselves (so the README cannot drift from the code). `--check` only compares."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from streaming.config import defaults_table

README = Path(__file__).resolve().parent.parent / "README.md"
START, END = "<!-- config-table:start -->", "<!-- config-table:end -->"


def _shown(value) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, (dict, list)):
        return f"`{json.dumps(value)}`"
    return f"`{value}`"


def table() -> str:
    rows = ["| Key | Default | Meaning |", "|---|---|---|"]
    for key, default, doc in defaults_table():
        rows.append(f"| `{key}` | {_shown(default)} | {doc.replace('|', '/')} |")
    return "\n".join(rows)


def render(text: str) -> str:
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    return pattern.sub(lambda _: f"{START}\n{table()}\n{END}", text)


if __name__ == "__main__":
    current = README.read_text(encoding="utf-8")
    wanted = render(current)
    if "--check" in sys.argv:
        sys.exit(0 if current == wanted else 1)
    README.write_text(wanted, encoding="utf-8")
