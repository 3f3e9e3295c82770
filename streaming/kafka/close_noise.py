"""kafka-python's log lines about a connection groupscope itself closed.

Closing a client while its network thread still waits on a socket makes kafka-python log an
ERROR with a stack trace from the transport (the socket it reads is already gone: the
transport's name says "(closed)") and a failed metadata refresh ("Cancelled"); closing it while a
connection is still being made, that connection's loss and the metadata refresh that waited on
it, both with a bare KafkaConnectionError (kafka-python's own close gives that error no text;
a connection the broker drops says why). All come from closes that race a read or a connect,
say nothing about the cluster, and would read as faults in a job's log: they are dropped.
Errors on open connections pass through.
"""
from __future__ import annotations

import logging

_TRANSPORT = "kafka.net.transport"
_CLUSTER = "kafka.cluster"
_CONNECTION = "kafka.net.connection"
_CLOSED_CONNECTING = ": Connection lost: KafkaConnectionError"


class _ClosedByUs(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.name == _TRANSPORT:
            return "(closed)>" not in message
        if record.name == _CLUSTER:
            return message not in ("Metadata refresh: failed Cancelled",
                                   "Metadata refresh: failed KafkaConnectionError")
        if record.name == _CONNECTION:
            return not message.endswith(_CLOSED_CONNECTING)
        return True


_FILTER = _ClosedByUs()


def quiet_closes() -> None:
    """Install the filter on kafka-python's loggers (once, whatever logging's configuration)."""
    for name in (_TRANSPORT, _CLUSTER, _CONNECTION):
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
