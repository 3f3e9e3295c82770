"""Small builders for Grafana dashboard JSON (schema of Grafana 10/11).

Plain dicts, so the output is exactly what Grafana loads; layout is automatic: panels flow left to
right in rows 24 units wide, and `row()` starts a new titled row.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
SCHEMA_VERSION = 39
GRID_WIDTH = 24

STATUS_MAPPING = [{
    "type": "value",
    "options": {
        "0": {"text": "NOTFOUND", "color": "text", "index": 0},
        "1": {"text": "OK", "color": "green", "index": 1},
        "2": {"text": "WARN", "color": "yellow", "index": 2},
        "3": {"text": "ERR", "color": "red", "index": 3},
        "4": {"text": "STOP", "color": "dark-red", "index": 4},
        "5": {"text": "STALL", "color": "orange", "index": 5},
        "6": {"text": "REWIND", "color": "purple", "index": 6},
    },
}]
READY_MAPPING = [{"type": "value", "options": {
    "0": {"text": "catching up", "color": "orange", "index": 0},
    "1": {"text": "ready", "color": "green", "index": 1}}}]
LAG_METHOD_MAPPING = [{"type": "value", "options": {
    "0": {"text": "caught up", "color": "green", "index": 0},
    "1": {"text": "interpolated", "color": "blue", "index": 1},
    "2": {"text": "extrapolated", "color": "yellow", "index": 2},
    "3": {"text": "unknown", "color": "red", "index": 3}}}]


def target(expr: str, legend: str = "", *, instant: bool = False, fmt: str = "time_series",
           ref: str = "A") -> dict[str, Any]:
    out: dict[str, Any] = {"datasource": DATASOURCE, "expr": expr, "refId": ref,
                           "legendFormat": legend or "__auto", "range": not instant, "instant": instant}
    if fmt != "time_series":
        out["format"] = fmt
    return out


def thresholds(*steps: tuple[float | None, str]) -> dict[str, Any]:
    return {"mode": "absolute", "steps": [{"value": v, "color": c} for v, c in steps]}


@dataclass(frozen=True)
class Panel:
    """A panel before layout: its size and the JSON body (without id / gridPos)."""
    width: int
    height: int
    body: dict[str, Any]


def panel(kind: str, title: str, targets: list[dict[str, Any]], *, width: int = 12, height: int = 8,
          unit: str = "short", description: str = "", options: dict[str, Any] | None = None,
          mappings: list | None = None, threshold: dict | None = None,
          custom: dict[str, Any] | None = None, overrides: list | None = None,
          transformations: list | None = None, links: list | None = None) -> Panel:
    refs = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    targets = [dict(t, refId=refs[i]) for i, t in enumerate(targets)]
    defaults: dict[str, Any] = {"unit": unit}
    if mappings:
        defaults["mappings"] = mappings
    if threshold:
        defaults["thresholds"] = threshold
        defaults["color"] = {"mode": "thresholds"}
    if custom:
        defaults["custom"] = custom
    if links:
        defaults["links"] = links
    body: dict[str, Any] = {
        "type": kind, "title": title, "description": description, "datasource": DATASOURCE,
        "targets": targets,
        "fieldConfig": {"defaults": defaults, "overrides": overrides or []},
        "options": options or {},
    }
    if transformations:
        body["transformations"] = transformations
    return Panel(width, height, body)


def timeseries(title: str, targets: list[dict[str, Any]], *, unit: str = "short", stack: bool = False,
               bars: bool = False, **kw: Any) -> Panel:
    """Graph; with `threshold=` the thresholds are drawn as dashed lines."""
    custom = {"drawStyle": "bars" if bars else "line", "fillOpacity": 60 if bars else 10,
              "lineWidth": 1, "showPoints": "never", "spanNulls": False,
              "stacking": {"mode": "normal" if stack else "none", "group": "A"},
              "thresholdsStyle": {"mode": "dashed" if kw.get("threshold") else "off"}}
    options = {"legend": {"displayMode": "table", "placement": "bottom", "showLegend": True,
                          "calcs": ["lastNotNull", "max"], "sortBy": "Max", "sortDesc": True},
               "tooltip": {"mode": "multi", "sort": "desc"}}
    made = panel("timeseries", title, targets, unit=unit, custom=custom, options=options, **kw)
    made.body["fieldConfig"]["defaults"]["color"] = {"mode": "palette-classic"}  # thresholds only as lines
    return made


def stat(title: str, targets: list[dict[str, Any]], *, width: int = 4, height: int = 4,
         show_name: bool = False, **kw: Any) -> Panel:
    """Single figure; `show_name` displays the series name (legend) instead, e.g. a state label."""
    options = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
               "colorMode": "none" if show_name else "background", "graphMode": "none",
               "textMode": "name" if show_name else "auto",
               "justifyMode": "auto", "orientation": "auto"}
    return panel("stat", title, targets, width=width, height=height, options=options, **kw)


def bargauge(title: str, targets: list[dict[str, Any]], **kw: Any) -> Panel:
    options = {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
               "orientation": "horizontal", "displayMode": "basic", "showUnfilled": True}
    return panel("bargauge", title, targets, options=options, **kw)


def table(title: str, targets: list[dict[str, Any]], *, hide: tuple[str, ...] = ("Time",),
          rename: dict[str, str] | None = None, sort_by: str = "", **kw: Any) -> Panel:
    """Instant-query table; several queries are merged on their common labels."""
    transformations = [{"id": "merge", "options": {}}] if len(targets) > 1 else []
    transformations.append({"id": "organize", "options": {
        "excludeByName": {name: True for name in (*hide, "__name__", "job", "instance")},
        "renameByName": rename or {}}})
    options = {"showHeader": True, "cellHeight": "sm", "footer": {"show": False},
               "sortBy": [{"displayName": sort_by, "desc": True}] if sort_by else []}
    return panel("table", title, targets, options=options, transformations=transformations, **kw)


def state_timeline(title: str, targets: list[dict[str, Any]], **kw: Any) -> Panel:
    options = {"showValue": "never", "mergeValues": True, "alignValue": "left", "rowHeight": 0.8,
               "legend": {"displayMode": "list", "placement": "bottom", "showLegend": True}}
    return panel("state-timeline", title, targets, options=options, **kw)


def heatmap(title: str, expr: str, *, unit: str = "s", **kw: Any) -> Panel:
    options = {"calculate": False, "yAxis": {"unit": unit},
               "cellGap": 1, "color": {"mode": "scheme", "scheme": "Oranges", "steps": 64},
               "rowsFrame": {"layout": "auto"}, "tooltip": {"mode": "single", "yHistogram": True}}
    return panel("heatmap", title, [target(expr, "{{le}}", fmt="heatmap")], options=options, **kw)


def text(title: str, markdown: str, *, width: int = 24, height: int = 3) -> Panel:
    return Panel(width, height, {"type": "text", "title": title,
                                 "options": {"mode": "markdown", "content": markdown}})


@dataclass
class Layout:
    """Places panels left to right, wrapping at the grid width; rows start on a new line."""
    panels: list[dict[str, Any]] = field(default_factory=list)
    x: int = 0
    y: int = 0
    line_height: int = 0

    def _next_id(self) -> int:
        return len(self.panels) + 1

    def row(self, title: str) -> None:
        self._newline()
        self.panels.append({"type": "row", "title": title, "id": self._next_id(), "collapsed": False,
                            "gridPos": {"h": 1, "w": GRID_WIDTH, "x": 0, "y": self.y}, "panels": []})
        self.y += 1

    def add(self, *items: Panel) -> None:
        for item in items:
            if self.x + item.width > GRID_WIDTH:
                self._newline()
            self.panels.append({"id": self._next_id(), **item.body, "gridPos": {
                "h": item.height, "w": item.width, "x": self.x, "y": self.y}})
            self.x += item.width
            self.line_height = max(self.line_height, item.height)

    def _newline(self) -> None:
        self.y += self.line_height
        self.x, self.line_height = 0, 0


def datasource_variable() -> dict[str, Any]:
    return {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
            "current": {}, "hide": 0, "refresh": 1, "regex": "", "includeAll": False, "multi": False}


def query_variable(name: str, label: str, query: str, *, multi: bool = False,
                   all_value: str = ".*") -> dict[str, Any]:
    variable: dict[str, Any] = {
        "name": name, "label": label, "type": "query", "datasource": DATASOURCE,
        "query": {"query": query, "refId": f"{name}-variable"}, "definition": query,
        "refresh": 2, "sort": 1, "regex": "", "hide": 0, "current": {},
        "multi": multi, "includeAll": multi,
    }
    if multi:
        variable["allValue"] = all_value
    return variable


def annotation(name: str, expr: str, *, color: str, title: str, text: str = "",
               step: str = "30s") -> dict[str, Any]:
    return {"name": name, "datasource": DATASOURCE, "enable": True, "iconColor": color,
            "expr": expr, "step": step, "titleFormat": title, "textFormat": text,
            "tagKeys": "group", "useValueForTime": False}


def dashboard(uid: str, title: str, description: str, layout: Layout, variables: list[dict[str, Any]],
              *, annotations: list[dict[str, Any]] = (), links: list[dict[str, Any]] = (),
              time_from: str = "now-6h") -> dict[str, Any]:
    builtin = {"builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"},
               "enable": True, "hide": True, "iconColor": "rgba(0, 211, 255, 1)",
               "name": "Annotations & Alerts", "type": "dashboard"}
    return {
        "uid": uid, "title": title, "description": description, "tags": ["groupscope", "kafka"],
        "timezone": "browser", "editable": True, "graphTooltip": 1, "refresh": "30s",
        "schemaVersion": SCHEMA_VERSION, "version": 1, "fiscalYearStartMonth": 0, "liveNow": False,
        "time": {"from": time_from, "to": "now"}, "timepicker": {},
        "annotations": {"list": [builtin, *annotations]},
        "templating": {"list": [datasource_variable(), *variables]},
        "links": list(links), "panels": layout.panels,
    }
