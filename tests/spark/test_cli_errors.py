"""User errors from the installed command: one line on stderr, no traceback, exit code 2."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

GROUPSCOPE = os.path.join(os.path.dirname(sys.executable), "groupscope")


def _run(*args: str, cwd: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([GROUPSCOPE, *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, **(env or {})))


@pytest.mark.parametrize("config, env, message", [
    ("sourc:\n  type: replay\n", {}, "unknown config key sourc"),
    ("lag:\n  poll_interval: soon\n", {}, "config key lag.poll_interval: expected a duration"),
    ("exporter:\n  listen: nowhere\n", {}, "config key exporter.listen: expected host:port"),
    ("", {"GROUPSCOPE_SOURCE__TYPO": "x"}, "unknown config key source.typo"),
    ("source:\n  type: replay\n", {}, "config key source.replay_path: required"),
])
def test_bad_config_is_one_clear_line(tmp_path, config, env, message):
    path = tmp_path / "config.yaml"
    path.write_text(config)
    result = _run("run", "-c", str(path), cwd=str(tmp_path), env=env)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("groupscope: error: ") and message in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_missing_files_are_one_clear_line(tmp_path):
    for args, message in ((["run", "-c", str(tmp_path / "nope.yaml")], "cannot read config file"),
                          (["history", "--group", "g", "--path", str(tmp_path / "none")], "no history at"),
                          (["decode", str(tmp_path / "none.txt")], "none.txt")):
        result = _run(*args, cwd=str(tmp_path))
        assert result.returncode == 2, (args, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr
