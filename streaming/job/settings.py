"""Settings of the monitoring side, from the config: the MonitorView the Spark job feeds, the
Prometheus exporter serving it, the end-offset poller refreshing it, and the Kafka client the
poller and the job's progress share (streaming/job/lifecycle.py wires them).
"""
from __future__ import annotations

from typing import Callable

from coordinator.status import StatusSettings
from streaming.config import selection
from streaming.exporter.end_offset_poller import PollerSettings
from streaming.exporter.server import ExporterSettings
from streaming.exporter.view import ViewSettings
from streaming.kafka.offsets import OffsetsClient, offsets_client
from streaming.sources.kafka_options import KafkaSourceOptions


def view_settings(config) -> ViewSettings:
    status = config.status
    return ViewSettings(
        cluster=config.cluster.name,
        include_unsubscribed=config.lag.include_unsubscribed,
        expire_after_s=config.groups.expire_after,
        dead_grace_s=config.groups.dead_grace,
        time_table_size=config.lag.timeline_size,
        status=StatusSettings(window_size=status.window_size, min_complete=status.min_complete,
                              allowed_lag=status.allowed_lag,
                              min_distance_s=status.min_distance,
                              recent_catch_up_s=status.recent_catch_up),
        compat=tuple(config.metrics.compat),
        granularity=config.metrics.granularity,
        member_lag=config.metrics.member_lag,
        groups=selection(config.groups.include, config.groups.exclude),
        topics=selection(config.topics.include, config.topics.exclude))


def exporter_settings(config) -> ExporterSettings:
    exporter = config.exporter
    return ExporterSettings(listen=exporter.listen, certfile=exporter.tls.cert,
                            keyfile=exporter.tls.key, username=exporter.basic_auth.username,
                            password=exporter.basic_auth.password)


def poller_settings(config) -> PollerSettings:
    return PollerSettings(interval_s=config.lag.poll_interval, timeout_s=config.lag.timeout,
                          time_method=config.lag.time_method, read_budget=config.lag.read_budget)


def offsets_client_factory(config) -> Callable[[], OffsetsClient]:
    """kafka-python offsets clients with the same connection settings as the source
    (`source.kafka`), each request bounded by lag.timeout."""
    source = config.source
    options = KafkaSourceOptions(bootstrap_servers=source.bootstrap_servers,
                                 client_options=dict(source.kafka))
    options.kafka_python_config()  # a bad `source.kafka` setting fails here, not in a poll
    timeout_s = config.lag.timeout
    return lambda: offsets_client(options, timeout_s)


def admin_groups_factory(config) -> Callable[[], "AdminGroups"]:
    """Admin API clients (streaming/kafka/admin_groups.py) with the source's connection
    settings, each request bounded by lag.timeout."""
    from streaming.kafka.admin_groups import AdminGroups

    settings, timeout_s = _admin_settings(config), config.lag.timeout
    return lambda: AdminGroups(settings, timeout_s=timeout_s)


def _admin_settings(config) -> dict:
    """kafka-python settings of an admin connection like the source's (`source.kafka`)."""
    source = config.source
    return KafkaSourceOptions(bootstrap_servers=source.bootstrap_servers,
                              client_options=dict(source.kafka)).kafka_python_config()


def topic_configs_poller(config, view, interval_s: float):
    """The reader of the polled topics' retention settings (DescribeConfigs, every
    `interval_s`) for the end-offset poller, with the source's connection settings; the view's
    rates are taken over lag.rate_window."""
    from streaming.exporter.topic_configs_poller import TopicConfigsPoller
    from streaming.kafka.topic_configs import TopicConfigReader

    settings, timeout_s = _admin_settings(config), config.lag.timeout
    with view.lock:
        view.retention.rate_window_s = config.lag.rate_window
    return TopicConfigsPoller(view, lambda: TopicConfigReader(settings, timeout_s), interval_s)
