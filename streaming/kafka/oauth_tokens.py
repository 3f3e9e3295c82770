"""OAUTHBEARER tokens for kafka-python, from the settings of Kafka's Java login module.

`OAuthBearerLoginModule` takes either `unsecuredLoginStringClaim_sub` (an unsigned token, what
Kafka's own unsecured validator accepts: for tests and development) or, with
`sasl.oauthbearer.token.endpoint.url`, `clientId` and `clientSecret` (and optionally `scope`): the
OAuth client-credentials grant against the identity provider's token endpoint, as Kafka's Java
client does it. A token is reused until 80% of its lifetime has passed.
"""
from __future__ import annotations

import base64
import json
import threading
import time
import urllib.parse
import urllib.request
from typing import Mapping

from kafka.net.sasl.oauth import AbstractTokenProvider

REFRESH_AT = 0.8  # of a token's lifetime
REQUEST_TIMEOUT_S = 10.0


class _Reused(AbstractTokenProvider):
    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._token: str | None = None
        self._renew_at = 0.0

    def token(self) -> str:
        with self._lock:
            if self._token is None or time.time() >= self._renew_at:
                token, lifetime_s = self._fetch()
                self._token, self._renew_at = token, time.time() + REFRESH_AT * lifetime_s
            return self._token

    def _fetch(self) -> tuple[str, float]:
        raise NotImplementedError


class UnsecuredTokens(_Reused):
    """Unsigned JWTs (`alg: none`) naming `subject`."""

    def __init__(self, subject: str, lifetime_s: int, sub_claim: str = "sub",
                 scope: list[str] | None = None, scope_claim: str = "scope") -> None:
        super().__init__()
        self.subject, self.lifetime_s = subject, lifetime_s
        self.sub_claim, self.scope, self.scope_claim = sub_claim, scope, scope_claim

    def _fetch(self) -> tuple[str, float]:
        now = int(time.time())
        claims = {self.sub_claim: self.subject, "iat": now, "exp": now + self.lifetime_s}
        if self.scope:
            claims[self.scope_claim] = self.scope
        return f"{_part({'alg': 'none'})}.{_part(claims)}.", float(self.lifetime_s)


class ClientCredentialsTokens(_Reused):
    """Access tokens from an OAuth token endpoint (client-credentials grant, client id and
    secret in HTTP basic authentication, as Kafka's Java client sends them)."""

    def __init__(self, endpoint: str, client_id: str, client_secret: str,
                 scope: str | None = None) -> None:
        super().__init__()
        self.endpoint, self.client_id, self._secret, self.scope = (endpoint, client_id,
                                                                   client_secret, scope)

    def _fetch(self) -> tuple[str, float]:
        form = {"grant_type": "client_credentials", **({"scope": self.scope} if self.scope else {})}
        basic = base64.b64encode(f"{urllib.parse.quote(self.client_id)}:"
                                 f"{urllib.parse.quote(self._secret)}".encode()).decode()
        request = urllib.request.Request(
            self.endpoint, data=urllib.parse.urlencode(form).encode(), method="POST",
            headers={"Authorization": f"Basic {basic}", "Accept": "application/json",
                     "Content-Type": "application/x-www-form-urlencoded"})
        try:
            with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as answer:
                body = json.loads(answer.read())
        except Exception as exc:  # said without the secret: the request holds it
            raise RuntimeError(f"OAuth token endpoint {self.endpoint}: "
                               f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}") from None
        token = body.get("access_token")
        if not token:
            raise RuntimeError(f"OAuth token endpoint {self.endpoint}: no access_token in "
                               f"its answer")
        return token, float(body.get("expires_in") or 3600)


def token_provider(options: Mapping[str, str], endpoint: str | None, scope_claim: str = "scope",
                   sub_claim: str = "sub") -> AbstractTokenProvider:
    """The provider OAuthBearerLoginModule's `options` describe (see the module's docstring)."""
    from streaming.kafka.client_settings import SettingError

    if "unsecuredLoginStringClaim_sub" in options:
        scope = options.get("unsecuredLoginListClaim_scope")
        return UnsecuredTokens(options["unsecuredLoginStringClaim_sub"],
                               int(options.get("unsecuredLoginLifetimeSeconds", "3600")),
                               sub_claim, scope.split(",") if scope else None, scope_claim)
    if endpoint and options.get("clientId"):
        return ClientCredentialsTokens(endpoint, options["clientId"],
                                       options.get("clientSecret", ""), options.get("scope"))
    raise SettingError("kafka.sasl.jaas.config: OAuthBearerLoginModule needs clientId and "
                       "clientSecret with kafka.sasl.oauthbearer.token.endpoint.url, or "
                       "unsecuredLoginStringClaim_sub (unsigned tokens, for tests)")


def _part(value: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()
