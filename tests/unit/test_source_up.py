"""What the exporter says of the cluster before and after the end-offset poller's polls: not up
until a poll answered, and a refused connection named in /healthz and counted as access denied
(streaming/exporter/end_offset_poller.py, streaming/exporter/server.py)."""
from __future__ import annotations

from kafka.errors import SaslAuthenticationFailedError

from streaming.exporter.end_offset_poller import EndOffsetPoller, PollerSettings
from streaming.exporter.evaluation import build_families
from streaming.exporter.metrics_cache import MetricsCache
from streaming.exporter.server import ExporterSettings, metrics_app
from streaming.exporter.view import MonitorView, ViewSettings
from streaming.kafka.offsets import OffsetsClient

T0 = 1_700_000_000.0


class _Answers(OffsetsClient):
    def partitions(self, topic):
        return []

    def start_offsets(self, partitions):
        return {}

    def end_offsets(self, partitions):
        return {}

    def topic_metadata(self):
        return {}, {}

    def close(self):
        pass


def _refused():
    raise SaslAuthenticationFailedError("SaslAuthenticationFailedError: Authentication failed "
                                        "during authentication due to invalid credentials with "
                                        "SASL mechanism SCRAM-SHA-512")


def _gauge(view: MonitorView, name: str) -> float | None:
    return next((v for f in build_families(view) if f.name == name for _, v in f.samples), None)


def _samples(view: MonitorView, name: str) -> list:
    return next((list(f.samples) for f in build_families(view) if f.name == name), [])


def _healthz(view: MonitorView) -> tuple[str, str]:
    answer = {}
    body = metrics_app(MetricsCache(view), ExporterSettings())(
        {"PATH_INFO": "/healthz"}, lambda status, headers: answer.setdefault("status", status))
    return answer["status"], b"".join(body).decode()


def test_the_source_is_not_up_before_a_poll_has_answered():
    view = MonitorView(ViewSettings(cluster="c"), clock=lambda: T0)
    poller = EndOffsetPoller(view, _Answers, PollerSettings(), clock=lambda: T0)
    assert _gauge(view, "groupscope_source_up") == 0
    assert _healthz(view) == ("503 Service Unavailable", "waiting for the first end-offset poll\n")
    assert poller.poll_once()
    assert _gauge(view, "groupscope_source_up") == 1


def test_refused_credentials_are_named_and_the_next_poll_waits():
    factories = [_refused, _Answers]
    view = MonitorView(ViewSettings(cluster="c"), clock=lambda: T0)
    poller = EndOffsetPoller(view, lambda: factories[0](), PollerSettings(interval_s=0.5),
                             clock=lambda: T0)
    assert not poller.poll_once()
    status, body = _healthz(view)
    assert status.startswith("503") and body.startswith(
        "source refused the connection: authentication failed (SASL SCRAM-SHA-512): ")
    assert _gauge(view, "groupscope_source_access_denied") == 1
    assert _gauge(view, "groupscope_source_up") == 0
    (labels, value), = _samples(view, "groupscope_source_refusal_info")
    assert value == 1 and labels[0] == "c" and labels[2].startswith(
        "authentication failed (SASL SCRAM-SHA-512): ")
    assert 0.5 < poller._refused.wait_s() <= 1.0  # not at the next interval: later
    factories.pop(0)
    assert poller.poll_once()
    assert _gauge(view, "groupscope_source_access_denied") == 0
    assert view.source_refusal is None
    assert _samples(view, "groupscope_source_refusal_info") == []


def test_a_stopping_job_is_not_ok_while_its_stop_takes_turns():
    """Once a job (or a fleet of them) begins to stop, what it serves no longer follows the
    cluster, however long the batch in flight takes to end: /healthz says so at once, for every
    cluster of a fleet."""
    from streaming.job.fleet import Fleet

    class _Stopping:
        def __init__(self, view: MonitorView, seen: list) -> None:
            self.view, self.seen = view, seen

        def stop(self) -> None:  # the others' health while this one stops
            self.seen.append([_healthz(job.view)[1] for job in fleet.jobs])

    seen: list = []
    views = [MonitorView(ViewSettings(cluster=name), clock=lambda: T0) for name in "ab"]
    for view in views:
        view.set_offsets_topic_progress({0: 0}, ready=True)
        view.source_up, view.last_poll_s = True, T0
    assert [_healthz(view)[0] for view in views] == ["200 OK", "200 OK"]
    fleet = Fleet.__new__(Fleet)
    fleet.jobs, fleet.exporter = [_Stopping(view, seen) for view in views], None
    fleet.stop()
    assert seen == [["stopping: what is served no longer follows the cluster\n"] * 2] * 2
    assert [_healthz(view)[0] for view in views] == ["503 Service Unavailable"] * 2
