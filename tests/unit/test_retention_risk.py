"""Retention risk, rates and the catch-up forecast: the pure maths (coordinator.rates,
coordinator.retention), reading a DescribeConfigs answer, and the figures a view serves."""
from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from coordinator.rates import RateMethod, catch_up, forecast_methods, window_rates
from coordinator.retention import (BY_SIZE, RETENTION_CHECK_S, age_growth, parse_config,
                                   risk_seconds, size_late_by_s, size_risk_seconds)
from coordinator.timelag import TimeLagMethod
from streaming.exporter.metrics_cache import MetricsCache
from streaming.exporter.topic_configs_poller import TopicConfigsPoller
from streaming.exporter.view import MonitorView, ViewSettings
from streaming.kafka.log_sizes import LogSizes, read_answers
from streaming.kafka.topic_configs import TopicConfigs, read_answer
from tests.support.scrape_support import parse
from tests.unit.test_exporter import Clock, snapshot

pytestmark = pytest.mark.unit


def _rows(*samples):
    """Sample rows [(offset, time), ...] as (offsets, times, counts) matrices."""
    width = max(len(s) for s in samples)
    offsets = np.zeros((len(samples), width), np.int64)
    times = np.zeros((len(samples), width))
    for i, row in enumerate(samples):
        for j, (o, t) in enumerate(row):
            offsets[i, j], times[i, j] = o, t
    return offsets, times, np.array([len(s) for s in samples])


def test_a_rate_is_the_offsets_moved_over_the_window_or_the_shorter_span_the_samples_cover():
    offsets, times, counts = _rows([(0, 0.0), (100, 10.0), (300, 20.0)],  # 20/s, then stays
                                   [(50, 15.0), (70, 19.0)],               # from t=15 only
                                   [(5, 19.0)], [])
    current = np.array([300, 70, 5, 0])
    rate, method, since = window_rates(offsets, times, counts, current, 30.0, 20.0)
    # at t=30 over [10, 30]: from 100 (at t=10) to 300: 10/s; stopped since t=20 shows in it
    assert rate[0] == pytest.approx(10.0) and method[0] == RateMethod.WINDOW
    assert rate[1] == pytest.approx(20 / 15) and method[1] == RateMethod.PARTIAL
    assert since[1] == 15.0
    assert rate[2] == 0.0 and method[2] == RateMethod.PARTIAL  # one commit 11 s ago, no move
    assert math.isnan(rate[3]) and method[3] == RateMethod.UNKNOWN


def test_a_rewind_counts_as_no_progress():
    offsets, times, counts = _rows([(500, 0.0), (100, 5.0)])
    rate, _, _ = window_rates(offsets, times, counts, np.array([100]), 10.0, 20.0)
    assert rate[0] == 0.0


def test_catch_up_is_lag_over_the_gain_and_never_while_consumers_are_slower():
    lag = np.array([1000, 1000, 1000, 0, 50])
    consume = np.array([30.0, 10.0, 5.0, 0.0, np.nan])
    produce = np.array([10.0, 10.0, 10.0, 10.0, 1.0])
    got = catch_up(lag, consume, produce)
    assert got[0] == pytest.approx(50.0)
    assert got[1] == math.inf and got[2] == math.inf
    assert got[3] == 0.0 and math.isnan(got[4])
    methods = forecast_methods(lag, np.array([1, 2, 1, 1, 3]), np.array([1, 1, 1, 1, 1]))
    assert methods.tolist() == [1, 2, 1, RateMethod.CAUGHT_UP, 3]


def test_a_stopped_group_loses_records_when_its_first_unconsumed_record_is_retention_old():
    growth = age_growth(np.array([0.0, 5.0, 10.0, 20.0, np.nan, 3.0]),
                        np.array([10.0, 10.0, 10.0, 10.0, 10.0, 0.0]))
    assert growth[:3].tolist() == [1.0, 0.5, 0.0]
    assert growth[3] < 0 and growth[4] == 1.0 and growth[5] < 0  # unknown pace: as if stopped
    risk = risk_seconds(np.full(6, 40.0), np.full(6, 100.0), growth)
    assert risk[0] == 60.0  # stopped: the record is 40 s old of 100 s
    assert risk[1] == 120.0  # half the producers' pace: its age grows half a second a second
    assert risk[2] == math.inf and risk[3] == math.inf and risk[5] == math.inf
    assert risk[4] == 60.0
    assert risk_seconds(np.array([130.0]), np.array([100.0]), np.array([0.5]))[0] == 0.0


def test_the_config_says_what_deletes_by_age_and_how_late_deletion_may_come():
    compacted = parse_config({"cleanup.policy": "compact", "retention.ms": "1000"})
    both = parse_config({"cleanup.policy": "compact,delete", "retention.ms": "60000",
                         "segment.ms": "5000"})
    unlimited = parse_config({"cleanup.policy": "delete", "retention.ms": "-1"})
    default = parse_config({})
    assert not compacted.time_limited and not unlimited.time_limited
    assert both.time_limited and both.retention_ms == 60000
    assert both.late_by_s(1.0) == 6.0
    assert default.time_limited and default.retention_ms == 7 * 86400 * 1000
    assert default.late_by_s() == 7 * 86400 + RETENTION_CHECK_S


def _result(name, error=0, **configs):
    return SimpleNamespace(resource_name=name, error_code=error, error_message=None,
                           configs=[SimpleNamespace(name=k.replace("_", "."), value=v)
                                    for k, v in configs.items()])


def test_a_describe_configs_answer_gives_settings_refused_topics_and_leaves_gone_ones_out():
    answer = read_answer([_result("orders", retention_ms="60000"), _result("secret", 29),
                          _result("gone", 3)])
    assert answer.retention["orders"].retention_ms == 60000
    assert answer.refused == ("secret",) and "gone" not in answer.retention
    assert "DESCRIBE_CONFIGS" in answer.refusal() and "secret" in answer.refusal()
    with pytest.raises(Exception):
        read_answer([_result("orders", 35)])


T0 = 1_700_000_000.0


def _view(clock, **settings):
    view = MonitorView(ViewSettings(cluster="c", **settings), clock=clock)
    view.retention.rate_window_s = 20.0
    return view


def _commit(view, clock, group, offset):
    view.update_groups([snapshot(group, [], [("orders", 0, offset, clock.now)],
                                 state="Empty", subscribed=["orders"], updated_s=clock.now)])


def _poll(view, clock, end, start=0):
    view.update_end_offsets({("orders", 0): end}, {("orders", 0): start}, clock.now, 0.01)


def _served(cache, name):
    return {tuple(sorted(dict(labels).items())): value
            for labels, value in parse(cache.text()).get(name, {}).items()}


class _Reader:
    def __init__(self, answer, sizes=None):
        self.answer, self.asked = answer, []
        self.sizes, self.sized = sizes if sizes is not None else LogSizes(), []

    def read(self, topics):
        self.asked.append(topics)
        return self.answer

    def log_sizes(self, partitions):
        self.sized.append(partitions)
        return self.sizes

    def close(self):
        pass


def _scenario(refused=False):
    """Producers write 10 records/s to orders-0 for 30 s; `stopped` commits once at offset 100
    (written at T0 + 10), `slow` follows at 2/s, `fast` catches up at 20/s from 100."""
    clock = Clock(T0)
    view = _view(clock)
    answer = (TopicConfigs({}, ("orders",)) if refused
              else TopicConfigs({"orders": parse_config({"retention.ms": "120000"})}))
    TopicConfigsPoller(view, lambda: _Reader(answer), clock=clock).poll_if_due()
    for step in range(31):
        clock.now = T0 + step
        _poll(view, clock, 10 * step)
        if step == 10:
            _commit(view, clock, "stopped", 100)
        if step >= 10:
            _commit(view, clock, "slow", 100 + 2 * (step - 10))
            _commit(view, clock, "fast", min(10 * step, 100 + 20 * (step - 10)))
    return view, clock


def test_a_view_serves_rates_forecasts_and_risks_by_each_groups_pace():
    view, clock = _scenario()
    cache = MetricsCache(view)
    key = lambda g: (("cluster", "c"), ("group", g), ("partition", "0"), ("topic", "orders"))
    risk = _served(cache, "kafka_consumergroup_retention_risk_seconds")
    rate = _served(cache, "kafka_consumergroup_consume_rate")
    plan = _served(cache, "kafka_consumergroup_catch_up_seconds")
    # stopped: the record at 100 was written at T0 + 10 (the poller saw the end reach 101
    # between T0 + 10 and T0 + 11), 120 s of retention: due at about T0 + 130, 100 s from now
    assert 99.0 <= risk[key("stopped")] <= 101.0
    assert rate[key("stopped")] == 0.0 and plan[key("stopped")] == math.inf
    # slow: at 2/s of 10/s its first unconsumed record (140, written at T0 + 14.1) ages 0.8 s a
    # second: 120 s of retention are reached after (120 - 15.9) / 0.8 s
    assert rate[key("slow")] == pytest.approx(2.0)
    assert plan[key("slow")] == math.inf
    assert risk[key("slow")] == pytest.approx((120 - 15.9) / 0.8, rel=0.01)
    # fast: caught up, nothing at risk and no forecast to wait for
    assert key("fast") not in risk and plan[key("fast")] == 0.0
    methods = _served(cache, "kafka_consumergroup_retention_risk_method")
    # the poller keeps end offsets only of partitions groups commit to: from T0 + 11 on, after
    # the record at 100, whose time is extrapolated
    assert methods[key("stopped")] == TimeLagMethod.EXTRAPOLATED
    group_risk = _served(cache, "kafka_consumergroup_group_retention_risk_seconds")
    assert group_risk[(("cluster", "c"), ("group", "stopped"))] == risk[key("stopped")]
    produce = _served(cache, "kafka_partition_produce_rate")
    assert produce[(("cluster", "c"), ("partition", "0"), ("topic", "orders"))] == \
        pytest.approx(10.0)
    assert _served(cache, "groupscope_topic_configs_refused") == {(("cluster", "c"),): 0.0}


def test_a_faster_group_gets_a_finite_forecast():
    view, clock = _scenario()
    for step in range(31, 38):  # `slow` speeds up to 30/s
        clock.now = T0 + step
        _poll(view, clock, 10 * step)
        _commit(view, clock, "slow", 140 + 30 * (step - 30))
    cache = MetricsCache(view)
    key = (("cluster", "c"), ("group", "slow"), ("partition", "0"), ("topic", "orders"))
    finite = _served(cache, "kafka_consumergroup_catch_up_seconds")[key]
    rate = _served(cache, "kafka_consumergroup_consume_rate")[key]
    # over its last 10 commits (t = 28 to 37: from 136 to 350) against the producers' 10/s
    assert rate == pytest.approx((350 - 136) / 9)
    assert finite == pytest.approx((370 - 350) / (rate - 10.0))


def test_without_describe_configs_no_risk_is_served_and_the_refusal_is_counted(caplog):
    view, _ = _scenario(refused=True)
    cache = MetricsCache(view)
    assert _served(cache, "kafka_consumergroup_retention_risk_seconds") == {}
    assert _served(cache, "groupscope_topic_configs_refused") == {(("cluster", "c"),): 1.0}
    assert _served(cache, "kafka_consumergroup_consume_rate")  # rates need no settings


def test_the_refusal_is_said_once():
    import logging

    clock = Clock(T0)
    view = _view(clock)
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger("groupscope.topicconfigs").addHandler(handler)
    try:
        poller = TopicConfigsPoller(view, lambda: _Reader(TopicConfigs({}, ("orders",))),
                                    interval_s=1.0, clock=clock)
        for step in range(5):
            clock.now = T0 + 2 * step
            poller.poll_if_due()
    finally:
        logging.getLogger("groupscope.topicconfigs").removeHandler(handler)
    said = [r for r in records if "DESCRIBE_CONFIGS" in r.getMessage()]
    assert len(said) == 1


def test_a_topic_groups_begin_committing_to_is_read_within_seconds_not_an_interval():
    from streaming.exporter.topic_configs_poller import NEW_TOPIC_GAP_S

    clock = Clock(T0)
    view = _view(clock)
    reader = _Reader(TopicConfigs({"orders": parse_config({"retention.ms": "120000"})}))
    poller = TopicConfigsPoller(view, lambda: reader, interval_s=60.0, clock=clock)
    poller.poll_if_due()  # before any group commits: nothing to ask about
    _commit(view, clock, "g", 5)
    _poll(view, clock, 10)
    poller.poll_if_due()  # too soon after the last read
    clock.now = T0 + NEW_TOPIC_GAP_S
    poller.poll_if_due()
    clock.now = T0 + 30
    poller.poll_if_due()  # asked about already: the interval holds
    assert reader.asked == [[], ["orders"]]



def test_size_risk_is_until_the_bytes_ahead_of_the_group_reach_retention_bytes():
    lag = np.array([100, 100, 100, 300, 100, 100])
    consume = np.array([0.0, 10.0, 4.0, 0.0, np.nan, 0.0])
    produce = np.array([10.0, 10.0, 10.0, 10.0, 10.0, np.nan])
    risk = size_risk_seconds(lag, np.full(6, 100.0), np.full(6, 20_000.0), consume, produce)
    # 10,000 bytes ahead of 20,000; 1,000 bytes/s more when stopped, 600 at 4 of 10 records/s
    assert risk[0] == pytest.approx(10.0) and risk[2] == pytest.approx(10_000 / 600)
    assert risk[1] == math.inf  # keeping pace: the bytes ahead do not grow
    assert risk[3] == 0.0       # 30,000 bytes ahead: due
    assert risk[4] == pytest.approx(10.0)  # a consumer rate unknown: taken as stopped
    assert math.isnan(risk[5])  # no produce rate: no figure
    config = parse_config({"retention.bytes": "20000", "segment.bytes": "5000"})
    assert config.size_limited and not parse_config({}).size_limited
    # late by the time to fill the rest of one segment, and a check
    assert size_late_by_s(config, 1000.0, check_interval_s=1.0) == 6.0


def _log_dirs(code=0, dirs=()):
    return SimpleNamespace(error_code=code, results=[
        SimpleNamespace(error_code=dir_code, topics=[SimpleNamespace(name=topic, partitions=[
            SimpleNamespace(partition_index=p, partition_size=size, is_future_key=future)
            for p, size, future in parts]) for topic, parts in topics])
        for dir_code, topics in dirs])


def test_a_describe_log_dirs_answer_gives_the_largest_replica_and_a_denial_as_refused():
    sizes = read_answers([
        _log_dirs(dirs=[(0, [("orders", [(0, 900, False), (1, 50, True)])]),
                        (57, [("orders", [(1, 7_000, False)])])]),  # an offline directory
        _log_dirs(dirs=[(0, [("orders", [(0, 1_000, False), (1, 40, False)])])])])
    assert sizes == LogSizes({("orders", 0): 1_000, ("orders", 1): 40})
    assert read_answers([_log_dirs(31)]) == LogSizes(refused=True)
    with pytest.raises(Exception):
        read_answers([_log_dirs(35)])


def _sized_view(sizes):
    """`_scenario`'s producers, 100-byte records, a topic limited to 30,000 bytes (and 120 s):
    `stopped` 200 records (20,000 bytes) behind at T0 + 30 and 100 bytes a second more."""
    clock = Clock(T0)
    view = _view(clock)
    config = parse_config({"retention.ms": "120000", "retention.bytes": "30000"})
    reader = _Reader(TopicConfigs({"orders": config}), sizes)
    poller = TopicConfigsPoller(view, lambda: reader, clock=clock)
    for step in range(31):
        clock.now = T0 + step
        _poll(view, clock, 10 * step)
        if step == 10:
            _commit(view, clock, "stopped", 100)
            _commit(view, clock, "kept", 100)
        if step > 10:
            _commit(view, clock, "kept", 10 * step - 5)
    poller.poll_if_due()
    return view, reader


def test_size_based_risk_is_served_where_retention_bytes_comes_first_with_its_method():
    view, reader = _sized_view(LogSizes({("orders", 0): 30_000}))  # 300 records of 100 bytes
    assert reader.sized == [{"orders": [0]}]
    cache = MetricsCache(view)
    key = lambda g: (("cluster", "c"), ("group", g), ("partition", "0"), ("topic", "orders"))
    risk = _served(cache, "kafka_consumergroup_retention_risk_seconds")
    methods = _served(cache, "kafka_consumergroup_retention_risk_method")
    # 200 records (20,000 bytes) ahead of 30,000, growing 1,000 bytes/s: 10 s, where by age
    # (written at T0 + 10 of 120 s) it would be 100 s
    assert risk[key("stopped")] == pytest.approx(10.0)
    assert methods[key("stopped")] == BY_SIZE
    # 5 records behind at the producers' pace: by size never, by age what the age says
    assert risk[key("kept")] > 60 and methods[key("kept")] != BY_SIZE
    assert _served(cache, "groupscope_log_dirs_refused") == {(("cluster", "c"),): 0.0}


def test_without_describe_on_the_cluster_only_the_time_based_risk_is_served():
    view, _ = _sized_view(LogSizes(refused=True))
    cache = MetricsCache(view)
    key = (("cluster", "c"), ("group", "stopped"), ("partition", "0"), ("topic", "orders"))
    assert 99.0 <= _served(cache, "kafka_consumergroup_retention_risk_seconds")[key] <= 101.0
    assert _served(cache, "kafka_consumergroup_retention_risk_method")[key] != BY_SIZE
    assert _served(cache, "groupscope_log_dirs_refused") == {(("cluster", "c"),): 1.0}


def test_a_share_groups_rate_forecast_and_risk_follow_its_start_offsets_pace():
    from coordinator.state.share_partition import SharePartition

    from tests.unit.test_exporter import ORDERS_ID

    clock = Clock(T0)
    view = _view(clock)
    view.update_topic_metadata({ORDERS_ID: "orders"}, {"orders": 1})
    TopicConfigsPoller(view, lambda: _Reader(TopicConfigs(
        {"orders": parse_config({"retention.ms": "120000"})}))).poll_if_due()
    for step in range(31):  # producers at 10/s; the start offset from 100 at 5/s from T0 + 10
        clock.now = T0 + step
        _poll(view, clock, 10 * step)
        if step >= 10:
            start = 100 + 5 * (step - 10)
            view.apply_share_state({("workers", ORDERS_ID, 0): SharePartition(
                "workers", ORDERS_ID, 0, start, -1, (), updated_ms=int(clock.now * 1000))}, {}, {})
    cache = MetricsCache(view)
    key = (("cluster", "c"), ("group", "workers"), ("partition", "0"), ("topic", "orders"))
    rate = _served(cache, "kafka_sharegroup_partition_consume_rate")[key]
    plan = _served(cache, "kafka_sharegroup_partition_catch_up_seconds")[key]
    risk = _served(cache, "kafka_sharegroup_partition_retention_risk_seconds")[key]
    assert rate == pytest.approx(5.0) and plan == math.inf
    # its first record not done with (200, written at T0 + 20) ages half a second a second
    assert risk == pytest.approx((120 - 10) / 0.5, rel=0.02)
    group = (("cluster", "c"), ("group", "workers"))
    assert _served(cache, "kafka_sharegroup_consume_rate")[group] == rate
    assert _served(cache, "kafka_sharegroup_retention_risk_seconds")[group] == risk
    for step in range(31, 35):  # then faster than its producers, at 30/s
        clock.now = T0 + step
        _poll(view, clock, 10 * step)
        view.apply_share_state({("workers", ORDERS_ID, 0): SharePartition(
            "workers", ORDERS_ID, 0, 200 + 30 * (step - 30), -1, (),
            updated_ms=int(clock.now * 1000))}, {}, {})
    plan = _served(MetricsCache(view), "kafka_sharegroup_partition_catch_up_seconds")[key]
    assert 0 < plan < math.inf


def test_a_share_group_on_a_size_limited_topic_is_at_risk_by_size_when_that_comes_first():
    from coordinator.state.share_partition import SharePartition

    from tests.unit.test_exporter import ORDERS_ID

    clock = Clock(T0)
    view = _view(clock)
    view.update_topic_metadata({ORDERS_ID: "orders"}, {"orders": 1})
    config = parse_config({"retention.ms": "120000", "retention.bytes": "30000"})
    reader = _Reader(TopicConfigs({"orders": config}), LogSizes({("orders", 0): 30_000}))
    poller = TopicConfigsPoller(view, lambda: reader, clock=clock)
    for step in range(31):  # producers at 10/s of 100-byte records; the start offset stays at 100
        clock.now = T0 + step
        _poll(view, clock, 10 * step)
        if step >= 10:
            view.apply_share_state({("workers", ORDERS_ID, 0): SharePartition(
                "workers", ORDERS_ID, 0, 100, -1, (), updated_ms=int(clock.now * 1000))}, {}, {})
    poller.poll_if_due()
    key = (("cluster", "c"), ("group", "workers"), ("partition", "0"), ("topic", "orders"))
    risk = _served(MetricsCache(view), "kafka_sharegroup_partition_retention_risk_seconds")[key]
    # as for the stopped consumer group: 20,000 bytes ahead of 30,000, 1,000 bytes/s more: 10 s,
    # where by age (written at T0 + 10 of 120 s) it would be 100 s
    assert risk == pytest.approx(10.0)
