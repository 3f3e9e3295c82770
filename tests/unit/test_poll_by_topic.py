"""A topic the client cannot answer for (just made, its leader not known yet; deleted since the
last metadata) does not keep every other topic's end offsets from moving: the end-offset poller
asks again a topic at a time and leaves that one out (streaming/exporter/end_offset_poller.py)."""
from __future__ import annotations

from streaming.exporter.end_offset_poller import EndOffsetPoller, PollerSettings
from streaming.kafka.offsets import OffsetsClient
from tests.unit.test_exporter import T0, Clock, make_view, member, snapshot


class _OneTopicFails(OffsetsClient):
    """Answers for every topic but `fresh`, whose partitions fail the whole request."""

    def __init__(self) -> None:
        self.end = 10

    def _answer(self, partitions):
        if any(tp[0] == "fresh" for tp in partitions):
            raise KeyError(next(tp for tp in partitions if tp[0] == "fresh"))
        return {tp: self.end for tp in partitions}

    def partitions(self, topic):
        return [0]

    def start_offsets(self, partitions):
        return {tp: 0 for tp in self._answer(partitions)}

    def end_offsets(self, partitions):
        return self._answer(partitions)

    def topic_metadata(self):
        return {}, {"orders": 1, "fresh": 1}

    def close(self):
        pass


def test_the_other_topics_are_polled_while_one_fails():
    clock = Clock()
    view = make_view(clock)
    view.update_topic_metadata({}, {"orders": 1, "fresh": 1})
    view.update_groups([snapshot("g", [member("m", [("orders", 0), ("fresh", 0)],
                                              topics=("orders", "fresh"))],
                                 [("orders", 0, 4, T0 - 30), ("fresh", 0, 1, T0 - 30)])])
    client = _OneTopicFails()
    poller = EndOffsetPoller(view, lambda: client, PollerSettings(), clock=clock)
    assert poller.poll_once()
    client.end = 25
    clock.now += 5
    assert poller.poll_once()
    assert view.log_end(("orders", 0))[0] == 25
    assert view.log_end(("fresh", 0)) is None or view.log_end(("fresh", 0))[0] is None
