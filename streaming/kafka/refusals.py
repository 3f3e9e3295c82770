"""A cluster that refuses groupscope: its credentials, its TLS, or an ACL. Such a refusal does not
go away by asking again a second later, and each attempt costs the broker a failed
authentication (or an authorizer denial) and the job a log line.

`refusal_of` says what an error means and what to fix (`None`: not a refusal, e.g. a broker that
is down). `Refused` holds one client's attempts: each distinct refusal said once (again every
few minutes while it lasts), the next attempt put off 1 s, then twice as long each time up to
`CAP_S`, and one line when the cluster lets the client in again.
"""
from __future__ import annotations

import logging
import re
import ssl
import time
from typing import Callable, Iterator

FIRST_S, CAP_S = 1.0, 30.0
REPEAT_S = 300.0  # a refusal that lasts is said again this often

_MECHANISM = re.compile(r"SASL mechanism ([\w-]+)")
# What an SSLError's reason says about a TLS handshake the broker refused (its alert).
_CLIENT_CERT_REFUSED = {"SSLV3_ALERT_BAD_CERTIFICATE", "TLSV13_ALERT_CERTIFICATE_REQUIRED",
                        "SSLV3_ALERT_CERTIFICATE_UNKNOWN", "TLSV1_ALERT_UNKNOWN_CA",
                        "SSLV3_ALERT_CERTIFICATE_EXPIRED", "TLSV1_ALERT_ACCESS_DENIED"}
_NOT_TLS = {"WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG"}
_TRUST = "give the CA that signed it in source.kafka ssl.truststore.location"


def refusal_of(error: BaseException) -> str | None:
    """What the cluster refused and what to fix, in one line; None when `error` is no refusal
    of the client's credentials or TLS. Looks through the errors `error` wraps (kafka-python
    wraps a TLS error in a connection error; a caller may wrap that again)."""
    for found in _chain(error):
        said = _said(found)
        if said is not None:
            return said
    return _from_text(str(error))


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    todo = [error]
    while todo and len(seen) < 16:
        found = todo.pop(0)
        if id(found) in seen:
            continue
        seen.add(id(found))
        yield found
        todo.extend(e for e in (found.__cause__, found.__context__, *found.args)
                    if isinstance(e, BaseException))


def _said(error: BaseException) -> str | None:
    from kafka.errors import SaslAuthenticationFailedError, UnsupportedSaslMechanismError

    if isinstance(error, SaslAuthenticationFailedError):
        return _authentication(str(error))
    if isinstance(error, UnsupportedSaslMechanismError):
        return (f"authentication failed: {error}: set source.kafka sasl.mechanism to one the "
                f"broker enables")
    if isinstance(error, ssl.SSLCertVerificationError):
        return _verify_failed(error.verify_message or str(error))
    if isinstance(error, ssl.SSLError):
        reason = getattr(error, "reason", None) or ""
        if reason in _CLIENT_CERT_REFUSED:
            return (f"TLS: the broker refused the client's certificate ({reason.lower()}): give "
                    f"mutual TLS a key and certificate the broker trusts in source.kafka "
                    f"ssl.keystore.location")
        if reason in _NOT_TLS:
            return (f"TLS: the broker does not answer in TLS on this port ({reason.lower()}): "
                    f"check source.kafka security.protocol and the port of "
                    f"source.bootstrap_servers")
    return None


def _authentication(message: str) -> str:
    found = _MECHANISM.search(message)
    mechanism = f"SASL {found.group(1)}" if found else "SASL"
    return (f"authentication failed ({mechanism}): the broker refused the credentials; check "
            f"the user name and password (or token) in source.kafka sasl.jaas.config")


def _verify_failed(why: str) -> str:
    if "mismatch" in why.lower():
        return (f"TLS: certificate verify failed ({why}): the broker's certificate does not name "
                f"the host connected to; connect by a name it holds, or set source.kafka "
                f"ssl.endpoint.identification.algorithm to \"\" to skip that check")
    return (f"TLS: certificate verify failed ({why}): the broker's certificate is not trusted; "
            f"{_TRUST}")


def _from_text(text: str) -> str | None:
    """Errors that reach a caller as text only (another client's, another process's)."""
    lowered = text.lower()
    if "authentication failed" in lowered or "sasl authentication error" in lowered:
        return _authentication(text)
    found = re.search(r"certificate verify failed:? ?([^(\]\n]*)", text, re.I)
    if found:
        return _verify_failed(found.group(1).strip() or "certificate verify failed")
    return None


class Refused:
    """One client's refusals. `due()` before an attempt; `refused(text)` after a refused one,
    `answered()` after one that worked."""

    def __init__(self, logger: logging.Logger, what: str, consequence: str = "",
                 level: int = logging.WARNING, repeat_s: float | None = REPEAT_S,
                 first_s: float = FIRST_S, cap_s: float = CAP_S,
                 answered: str = "answers again",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.logger, self.what, self.consequence, self.level = logger, what, consequence, level
        self.repeat_s, self.first_s, self.cap_s = repeat_s, first_s, cap_s
        self._answered_text, self.clock = answered, clock
        self.current: str | None = None  # the refusal in force
        self.attempts = 0  # refused attempts since the last one that worked
        self._delay_s = 0.0
        self._next_at = 0.0
        self._said: tuple[str, float] | None = None  # (what was said, when)

    def due(self) -> bool:
        return self.clock() >= self._next_at

    def wait_s(self) -> float:
        """Seconds until the next attempt may be made."""
        return max(0.0, self._next_at - self.clock())

    def refused(self, refusal: str) -> None:
        now = self.clock()
        self.attempts += 1
        self._delay_s = min(self.cap_s, self._delay_s * 2 if self._delay_s else self.first_s)
        self._next_at = now + self._delay_s
        self.current = refusal
        last = self._said
        if last is None or last[0] != refusal or (
                self.repeat_s is not None and now - last[1] >= self.repeat_s):
            again = last is not None and last[0] == refusal
            self.logger.log(self.level, "%s: %s%s%s", self.what, refusal,
                            f" (still, after {self.attempts} attempts)" if again else "",
                            f"; {self.consequence}" if self.consequence else "")
            self._said = (refusal, now)

    def answered(self) -> None:
        if self.current is not None and self._said is not None:
            self.logger.log(min(self.level, logging.INFO), "%s: %s", self.what,
                            self._answered_text)
        self.current, self.attempts, self._delay_s, self._next_at = None, 0, 0.0, 0.0
        self._said = None
