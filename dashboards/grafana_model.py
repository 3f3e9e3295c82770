"""Grafana dashboards built with Grafana's own `grafana-foundation-sdk` (its builders follow
Grafana's schema, pinned to Grafana 11.6's in pyproject.toml), behind a few small helpers.

Layout is automatic: panels flow left to right in rows 24 units wide, and `row()` starts a new
titled row. `dashboard()` returns the JSON model as a dict, exactly what Grafana loads.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from grafana_foundation_sdk.builders import bargauge as bargauge_panel
from grafana_foundation_sdk.builders import common as common_builders
from grafana_foundation_sdk.builders import dashboard as dashboard_builders
from grafana_foundation_sdk.builders import heatmap as heatmap_panel
from grafana_foundation_sdk.builders import prometheus
from grafana_foundation_sdk.builders import stat as stat_panel
from grafana_foundation_sdk.builders import statetimeline
from grafana_foundation_sdk.builders import table as table_panel
from grafana_foundation_sdk.builders import text as text_panel
from grafana_foundation_sdk.builders import timeseries as timeseries_panel
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common, dashboard as model
from grafana_foundation_sdk.models import heatmap as heatmap_model
from grafana_foundation_sdk.models import text as text_model
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
GRID_WIDTH = 24
_SOURCE = model.DataSourceRef(type_val="prometheus", uid="${datasource}")

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
RATE_METHOD_MAPPING = [{"type": "value", "options": {  # coordinator.rates.RateMethod
    "0": {"text": "caught up", "color": "green", "index": 0},
    "1": {"text": "whole window", "color": "blue", "index": 1},
    "2": {"text": "shorter span", "color": "yellow", "index": 2},
    "3": {"text": "unknown", "color": "red", "index": 3}}}]


class _Built:
    """A model made from its JSON form, where a builder takes builders: the SDK's builders cover
    the typed parts, and the few pieces written here as JSON (value mappings, overrides,
    links) are read with the SDK's own `from_json`."""

    def __init__(self, built: Any) -> None:
        self._built = built

    def build(self) -> Any:
        return self._built


def target(expr: str, legend: str = "", *, instant: bool = False, fmt: str = "time_series"
           ) -> prometheus.Dataquery:
    """A PromQL query; its refId is given by the panel, in order."""
    query = prometheus.Dataquery().datasource(_SOURCE).expr(expr).legend_format(legend or "__auto")
    query = query.instant() if instant else query.range()
    if fmt != "time_series":
        query = query.format(PromQueryFormat(fmt))
    return query


def thresholds(*steps: tuple[float | None, str]) -> dict[str, Any]:
    """Absolute thresholds, as JSON: a panel's or an override's."""
    return {"mode": "absolute", "steps": [{"value": v, "color": c} for v, c in steps]}


@dataclass(frozen=True)
class Panel:
    """A panel before layout: its size and its builder (without id and position)."""
    width: int
    height: int
    builder: Any


def panel(builder: Any, title: str, targets: list[prometheus.Dataquery], *, width: int = 12,
          height: int = 8, unit: str = "short", description: str = "",
          mappings: list | None = None, threshold: dict[str, Any] | None = None,
          overrides: list | None = None, transformations: list | None = None,
          links: list | None = None) -> Panel:
    """The settings every panel kind shares, on `builder` (a panel builder of the SDK)."""
    builder = (builder.title(title).description(description).datasource(_SOURCE).unit(unit)
               .targets([t.ref_id(chr(ord("A") + i)) for i, t in enumerate(targets)]))
    if mappings:
        builder = builder.mappings([model.ValueMap.from_json(m) for m in mappings])
    if threshold:
        builder = builder.thresholds(_Built(model.ThresholdsConfig.from_json(threshold))).color_scheme(
            dashboard_builders.FieldColor().mode(model.FieldColorModeId.THRESHOLDS))
    if links:
        builder = builder.data_links([_Built(model.DashboardLink.from_json(
            {"type": "link", "icon": "external link", "tags": [], "asDropdown": False,
             "includeVars": False, "keepTime": False, "tooltip": "", **link})) for link in links])
    if overrides:
        builder = builder.overrides([_Built(model.DashboardFieldConfigSourceOverrides.from_json(o))
                                     for o in overrides])
    if transformations:
        builder = builder.transformations([model.DataTransformerConfig.from_json(t)
                                           for t in transformations])
    return Panel(width, height, builder)


def _legend(display: common.LegendDisplayMode, *calcs: str) -> common_builders.VizLegendOptions:
    legend = (common_builders.VizLegendOptions().display_mode(display)
              .placement(common.LegendPlacement.BOTTOM).show_legend(True))
    if calcs:
        legend = legend.calcs(list(calcs)).sort_by("Max").sort_desc(True)
    return legend


def _last_value() -> common_builders.ReduceDataOptions:
    return common_builders.ReduceDataOptions().calcs(["lastNotNull"]).fields("").values(False)


def timeseries(title: str, targets: list[prometheus.Dataquery], *, unit: str = "short",
               stack: bool = False, bars: bool = False, **kw: Any) -> Panel:
    """Graph; with `threshold=` the thresholds are drawn as dashed lines."""
    builder = (timeseries_panel.Panel()
               .draw_style(common.GraphDrawStyle.BARS if bars else common.GraphDrawStyle.LINE)
               .fill_opacity(60 if bars else 10).line_width(1)
               .show_points(common.VisibilityMode.NEVER).span_nulls(False)
               .stacking(common_builders.StackingConfig().group("A").mode(
                   common.StackingMode.NORMAL if stack else common.StackingMode.NONE))
               .thresholds_style(common_builders.GraphThresholdsStyleConfig().mode(
                   common.GraphThresholdsStyleMode.DASHED if kw.get("threshold")
                   else common.GraphThresholdsStyleMode.OFF))
               .legend(_legend(common.LegendDisplayMode.TABLE, "lastNotNull", "max"))
               .tooltip(common_builders.VizTooltipOptions().mode(common.TooltipDisplayMode.MULTI)
                        .sort(common.SortOrder.DESCENDING)))
    made = panel(builder, title, targets, unit=unit, **kw)
    # thresholds only as lines: the series keep the palette's colours
    made.builder.color_scheme(
        dashboard_builders.FieldColor().mode(model.FieldColorModeId.PALETTE_CLASSIC))
    return made


def stat(title: str, targets: list[prometheus.Dataquery], *, width: int = 4, height: int = 4,
         show_name: bool = False, **kw: Any) -> Panel:
    """Single figure; `show_name` displays the series name (legend) instead, e.g. a state label."""
    builder = (stat_panel.Panel().reduce_options(_last_value())
               .color_mode(common.BigValueColorMode.NONE if show_name
                           else common.BigValueColorMode.BACKGROUND)
               .graph_mode(common.BigValueGraphMode.NONE)
               .text_mode(common.BigValueTextMode.NAME if show_name else common.BigValueTextMode.AUTO)
               .justify_mode(common.BigValueJustifyMode.AUTO)
               .orientation(common.VizOrientation.AUTO))
    return panel(builder, title, targets, width=width, height=height, **kw)


def bargauge(title: str, targets: list[prometheus.Dataquery], **kw: Any) -> Panel:
    builder = (bargauge_panel.Panel().reduce_options(_last_value())
               .orientation(common.VizOrientation.HORIZONTAL)
               .display_mode(common.BarGaugeDisplayMode.BASIC).show_unfilled(True))
    return panel(builder, title, targets, **kw)


def table(title: str, targets: list[prometheus.Dataquery], *, hide: tuple[str, ...] = ("Time",),
          rename: dict[str, str] | None = None, sort_by: str = "", **kw: Any) -> Panel:
    """Instant-query table; several queries are merged on their common labels."""
    transformations = [{"id": "merge", "options": {}}] if len(targets) > 1 else []
    transformations.append({"id": "organize", "options": {
        "excludeByName": {name: True for name in (*hide, "__name__", "job", "instance")},
        "renameByName": rename or {}}})
    builder = (table_panel.Panel().show_header(True).cell_height(common.TableCellHeight.SM)
               .footer(common_builders.TableFooterOptions().show(False).reducer([]))
               .sort_by([common_builders.TableSortByFieldState().display_name(sort_by).desc(True)]
                        if sort_by else []))
    return panel(builder, title, targets, transformations=transformations, **kw)


def state_timeline(title: str, targets: list[prometheus.Dataquery], **kw: Any) -> Panel:
    builder = (statetimeline.Panel().show_value(common.VisibilityMode.NEVER).merge_values(True)
               .align_value(common.TimelineValueAlignment.LEFT).row_height(0.8)
               .legend(_legend(common.LegendDisplayMode.LIST)))
    return panel(builder, title, targets, **kw)


def heatmap(title: str, expr: str, *, unit: str = "s", **kw: Any) -> Panel:
    builder = (heatmap_panel.Panel().calculate(False)
               .y_axis(heatmap_panel.YAxisConfig().unit(unit)).cell_gap(1)
               .color(heatmap_panel.HeatmapColorOptions().mode(heatmap_model.HeatmapColorMode.SCHEME)
                      .scheme("Oranges").steps(64))
               .rows_frame(heatmap_panel.RowsHeatmapOptions().layout(common.HeatmapCellLayout.AUTO))
               .mode(common.TooltipDisplayMode.SINGLE).show_y_histogram())
    return panel(builder, title, [target(expr, "{{le}}", fmt="heatmap")], **kw)


def text(title: str, markdown: str, *, width: int = 24, height: int = 3) -> Panel:
    return Panel(width, height, text_panel.Panel().title(title).mode(text_model.TextMode.MARKDOWN)
                 .content(markdown))


@dataclass
class Layout:
    """Places panels left to right, wrapping at the grid width; rows start on a new line."""
    items: list[Any] = field(default_factory=list)  # panel and row builders, positioned
    x: int = 0
    y: int = 0
    line_height: int = 0

    def _next_id(self) -> int:
        return len(self.items) + 1

    def row(self, title: str) -> None:
        self._newline()
        self.items.append(dashboard_builders.Row(title).id(self._next_id()).grid_pos(
            model.GridPos(h=1, w=GRID_WIDTH, x=0, y=self.y)))
        self.y += 1

    def add(self, *items: Panel) -> None:
        for item in items:
            if self.x + item.width > GRID_WIDTH:
                self._newline()
            self.items.append(item.builder.id(self._next_id()).grid_pos(
                model.GridPos(h=item.height, w=item.width, x=self.x, y=self.y)))
            self.x += item.width
            self.line_height = max(self.line_height, item.height)

    def _newline(self) -> None:
        self.y += self.line_height
        self.x, self.line_height = 0, 0


def datasource_variable() -> dashboard_builders.DatasourceVariable:
    return (dashboard_builders.DatasourceVariable("datasource").label("Data source")
            .type("prometheus").regex("").multi(False).include_all(False)
            .hide(model.VariableHide.DONT_HIDE))


Variable = dashboard_builders.QueryVariable


def query_variable(name: str, label: str, query: str, *, multi: bool = False,
                   all_value: str = ".*") -> Variable:
    variable = (dashboard_builders.QueryVariable(name).label(label).datasource(_SOURCE)
                .query({"query": query, "refId": f"{name}-variable"})
                .refresh(model.VariableRefresh.ON_TIME_RANGE_CHANGED)
                .sort(model.VariableSort.ALPHABETICAL_ASC).regex("").multi(multi)
                .include_all(multi).hide(model.VariableHide.DONT_HIDE))
    if multi:
        variable = variable.all_value(all_value)
    return variable


@dataclass(frozen=True)
class Annotation:
    """A PromQL annotation. The SDK's model has no place for the Prometheus data source's own
    annotation settings (step, title and text formats, tag labels), so `dashboard()` adds them
    to the JSON it builds."""
    builder: dashboard_builders.AnnotationQuery
    prometheus_settings: dict[str, Any]


def annotation(name: str, expr: str, *, color: str, title: str, text: str = "",
               step: str = "30s") -> Annotation:
    builder = (dashboard_builders.AnnotationQuery().name(name).datasource(_SOURCE).enable(True)
               .icon_color(color).expr(expr))
    return Annotation(builder, {"step": step, "titleFormat": title, "textFormat": text,
                                "tagKeys": "group", "useValueForTime": False})


# Grafana's own annotations and alerts, which every dashboard it saves lists first.
_BUILT_IN = Annotation(
    dashboard_builders.AnnotationQuery().name("Annotations & Alerts").built_in(1).enable(True)
    .hide(True).icon_color("rgba(0, 211, 255, 1)").type("dashboard")
    .datasource(model.DataSourceRef(type_val="grafana", uid="-- Grafana --")), {})


def dashboard(uid: str, title: str, description: str, layout: Layout, variables: list[Any],
              *, annotations: list[Annotation] = (), links: list[dict[str, Any]] = (),
              time_from: str = "now-6h") -> dict[str, Any]:
    builder = (dashboard_builders.Dashboard(title).uid(uid).description(description)
               .tags(["groupscope", "kafka"]).timezone("browser").editable()
               .tooltip(model.DashboardCursorSync.CROSSHAIR).refresh("30s").version(1)
               .fiscal_year_start_month(0).live_now(False).time(time_from, "now")
               .variables([datasource_variable(), *variables])
               .links([_Built(model.DashboardLink.from_json({"url": "", "tooltip": "", **link}))
                       for link in links]))
    for item in (_BUILT_IN, *annotations):
        builder = builder.annotation(item.builder)
    for item in layout.items:
        builder = builder.with_row(item) if isinstance(item, dashboard_builders.Row) \
            else builder.with_panel(item)
    built = json.loads(json.dumps(builder.build(), cls=JSONEncoder))
    for item, made in zip((_BUILT_IN, *annotations), built["annotations"]["list"]):
        made.update(item.prometheus_settings)
    return built
