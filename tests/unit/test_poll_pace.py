"""The end-offset poller keeps its interval, but moves the poll before a scrape so that the lag
it brings is rendered when the scrape comes (MetricsCache.poll_by)."""
import pytest

from streaming.exporter.end_offset_poller import EndOffsetPoller, PollerSettings
from streaming.exporter.metrics_cache import MetricsCache
from streaming.exporter.view import MonitorView, ViewSettings

T0 = 1_700_000_000.0


def poller(now: list[float], target: float | None) -> EndOffsetPoller:
    view = MonitorView(ViewSettings(cluster="test"), clock=lambda: now[0])
    return EndOffsetPoller(view, lambda: None, PollerSettings(interval_s=5.0),
                           clock=lambda: now[0], poll_by=lambda: target)


@pytest.mark.parametrize("ahead, wait", [
    (None, 4.5),   # no pace known: the interval's rest
    (-1.0, 4.5),   # the moment has passed: the same
    (3.2, 3.2),    # the poll moves to it
    (12.0, 2.0),   # polls two intervals apart lead to it: the next one moves
    (20.0, 0.0),   # at once, then every interval to it
    (4.9, 4.5),    # never later than the interval would have it
])
def test_the_next_poll_leads_to_the_moment_asked(ahead, wait):
    now = [T0]
    p = poller(now, None if ahead is None else T0 + ahead)
    assert p._wait_s(0.5) == pytest.approx(wait)


def test_the_cache_asks_for_the_poll_a_render_and_a_second_before_the_next_scrape():
    now = [T0]
    view = MonitorView(ViewSettings(cluster="test"), clock=lambda: now[0])
    cache = MetricsCache(view)
    hooks = cache.poller_hooks(5.0)
    assert hooks == {"on_poll": cache.refresh_if_read, "poll_by": cache.poll_by}
    assert cache.poll_interval_s == 5.0
    assert cache.poll_by() is None  # no scrape yet
    cache.text()
    assert cache.poll_by() is None  # one scrape: no pace yet
    now[0] = T0 + 15
    cache.text()
    assert T0 + 30 - 1.5 < cache.poll_by() <= T0 + 30 - 1.0
