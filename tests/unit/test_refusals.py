"""A cluster's refusal of the credentials or TLS, named with what to fix, said once and asked
again seldom (streaming/kafka/refusals.py); kafka-python's own lines about it dropped."""
from __future__ import annotations

import logging
import ssl

from kafka.errors import KafkaConnectionError, KafkaTimeoutError, SaslAuthenticationFailedError

from streaming.kafka.refusal_noise import quiet_refusals
from streaming.kafka.refusals import CAP_S, REPEAT_S, Refused, refusal_of

SCRAM_FAILED = SaslAuthenticationFailedError(
    "SaslAuthenticationFailedError: Authentication failed during authentication due to invalid "
    "credentials with SASL mechanism SCRAM-SHA-256")


def _verify_failed(why: str) -> KafkaConnectionError:
    """What kafka-python raises from a failed handshake (the TLS error as its context)."""
    error = ssl.SSLCertVerificationError(1, f"[SSL: CERTIFICATE_VERIFY_FAILED] {why}")
    error.verify_message = why
    try:
        try:
            raise error
        except ssl.SSLError as exc:
            raise KafkaConnectionError(f"Handshake failed: {exc}")
    except KafkaConnectionError as wrapped:
        return wrapped


def test_refusals_are_named_with_what_to_fix():
    assert refusal_of(SCRAM_FAILED).startswith("authentication failed (SASL SCRAM-SHA-256): ")
    assert "sasl.jaas.config" in refusal_of(SCRAM_FAILED)
    # wrapped again by a caller, or only its text left
    assert refusal_of(RuntimeError("planning failed", SCRAM_FAILED)) == refusal_of(SCRAM_FAILED)
    untrusted = refusal_of(_verify_failed("self-signed certificate in certificate chain"))
    assert untrusted.startswith("TLS: certificate verify failed (self-signed certificate in "
                                "certificate chain): ") and "ssl.truststore.location" in untrusted
    assert "ssl.endpoint.identification.algorithm" in refusal_of(
        _verify_failed("Hostname mismatch, certificate is not valid for 'kafka'"))
    alert = ssl.SSLError(1, "[SSL: SSLV3_ALERT_BAD_CERTIFICATE] sslv3 alert bad certificate")
    alert.reason = "SSLV3_ALERT_BAD_CERTIFICATE"
    assert "ssl.keystore.location" in refusal_of(KafkaConnectionError(alert))
    # a broker that is down is no refusal: retried as an outage
    assert refusal_of(KafkaTimeoutError("Unable to bootstrap from ['127.0.0.1:9092']")) is None
    assert refusal_of(KafkaConnectionError("socket disconnected")) is None


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_refusal_is_said_once_a_few_minutes_and_asked_again_ever_less_often(caplog):
    clock = _Clock()
    refused = Refused(logging.getLogger("test.refused"), "cluster c", "keeping the values",
                      clock=clock)
    waits = []
    with caplog.at_level(logging.INFO, logger="test.refused"):
        for _ in range(8):
            assert refused.due()
            refused.refused("authentication failed (SASL PLAIN): ...")
            waits.append(refused.wait_s())
            assert not refused.due()
            clock.now += refused.wait_s()
        assert waits == [1.0, 2.0, 4.0, 8.0, 16.0, CAP_S, CAP_S, CAP_S]
        assert len(caplog.records) == 1  # 8 attempts, 155 s: said once
        clock.now += REPEAT_S
        refused.refused("authentication failed (SASL PLAIN): ...")
        refused.refused("TLS: certificate verify failed (...): ...")  # another: said at once
        refused.answered()
        refused.answered()  # once
    said = [r.getMessage() for r in caplog.records]
    assert said == [
        "cluster c: authentication failed (SASL PLAIN): ...; keeping the values",
        "cluster c: authentication failed (SASL PLAIN): ... (still, after 9 attempts); keeping "
        "the values",
        "cluster c: TLS: certificate verify failed (...): ...; keeping the values",
        "cluster c: answers again"]
    assert refused.due() and refused.wait_s() == 0 and refused.current is None


def test_kafka_python_lines_about_a_refusal_and_a_refused_fetch_are_dropped(caplog):
    quiet_refusals()
    manager = logging.getLogger("kafka.net.manager")
    fetcher = logging.getLogger("kafka.consumer.fetcher")
    with caplog.at_level(logging.WARNING):
        manager.warning("Bootstrap connection to %s failed: %s (backoff %.2f secs)",
                        "bootstrap-0", SCRAM_FAILED, 0.05)
        manager.error("Connection failed: %s", _verify_failed("self-signed certificate"))
        fetcher.warning("Not authorized to read from topic %s.", "__consumer_offsets")
        manager.warning("Bootstrap connection to %s failed: %s (backoff %.2f secs)",
                        "bootstrap-0", KafkaConnectionError("connection refused"), 0.05)
    assert [r.getMessage() for r in caplog.records] == [
        "Bootstrap connection to bootstrap-0 failed: KafkaConnectionError: connection refused "
        "(backoff 0.05 secs)"]


def test_the_progress_poll_leaves_a_refusal_to_the_end_offset_poller(caplog):
    """The job's own look at the offsets topic's end offsets meets the same refusal as the
    end-offset poller, which says it once: the look says nothing more than a debug line."""
    import logging

    from kafka.errors import SaslAuthenticationFailedError

    from streaming.job.lifecycle import OffsetsTopicProgress

    def refused():
        raise SaslAuthenticationFailedError("Authentication failed during authentication due to "
                                            "invalid credentials with SASL mechanism SCRAM-SHA-512")

    def broken():
        raise RuntimeError("the broker went away")

    with caplog.at_level(logging.DEBUG, logger="groupscope.job"):
        OffsetsTopicProgress(refused).refresh_target()
        OffsetsTopicProgress(broken).refresh_target()
    said = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "groupscope.job"]
    assert [level for level, _ in said] == [logging.DEBUG, logging.WARNING]
    assert "went away" in said[1][1]
