"""docker-compose.yml, checked without a Docker engine: it parses, images are pinned, everything it
mounts exists and fits together (ports, listen addresses, config paths), and the documented ports
are the published ones. The mounted configs themselves are checked by test_prometheus_rules.py
(Prometheus, Alertmanager) and here (groupscope's config loads with the real loader)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from streaming.config import load_config
from tests.support.paths import ROOT

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = None

COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
DOCS = (ROOT / "docs" / "docker-compose.md").read_text()
GROUPSCOPE_DOCKERFILE = ROOT / "deploy" / "groupscope" / "Dockerfile"


def _mounts(service: str) -> dict[str, Path]:
    """Container path -> repository path, for bind mounts of repository files."""
    out = {}
    for volume in SERVICES[service].get("volumes", []):
        host, container = volume.split(":")[:2]
        if host.startswith("./"):
            out[container] = ROOT / host
    return out


def _host_path(service: str, container_path: str) -> Path:
    for target, host in sorted(_mounts(service).items(), key=lambda kv: -len(kv[0])):
        if container_path == target or container_path.startswith(target + "/"):
            return host / container_path[len(target):].lstrip("/")
    raise AssertionError(f"{service}: {container_path} is not mounted from the repository")


def _pinned(image: str) -> bool:
    name, _, tag = image.rpartition(":")
    return bool(name) and bool(tag) and tag != "latest" and "/" not in tag


def test_the_stack_has_every_part():
    assert {"kafka", "topics", "producers", "consumers", "groupscope", "prometheus", "alertmanager",
            "grafana"} <= set(SERVICES)


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_every_image_is_pinned(service):
    spec = SERVICES[service]
    assert _pinned(spec["image"]), spec["image"]
    if "build" in spec:
        dockerfile = ROOT / spec["build"]["context"] / spec["build"].get("dockerfile", "Dockerfile")
        bases = re.findall(r"^FROM\s+(\S+)", dockerfile.read_text(), re.M)
        assert bases and all(_pinned(b) for b in bases), bases


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_every_mounted_file_exists(service):
    for container, host in _mounts(service).items():
        assert host.exists(), f"{service}: {host} (mounted at {container}) is missing"


def test_kafka_is_kraft_from_the_official_image():
    kafka = SERVICES["kafka"]
    assert kafka["image"].startswith("apache/kafka:4.")
    assert kafka["environment"]["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert {SERVICES[s]["image"] for s in ("topics", "producers", "consumers")} == {kafka["image"]}


def _published() -> set[str]:
    ports = set()
    for spec in SERVICES.values():
        for mapping in spec.get("ports", []):
            host_ip, host_port, container_port = mapping.split(":")
            assert host_ip == "127.0.0.1", mapping
            ports.add(f"{host_ip}:{host_port}")
    return ports


def test_documented_ports_are_the_published_ones():
    documented = set(re.findall(r"^\|[^|]+\|\s*`(127\.0\.0\.1:\d+)`", DOCS, re.M))
    assert documented == _published()


def test_workload_covers_every_assignor_and_the_consumer_protocol():
    consumers = (ROOT / "deploy" / "workload" / "consumers.sh").read_text()
    for setting in ("RangeAssignor", "RoundRobinAssignor", "CooperativeStickyAssignor",
                    "group.protocol=consumer", "group.instance.id"):
        assert setting in consumers
    assert "kafka-producer-perf-test.sh" in (ROOT / "deploy" / "workload" / "produce.sh").read_text()


@pytest.mark.parametrize("script", sorted((ROOT / "deploy" / "workload").glob("*.sh")), ids=lambda p: p.name)
def test_workload_scripts_are_valid_bash(script):
    proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def _groupscope_config():
    command = SERVICES["groupscope"]["command"]
    return load_config(str(_host_path("groupscope", command[command.index("--config") + 1])), env={})


def test_groupscope_runs_under_spark_submit_with_the_kafka_package():
    command = SERVICES["groupscope"]["command"]
    assert command[0].endswith("spark-submit")
    package = command[command.index("--packages") + 1]
    base = re.search(r"^FROM\s+apache/spark:(\d+\.\d+\.\d+)-scala(\d+\.\d+)", GROUPSCOPE_DOCKERFILE.read_text(), re.M)
    assert package == f"org.apache.spark:spark-sql-kafka-0-10_{base.group(2)}:{base.group(1)}"
    launcher = next(arg for arg in command if arg.endswith(".py"))
    assert _host_path("groupscope", launcher).is_file()
    assert _groupscope_config().source.type == "kafka"


def test_groupscope_config_fits_the_stack():
    config = _groupscope_config()
    assert config.source.bootstrap_servers in SERVICES["kafka"]["environment"]["KAFKA_ADVERTISED_LISTENERS"]
    port = config.exporter.listen.rpartition(":")[2]
    assert config.exporter.listen.startswith("0.0.0.0:")
    assert f"127.0.0.1:{port}:{port}" in SERVICES["groupscope"]["ports"]
    prometheus_config = yaml.safe_load(_prometheus_config_path().read_text())
    targets = [t for job in prometheus_config["scrape_configs"] for sc in job["static_configs"] for t in sc["targets"]]
    assert f"groupscope:{port}" in targets
    assert "alertmanager:9093" in str(prometheus_config["alerting"])


@pytest.mark.skipif(tomllib is None, reason="reading pyproject.toml needs Python 3.11 (tomllib)")
def test_groupscope_image_installs_the_runtime_dependencies():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    installed = re.findall(r'"([^"]+)"', GROUPSCOPE_DOCKERFILE.read_text())
    assert sorted(installed) == sorted(d for d in declared if not d.startswith("pyspark"))


def _prometheus_config_path() -> Path:
    flag = next(a for a in SERVICES["prometheus"]["command"] if a.startswith("--config.file="))
    return _host_path("prometheus", flag.split("=", 1)[1])


def test_prometheus_loads_the_repository_config_and_rules():
    path = _prometheus_config_path()
    assert path == ROOT / "dashboards" / "prometheus" / "prometheus.yml"
    for rule_file in yaml.safe_load(path.read_text())["rule_files"]:
        assert (path.parent / rule_file).is_file()


def test_alertmanager_loads_the_example_config():
    flag = next(a for a in SERVICES["alertmanager"]["command"] if a.startswith("--config.file="))
    assert _host_path("alertmanager", flag.split("=", 1)[1]) == ROOT / "dashboards" / "alertmanager" / "alertmanager.yml"


def test_grafana_provisions_the_dashboards_and_the_prometheus_datasource():
    provider = yaml.safe_load((ROOT / "dashboards/grafana/provisioning/dashboards/groupscope.yml").read_text())
    dashboards_path = provider["providers"][0]["options"]["path"]
    assert _host_path("grafana", dashboards_path) == ROOT / "dashboards" / "grafana" / "dashboards"
    assert _host_path("grafana", "/etc/grafana/provisioning/dashboards/groupscope.yml").is_file()
    home = SERVICES["grafana"]["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert _host_path("grafana", home).is_file()
    datasources = yaml.safe_load((ROOT / "dashboards/grafana/provisioning/datasources/prometheus.yml").read_text())
    assert datasources["datasources"][0]["url"] == "http://prometheus:9090"
    assert "127.0.0.1:9090:9090" in SERVICES["prometheus"]["ports"]
