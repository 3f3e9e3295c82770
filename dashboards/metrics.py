"""What dashboard queries and rules may refer to: the series the exporter serves (declared once,
in `streaming.exporter.catalog`; dashboards assume `metrics.compat` off) plus the labels
Prometheus itself attaches."""
from __future__ import annotations

from streaming.exporter.catalog import exported_series

# Labels Prometheus attaches or synthesises; queries may use them without an exporter.
PROMETHEUS_LABELS = frozenset({"job", "instance", "__name__"})
# Series Prometheus writes for every target it scrapes (whether the scrape succeeded).
PROMETHEUS_SERIES = frozenset({"up"})


def queryable_labels() -> frozenset[str]:
    """Every label a dashboard query or rule may name."""
    return frozenset().union(*exported_series().values(), PROMETHEUS_LABELS)
