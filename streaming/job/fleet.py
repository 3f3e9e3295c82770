"""Several Kafka clusters in one job (`clusters` in the config): one streaming query per cluster
in the same Spark application, each with its own view, checkpoint, history, progress and
end-offset poller, and one exporter serving them all, every series with its cluster's label.

One query per cluster is what keeps the clusters apart: each runs its micro-batches in a thread
of its own, so a cluster that is down, slow or refused stalls its own query only (its source
waits and retries), and a query that fails is started again after a pause while the others go
on (`Job.wait(keep_running=True)`). A union of the sources in one query would make every
cluster's batch wait for the slowest. The price is Spark's fixed cost per micro-batch once per
cluster.
"""
from __future__ import annotations

import logging
import threading

from streaming.config import Config
from streaming.errors import UserError
from streaming.exporter.metrics_cache import FleetCache, MetricsCache
from streaming.exporter.view import MonitorView
from streaming.job.lifecycle import Job
from streaming.job.session import build_spark
from streaming.job.settings import exporter_settings, view_settings
from streaming.kafka.client_settings import SettingError

log = logging.getLogger("groupscope.job")


class Fleet:
    """`start`, `wait`, `stop`, `exporter` as a Job has them; `jobs`, one per cluster."""

    def __init__(self, configs: list[Config], spark=None, start_exporter: bool = True,
                 stop_asked: threading.Event | None = None) -> None:
        if len(configs) > 1 and any(c.source.type == "simulator" for c in configs):
            raise ValueError("source.type simulator runs alone (groupscope demo)")
        self.configs = configs
        self.stop_asked = stop_asked or threading.Event()  # as Job's
        self.spark = spark
        self._want_exporter = start_exporter
        self.jobs: list = []  # a Job, or an AdminJob for source.type admin
        self.cache: FleetCache | None = None
        self.exporter = None

    def start(self) -> "Fleet":
        from streaming.exporter.server import start_exporter as serve

        caches = []
        for config in self.configs:
            view = MonitorView(view_settings(config))
            cache = MetricsCache(view)
            caches.append(cache)
            if config.source.type == "admin":  # polls the Admin API: no query
                from streaming.job.admin_job import AdminJob
                self.jobs.append(AdminJob(config, view=view, start_exporter=False,
                                          metrics_cache=cache))
            else:
                self.jobs.append(Job(config, spark=self.spark, view=view, start_exporter=False,
                                     metrics_cache=cache,
                                     query_name=f"groupscope-{config.cluster.name}",
                                     stop_asked=self.stop_asked))
        self.cache = FleetCache(caches)
        if self._want_exporter:
            self.exporter = serve(caches[0].view, exporter_settings(self.configs[0]), self.cache)
        # Every cluster served (its launch seed, its admin polls) while Spark starts.
        for job in self.jobs:
            try:
                if isinstance(job, Job):
                    job.serve()
                else:
                    job.start()
            except SettingError as exc:  # a secret or a store found wanting: this cluster's
                raise UserError(f"clusters ({job.config.cluster.name}): source: {exc}") from None
        if self.spark is None and any(isinstance(job, Job) for job in self.jobs):
            self.spark = build_spark(self.configs[0])
        for job in self.jobs:
            if isinstance(job, Job):
                job.spark = self.spark
                job.start()
            log.info("cluster %s: %s at %s", job.config.cluster.name,
                     "polling the Admin API" if job.config.source.type == "admin"
                     else f"reading {job.config.source.topic}", job.config.source.bootstrap_servers)
        return self

    def wait(self, stop_event: threading.Event | None = None) -> None:
        """Until `stop_event` is set: each cluster's query in a thread of its own, started again
        whenever it fails."""
        stop_event = stop_event or threading.Event()
        threads = [threading.Thread(target=job.wait, args=(stop_event, True),
                                    name=f"groupscope-wait-{job.config.cluster.name}", daemon=True)
                   for job in self.jobs]
        for thread in threads:
            thread.start()
        stop_event.wait()
        for thread in threads:
            thread.join(timeout=5)

    def stop(self) -> None:
        # Every cluster stops following its log now, though their stops take turns.
        for job in self.jobs:
            job.view.stopping = True
        for job in self.jobs:
            try:
                job.stop()
            except Exception:  # one cluster's failed stop must not keep the others running
                log.warning("cluster %s: stopping failed", job.config.cluster.name, exc_info=True)
        if self.exporter is not None:
            self.exporter.stop()
