"""Scraping the exporter over HTTP in tests."""
from __future__ import annotations

import base64
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def scrape(port, path="/metrics", auth=None):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if auth is not None:
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, response.read().decode()


def parse(text):
    """{sample name: {frozenset(label items): value}}"""
    out: dict[str, dict[frozenset, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, {})[frozenset(sample.labels.items())] = sample.value
    return out
