"""Metric families with their samples, rendered as Prometheus text format 0.0.4, written directly.

A cluster has 10^5 partitions and each carries several series; prometheus-client's generic
`generate_latest` spends ~15 µs per sample, which makes a full scrape take many seconds, so the
exporter's `/metrics` uses this. Label sets are rendered once per scrape and shared by every
family with the same label names.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from streaming.exporter.catalog import HISTOGRAM, exposed_name
from streaming.exporter.histogram import Histogram


@dataclass
class Family:
    """One metric family. Counter names carry no `_total` (it is added when rendered, as
    prometheus-client does). A sample is (label values, value) — for histograms the value is a
    `Histogram`."""

    name: str
    kind: str
    help: str
    label_names: tuple[str, ...]
    samples: list[tuple[tuple[str, ...], Any]] = field(default_factory=list)

    def add(self, label_values: tuple[str, ...], value: Any) -> None:
        self.samples.append((label_values, value))


def _escape(value: str) -> str:
    if "\\" in value or '"' in value or "\n" in value:
        value = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return value


def _format_value(value: Any) -> str:
    if type(value) is int:
        return str(value)
    value = float(value)
    if value != value:
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value.is_integer() and abs(value) < 1e15:
        return f"{int(value)}.0"
    return repr(value)


class LabelCache:
    """Rendered `{a="x",b="y"}` strings by label names, then label values. Each render keeps only
    what it used, so the cache never outgrows the current set of series."""

    def __init__(self) -> None:
        self._previous: dict[tuple[str, ...], dict[tuple[str, ...], str]] = {}
        self._current: dict[tuple[str, ...], dict[tuple[str, ...], str]] = {}

    def start_render(self) -> None:
        """Begin a full render: entries not used by it are forgotten at the next one."""
        self._previous, self._current = self._current, {}

    def table(self, names: tuple[str, ...]) -> "_LabelTable":
        current = self._current.get(names)
        if current is None:
            current = self._current[names] = {}
        return _LabelTable(names, current, self._previous.get(names, {}))


class _LabelTable:
    __slots__ = ("names", "current", "previous")

    def __init__(self, names, current, previous) -> None:
        self.names, self.current, self.previous = names, current, previous

    def text(self, values: tuple[str, ...]) -> str:
        text = self.previous.get(values)
        if text is None:
            text = "{" + ",".join(f'{n}="{_escape(v)}"' for n, v in zip(self.names, values)) + "}"
        self.current[values] = text
        return text


def render_header(family: Family) -> str:
    exposed = exposed_name(family.name, family.kind)
    return f"# HELP {exposed} {family.help}\n# TYPE {exposed} {family.kind}\n"


def render_samples(family: Family, samples: list, cache: LabelCache) -> str:
    """The sample lines of `samples` (belonging to `family`), without the header."""
    if not samples:
        return ""
    if family.kind == HISTOGRAM:
        out: list[str] = []
        for values, histogram in samples:
            _render_histogram(out.append, family.name, family.label_names, values, histogram)
        return "".join(out)
    table = cache.table(family.label_names)
    current, previous, make = table.current, table.previous, table.text
    exposed = exposed_name(family.name, family.kind)
    lines = []
    append = lines.append
    for values, value in samples:
        text = current.get(values) or previous.get(values)
        if text is None:
            text = make(values)
        else:
            current[values] = text
        append(f"{exposed}{text} {value if type(value) is int else _format_value(value)}\n")
    return "".join(lines)


def render_text(families: list[Family], cache: LabelCache | None = None) -> str:
    cache = cache or LabelCache()
    cache.start_render()
    return "".join(render_header(f) + render_samples(f, f.samples, cache) for f in families)


def _render_histogram(append, name: str, names: tuple[str, ...], values: tuple[str, ...],
                      histogram: Histogram) -> None:
    base = ",".join(f'{n}="{_escape(v)}"' for n, v in zip(names, values))
    prefix = base + "," if base else ""
    for le, count in histogram.cumulative():
        append(f'{name}_bucket{{{prefix}le="{le}"}} {count}\n')
    labels = "{" + base + "}" if base else ""
    append(f"{name}_sum{labels} {_format_value(histogram.sum)}\n")
    append(f"{name}_count{labels} {histogram.count}\n")

