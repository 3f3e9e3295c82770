"""streaming/kafka/record_gaps.py against a real Kafka 4.4 broker: the offsets of a topic that
hold no record are its transaction markers (and what compaction removed), wherever they are,
the last offset of the log included."""
from __future__ import annotations

import uuid

from streaming.kafka.record_gaps import RecordGaps
from tests.support.kafka_broker import create_topic, produce_raw


def _transaction(bootstrap: str, topic: str, count: int, commit: bool = True) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap,
                         "transactional.id": f"gaps-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(60)
    producer.begin_transaction()
    for _ in range(count):
        producer.produce(topic, value=b"t", partition=0)
    assert producer.flush(30) == 0  # an abort drops what is not sent yet
    (producer.commit_transaction if commit else producer.abort_transaction)(60)


def test_the_gaps_are_the_transaction_markers(broker):
    topic = f"gaps-{uuid.uuid4().hex[:8]}"
    create_topic(broker.bootstrap, topic, 1)
    _transaction(broker.bootstrap, topic, 3)                   # 0-2, its marker at 3
    produce_raw(broker.bootstrap, topic, [(0, None, b"plain", None)])  # 4
    _transaction(broker.bootstrap, topic, 2, commit=False)     # 5-6 aborted, marker at 7
    _transaction(broker.bootstrap, topic, 1)                   # 8, marker at 9: the log's end
    reader = RecordGaps({"bootstrap_servers": [broker.bootstrap]}, timeout_s=30)
    try:
        assert reader.gaps({(topic, 0): [(0, 9)]}) == {(topic, 0): {3, 7, 9}}
        # ranges apart are read apart; a range of records only has no gap; none past the end
        assert reader.gaps({(topic, 0): [(3, 3), (9, 12)]}) == {(topic, 0): {3, 9}}
        assert reader.gaps({(topic, 0): [(4, 6)]}) == {(topic, 0): set()}
    finally:
        reader.close()
