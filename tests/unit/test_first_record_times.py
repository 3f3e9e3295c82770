"""The end-offset poller's first record times reach the view through `MonitorView` and bound the
served time lag, also in a render made between the poll's end offsets and those times."""
from __future__ import annotations

from coordinator.timelag import TimeLagMethod
from streaming.exporter.metrics_cache import MetricsCache
from streaming.exporter.view import MonitorView
from tests.support.scrape_support import parse
from tests.unit.test_exporter import T0, Clock, member, snapshot

COMMITTED = 10


def _time_lag(cache: MetricsCache) -> tuple[float, int]:
    samples = parse(cache.text())

    def one(name: str) -> float:
        (found,) = [v for labels, v in samples[name].items() if ("partition", "0") in labels]
        return found

    return one("kafka_consumergroup_lag_seconds"), int(one("kafka_consumergroup_lag_seconds_method"))


def test_a_first_record_time_set_after_a_render_bounds_the_next_one():
    clock = Clock(T0)
    view = MonitorView(clock=clock)
    view.update_groups([snapshot("app", [member("m1", [("orders", 0)])],
                                 [("orders", 0, COMMITTED, T0 - 30)])])
    # The log end moved 100 records in 10 s: the record after the committed offset is put
    # 19 s before the first sample by extrapolation.
    view.update_end_offsets({("orders", 0): 100}, {("orders", 0): 0}, T0 - 20, 0.01)
    view.update_end_offsets({("orders", 0): 200}, {("orders", 0): 0}, T0 - 10, 0.01)
    cache = MetricsCache(view)
    seconds, method = _time_lag(cache)
    assert method == TimeLagMethod.EXTRAPOLATED and abs(seconds - (20 + 8.9)) < 1e-6
    # The log's first record was written 2 s before the first sample: no record is older.
    view.set_first_record_times({("orders", 0): T0 - 22.0, ("gone", 3): T0 - 99.0})
    seconds, method = _time_lag(cache)
    assert (seconds, method) == (20.0, TimeLagMethod.UNKNOWN)  # the lower bound, not 28.9 s
    version = view.ends_version
    view.set_first_record_times({("orders", 0): T0 - 22.0})  # the same answer again
    assert view.ends_version == version
