"""Scenario files: what happens to one consumer group, read from YAML.

A scenario names the group, its topics and produce rates, the consumers' client settings and a
list of timed steps (scale, restart, crash, ...). Times in the file are seconds (floats); client
settings keep Kafka's own names and units (`session_timeout_ms`, ...).
"""
from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

import yaml

CLASSIC_STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")
CONSUMER_STRATEGIES = ("server-uniform", "server-range")
STRATEGIES = CLASSIC_STRATEGIES + CONSUMER_STRATEGIES
ACTIONS = ("scale", "restart", "crash", "kill", "leave_all", "delete_group")


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message says what to fix."""


def protocol_of(strategy: str) -> str:
    """`classic` for client-side assignors, `consumer` for KIP-848 server assignors."""
    if strategy in CLASSIC_STRATEGIES:
        return "classic"
    if strategy in CONSUMER_STRATEGIES:
        return "consumer"
    raise ScenarioError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    rate: float  # messages per second over the whole topic, spread evenly over its partitions


@dataclass(frozen=True)
class ClientSpec:
    count: int
    topics: tuple[str, ...]
    processing_rate: float = 100.0       # messages/s one consumer can process per partition
    session_timeout_ms: int = 45000
    heartbeat_interval_ms: int = 3000    # classic; KIP-848 uses the broker's group setting below
    rebalance_timeout_ms: int = 300000   # max.poll.interval.ms
    auto_commit_interval_ms: int = 5000
    static: bool = False                 # group.instance.id set
    startup_ms: int = 500                # process start to first request
    startup_jitter_ms: int | None = None # up to this much more, per consumer (default: startup_ms / 2)
    poll_delay_ms: int = 100             # up to this long before poll() acts on a rejoin request
    fetch_start_ms: int = 0              # an assigned partition's first message: offset lookup, first fetch
    # client.id of the consumer with this index (from 0); the classic coordinator's member id is
    # client.id + "-" + a UUID, so range and roundrobin order members by it
    client_id: str = "consumer-{group}-{index}"


@dataclass(frozen=True)
class Step:
    at_ms: int
    action: str
    count: int = 0       # scale: target number of consumers; restart/crash: how many
    stagger_ms: int = 0  # between consecutive consumers of the step
    down_ms: int = 0     # restart: how long each consumer stays down


@dataclass(frozen=True)
class Scenario:
    name: str
    group: str
    duration_ms: int
    topics: tuple[TopicSpec, ...]
    clients: ClientSpec
    steps: tuple[Step, ...] = ()
    description: str = ""
    strategies: tuple[str, ...] = STRATEGIES
    latency_budget_ms: int = 5000
    start_ms: int = 1_700_000_000_000    # wall-clock ms of simulated time 0
    offsets_topic_partitions: int = 50
    network_ms: int = 2                  # one-way client <-> broker latency
    assignment_ms: int = 20              # leader's time to compute an assignment
    initial_rebalance_delay_ms: int = 3000  # group.initial.rebalance.delay.ms
    consumer_heartbeat_interval_ms: int = 5000  # group.consumer.heartbeat.interval.ms (KIP-848)
    # group.consumer.assignment.interval.ms (Kafka 4.3+, KIP-1263): a new target assignment is
    # computed at the first heartbeat at least this long after the previous one; 0 as before 4.3
    consumer_assignment_interval_ms: int = 1000
    lag_sample_ms: int = 5000


_TOP_KEYS = {"name", "description", "group", "duration", "topics", "consumers", "steps", "strategies",
             "latency_budget", "start_ms", "offsets_topic_partitions", "network_ms", "assignment_ms",
             "initial_rebalance_delay_ms", "consumer_heartbeat_interval_ms", "consumer_assignment_interval_ms",
             "lag_sample"}
_CLIENT_KEYS = {"count", "topics", "processing_rate", "session_timeout_ms", "heartbeat_interval_ms",
                "rebalance_timeout_ms", "auto_commit_interval_ms", "static", "startup_ms", "poll_delay_ms",
                "startup_jitter_ms", "fetch_start_ms", "client_id"}
_STEP_KEYS = {"at", "action", "count", "to", "stagger", "down"}


def _ms(seconds: Any, what: str) -> int:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
        raise ScenarioError(f"{what} must be a non-negative number of seconds, got {seconds!r}")
    return int(round(seconds * 1000))


def _int(value: Any, what: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ScenarioError(f"{what} must be an integer >= {minimum}, got {value!r}")
    return value


def _positive(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ScenarioError(f"{what} must be a positive number, got {value!r}")
    return float(value)


def _unknown(data: Mapping[str, Any], allowed: set[str], where: str) -> None:
    extra = sorted(set(data) - allowed)
    if extra:
        raise ScenarioError(f"{where}: unknown key(s) {', '.join(extra)}")


def _topic(data: Any, i: int) -> TopicSpec:
    if not isinstance(data, Mapping):
        raise ScenarioError(f"topics[{i}] must be a mapping with name, partitions, rate")
    _unknown(data, {"name", "partitions", "rate"}, f"topics[{i}]")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ScenarioError(f"topics[{i}].name must be a non-empty string")
    return TopicSpec(name, _int(data.get("partitions"), f"topics[{i}].partitions", 1),
                     _positive(data.get("rate"), f"topics[{i}].rate"))


def _clients(data: Any, topic_names: list[str]) -> ClientSpec:
    if not isinstance(data, Mapping):
        raise ScenarioError("consumers must be a mapping (count, topics, ...)")
    _unknown(data, _CLIENT_KEYS, "consumers")
    topics = tuple(data.get("topics", topic_names))
    missing = [t for t in topics if t not in topic_names]
    if missing or not topics:
        raise ScenarioError(f"consumers.topics must name declared topics; unknown: {missing or 'none given'}")
    kwargs: dict[str, Any] = {"count": _int(data.get("count"), "consumers.count", 0), "topics": topics}
    for key in _CLIENT_KEYS - {"count", "topics", "static", "processing_rate", "client_id"}:
        if key in data:
            kwargs[key] = _int(data[key], f"consumers.{key}", 0 if key in ("startup_jitter_ms", "fetch_start_ms") else 1)
    if "processing_rate" in data:
        kwargs["processing_rate"] = _positive(data["processing_rate"], "consumers.processing_rate")
    if "client_id" in data:
        pattern = data["client_id"]
        try:
            ok = isinstance(pattern, str) and bool(pattern.format(group="g", index=0))
        except (KeyError, IndexError, ValueError):
            ok = False
        if not ok:
            raise ScenarioError("consumers.client_id must be a format string using {group} and {index}, "
                                f"got {pattern!r}")
        kwargs["client_id"] = pattern
    if "static" in data:
        if not isinstance(data["static"], bool):
            raise ScenarioError("consumers.static must be true or false")
        kwargs["static"] = data["static"]
    return ClientSpec(**kwargs)


def _step(data: Any, i: int) -> Step:
    if not isinstance(data, Mapping):
        raise ScenarioError(f"steps[{i}] must be a mapping")
    _unknown(data, _STEP_KEYS, f"steps[{i}]")
    action = data.get("action")
    if action not in ACTIONS:
        raise ScenarioError(f"steps[{i}].action must be one of {', '.join(ACTIONS)}, got {action!r}")
    count = data.get("to") if action == "scale" else data.get("count", 0)
    if action in ("scale", "restart", "crash", "kill") and count is None:
        raise ScenarioError(f"steps[{i}] ({action}) needs {'to' if action == 'scale' else 'count'}")
    return Step(at_ms=_ms(data.get("at"), f"steps[{i}].at"), action=action,
                count=_int(count or 0, f"steps[{i}].count"),
                stagger_ms=_ms(data.get("stagger", 0), f"steps[{i}].stagger"),
                down_ms=_ms(data.get("down", 0), f"steps[{i}].down"))


def parse_scenario(data: Any, source: str = "scenario") -> Scenario:
    """Builds a Scenario from parsed YAML, rejecting anything it cannot use with a clear message."""
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{source}: expected a mapping at the top level")
    _unknown(data, _TOP_KEYS, source)
    raw_topics = data.get("topics")
    if not isinstance(raw_topics, list) or not raw_topics:
        raise ScenarioError(f"{source}: topics must be a non-empty list")
    topics = tuple(_topic(t, i) for i, t in enumerate(raw_topics))
    if len({t.name for t in topics}) != len(topics):
        raise ScenarioError(f"{source}: topic names must be unique")
    steps = tuple(sorted((_step(s, i) for i, s in enumerate(data.get("steps") or [])),
                         key=lambda s: s.at_ms))
    strategies = tuple(data.get("strategies") or STRATEGIES)
    for s in strategies:
        protocol_of(s)
    group = data.get("group")
    if not isinstance(group, str) or not group:
        raise ScenarioError(f"{source}: group must be a non-empty string")
    kwargs: dict[str, Any] = {}
    for key in ("start_ms", "offsets_topic_partitions", "network_ms", "assignment_ms",
                "initial_rebalance_delay_ms", "consumer_heartbeat_interval_ms", "consumer_assignment_interval_ms"):
        if key in data:
            kwargs[key] = _int(data[key], key, 0 if key in ("network_ms", "assignment_ms", "initial_rebalance_delay_ms",
                                                            "consumer_assignment_interval_ms") else 1)
    if "latency_budget" in data:
        kwargs["latency_budget_ms"] = _ms(data["latency_budget"], "latency_budget")
    if "lag_sample" in data:
        kwargs["lag_sample_ms"] = max(1, _ms(data["lag_sample"], "lag_sample"))
    return Scenario(
        name=str(data.get("name") or source), description=str(data.get("description") or ""),
        group=group, duration_ms=_ms(data.get("duration"), "duration"), topics=topics,
        clients=_clients(data.get("consumers"), [t.name for t in topics]), steps=steps,
        strategies=strategies, **kwargs)


def builtin_scenarios() -> list[str]:
    """Names of the scenarios shipped as package data."""
    folder = resources.files("coordinator.simulator").joinpath("scenarios")
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


def load_scenario(name_or_path: str) -> Scenario:
    """A built-in scenario by name, or a YAML file by path."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        if not path.is_file():
            raise ScenarioError(f"scenario file {name_or_path} does not exist")
        text, source = path.read_text(encoding="utf-8"), str(path)
    elif name_or_path in builtin_scenarios():
        folder = resources.files("coordinator.simulator").joinpath("scenarios")
        text, source = folder.joinpath(f"{name_or_path}.yaml").read_text(encoding="utf-8"), name_or_path
    else:
        raise ScenarioError(f"no scenario named {name_or_path!r}; built-ins: {', '.join(builtin_scenarios())}")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{source}: not valid YAML ({exc.__class__.__name__})") from None
    return parse_scenario(data, source)
