"""Grafana dashboards, Prometheus rules and the checks that keep them in line with the exporter."""
