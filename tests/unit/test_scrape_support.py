"""The tests' exposition parser (tests/support/scrape_support.py) reads what prometheus_client's
own parser reads, from the exporter's real output, and refuses what is not the format."""
from __future__ import annotations

import math

import pytest
from prometheus_client.parser import text_string_to_metric_families

from streaming.exporter.evaluation import build_families
from streaming.exporter.exposition import render_text
from tests.support.scrape_support import parse
from tests.unit.test_exporter import T0, Clock, feed_orders_group, make_view, member, snapshot


def _reference(text: str) -> dict[str, dict[frozenset, float]]:
    out: dict[str, dict[frozenset, float]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, {})[frozenset(sample.labels.items())] = sample.value
    return out


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        a[n].keys() == b[n].keys() and all(
            (math.isnan(a[n][k]) and math.isnan(b[n][k])) or a[n][k] == b[n][k] for k in a[n])
        for n in a)


def test_the_exporters_output_parses_as_prometheus_client_parses_it():
    clock = Clock()
    view = make_view(clock)
    feed_orders_group(view, clock)
    # Group and client names with every character the format escapes, and a '}' inside a value.
    odd = 'we"ird\\gr}oup\nname'
    view.update_groups([snapshot(odd, [member("m-1", [("orders", 0)], client_id='c"1}')],
                                 [("orders", 0, 7, T0 - 3)])])
    text = render_text(build_families(view))
    assert "\\n" in text and '\\"' in text and "\\\\" in text
    ours = parse(text)
    assert _same(ours, _reference(text))
    assert any(("group", odd) in labels for labels in ours["kafka_consumergroup_committed_offset"])


def test_special_values_and_timestamps():
    text = 'a{l="1",} +Inf 1700000000000\nb NaN\nc{l="x"} -1.5e3\n'
    assert _same(parse(text), _reference(text))


@pytest.mark.parametrize("line", ['a{l="1" 2', "a{l=1} 2", "a b c d", 'a{l="x"}', "1a 2"])
def test_a_line_outside_the_format_is_refused(line):
    with pytest.raises(ValueError, match="exposition"):
        parse(line + "\n")
