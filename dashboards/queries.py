"""Every PromQL query in the committed dashboards, in a form Prometheus can evaluate directly."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from dashboards.promql import substitute, variable_query_as_promql

DASHBOARD_DIR = Path(__file__).resolve().parent / "grafana" / "dashboards"

# Grafana's built-in interval variables, given values that suit a short-lived test Prometheus.
BUILTIN_VALUES = {"__rate_interval": "1m", "__interval": "15s", "__range": "1h", "datasource": "prometheus"}


@dataclass(frozen=True)
class Query:
    dashboard: str
    where: str       # "panel <title> / <refId>", "annotation <name>" or "variable <name>"
    expr: str        # as written in the dashboard (template variables unresolved)
    title: str = ""  # panel title, annotation or variable name

    @property
    def label(self) -> str:
        return f"{self.dashboard}: {self.where}"


def load_dashboards(directory: Path = DASHBOARD_DIR) -> dict[str, dict[str, Any]]:
    return {path.name: json.loads(path.read_text()) for path in sorted(directory.glob("*.json"))}


def _panels(board: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for item in board.get("panels", []):
        yield item
        yield from item.get("panels", [])   # collapsed rows nest their panels


def dashboard_queries(name: str, board: dict[str, Any]) -> list[Query]:
    found = []
    for item in _panels(board):
        for t in item.get("targets", []):
            found.append(Query(name, f"panel {item.get('title')!r} / {t.get('refId')}", t["expr"],
                               item.get("title", "")))
    for a in board.get("annotations", {}).get("list", []):
        if "expr" in a:
            found.append(Query(name, f"annotation {a['name']!r}", a["expr"], a["name"]))
    for v in board.get("templating", {}).get("list", []):
        if v.get("type") == "query":
            query = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
            found.append(Query(name, f"variable {v['name']!r}", variable_query_as_promql(query)[0], v["name"]))
    return found


def all_queries(directory: Path = DASHBOARD_DIR) -> list[Query]:
    return [q for name, board in load_dashboards(directory).items() for q in dashboard_queries(name, board)]


def variable_values(board: dict[str, Any], concrete: dict[str, str]) -> dict[str, str]:
    """Values for a dashboard's template variables: multi-value variables take their 'All' value
    (a regex), single-value ones the concrete value given (e.g. a real cluster and group name)."""
    values = dict(BUILTIN_VALUES)
    for v in board.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        if v.get("includeAll"):
            values[v["name"]] = v.get("allValue") or ".*"
        elif v["name"] in concrete:
            values[v["name"]] = concrete[v["name"]]
        else:
            raise KeyError(f"dashboard {board.get('uid')}: give a value for single-value variable ${v['name']}")
    return values


def resolved_queries(concrete: dict[str, str], directory: Path = DASHBOARD_DIR) -> dict[str, str]:
    """label -> PromQL with every template variable replaced."""
    out = {}
    for name, board in load_dashboards(directory).items():
        values = variable_values(board, concrete)
        for q in dashboard_queries(name, board):
            out[q.label] = substitute(q.expr, values)
    return out
