"""Topics' retention settings through DescribeConfigs (kafka-python's admin connection).

One request for every topic asked about, for the keys of `coordinator.retention.CONFIG_KEYS`
only. The answer is read a resource at a time rather than through kafka-python's
`describe_configs`, which ignores each resource's error code: a topic this principal may not
DESCRIBE_CONFIGS comes back as refused (what to grant), one that is gone as left out, and the
others as their settings.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kafka.errors import for_code
from kafka.protocol.admin import DescribeConfigsRequest

from coordinator.retention import CONFIG_KEYS, RetentionConfig, parse_config
from streaming.kafka.kafka_python_net import admin, close
from streaming.kafka.log_sizes import LogSizes, read_log_sizes

_TOPIC = 2  # ConfigResourceType.TOPIC
_TOPIC_AUTHORIZATION_FAILED = 29
_UNKNOWN_TOPIC = 3


@dataclass(frozen=True)
class TopicConfigs:
    """One read: each described topic's retention, and the topics refused."""
    retention: dict[str, RetentionConfig] = field(default_factory=dict)
    refused: tuple[str, ...] = ()

    def refusal(self) -> str | None:
        """What is refused and what to grant, in one line (None: nothing)."""
        if not self.refused:
            return None
        named = ", ".join(self.refused[:10]) + (" ..." if len(self.refused) > 10 else "")
        return (f"this principal may not DESCRIBE_CONFIGS {len(self.refused)} topic(s) "
                f"({named}): their retention risk is not served; grant DESCRIBE_CONFIGS on "
                f"those topics to have it")


class TopicConfigReader:
    """One admin connection to the cluster; `read(topics)` asks for their retention."""

    def __init__(self, config: dict, timeout_s: float | None = None) -> None:
        settings = dict(config)
        if timeout_s is not None:
            settings["request_timeout_ms"] = int(timeout_s * 1000)
        self._admin = admin(**settings)

    def read(self, topics: list[str]) -> TopicConfigs:
        if not topics:
            return TopicConfigs()
        request = DescribeConfigsRequest(
            resources=[(_TOPIC, topic, list(CONFIG_KEYS)) for topic in topics],
            include_synonyms=False, max_version=4)
        manager = self._admin._manager

        async def ask():
            return await manager.send(request)

        return read_answer(manager.run(ask).results)

    def log_sizes(self, partitions: dict[str, list[int]]) -> LogSizes:
        """The partitions' sizes on disk (DescribeLogDirs) on the same connection."""
        return read_log_sizes(self._admin._manager, partitions)

    def close(self) -> None:
        close(self._admin)


def read_answer(results) -> TopicConfigs:
    """A DescribeConfigs answer's results (resource_name, error_code, configs of name and
    value) as TopicConfigs: an error other than a refusal or a topic gone fails the read."""
    retention: dict[str, RetentionConfig] = {}
    refused: list[str] = []
    for result in results:
        if result.error_code == _TOPIC_AUTHORIZATION_FAILED:
            refused.append(result.resource_name)
        elif result.error_code == _UNKNOWN_TOPIC:
            continue
        elif result.error_code:
            raise for_code(result.error_code)(result.error_message or result.resource_name)
        else:
            retention[result.resource_name] = parse_config(
                {entry.name: entry.value for entry in result.configs})
    return TopicConfigs(retention, tuple(sorted(refused)))
