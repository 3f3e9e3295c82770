"""The admin source (source.type admin) refused its credentials: said once, named in /healthz,
polled again after 1 s doubling to 30 s rather than every source.admin_interval."""
from __future__ import annotations

import logging

from kafka.errors import SaslAuthenticationFailedError

from streaming.config import load_config
from streaming.exporter.metrics_cache import MetricsCache
from streaming.exporter.server import ExporterSettings, metrics_app
from streaming.job.admin_job import AdminJob


def _refused():
    raise SaslAuthenticationFailedError("SaslAuthenticationFailedError: Authentication failed "
                                        "during authentication due to invalid credentials with "
                                        "SASL mechanism PLAIN")


def test_refused_admin_polls_are_said_once_and_put_off(tmp_path, caplog):
    config = load_config(None, env={"GROUPSCOPE_SOURCE__TYPE": "admin",
                                    "GROUPSCOPE_SOURCE__ADMIN_INTERVAL": "1s",
                                    "GROUPSCOPE_HISTORY__PATH": str(tmp_path / "history")})
    job = AdminJob(config, start_exporter=False, start_poller=False, client_factory=_refused)
    waits = []
    with caplog.at_level(logging.INFO, logger="groupscope.admin"):
        for _ in range(4):
            assert not job.poll_once()
            waits.append(job._refused.wait_s())
            job._refused._next_at = 0.0  # as if the wait had passed
    answer = {}
    body = b"".join(metrics_app(MetricsCache(job.view), ExporterSettings())(
        {"PATH_INFO": "/healthz"}, lambda status, headers: answer.setdefault("status", status)))
    assert [round(w) for w in waits] == [1, 2, 4, 8]
    assert answer["status"].startswith("503")
    assert body.startswith(b"source refused the connection: authentication failed (SASL PLAIN)")
    said = [r for r in caplog.records if "authentication failed (SASL PLAIN)" in r.getMessage()]
    assert len(said) == 1
