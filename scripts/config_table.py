"""Writes the key table of docs/configuration.md between its config-table markers, from the
config dataclasses themselves (so the reference cannot drift from the code). `--check` only
compares and exits 1 when the table is stale."""
from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path

from streaming.config import Config, defaults_table

DOC = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"
START, END = "<!-- config-table:start -->", "<!-- config-table:end -->"
_UNITS = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def _is_duration(key: str) -> bool:
    cls: type = Config
    *sections, name = key.split(".")
    for section in sections:
        cls = type(getattr(cls(), section))
    return bool({f.name: f for f in dataclasses.fields(cls)}[name].metadata.get("duration"))


def _duration(seconds: float) -> str:
    """Seconds in the largest unit that divides them, as the config file accepts them (`5m`)."""
    for unit, size in _UNITS:
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{int(seconds * 1000)}ms"


def _shown(key: str, value: object) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    if isinstance(value, (dict, list)):
        return f"`{json.dumps(value)}`"
    if _is_duration(key):
        return f"`{_duration(float(value))}`"
    return f"`{value}`"


def table() -> str:
    rows = ["| Key | Default | Meaning |", "|---|---|---|"]
    for key, default, doc in defaults_table():
        rows.append(f"| `{key}` | {_shown(key, default)} | {doc.replace('|', '/')} |")
    return "\n".join(rows)


def render(text: str) -> str:
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    return pattern.sub(lambda _: f"{START}\n{table()}\n{END}", text)


if __name__ == "__main__":
    current = DOC.read_text(encoding="utf-8")
    wanted = render(current)
    if "--check" in sys.argv:
        sys.exit(0 if current == wanted else 1)
    DOC.write_text(wanted, encoding="utf-8")
