"""groupscope against a secured Kafka 4.4 broker with the standard authorizer: SASL_SSL with
SCRAM-SHA-512, mutual TLS and SASL OAUTHBEARER (tests/support/secured_kafka.py), each principal
granted only what the Security section of docs/operations.md lists. The client settings are the Java
client's (JAAS lines, PKCS12 stores, secrets by reference). With those grants the job reads its
source and serves the right lag; without DESCRIBE on its source topic it says which ACL is
missing, in one line, reports it in /healthz and a metric, and reads the topic once granted; a
topic it may not describe is counted and its lag left unknown."""
from __future__ import annotations

import logging
import os
import threading
import time
import uuid

import pytest

from coordinator import partition_for
from coordinator.records import encode
from streaming.config import load_config
from streaming.exporter.evaluation import build_families
from streaming.exporter.metrics_cache import MetricsCache
from streaming.exporter.server import ExporterSettings, metrics_app
from streaming.job.lifecycle import Job
from tests.support.kafka_broker import create_topic, produce_raw
from tests.support.secured_kafka import (MTLS_USER, OAUTH_USER, SCRAM_USER, STORE_PASSWORD,
                                         grant, revoke)
from tests.support.state_timeline import offset_commit
from tests.support.waiting import until

LOG_PARTITIONS = 2
ENDS = 10  # records in each partition of the consumed topic
COMMITTED = {0: 4, 1: 5, 2: 6}
T0 = int(time.time() * 1000) - 60_000


def _java_settings(way: str, secured, secret_file,
                   token_endpoint: str | None = None) -> tuple[str, dict[str, str], str]:
    """(bootstrap, `source.kafka` as a Java client's properties, principal) for a way in."""
    trust = {"ssl.truststore.location": str(secured.tls.truststore),
             "ssl.truststore.password": "${env:GS_TEST_STORE_PASSWORD}"}
    if way == "scram":
        return secured.sasl_ssl, {
            "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
                                f'required username="{SCRAM_USER}" password="${{file:{secret_file}}}";',
            **trust}, f"User:{SCRAM_USER}"
    if way == "mtls":
        return secured.ssl, {
            "security.protocol": "SSL", "ssl.keystore.location": str(secured.tls.keystore),
            "ssl.keystore.password": "${env:GS_TEST_STORE_PASSWORD}", **trust}, f"User:{MTLS_USER}"
    module = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"
    oauth = {"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER",
             "ssl.truststore.type": "PEM", "ssl.truststore.location": str(secured.tls.ca)}
    if way == "oauth-client-credentials":
        return secured.sasl_ssl, {
            **oauth, "sasl.oauthbearer.token.endpoint.url": token_endpoint,
            "sasl.jaas.config": f'{module} clientId="{TOKEN_CLIENT}" '
                                f'clientSecret="${{file:{secret_file}}}" scope="kafka";'}, \
            f"User:{OAUTH_USER}"
    return secured.sasl_ssl, {
        **oauth, "sasl.jaas.config": f'{module} unsecuredLoginStringClaim_sub="{OAUTH_USER}";'}, \
        f"User:{OAUTH_USER}"


TOKEN_CLIENT = "groupscope-client"


@pytest.fixture
def token_endpoint(secured_broker):
    """An OAuth token endpoint (client-credentials grant) that hands out tokens Kafka's unsecured
    validator accepts, to the client whose secret is the SCRAM password; yields its URL and the
    requests it answered."""
    import base64
    import json
    import threading
    import urllib.parse
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from tests.support.secured_kafka import unsecured_jwt

    answered = []
    expected = "Basic " + base64.b64encode(
        f"{TOKEN_CLIENT}:{secured_broker.scram_password}".encode()).decode()

    class Endpoint(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            form = urllib.parse.parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
            ok = (self.headers.get("Authorization") == expected
                  and form.get("grant_type") == ["client_credentials"])
            answered.append((ok, form.get("scope")))
            body = json.dumps({"access_token": unsecured_jwt(OAUTH_USER), "token_type": "Bearer",
                               "expires_in": 3600} if ok else {"error": "invalid_client"})
            self.send_response(200 if ok else 401)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/token", answered
    server.shutdown()


@pytest.fixture
def secret_file(secured_broker, tmp_path, monkeypatch):
    """The SCRAM password in a file (with the newline editors add), the stores' password in the
    environment: what `${file:...}` and `${env:...}` in the settings name."""
    path = tmp_path / "scram-password"
    path.write_text(secured_broker.scram_password + "\n")
    monkeypatch.setenv("GS_TEST_STORE_PASSWORD", STORE_PASSWORD)
    return path


@pytest.fixture(scope="module")
def estate(broker):
    """A consumed topic, a topic no principal may describe, and an offsets log (an ordinary
    topic in `__consumer_offsets`' format, so each test grants on a topic of its own) where one
    group commits to each."""
    tag = uuid.uuid4().hex[:8]
    orders, hidden, log_topic = f"sec-orders-{tag}", f"sec-hidden-{tag}", f"sec-offsets-{tag}"
    create_topic(broker.bootstrap, orders, 3)
    create_topic(broker.bootstrap, hidden, 1)
    create_topic(broker.bootstrap, log_topic, LOG_PARTITIONS)
    produce_raw(broker.bootstrap, orders, [(p, None, b"x", T0) for p in range(3) for _ in range(ENDS)])
    produce_raw(broker.bootstrap, hidden, [(0, None, b"x", T0)] * ENDS)
    commits = [("sec-app", offset_commit("sec-app", orders, p, o, T0 + p))
               for p, o in COMMITTED.items()]
    commits.append(("sec-hidden-app", offset_commit("sec-hidden-app", hidden, 0, 3, T0)))
    produce_raw(broker.bootstrap, log_topic,
                [(partition_for(group, LOG_PARTITIONS), *encode(rec), T0 + i)
                 for i, (group, rec) in enumerate(commits)])
    return orders, hidden, log_topic


def _job(spark, tmp_path, bootstrap: str, topic: str, kafka: dict[str, str]) -> Job:
    import json

    env = {"GROUPSCOPE_SOURCE__BOOTSTRAP_SERVERS": bootstrap, "GROUPSCOPE_SOURCE__TOPIC": topic,
           "GROUPSCOPE_SOURCE__KAFKA": json.dumps(kafka),
           "GROUPSCOPE_LAG__POLL_INTERVAL": "0.5s", "GROUPSCOPE_TRIGGER__INTERVAL": "0.5s",
           "GROUPSCOPE_CHECKPOINT__PATH": os.path.join(str(tmp_path), "checkpoint"),
           "GROUPSCOPE_HISTORY__PATH": os.path.join(str(tmp_path), "history")}
    return Job(load_config(None, env=env), spark=spark, start_exporter=False)


class _Waiting:
    """`job.wait()` in a thread, as `groupscope run` waits on it: `outcome` is [None] once it
    returned, [the exception] if it raised."""

    def __init__(self, job: Job) -> None:
        self.stop, self.outcome = threading.Event(), []
        self.thread = threading.Thread(target=self._wait, args=(job,))

    def _wait(self, job: Job) -> None:
        try:
            job.wait(self.stop)
            self.outcome.append(None)
        except Exception as exc:  # the test asserts on it
            self.outcome.append(exc)

    def start(self) -> None:
        self.thread.start()

    def end(self) -> None:
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join(timeout=60)


def _series(job: Job, name: str) -> dict[tuple, float]:
    return {values: number for f in build_families(job.view) if f.name == name
            for values, number in f.samples}


def _healthz(view) -> tuple[str, bytes]:
    answer = {}
    body = metrics_app(MetricsCache(view), ExporterSettings())(
        {"PATH_INFO": "/healthz"}, lambda status, headers: answer.setdefault("status", status))
    return answer["status"], b"".join(body)


@pytest.mark.parametrize("way", ["scram", "mtls", "oauthbearer", "oauth-client-credentials"])
def test_the_readmes_grants_are_enough_for_the_source_and_the_lag(spark, secured_broker, estate,
                                                                  tmp_path, secret_file, caplog,
                                                                  token_endpoint, way):
    orders, hidden, log_topic = estate
    endpoint, answered = token_endpoint
    bootstrap, kafka, principal = _java_settings(way, secured_broker, secret_file, endpoint)
    # docs/operations.md, Security: READ on the source topic, DESCRIBE on the topics groups consume.
    grant(secured_broker.plaintext, principal, [("TOPIC", log_topic, "READ"),
                                                ("TOPIC", orders, "DESCRIBE")])
    job = _job(spark, tmp_path, bootstrap, log_topic, kafka)
    try:
        with caplog.at_level(logging.INFO):
            job.start().processAllAvailable()
            lag = until("the lag of sec-app", lambda: {
                values[2:]: v for values, v in _series(job, "kafka_consumergroup_lag").items()
                if values[1] == "sec-app"} or None)
            unknown = until("the topic it may not describe counted",
                             lambda: _series(job, "groupscope_topics_without_metadata")
                             .get(("default",)))
    finally:
        job.stop()
        revoke(secured_broker.plaintext, principal)
    assert lag == {(orders, str(p)): ENDS - o for p, o in COMMITTED.items()}
    assert unknown == 1 and not any(values[1] == "sec-hidden-app"
                                    for values in _series(job, "kafka_consumergroup_lag"))
    assert _series(job, "groupscope_source_access_denied") == {("default",): 0}
    if way == "oauth-client-credentials":  # the driver's and the source's clients asked
        assert answered and all(answer == (True, ["kafka"]) for answer in answered)
    said = "\n".join(r.getMessage() for r in caplog.records)
    assert hidden in said and "DESCRIBE" in said
    for secret in (secured_broker.scram_password, STORE_PASSWORD):
        assert secret not in said


def test_without_describe_on_the_source_topic_the_job_says_so_and_reads_it_once_granted(
        spark, secured_broker, estate, tmp_path, secret_file, caplog):
    orders, _, log_topic = estate
    bootstrap, kafka, principal = _java_settings("scram", secured_broker, secret_file)
    grant(secured_broker.plaintext, principal, [("TOPIC", orders, "DESCRIBE")])
    job = _job(spark, tmp_path, bootstrap, log_topic, kafka)
    try:
        with caplog.at_level(logging.INFO):
            job.start()
            until("the refusal reported", lambda: job.view.source_refusal)
            status, body = _healthz(job.view)
            denied = _series(job, "groupscope_source_access_denied")
            grant(secured_broker.plaintext, principal, [("TOPIC", log_topic, "READ")])
            until("the refusal cleared", lambda: job.view.source_refusal is None)
            lag = until("the lag once granted", lambda: {
                values[2:]: v for values, v in _series(job, "kafka_consumergroup_lag").items()
                if values[1] == "sec-app"} or None)
    finally:
        job.stop()
        revoke(secured_broker.plaintext, principal)
    assert denied == {("default",): 1}
    said = [r for r in caplog.records if "may not DESCRIBE topic" in r.getMessage()]
    assert len(said) == 1 and said[0].exc_info is None  # one line, no traceback
    assert status.startswith("503") and f"DESCRIBE topic {log_topic}".encode() in body
    assert f"--operation Read --topic {log_topic}".encode() in body
    assert lag == {(orders, str(p)): ENDS - o for p, o in COMMITTED.items()}
    assert job.view.ready


def test_without_read_on_the_source_topic_the_job_waits_for_the_grant(
        spark, secured_broker, estate, tmp_path, secret_file, monkeypatch, caplog):
    """DESCRIBE but not READ: the query's read is refused. The job says which grant is missing,
    reports it, keeps serving, and starts the query again until it is granted; then it reads."""
    from streaming.job import lifecycle

    orders, _, log_topic = estate
    monkeypatch.setattr(lifecycle, "REFUSED_RETRY_S", 1.0)
    bootstrap, kafka, principal = _java_settings("scram", secured_broker, secret_file)
    grant(secured_broker.plaintext, principal, [("TOPIC", log_topic, "DESCRIBE"),
                                                ("TOPIC", orders, "DESCRIBE")])
    job = _job(spark, tmp_path, bootstrap, log_topic, kafka)
    waiter = _Waiting(job)
    try:
        with caplog.at_level(logging.INFO):
            job.start()
            waiter.start()
            refusal = until("the refused read reported", lambda: job.view.source_refusal)
            status, body = _healthz(job.view)
            denied = _series(job, "groupscope_source_access_denied")
            grant(secured_broker.plaintext, principal, [("TOPIC", log_topic, "READ")])
            lag = until("the lag once granted", lambda: {
                values[2:]: v for values, v in _series(job, "kafka_consumergroup_lag").items()
                if values[1] == "sec-app"} or None, timeout_s=90)
            cleared = job.view.source_refusal
    finally:
        waiter.end()
        job.stop()
        revoke(secured_broker.plaintext, principal)
    assert waiter.outcome == [None]  # the job never failed
    assert refusal.startswith(f"this principal may not READ topic {log_topic} ")
    assert f"--operation Read --topic {log_topic}" in refusal and "\n" not in refusal
    assert status.startswith("503") and refusal.encode() in body and denied == {("default",): 1}
    said = [r for r in caplog.records if "may not READ" in r.getMessage()]
    assert len(said) == 1 and said[0].exc_info is None  # one line, no traceback
    # kafka-python's own warning, once a fetch was refused, is not said again and again
    assert not [r for r in caplog.records if "Not authorized to read" in r.getMessage()]
    assert any("is granted now" in r.getMessage() for r in caplog.records)
    assert lag == {(orders, str(p)): ENDS - o for p, o in COMMITTED.items()} and cleared is None


def test_a_read_revoked_while_the_job_runs_holds_it_until_granted_again(
        spark, secured_broker, estate, tmp_path, secret_file, monkeypatch):
    """The grant is taken back mid-run: the next micro-batch's read is refused and the query
    fails. The job does not end: it reports the refusal, starts the query again with backoff,
    and once READ is granted again reads what was committed meanwhile."""
    from streaming.job import lifecycle

    orders, _, log_topic = estate
    monkeypatch.setattr(lifecycle, "REFUSED_RETRY_S", 1.0)
    bootstrap, kafka, principal = _java_settings("scram", secured_broker, secret_file)
    describe = [("TOPIC", log_topic, "DESCRIBE"), ("TOPIC", orders, "DESCRIBE")]
    grant(secured_broker.plaintext, principal, [*describe, ("TOPIC", log_topic, "READ")])
    job = _job(spark, tmp_path, bootstrap, log_topic, kafka)
    def lag_of_partition_0():
        return _series(job, "kafka_consumergroup_lag").get(("default", "sec-app", orders, "0"))

    waiter = _Waiting(job)
    try:
        job.start().processAllAvailable()
        waiter.start()
        assert until("the first lag", lag_of_partition_0) == ENDS - COMMITTED[0]
        revoke(secured_broker.plaintext, principal)
        grant(secured_broker.plaintext, principal, describe)
        time.sleep(1.0)  # the authorizer has the new ACLs
        produce_raw(secured_broker.plaintext, log_topic, [
            (partition_for("sec-app", LOG_PARTITIONS),
             *encode(offset_commit("sec-app", orders, 0, ENDS, T0 + 10_000)), T0 + 10_000)])
        # The read's own refusal: the end-offset poller may report the DESCRIBE it was refused
        # between the revoke and the new grant, and backs off before it asks again.
        refusal = until("the refused read reported",
                        lambda: job.view.source_refusals.get("read"))
        status, _ = _healthz(job.view)
        grant(secured_broker.plaintext, principal, [("TOPIC", log_topic, "READ")])
        after = until("the commit made meanwhile", lambda: lag_of_partition_0() == 0,
                       timeout_s=90)
        cleared = job.view.source_refusals.get("read")
    finally:
        waiter.end()
        job.stop()
        revoke(secured_broker.plaintext, principal)
    assert refusal.startswith(f"this principal may not READ topic {log_topic} ")
    assert status.startswith("503") and after and cleared is None
    assert waiter.outcome == [None]  # the job never failed


# A refused client asks again after 1, 2, 4, ... s (streaming/kafka/refusals.py): four attempts
# (at 0, 1, 3 and 7 s) tell a doubling pause from a fixed one or from a client's own retries.
REFUSED_ATTEMPTS = 4
REFUSAL_WINDOW_S = 8.0  # the first four attempts' span, and a second to spare


def _kafka_python_said(records) -> list:
    """kafka-python's warnings and errors about connections (its lines the job says itself)."""
    return [r for r in records if r.levelno >= logging.WARNING and r.name in (
        "kafka.net.transport", "kafka.net.connection", "kafka.net.manager", "kafka.cluster")]


def _failed_authentications(broker) -> int:
    return broker.log().count(f"Failed authentication with /127.0.0.1")


def _denials(broker, principal: str, topic: str) -> int:
    return broker.log().count(f"Principal = {principal} is Denied operation = DESCRIBE from "
                              f"host = 127.0.0.1 on resource = Topic:LITERAL:{topic} ")


def test_a_wrong_password_is_said_once_named_in_healthz_and_asked_seldom(
        spark, broker, secured_broker, estate, tmp_path, secret_file, caplog):
    """The grants are right, the password is not: the broker is asked again after 1, 2, 4, ...
    seconds (up to 30 s), not every few hundred milliseconds by every client; the job says it in
    one line naming what to fix, and /healthz and groupscope_source_access_denied say it too."""
    orders, _, log_topic = estate
    bootstrap, kafka, principal = _java_settings("scram", secured_broker, secret_file)
    kafka["sasl.jaas.config"] = kafka["sasl.jaas.config"].replace(f"${{file:{secret_file}}}",
                                                                  "not-the-password")
    grant(secured_broker.plaintext, principal, [("TOPIC", log_topic, "READ"),
                                                ("TOPIC", orders, "DESCRIBE")])
    job = _job(spark, tmp_path, bootstrap, log_topic, kafka)
    before = _failed_authentications(broker)
    try:
        with caplog.at_level(logging.INFO):
            job.start()
            refusal = until("the refusal reported", lambda: job.view.source_refusal)
            # The end-offset poller's own backoff, watched until it has been refused four times.
            backoff = job.poller._refused
            until(f"{REFUSED_ATTEMPTS} refused attempts of the end-offset poller",
                  lambda: backoff.attempts >= REFUSED_ATTEMPTS, timeout_s=60, poll_s=0.1)
            attempts, next_in_s = backoff.attempts, backoff.wait_s()
            failed = _failed_authentications(broker) - before
            status, body = _healthz(job.view)
            denied = _series(job, "groupscope_source_access_denied")
            up = _series(job, "groupscope_source_up")
    finally:
        job.stop()
        revoke(secured_broker.plaintext, principal)
    said = "authentication failed (SASL SCRAM-SHA-512)"
    assert refusal.startswith(said) and "sasl.jaas.config" in refusal
    assert status.startswith("503") and said.encode() in body
    assert denied == {("default",): 1} and up == {("default",): 0}
    lines = [r for r in caplog.records if said in r.getMessage()]
    assert len(lines) == 1 and lines[0].exc_info is None  # the end-offset poller's, once
    assert not _kafka_python_said(caplog.records)
    # The pause doubled at each refusal: the next attempt is further off than the last gap (4 s).
    assert next_in_s > 2 ** (attempts - 2), (attempts, next_in_s)
    # Every client the job holds asks at 0, 1, 3, 7 s, the source's reader beside the poller,
    # plus one look each at the start: about ten. Asked at each trigger (0.5 s) the source
    # alone makes 14 in those 7 s, and kafka-python's own retries some seven per attempt.
    assert 1 <= failed <= 12, failed


def test_an_untrusted_broker_certificate_is_named_with_what_to_fix(
        spark, broker, secured_broker, estate, tmp_path, secret_file, caplog):
    orders, _, log_topic = estate
    bootstrap, kafka, principal = _java_settings("scram", secured_broker, secret_file)
    for name in ("ssl.truststore.location", "ssl.truststore.password"):
        kafka.pop(name)  # the system's CAs: not the one that signed the broker's certificate
    job = _job(spark, tmp_path, bootstrap, log_topic, kafka)
    try:
        with caplog.at_level(logging.INFO):
            job.start()
            refusal = until("the refusal reported", lambda: job.view.source_refusal)
            time.sleep(5.0)
            status, body = _healthz(job.view)
    finally:
        job.stop()
    assert refusal.startswith("TLS: certificate verify failed (") and "truststore" in refusal
    assert status.startswith("503") and b"TLS: certificate verify failed" in body
    said = [r for r in caplog.records if r.name == "groupscope.endoffsets"
            and "certificate verify failed" in r.getMessage()]
    assert len(said) == 1
    assert not [r for r in caplog.records if r.exc_info is not None]  # no stack trace
    assert not _kafka_python_said(caplog.records)


def test_share_state_refused_by_the_readmes_grants_is_said_once_and_asked_seldom(
        spark, broker, secured_broker, estate, tmp_path, secret_file, caplog):
    """With the grants for __consumer_offsets only, the share-state reader is refused DESCRIBE
    on __share_group_state: said once, with the grant to add, and asked again seldom."""
    from streaming.exporter.view import MonitorView
    from streaming.job.settings import offsets_client_factory, view_settings
    from streaming.job.share_state import SHARE_STATE_TOPIC, ShareStateQuery

    orders, _, log_topic = estate
    bootstrap, kafka, principal = _java_settings("scram", secured_broker, secret_file)
    grant(secured_broker.plaintext, principal, [("TOPIC", log_topic, "READ"),
                                                ("TOPIC", orders, "DESCRIBE")])
    config = _job(spark, tmp_path, bootstrap, log_topic, kafka).config
    factory = offsets_client_factory(config)

    def backlog():
        client = factory()
        try:
            return client.latest(SHARE_STATE_TOPIC, client.partitions(SHARE_STATE_TOPIC))
        finally:
            client.close()

    view = MonitorView(view_settings(config))
    before = _denials(broker, principal, SHARE_STATE_TOPIC)
    query = None
    try:
        with caplog.at_level(logging.INFO):
            query = ShareStateQuery(spark, config, view, lambda group: True, "share-refused",
                                    backlog).start()
            until("the share-state reader's first denial",
                  lambda: _denials(broker, principal, SHARE_STATE_TOPIC) > before, timeout_s=60)
            time.sleep(REFUSAL_WINDOW_S)  # from the first denial
            denials = _denials(broker, principal, SHARE_STATE_TOPIC) - before
    finally:
        if query is not None:
            query.stop()
        revoke(secured_broker.plaintext, principal)
    said = [r for r in caplog.records
            if "share groups' delivery state is not read" in r.getMessage()]
    assert len(said) == 1 and f"--topic {SHARE_STATE_TOPIC}" in said[0].getMessage()
    # Asked at each trigger (0.5 s) that is some 16 in the window; at 0, 1, 3 and 7 s it is
    # four (and one more for an attempt on the window's edge).
    assert 1 <= denials <= 5, denials


def test_retention_settings_and_log_sizes_refused_by_the_acls_are_said_once_and_read_once_granted(
        spark, broker, secured_broker, estate, tmp_path, secret_file, caplog):
    """The retention risk's reads under the standard authorizer: DescribeConfigs without
    DESCRIBE_CONFIGS on the topic is refused (counted, said once, no settings), DescribeLogDirs
    without DESCRIBE on the cluster too (said once, no sizes); each is read once granted."""
    from streaming.exporter.view import MonitorView
    from streaming.job.settings import topic_configs_poller, view_settings
    from tests.unit.test_exporter import snapshot

    _, _, log_topic = estate
    sized = f"sec-sized-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, sized, 1, {"retention.bytes": "2097152"})
    produce_raw(broker.bootstrap, sized, [(0, None, b"x" * 100, T0)] * ENDS)
    bootstrap, kafka, principal = _java_settings("scram", secured_broker, secret_file)
    grant(secured_broker.plaintext, principal, [("TOPIC", sized, "DESCRIBE")])
    config = _job(spark, tmp_path, bootstrap, log_topic, kafka).config
    view = MonitorView(view_settings(config))
    now = time.time()
    view.update_groups([snapshot("sized-app", [], [(sized, 0, 2, now)], state="Empty",
                                 subscribed=[sized], updated_s=now)])
    view.update_end_offsets({(sized, 0): ENDS}, {(sized, 0): 0}, now, 0.01)
    poller = topic_configs_poller(config, view, 0.2)
    retention = view.retention

    def read(what: str, check) -> None:
        def polled():
            poller.poll_if_due()
            return check()
        until(what, polled, timeout_s=20, poll_s=0.3)

    try:
        with caplog.at_level(logging.INFO, logger="groupscope.topicconfigs"):
            read("DescribeConfigs refused", lambda: retention.refused == 1)
            for _ in range(3):  # asked again, not said again
                read("another read", lambda: True)
                time.sleep(0.2)
            assert not retention.configs and not retention.record_bytes
            grant(secured_broker.plaintext, principal, [("TOPIC", sized, "DESCRIBE_CONFIGS")])
            read("the settings once granted", lambda: sized in retention.configs
                 and retention.sizes_refused)
            assert retention.refused == 0 and retention.configs[sized].retention_bytes == 2097152
            for _ in range(3):
                read("another read", lambda: True)
                time.sleep(0.2)
            grant(secured_broker.plaintext, principal, [("CLUSTER", "kafka-cluster", "DESCRIBE")])
            read("the sizes once granted", lambda: not retention.sizes_refused
                 and retention.record_bytes)
    finally:
        poller.close()
        revoke(secured_broker.plaintext, principal)
    said = [r.getMessage() for r in caplog.records]
    configs_said = [m for m in said if "may not DESCRIBE_CONFIGS" in m]
    sizes_said = [m for m in said if "may not DESCRIBE the cluster" in m]
    assert len(configs_said) == 1 and sized in configs_said[0], said
    assert len(sizes_said) == 1 and "grant DESCRIBE on the CLUSTER" in sizes_said[0], said
    # 10 records of 100 bytes and their batch's header, over the 10 the log holds
    record_bytes, = retention.record_bytes.values()
    assert 100 < record_bytes < 120, record_bytes
