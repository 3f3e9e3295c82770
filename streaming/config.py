"""groupscope's configuration: one YAML file, every key defaulted, overridable from the environment.

Each section is a frozen dataclass; the loader walks their fields, so a key exists exactly when a
field does. Environment variables override the file: `GROUPSCOPE_<SECTION>__<KEY>` (double
underscore between levels, case-insensitive), e.g. `GROUPSCOPE_SOURCE__BOOTSTRAP_SERVERS=host:9092`
or `GROUPSCOPE_EXPORTER__TLS__CERT=/etc/tls.crt`. Non-string values are parsed as YAML
(`GROUPSCOPE_SPARK__CONF='{spark.sql.shuffle.partitions: 8}'`). Other `GROUPSCOPE_` variables
(no double underscore) are not config and are ignored. Unknown keys, unknown variables of that
form and wrong types stop start-up with a `UserError` naming the key.
"""
from __future__ import annotations

import dataclasses
import os
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Mapping, Union

import yaml

from streaming.errors import UserError
from coordinator.timelag import TIME_METHODS
from streaming.exporter.catalog import GRANULARITIES

ENV_PREFIX = "GROUPSCOPE_"
# Every key is in a section, so a config variable has a double underscore. Others of the prefix
# (GROUPSCOPE_DIR, a wrapper's own, the two below) belong to other tools, or to no key: left alone.
_LEVELS = "__"
CONFIG_PATH_VARIABLE = "GROUPSCOPE_CONFIG"  # the file to read; not itself a config key
# Local mode's Python zygote (streaming/localmode/python_zygote.py): its socket, or "off"; not a config key.
ZYGOTE_VARIABLE = "GROUPSCOPE_ZYGOTE"


def _duration(default: float, doc: str) -> Any:
    return field(default=default, metadata={"duration": True, "doc": doc})


def _key(default: Any, doc: str) -> Any:
    if isinstance(default, (dict, list)):
        return field(default_factory=lambda: type(default)(default), metadata={"doc": doc})
    return field(default=default, metadata={"doc": doc})


@dataclass(frozen=True)
class ClusterConfig:
    name: str = _key("default", "the `cluster` label on every exported series")


@dataclass(frozen=True)
class SparkConfig:
    master: str = _key("local[2]", "Spark master URL")
    app_name: str = _key("groupscope", "Spark application name")
    conf: dict[str, str] = _key({}, "extra Spark settings, passed to the session builder as is")
    local_tuning: str = _key("auto", "auto: speed-ups for a local[...] master that groupscope "
                             "launches itself (streaming/localmode/README.md), none under a "
                             "cluster master or spark-submit; off: none at all")


LOCAL_TUNING = ("auto", "off")
SOURCE_TYPES = ("kafka-python", "kafka", "admin", "replay", "simulator")
SOURCE_CLIENTS = ("kafka-python", "confluent")


@dataclass(frozen=True)
class SourceConfig:
    type: str = _key("kafka-python", "kafka-python (groupscope's own source), kafka (Spark's "
                     "built-in source, needs the spark-sql-kafka package), admin (polls the Admin "
                     "API, for clusters whose __consumer_offsets cannot be read: docs/operations.md, Managed "
                     "Kafka), replay (a capture file) or "
                     "simulator (the coordinator simulator, live: `groupscope demo`)")
    bootstrap_servers: str = _key("127.0.0.1:9092", "Kafka bootstrap servers, comma-separated")
    topic: str = _key("__consumer_offsets", "the topic to read")
    starting_offsets: str = _key("earliest", "where a new query starts: earliest, latest or JSON "
                                 '{"__consumer_offsets": {"0": 42}} (-2 earliest, -1 latest); '
                                 "a restarted query continues from its checkpoint")
    max_records_per_trigger: Union[int, None] = _key(None, "at most this many records per "
                                                     "micro-batch (none: no limit)")
    client: str = _key("kafka-python", "Kafka client of the kafka-python source: kafka-python, "
                       "or confluent (librdkafka, the `fast` extra; no faster in a catch-up)")
    kafka: dict[str, str] = _key({}, "Kafka client settings, as a Java client's properties "
                                 "(security.protocol, sasl.mechanism, sasl.jaas.config, "
                                 "ssl.truststore.*, ssl.keystore.*); values may name secrets as "
                                 "${env:NAME}, ${file:PATH} or ${file:PATH:KEY} (docs/operations.md, Security)")
    replay_path: Union[str, None] = _key(None, "capture file read by the replay source")
    admin_interval: float = _duration(10.0, "source.type admin: how often groups and their "
                                      "offsets are polled")
    admin_seed: bool = _key(True, "kafka-python and kafka sources: at launch, serve the groups "
                            "as the Admin API shows them until __consumer_offsets has been read "
                            "(groupscope_seeded_groups counts them; needs DESCRIBE on the groups)")
    share_state: bool = _key(True, "kafka-python and kafka sources reading __consumer_offsets: "
                             "also read __share_group_state, share groups' delivery state "
                             "(Kafka 4.x; from the topic's start at each launch, as Kafka's "
                             "share coordinator does)")
    partitions: list[int] = _key([], "only these partitions of the topic (empty: all): a shard "
                                 "of the estate, since Kafka keeps every record of a group in one "
                                 "partition (docs/operations.md)")


@dataclass(frozen=True)
class SimulatorConfig:
    scenario: str = _key("canary-rollout", "scenario of the simulator source: a built-in name or "
                         "a scenario YAML file")
    strategies: list[str] = _key([], "assignors to run the scenario under, one group each "
                                 "(empty: every strategy the scenario lists)")
    speed: float = _key(3.0, "simulated seconds per wall-clock second")
    seed: int = _key(0, "random seed of the simulations")


@dataclass(frozen=True)
class CheckpointConfig:
    path: str = _key("./checkpoints", "Spark checkpoint directory (offsets and state)")


HISTORY_FORMATS = ("parquet", "json")


@dataclass(frozen=True)
class HistoryConfig:
    path: str = _key("./history", "directory of the history sink (events and state snapshots)")
    format: str = _key("parquet", "parquet or json")
    snapshot_interval: float = _duration(300.0, "how often group state snapshots are written")
    retention: float = _duration(30 * 86400.0, "days older than this are deleted, whole (0: keep "
                                 "forever); the exporter's counters keep their totals")


@dataclass(frozen=True)
class TlsConfig:
    cert: Union[str, None] = _key(None, "PEM certificate; with `key`, serves /metrics over HTTPS")
    key: Union[str, None] = _key(None, "PEM private key of `cert`")


@dataclass(frozen=True)
class BasicAuthConfig:
    username: Union[str, None] = _key(None, "when set with `password`, /metrics requires basic auth")
    password: Union[str, None] = _key(None, "the password (prefer the environment variable)")


@dataclass(frozen=True)
class ExporterConfig:
    listen: str = _key("127.0.0.1:9464", "host:port of the Prometheus endpoint")
    tls: TlsConfig = field(default_factory=TlsConfig)
    basic_auth: BasicAuthConfig = field(default_factory=BasicAuthConfig)


@dataclass(frozen=True)
class LagConfig:
    poll_interval: float = _duration(5.0, "how often end offsets of consumed topics are polled")
    include_unsubscribed: bool = _key(False, "also export lag of topics a group no longer subscribes to")
    timeout: float = _duration(10.0, "timeout of one end-offset request")
    timeline_size: int = _key(30, "(end offset, time) samples kept per partition for time lag")
    time_method: str = _key("estimate", "time lag from the end offsets' history (estimate), from "
                            "the first unconsumed record itself, read at the committed offset "
                            "(exact: needs READ on the consumed topics), or exact within "
                            "lag.read_budget a poll and estimated beyond it (auto)")
    read_budget: int = _key(1000, "lag.time_method auto: first records read per poll at most, "
                            "most lag first")
    rate_window: float = _duration(300.0, "consume and produce rates (and the catch-up forecast "
                                   "and retention risk made of them) are measured over this long")


@dataclass(frozen=True)
class GroupsConfig:
    expire_after: float = _duration(7 * 86400.0, "groups without a commit for this long disappear")
    dead_grace: float = _duration(300.0, "a deleted (Dead) group's series stay this long")
    include: list[str] = _key([], "regular expressions: only groups whose whole id matches one are "
                              "served (empty: every group)")
    exclude: list[str] = _key([], "regular expressions: groups whose whole id matches one are not served")


@dataclass(frozen=True)
class TopicsConfig:
    include: list[str] = _key([], "regular expressions: only committed offsets of topics whose whole "
                              "name matches one are served (empty: every topic)")
    exclude: list[str] = _key([], "regular expressions: committed offsets of matching topics are "
                              "not served")


@dataclass(frozen=True)
class StatusConfig:
    window_size: int = _key(10, "commits kept per partition for status evaluation")
    min_complete: float = _key(0.5, "fraction of the window filled before a status is judged")
    allowed_lag: int = _key(0, "a lag at or below this counts as caught up")
    min_distance: float = _duration(1.0, "a commit closer than this to the previous one replaces it")
    recent_catch_up: float = _duration(120.0, "how far back \"recently caught up\" looks")


METRIC_COMPAT = ("kafka_exporter", "kafka_lag_exporter", "burrow")


@dataclass(frozen=True)
class MetricsConfig:
    compat: list[str] = _key([], "also export the series names of: kafka_exporter, "
                             "kafka_lag_exporter, burrow")
    granularity: str = _key("partition", "a group's lag series per partition, or per topic only "
                            "(sums, maxima and partitions per status): partition | topic")
    member_lag: bool = _key(False, "lag summed and maximised per consumer (member id, client id, "
                            "host): a series per group member, hence off by default")


@dataclass(frozen=True)
class TriggerConfig:
    interval: float = _duration(5.0, "micro-batch trigger interval")


@dataclass(frozen=True)
class Config:
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    spark: SparkConfig = field(default_factory=SparkConfig)
    source: SourceConfig = field(default_factory=SourceConfig)
    simulator: SimulatorConfig = field(default_factory=SimulatorConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    history: HistoryConfig = field(default_factory=HistoryConfig)
    exporter: ExporterConfig = field(default_factory=ExporterConfig)
    lag: LagConfig = field(default_factory=LagConfig)
    groups: GroupsConfig = field(default_factory=GroupsConfig)
    topics: TopicsConfig = field(default_factory=TopicsConfig)
    status: StatusConfig = field(default_factory=StatusConfig)
    metrics: MetricsConfig = field(default_factory=MetricsConfig)
    trigger: TriggerConfig = field(default_factory=TriggerConfig)


# -- loading ----------------------------------------------------------------------------------

def load_config(path: str | None = None, env: Mapping[str, str] | None = None) -> Config:
    """The file at `path` (or $GROUPSCOPE_CONFIG; none: all defaults), then the environment.
    With a `clusters` list, the first cluster's (`load_fleet` gives every one)."""
    return load_fleet(path, env)[0]


def load_fleet(path: str | None = None, env: Mapping[str, str] | None = None) -> list[Config]:
    """Every cluster the config names. The top-level `clusters` list gives each a `name` and
    `source` settings over the top-level `source` (its `kafka` settings merged key by key); each
    keeps its checkpoint and history in a folder of its name under the top-level paths. Without
    `clusters`, the one cluster the rest of the config describes."""
    env = os.environ if env is None else env
    path = path or env.get(CONFIG_PATH_VARIABLE)
    raw: dict = read_yaml(path) if path else {}
    for name, value in sorted(env.items()):
        if name.upper().startswith(ENV_PREFIX) and _LEVELS in name[len(ENV_PREFIX):]:
            _set_from_env(raw, name, value)
    entries = raw.pop("clusters", None)
    if entries is None:
        config = _build(Config, raw, "")
        validate(config)
        return [config]
    if not isinstance(entries, list) or not entries:
        raise UserError("config key clusters: expected a list of {name, source}, got "
                        f"{_kind(entries)}")
    configs, names = [], set()
    for i, entry in enumerate(entries):
        where = f"clusters[{i}]"
        if not isinstance(entry, dict):
            raise UserError(f"config key {where}: expected a mapping, got {_kind(entry)}")
        unknown = sorted(str(k) for k in entry if k not in ("name", "source"))
        if unknown:
            raise UserError(f"unknown config key {where}.{unknown[0]} (known here: name, source)")
        name = entry.get("name")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
            raise UserError(f"config key {where}.name: a name of letters, digits, '.', '_' and "
                            f"'-' (it names folders and the cluster label)")
        if name in names:
            raise UserError(f"config key {where}.name: {name} is named twice")
        names.add(name)
        source = entry.get("source") or {}
        if not isinstance(source, dict):
            raise UserError(f"config key {where}.source: expected a mapping, got {_kind(source)}")
        merged = {**raw, "cluster": {**(raw.get("cluster") or {}), "name": name}}
        base_source = dict(raw.get("source") or {})
        kafka = {**(base_source.get("kafka") or {}), **(source.get("kafka") or {})}
        merged["source"] = {**base_source, **source, **({"kafka": kafka} if kafka else {})}
        for section, default in (("checkpoint", "./checkpoints"), ("history", "./history")):
            values = dict(raw.get(section) or {})
            if "path" in values and values["path"] is None:
                continue  # no history at all
            values["path"] = os.path.join(values.get("path") or default, name)
            merged[section] = values
        try:
            config = _build(Config, merged, "")
            validate(config)
        except UserError as exc:
            raise UserError(f"{where} ({name}): {exc}") from None
        configs.append(config)
    return configs


def read_yaml(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
    except OSError as exc:
        raise UserError(f"cannot read config file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise UserError(f"config file {path}{where}: not valid YAML "
                        f"({getattr(exc, 'problem', None) or exc})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(f"config file {path}: expected a mapping of sections at the top level")
    return data


def _set_from_env(raw: dict, name: str, value: str) -> None:
    parts = name[len(ENV_PREFIX):].lower().split("__")
    target: type = Config
    node = raw
    for depth, part in enumerate(parts):
        fields = {f.name: f for f in dataclasses.fields(target)}
        if part not in fields:
            raise UserError(f"environment variable {name}: unknown config key "
                            f"{'.'.join(parts[:depth + 1])}")
        hint = _hints(target)[part]
        if depth == len(parts) - 1:
            if dataclasses.is_dataclass(hint):
                raise UserError(f"environment variable {name}: {'.'.join(parts)} is a section; "
                                "set one of its keys")
            node[part] = value if _accepts_str(hint) else _parse_env_value(name, value)
            return
        if not dataclasses.is_dataclass(hint):
            raise UserError(f"environment variable {name}: {'.'.join(parts[:depth + 1])} "
                            "has no sub-keys")
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            child = node[part] = {}
        node, target = child, hint


def _parse_env_value(name: str, value: str) -> Any:
    try:
        return yaml.safe_load(value) if value.strip() else None
    except yaml.YAMLError:
        # Not the value itself: it may hold a secret (source.kafka).
        raise UserError(f"environment variable {name}: cannot parse its value as YAML") from None


def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _accepts_str(hint: Any) -> bool:
    return hint is str or str in _union_members(hint)


def _union_members(hint: Any) -> tuple:
    if typing.get_origin(hint) in (Union, types.UnionType):
        return typing.get_args(hint)
    return ()


def _build(cls: type, raw: Any, prefix: str):
    where = prefix.rstrip(".") or "the top level"
    if not isinstance(raw, dict):
        raise UserError(f"config key {where}: expected a mapping, got {_kind(raw)}")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(str(k) for k in raw if k not in fields)
    if unknown:
        raise UserError(f"unknown config key {prefix}{unknown[0]}"
                        + (f" (known here: {', '.join(fields)})" if fields else ""))
    hints = _hints(cls)
    values = {}
    for name, value in raw.items():
        values[name] = _convert(hints[name], value, f"{prefix}{name}", fields[name].metadata)
    return cls(**values)


def _convert(hint: Any, value: Any, key: str, metadata: Mapping) -> Any:
    if dataclasses.is_dataclass(hint):
        return _build(hint, {} if value is None else value, key + ".")
    members = _union_members(hint)
    if members:
        if value is None and type(None) in members:
            return None
        hint = next(m for m in members if m is not type(None))
    if metadata.get("duration"):
        return parse_duration(value, key)
    origin = typing.get_origin(hint)
    if origin is dict:
        if not isinstance(value, dict):
            raise UserError(f"config key {key}: expected a mapping, got {_kind(value)}")
        return {str(k): _scalar_text(v, f"{key}.{k}") for k, v in value.items()}
    if origin is list:
        if isinstance(value, str):
            value = [item.strip() for item in value.split(",") if item.strip()]
        if not isinstance(value, list):
            raise UserError(f"config key {key}: expected a list, got {_kind(value)}")
        if typing.get_args(hint) == (int,):
            return [_integer(v, f"{key}[{i}]") for i, v in enumerate(value)]
        return [_scalar_text(v, f"{key}[{i}]") for i, v in enumerate(value)]
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise UserError(f"config key {key}: expected true or false, got {_kind(value)} {value!r}")
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise UserError(f"config key {key}: expected an integer, got {_kind(value)} {value!r}")
    if hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise UserError(f"config key {key}: expected a number, got {_kind(value)} {value!r}")
    if hint is str:
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
        raise UserError(f"config key {key}: expected a string, got {_kind(value)}")
    raise TypeError(f"unsupported config type {hint!r} for {key}")


def _integer(value: Any, key: str) -> int:
    """An integer, or its digits (a comma-separated environment variable gives text)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    raise UserError(f"config key {key}: expected an integer, got {_kind(value)} {value!r}")


def _scalar_text(value: Any, key: str) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise UserError(f"config key {key}: expected a plain value, got {_kind(value)}")


def _kind(value: Any) -> str:
    return {dict: "a mapping", list: "a list", bool: "a boolean", type(None): "nothing",
            str: "a string", int: "an integer", float: "a number"}.get(type(value),
                                                                       type(value).__name__)


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


def parse_duration(value: Any, key: str = "duration") -> float:
    """Seconds from 5, 2.5, "500ms", "5s", "10m", "2h" or "7d"."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    match = _DURATION.match(value) if isinstance(value, str) else None
    if not match:
        raise UserError(f"config key {key}: expected a duration such as 5s, 10m, 2h, 7d or a "
                        f"number of seconds, got {value!r}")
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]


# -- checks across keys ----------------------------------------------------------------------

def validate(config: Config) -> None:
    source = config.source
    _one_of("source.type", source.type, SOURCE_TYPES)
    _one_of("source.client", source.client, SOURCE_CLIENTS)
    _one_of("history.format", config.history.format, HISTORY_FORMATS)
    if 0 < config.history.retention < 86400.0:
        raise UserError("config key history.retention: 0 (keep forever) or at least 1d: the "
                        "history is deleted a whole day at a time")
    _one_of("spark.local_tuning", config.spark.local_tuning, LOCAL_TUNING)
    for name in config.metrics.compat:
        _one_of("metrics.compat", name, METRIC_COMPAT)
    _one_of("metrics.granularity", config.metrics.granularity, GRANULARITIES)
    _one_of("lag.time_method", config.lag.time_method, TIME_METHODS)
    if config.lag.rate_window <= 0:
        raise UserError("config key lag.rate_window: must be > 0")
    if config.lag.read_budget < 1:
        raise UserError("config key lag.read_budget: at least 1 first record a poll")
    if source.admin_interval <= 0:
        raise UserError("config key source.admin_interval: must be above zero")
    if source.partitions:
        if source.type not in ("kafka-python", "kafka"):
            raise UserError("config key source.partitions: only the kafka-python and kafka sources "
                            "read a subset of partitions")
        # The loader has made every item an int (`_integer`).
        if min(source.partitions) < 0 or len(set(source.partitions)) != len(source.partitions):
            raise UserError(f"config key source.partitions: distinct partition numbers (>= 0) "
                            f"expected, got {source.partitions!r}")
    if source.type == "replay" and not source.replay_path:
        raise UserError("config key source.replay_path: required when source.type is replay")
    _validate_simulator(config.simulator)
    if source.max_records_per_trigger is not None and source.max_records_per_trigger <= 0:
        raise UserError("config key source.max_records_per_trigger: must be a positive integer")
    from streaming.kafka.offset_ranges import parse_starting_offsets
    try:
        parse_starting_offsets(source.starting_offsets, source.topic)
    except ValueError as exc:
        raise UserError(f"config key source.starting_offsets: {exc}") from None
    parse_listen(config.exporter.listen)
    tls, auth = config.exporter.tls, config.exporter.basic_auth
    if bool(tls.cert) != bool(tls.key):
        raise UserError("config keys exporter.tls.cert and exporter.tls.key: set both or neither")
    if bool(auth.username) != bool(auth.password):
        raise UserError("config keys exporter.basic_auth.username and .password: set both or neither")
    if config.trigger.interval <= 0 or config.lag.poll_interval <= 0:
        raise UserError("config keys trigger.interval and lag.poll_interval: must be above zero")
    for section in ("groups", "topics"):
        for which in ("include", "exclude"):
            try:
                selection(getattr(getattr(config, section), which))
            except ValueError as exc:
                raise UserError(f"config key {section}.{which}: {exc}") from None
    status = config.status
    if status.window_size < 1 or not 0 <= status.min_complete <= 1 or status.allowed_lag < 0:
        raise UserError("config section status: window_size >= 1, 0 <= min_complete <= 1 and "
                        "allowed_lag >= 0 are required")


def selection(patterns: list[str], exclude: list[str] = ()):
    """groups.include/exclude or topics.include/exclude as the view's Selection."""
    from streaming.exporter.selection import Selection

    return Selection(tuple(patterns), tuple(exclude))


def _validate_simulator(simulator: SimulatorConfig) -> None:
    from coordinator.simulator import STRATEGIES

    for name in simulator.strategies:
        _one_of("simulator.strategies", name, STRATEGIES)
    if simulator.speed <= 0:
        raise UserError("config key simulator.speed: must be above zero")


def _one_of(key: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise UserError(f"config key {key}: {value!r} is not one of {', '.join(allowed)}")


def parse_listen(listen: str) -> tuple[str, int]:
    """("host", port) from "host:port" ("[::1]:9464" for IPv6)."""
    host, sep, port = listen.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:  # 0: any free port
        raise UserError(f"config key exporter.listen: expected host:port, got {listen!r}")
    return host.strip("[]"), int(port)


def defaults_table() -> list[tuple[str, Any, str]]:
    """(dotted key, default, meaning) for every key, in declaration order: the docs list."""
    rows: list[tuple[str, Any, str]] = []

    def walk(cls: type, prefix: str) -> None:
        instance = cls()
        for f in dataclasses.fields(cls):
            value = getattr(instance, f.name)
            if dataclasses.is_dataclass(value):
                walk(type(value), f"{prefix}{f.name}.")
            else:
                rows.append((f"{prefix}{f.name}", value, f.metadata.get("doc", "")))

    walk(Config, "")
    return rows
