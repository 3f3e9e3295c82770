"""Runs Prometheus' own tools on the rules and queries (Debian package `prometheus`).

promtool is the authority on PromQL syntax: expressions are checked by writing them into a
temporary rule file and running `promtool check rules` on it.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

RULES_DIR = Path(__file__).resolve().parent / "prometheus"
RULE_FILES = (RULES_DIR / "recording_rules.yml", RULES_DIR / "alert_rules.yml")
RULES_TEST = RULES_DIR / "tests" / "rules_test.yml"
TESTED_ANNOTATIONS = ("summary",)


@dataclass(frozen=True)
class Result:
    ok: bool
    output: str


def promtool() -> str | None:
    return shutil.which("promtool")


def version() -> str:
    out = subprocess.run([promtool() or "promtool", "--version"], capture_output=True, text=True)
    return (out.stdout or out.stderr).splitlines()[0]


def _run(*args: str, cwd: Path | None = None) -> Result:
    proc = subprocess.run([promtool() or "promtool", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120)
    return Result(proc.returncode == 0, proc.stdout + proc.stderr)


def check_rules(*paths: Path) -> Result:
    return _run("check", "rules", *map(str, paths))


def check_config(path: Path) -> Result:
    return _run("check", "config", str(path))


def _safe_record_name(label: str, index: int) -> str:
    return f"q{index}:" + re.sub(r"[^a-zA-Z0-9_]", "_", label)[:60]


def check_expressions(expressions: dict[str, str]) -> Result:
    """Parse every expression (label -> PromQL) by checking them as recording rules."""
    rules = [{"record": _safe_record_name(label, i), "expr": expr}
             for i, (label, expr) in enumerate(expressions.items())]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "queries.yml"
        path.write_text(yaml.safe_dump({"groups": [{"name": "queries", "rules": rules}]}, width=4096))
        result = check_rules(path)
    if result.ok:
        return result
    names = {_safe_record_name(label, i): label for i, label in enumerate(expressions)}
    return Result(False, result.output + "\nrule names -> queries: " + repr(names))


def alert_rules_for_tests(text: str) -> str:
    """The alert rules with only the annotations the unit tests assert on."""
    doc = yaml.safe_load(text)
    for group in doc["groups"]:
        for rule in group["rules"]:
            if "annotations" in rule:
                rule["annotations"] = {k: v for k, v in rule["annotations"].items() if k in TESTED_ANNOTATIONS}
    return yaml.safe_dump(doc, sort_keys=False, width=4096)


def test_rules(test_file: Path = RULES_TEST) -> Result:
    """Run the promtool unit tests against copies of the rule files (see rules_test.yml)."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copy(test_file, work / test_file.name)
        recording, alerts = RULE_FILES
        shutil.copy(recording, work / recording.name)
        (work / alerts.name).write_text(alert_rules_for_tests(alerts.read_text()))
        return _run("test", "rules", test_file.name, cwd=work)
