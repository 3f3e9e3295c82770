"""The operator's service files: the systemd unit passes systemd's own check, the Kubernetes
manifest passes the API schemas in strict mode, and both start groupscope with a config it
accepts, its checkpoint on a durable path."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from streaming.cli.main import build_parser
from streaming.config import load_config
from tests.support.paths import ROOT

UNIT = ROOT / "deploy" / "systemd" / "groupscope.service"
MANIFEST = ROOT / "deploy" / "kubernetes" / "groupscope.yaml"
K8S_DOCKERFILE = ROOT / "deploy" / "kubernetes" / "Dockerfile"


def _unit_values(key: str) -> list[str]:
    return [line.split("=", 1)[1] for line in UNIT.read_text().splitlines()
            if line.startswith(f"{key}=")]


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_the_systemd_unit_passes_systemd_analyze_verify(tmp_path):
    # verify checks that ExecStart's program exists: point it at this checkout's groupscope.
    installed = Path(sys.executable).parent / "groupscope"
    unit = tmp_path / "groupscope.service"
    unit.write_text(UNIT.read_text().replace("/opt/groupscope/.venv/bin/groupscope", str(installed)))
    out = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True,
                         timeout=60)
    problems = [line for line in out.stderr.splitlines() if "groupscope.service" in line]
    assert out.returncode == 0 and not problems, out.stderr


def test_the_unit_runs_groupscope_with_a_durable_state_directory():
    (exec_start,) = _unit_values("ExecStart")
    program, *args = exec_start.split()
    assert program.endswith("/bin/groupscope")
    parsed = build_parser().parse_args(args)
    assert parsed.command == "run" and parsed.config == "/etc/groupscope/config.yaml"
    assert _unit_values("StateDirectory") == ["groupscope"]
    assert _unit_values("WorkingDirectory") == ["/var/lib/groupscope"]
    # The stop signal goes to the driver alone, which owns the stop (streaming/cli/commands/signals.py).
    assert _unit_values("KillMode") == ["mixed"]


def _resources() -> list[dict]:
    return [doc for doc in yaml.safe_load_all(MANIFEST.read_text()) if doc]


def test_the_kubernetes_manifest_passes_the_api_schemas():
    import kubernetes_validate

    for resource in _resources():
        kubernetes_validate.validate(resource, "1.30.0", strict=True)


def test_the_statefulset_keeps_its_checkpoint_on_a_persistent_volume(tmp_path):
    kinds = {r["kind"]: r for r in _resources()}
    config_text = kinds["ConfigMap"]["data"]["config.yaml"]
    path = tmp_path / "config.yaml"
    path.write_text(config_text)
    config = load_config(str(path), env={})
    stateful = kinds["StatefulSet"]["spec"]
    assert stateful["replicas"] == 1  # two jobs on one checkpoint would corrupt it
    (container,) = stateful["template"]["spec"]["containers"]
    parsed = build_parser().parse_args(container["args"])
    assert parsed.command == "run"
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    claims = {c["metadata"]["name"] for c in stateful["volumeClaimTemplates"]}
    assert Path(parsed.config).parent == Path(mounts["config"])
    state_mount = Path(mounts["state"])
    assert "state" in claims
    for durable in (config.checkpoint.path, config.history.path):
        assert state_mount in Path(durable).parents, durable
    port = config.exporter.listen.rsplit(":", 1)[1]
    assert {p["containerPort"] for p in container["ports"]} == {int(port)}
    assert container["image"].split(":")[1] != "latest"


def test_the_kubernetes_image_installs_groupscope_from_this_repository():
    text = K8S_DOCKERFILE.read_text()
    for copied in ("pyproject.toml", "coordinator", "streaming"):
        assert f"COPY {copied}" in text
        assert (ROOT / copied).exists()
    assert 'ENTRYPOINT ["groupscope"]' in text
