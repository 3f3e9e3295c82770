"""kafka-python's log lines about a refusal the job says itself.

A refused connection (credentials, TLS) makes kafka-python log three to five lines an attempt,
one of them with a stack trace (a TLS alert read after the handshake), some as a plain
disconnection (streaming/kafka/kafka_python_net.py tells those), and a fetch refused by an ACL
a warning every time it is tried. The job says each refusal in one line of its own, with
what to fix (streaming/kafka/refusals.py), and asks again seldom: these lines are dropped.
Errors that are no refusal pass through.
"""
from __future__ import annotations

import logging

from streaming.kafka.refusals import refusal_of

_LOGGERS = ("kafka.net.transport", "kafka.net.connection", "kafka.net.manager", "kafka.cluster",
            "kafka.consumer.fetcher")
_NOT_AUTHORIZED_TO_READ = "Not authorized to read from topic"


class _SaidByTheJob(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and record.msg.startswith(_NOT_AUTHORIZED_TO_READ):
            return False
        from streaming.kafka.kafka_python_net import refused_quietly

        args = list(record.args) if isinstance(record.args, tuple) else []
        if record.exc_info and record.exc_info[1] is not None:
            args.append(record.exc_info[1])
        return not any(refused_quietly(a) or (isinstance(a, BaseException)
                                              and refusal_of(a) is not None) for a in args)


_FILTER = _SaidByTheJob()


def quiet_refusals() -> None:
    """Install the filter on kafka-python's loggers (once, whatever logging's configuration)."""
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
