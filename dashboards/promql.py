"""Just enough PromQL reading to check queries against the metric list.

Syntax itself is checked by promtool (tests write every expression into a rule file); this module
only finds which series names and label names an expression refers to, and fills in Grafana's
template variables so an expression can be evaluated outside Grafana.
"""
from __future__ import annotations

import re

_TOKEN = re.compile(r"""
    (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)
  | (?P<range>\[[^\]]*\])
  | (?P<number>\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?:ms|[smhdwy])?(?:\d+(?:ms|[smhdwy]))*)
  | (?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)
  | (?P<op>=~|!~|!=|==|>=|<=|[-+*/%^<>=(){},@])
  | (?P<space>\s+)
""", re.VERBOSE)

# Words that are operators, modifiers or aggregations, never series names.
_KEYWORDS = frozenset({
    "and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
    "group_left", "group_right", "inf", "nan", "Inf", "NaN",
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
    "bottomk", "topk", "quantile",
})
_LABEL_LISTS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right"})
_MATCH_OPS = frozenset({"=", "!=", "=~", "!~"})


class PromQLReadError(ValueError):
    """The expression contains something this reader cannot tokenise."""


def _tokens(expr: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    while pos < len(expr):
        match = _TOKEN.match(expr, pos)
        if not match:
            raise PromQLReadError(f"cannot read {expr[pos:pos + 20]!r} in {expr!r}")
        pos = match.end()
        if match.lastgroup != "space":
            out.append((match.lastgroup, match.group()))
    return out


def references(expr: str) -> tuple[frozenset[str], frozenset[str]]:
    """(series names, label names) an expression refers to."""
    tokens = _tokens(expr)
    metrics: set[str] = set()
    labels: set[str] = set()
    depth_braces = 0
    i = 0
    while i < len(tokens):
        kind, text = tokens[i]
        following = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        if text == "{":
            depth_braces += 1
        elif text == "}":
            depth_braces -= 1
        elif kind == "ident" and depth_braces:
            if following in _MATCH_OPS:
                labels.add(text)
        elif kind == "ident" and text in _LABEL_LISTS and following == "(":
            i += 2
            while i < len(tokens) and tokens[i][1] != ")":
                if tokens[i][0] == "ident":
                    labels.add(tokens[i][1])
                i += 1
        elif kind == "ident" and following != "(" and text not in _KEYWORDS:
            metrics.add(text)
        i += 1
    return frozenset(metrics), frozenset(labels)


_VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)")


def substitute(expr: str, variables: dict[str, str]) -> str:
    """Replace Grafana's `$name` / `${name}` / `${name:fmt}` with the given values."""
    def value(match: re.Match) -> str:
        name = match.group(1) or match.group(2)
        if name not in variables:
            raise KeyError(f"no value for template variable ${name} in {expr!r}")
        return variables[name]
    return _VARIABLE.sub(value, expr)


_LABEL_VALUES = re.compile(r"^\s*label_values\(\s*(?:(?P<query>.+),\s*)?(?P<label>\w+)\s*\)\s*$", re.S)


def variable_query_as_promql(query: str) -> tuple[str, str]:
    """Grafana's `label_values(expr, label)` -> (PromQL selecting the series, label it lists)."""
    match = _LABEL_VALUES.match(query)
    if not match:
        raise PromQLReadError(f"unsupported template variable query {query!r}")
    label = match.group("label")
    return (match.group("query") or f'{{{label}!=""}}'), label
