"""Configuration: YAML file, defaults, environment overrides, and one-line errors."""
from __future__ import annotations

import os

import pytest

from streaming.cli.main import main
from streaming.errors import UserError
from streaming.config import Config, defaults_table, load_config, parse_duration
from tests.support.paths import ROOT as REPO_ROOT

ROOT = str(REPO_ROOT)


def _write(tmp_path, text):
    path = tmp_path / "groupscope.yaml"
    path.write_text(text)
    return str(path)


def test_no_file_gives_every_default():
    config = load_config(None, env={})
    assert config == Config()
    assert config.source.topic == "__consumer_offsets"
    assert config.exporter.listen == "127.0.0.1:9464"
    assert config.lag.poll_interval == 5.0 and config.lag.include_unsubscribed is False


def test_file_values_and_durations(tmp_path):
    path = _write(tmp_path, """
cluster: {name: prod-eu}
source:
  bootstrap_servers: k1:9092,k2:9092
  max_records_per_trigger: 50000
  kafka: {security.protocol: SASL_SSL, sasl.mechanism: PLAIN}
lag: {poll_interval: 10s, timeout: 1500ms}
groups: {expire_after: 7d, dead_grace: 10m}
trigger: {interval: 2}
metrics: {compat: [burrow, kafka_exporter]}
""")
    config = load_config(path, env={})
    assert config.cluster.name == "prod-eu"
    assert config.source.max_records_per_trigger == 50000
    assert config.source.kafka == {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}
    assert (config.lag.poll_interval, config.lag.timeout) == (10.0, 1.5)
    assert (config.groups.expire_after, config.groups.dead_grace) == (7 * 86400.0, 600.0)
    assert config.trigger.interval == 2.0
    assert config.metrics.compat == ["burrow", "kafka_exporter"]


def test_environment_overrides_the_file(tmp_path):
    path = _write(tmp_path, "source: {bootstrap_servers: file:9092}\nlag: {poll_interval: 30s}\n")
    config = load_config(None, env={
        "GROUPSCOPE_CONFIG": path,
        "GROUPSCOPE_SOURCE__BOOTSTRAP_SERVERS": "env:9092",
        "GROUPSCOPE_CLUSTER__NAME": "42",                 # stays a string
        "GROUPSCOPE_LAG__INCLUDE_UNSUBSCRIBED": "true",
        "GROUPSCOPE_EXPORTER__BASIC_AUTH__USERNAME": "prom",
        "GROUPSCOPE_EXPORTER__BASIC_AUTH__PASSWORD": "secret",
        "GROUPSCOPE_SPARK__CONF": "{spark.sql.shuffle.partitions: 8}",
        "GROUPSCOPE_METRICS__COMPAT": "burrow,kafka_lag_exporter",
        "GROUPSCOPE_ZYGOTE": "off",  # local mode's Python zygote, not a config key
    })
    assert config.source.bootstrap_servers == "env:9092"
    assert config.lag.poll_interval == 30.0  # from the file, untouched
    assert config.cluster.name == "42"
    assert config.lag.include_unsubscribed is True
    assert config.exporter.basic_auth.password == "secret"
    assert config.spark.conf == {"spark.sql.shuffle.partitions": "8"}
    assert config.metrics.compat == ["burrow", "kafka_lag_exporter"]


@pytest.mark.parametrize("text, env, message", [
    ("source: {bootstrap_server: x}", {}, "unknown config key source.bootstrap_server"),
    ("sauce: {}", {}, "unknown config key sauce"),
    ("source: {max_records_per_trigger: many}", {},
     "config key source.max_records_per_trigger: expected an integer, got a string 'many'"),
    ("lag: {poll_interval: soon}", {}, "config key lag.poll_interval: expected a duration"),
    ("lag: {include_unsubscribed: 1}", {}, "config key lag.include_unsubscribed: expected true or false"),
    ("source: [1, 2]", {}, "config key source: expected a mapping, got a list"),
    ("source: {type: replay}", {}, "config key source.replay_path: required when source.type is replay"),
    ("source: {type: pulsar}", {}, "config key source.type: 'pulsar' is not one of"),
    ("exporter: {listen: 9464}", {}, "config key exporter.listen: expected host:port"),
    ("source: {starting_offsets: yesterday}", {}, "config key source.starting_offsets"),
    ("exporter: {tls: {cert: a.pem}}", {}, "exporter.tls.cert and exporter.tls.key"),
    ("", {"GROUPSCOPE_LAG__POLL_INTERVALL": "5s"},
     "environment variable GROUPSCOPE_LAG__POLL_INTERVALL: unknown config key lag.poll_intervall"),
    ("", {"GROUPSCOPE_STATUS__WINDOW_SIZE": "big"},
     "config key status.window_size: expected an integer, got a string 'big'"),
    ("source: {bootstrap_servers: [a\n", {}, "not valid YAML"),
    ("source: {partitions: [0, x]}\n", {}, "config key source.partitions[1]: expected an integer, got a string 'x'"),
    ("source: {partitions: [2, 2]}\n", {}, "config key source.partitions: distinct partition numbers"),
])
def test_bad_config_stops_with_one_line_naming_the_key(tmp_path, text, env, message):
    with pytest.raises(UserError) as caught:
        load_config(_write(tmp_path, text), env=env)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_cli_prints_config_errors_as_one_line(tmp_path, capsys):
    path = _write(tmp_path, "source: {bootstrap_server: x}\n")
    assert main(["capture", str(tmp_path / "out.jsonl"), "--config", path]) == 2
    err = capsys.readouterr().err
    assert err == "groupscope: error: unknown config key source.bootstrap_server (known here: " \
        "type, bootstrap_servers, topic, starting_offsets, max_records_per_trigger, client, kafka, " \
        "replay_path, admin_interval, admin_seed, share_state, partitions)\n"


def test_durations():
    assert [parse_duration(v) for v in (5, 2.5, "500ms", "5s", "10m", "2h", "1d")] == [
        5.0, 2.5, 0.5, 5.0, 600.0, 7200.0, 86400.0]


def test_example_file_and_docs_cover_every_key():
    example = load_config(os.path.join(ROOT, "config.example.yaml"), env={})
    assert isinstance(example, Config)
    with open(os.path.join(ROOT, "docs", "configuration.md"), encoding="utf-8") as fh:
        docs = fh.read()
    # The reference's key table (scripts/config_table.py writes it between these markers).
    table = docs[docs.index("<!-- config-table:start -->"):docs.index("<!-- config-table:end -->")]
    with open(os.path.join(ROOT, "config.example.yaml"), encoding="utf-8") as fh:
        example_text = fh.read()
    for key, _, _ in defaults_table():
        assert f"| `{key}` |" in table, key
        assert f"{key.rsplit('.', 1)[-1]}:" in example_text, key
