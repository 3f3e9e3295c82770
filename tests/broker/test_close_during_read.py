"""A kafka-python client closed by another thread while its IO thread is handing a broker's
answer to the connection. Closed from the caller's thread, the connection is torn down in
between, and the IO thread fails on it with `'NoneType' object has no attribute
'data_received'` and its traceback (what a refused DESCRIBE on `__consumer_offsets` met, by
chance, as the job closed the client that had been refused). Here the interleaving is forced,
on a real broker's answer: groupscope closes the connections on the IO thread, so the read
ends before they go."""
from __future__ import annotations

import logging
import threading
import uuid

from kafka import TopicPartition
from kafka.net.manager import KafkaConnectionManager
from kafka.net.transport import KafkaTCPTransport

from streaming.kafka.kafka_python_net import close, consumer
from tests.support.kafka_broker import create_topic

HOLD_S = 2.0  # how long either side waits for the other at most


def test_a_close_from_another_thread_lets_the_read_in_flight_end(broker, monkeypatch, caplog):
    topic = f"close-race-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 1)
    client = consumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False, group_id=None)
    client.topics()  # connected
    io_thread = client._client._net._io_thread
    armed, received, torn_down = threading.Event(), threading.Event(), threading.Event()
    recv, tear_down = KafkaTCPTransport._sock_recv, KafkaTCPTransport._close
    close_connections = KafkaConnectionManager.close

    def held_recv(transport):
        data, error = recv(transport)
        if data and armed.is_set():
            armed.clear()
            received.set()
            torn_down.wait(HOLD_S)  # between the read and its hand-over to the connection
        return data, error

    def noted_tear_down(transport, error=None):
        tear_down(transport, error)
        torn_down.set()

    def close_with_an_answer_arriving(manager, *args, **kwargs):
        # Connections closed from the caller's thread: an answer arrives just then.
        if threading.current_thread() is not io_thread and not manager.closed:
            armed.set()
            received.wait(HOLD_S)
        return close_connections(manager, *args, **kwargs)

    monkeypatch.setattr(KafkaTCPTransport, "_sock_recv", held_recv)
    monkeypatch.setattr(KafkaTCPTransport, "_close", noted_tear_down)
    monkeypatch.setattr(KafkaConnectionManager, "close", close_with_an_answer_arriving)
    caplog.set_level(logging.ERROR, logger="kafka")
    stop = threading.Event()
    asking = threading.Thread(target=_ask_end_offsets, args=(client, topic, stop), daemon=True)
    asking.start()
    try:
        close(client)
    finally:
        stop.set()
        asking.join(30)
    failures = [r for r in caplog.records if r.exc_info or "data_received" in r.getMessage()]
    assert not failures, [f"{r.name}: {r.getMessage()} {r.exc_info and r.exc_info[1]!r}"
                          for r in failures]
    assert torn_down.is_set()


def _ask_end_offsets(client, topic: str, stop: threading.Event) -> None:
    """Answers on their way all the time, until the close ends them."""
    while not stop.is_set():
        try:
            client.end_offsets([TopicPartition(topic, 0)])
        except Exception:  # the close ends the questions: only the IO thread's failure matters
            return
