"""kafka-python's lines about connections groupscope closed are dropped; its other errors stay."""
import logging

import pytest

from streaming.kafka.close_noise import quiet_closes


@pytest.fixture
def quieted():
    quiet_closes()
    quiet_closes()  # once is enough: a second call adds nothing
    yield
    for name in ("kafka.net.transport", "kafka.cluster"):
        logging.getLogger(name).filters.clear()


def test_a_read_on_a_transport_closed_by_us_is_not_logged(quieted, caplog):
    assert len(logging.getLogger("kafka.net.transport").filters) == 1
    transport = logging.getLogger("kafka.net.transport")
    cluster = logging.getLogger("kafka.cluster")
    with caplog.at_level(logging.WARNING):
        try:
            None.recv(4096)  # type: ignore[attr-defined]
        except AttributeError:
            transport.exception("%s: Error receiving network data closing socket",
                                "<KafkaTCPTransport [none] (closed)>")
        cluster.error("Metadata refresh: failed %s", "Cancelled")
        transport.error("%s: socket disconnected", "<KafkaTCPTransport [1] (connected)>")
        cluster.error("Metadata refresh: failed %s", "KafkaTimeoutError")
    assert [r.getMessage() for r in caplog.records] == [
        "<KafkaTCPTransport [1] (connected)>: socket disconnected",
        "Metadata refresh: failed KafkaTimeoutError"]
