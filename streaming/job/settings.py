"""Wiring of the monitoring side from the config: the MonitorView the Spark job feeds, the
Prometheus exporter serving it, and the end-offset poller refreshing it.

    monitoring = start_monitoring(config)
    ... the job calls monitoring.view.update_groups(...), .apply_events(...), ...
    monitoring.stop()
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from coordinator.status import StatusSettings
from streaming.exporter.end_offset_poller import EndOffsetPoller, KafkaPythonOffsetsClient, PollerSettings
from streaming.exporter.server import ExporterSettings, RunningExporter, start_exporter
from streaming.sources.kafka_options import KafkaSourceOptions
from streaming.exporter.view import MonitorView, ViewSettings


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
        compat=tuple(config.metrics.compat))


def exporter_settings(config) -> ExporterSettings:
    exporter = config.exporter
    return ExporterSettings(listen=exporter.listen, certfile=exporter.tls.cert,
                            keyfile=exporter.tls.key, username=exporter.basic_auth.username,
                            password=exporter.basic_auth.password)


def poller_settings(config) -> PollerSettings:
    return PollerSettings(interval_s=config.lag.poll_interval, timeout_s=config.lag.timeout)


def offsets_client_factory(config) -> Callable[[], KafkaPythonOffsetsClient]:
    """kafka-python clients with the same connection settings as the source (`source.kafka`)."""
    source = config.source
    options = KafkaSourceOptions(bootstrap_servers=source.bootstrap_servers,
                                 client_options=dict(source.kafka))
    client_config = options.kafka_python_config()
    bootstrap = client_config.pop("bootstrap_servers")
    timeout_s = config.lag.timeout
    return lambda: KafkaPythonOffsetsClient(bootstrap, timeout_s, **client_config)


@dataclass
class Monitoring:
    view: MonitorView
    exporter: RunningExporter
    poller: EndOffsetPoller | None

    def stop(self) -> None:
        if self.poller is not None:
            self.poller.stop()
        self.exporter.stop()


def start_monitoring(config, poll_end_offsets: bool = True,
                     clock: Callable[[], float] = time.time) -> Monitoring:
    """Create the view, serve it, and (unless told not to) start polling end offsets."""
    view = MonitorView(view_settings(config), clock=clock)
    exporter = start_exporter(view, exporter_settings(config))
    poller = None
    if poll_end_offsets:
        poller = EndOffsetPoller(view, offsets_client_factory(config), poller_settings(config),
                                 clock=clock, on_poll=exporter.cache.refresh).start()
    return Monitoring(view, exporter, poller)
