"""kafka-python's clients as groupscope makes and closes them.

- A bootstrap that the cluster refuses (credentials, TLS: streaming/kafka/refusals.py) ends at
  the first refusal, with it. kafka-python retries such a connection with its reconnect
  backoff, from 50 ms, for its whole bootstrap timeout: about seven failed authentications a
  client, ending in "Unable to bootstrap", which names no cause. (Its connection manager keeps
  refusals to raise on the next attempt, but only those its connect step raises itself, which
  neither a failed SASL exchange nor a TLS handshake is, and that step clears them after.)
- A client whose constructor failed has started its IO thread already: it is stopped here,
  where kafka-python would leave it running.
- A client is closed on its own IO thread. Closed from another thread, its connections are torn
  down under the IO thread's reads, which then fail on the torn-down parts
  (`'NoneType' object has no attribute 'data_received'` and its traceback, from kafka.net.selector).
"""
from __future__ import annotations

import logging
import threading
from typing import Any, TypeVar

from kafka import KafkaAdminClient, KafkaConsumer
from kafka.errors import KafkaConnectionError, SaslAuthenticationFailedError
from kafka.net.compat import KafkaNetClient
from kafka.net.connection import KafkaConnection
from kafka.net.manager import KafkaConnectionManager
from kafka.net.selector import NetworkSelector

from streaming.kafka.close_noise import quiet_closes
from streaming.kafka.refusals import refusal_of

log = logging.getLogger("groupscope.kafka")
Client = TypeVar("Client", KafkaConsumer, KafkaAdminClient)


class _FirstRefusalEnds(KafkaConnectionManager):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._refused: dict[object, BaseException] = {}  # bootstrap node -> its refusal

    def get_connection(self, node_id, *args, **kwargs):
        refused = self._refused.get(node_id)
        if refused is not None:
            raise refused  # the bootstrap loop retries only a node not ready: this ends it
        new = node_id is not None and node_id not in self._conns
        conn = super().get_connection(node_id, *args, **kwargs)
        if new and self.cluster.is_bootstrap(node_id):
            conn.init_future.add_errback(lambda error: self._keep_refusal(node_id, conn, error))
        return conn

    def _keep_refusal(self, node_id, conn, error: BaseException) -> None:
        if refusal_of(error) is None and _closed_while_authenticating(conn, error):
            # A broker that refuses the credentials closes the connection after a delay
            # (connection.failed.authentication.delay.ms), and its answer, which says why, is
            # often not read before: its log counts a failed authentication all the same.
            for said in (conn, error):
                said.said_by_groupscope = True  # for refused_quietly
            error = SaslAuthenticationFailedError(
                f"the broker closed the connection during authentication with SASL mechanism "
                f"{conn.config['sasl_mechanism']}")
        if refusal_of(error) is not None:
            self._refused[node_id] = error


def _closed_while_authenticating(conn, error: BaseException) -> bool:
    """A SASL connection whose transport was made (TCP and TLS went through: its parser is set
    once it is) and that the broker closed before it was ready."""
    return (isinstance(error, KafkaConnectionError) and error.args == ("socket disconnected",)
            and isinstance(conn, KafkaConnection) and conn.sasl_enabled
            and conn.parser is not None)


def refused_quietly(logged: object) -> bool:
    """Whether `logged` (what a kafka-python log line is about: a transport, a connection, an
    error) is part of a refusal the job says itself. A transport's disconnection is logged
    before its connection fails: it is judged by the connection it serves."""
    if getattr(logged, "said_by_groupscope", False):
        return True
    conn = getattr(logged, "_protocol", None)
    return (conn is not None and getattr(conn, "initializing", False)
            and _closed_while_authenticating(conn, KafkaConnectionError("socket disconnected")))


def _net_client(**configs: Any) -> KafkaNetClient:
    """`kafka_client` of kafka-python's consumer and admin client."""
    net = NetworkSelector(**configs)
    return KafkaNetClient(net=net, manager=_FirstRefusalEnds(net, **configs), **configs)


def consumer(**config: Any) -> KafkaConsumer:
    return _made(KafkaConsumer, config)


def admin(**config: Any) -> KafkaAdminClient:
    """An admin client; consumer-only settings in `config` are left out (it refuses them)."""
    return _made(KafkaAdminClient, {k: v for k, v in config.items()
                                    if k in KafkaAdminClient.DEFAULT_CONFIG})


def _made(cls: type[Client], config: dict) -> Client:
    from streaming.kafka.refusal_noise import quiet_refusals

    # Here rather than only in the CLI: Spark's Python workers make clients too.
    quiet_closes()
    quiet_refusals()
    client = cls.__new__(cls)
    try:
        client.__init__(**{"kafka_client": _net_client, **config})
    except BaseException:
        net_client = getattr(client, "_client", None)
        if net_client is not None:
            _close_connections(net_client)
            net_client.close()
        raise
    return client


def close(client: KafkaConsumer | KafkaAdminClient | None) -> None:
    """Close `client`, its connections on its own IO thread first."""
    if client is None:
        return
    net_client = getattr(client, "_client", None)
    if net_client is not None:
        _close_connections(net_client)
    client.close()


def _close_connections(net_client: KafkaNetClient) -> None:
    net = net_client._net
    io = net._io_thread
    if io is None or not io.is_alive() or io is threading.current_thread():
        return
    try:
        net.run(net_client._manager.close)
    except Exception:  # the loop already stopped or failed: the client's close does the rest
        log.debug("closing the connections on their IO thread failed", exc_info=True)
