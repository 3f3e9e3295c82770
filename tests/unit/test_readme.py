"""The README a newcomer reads first, and the docs it leads to, stay true to the code."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
CONFIG_DOC = ROOT / "docs" / "configuration.md"
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_opens_with_the_two_setup_commands():
    first_block = re.search(r"```sh\n(.*?)```", README, re.S).group(1)
    commands = [line.split("#")[0].strip() for line in first_block.strip().splitlines()]
    assert commands == ["make demo", "make test"]
    assert README.index("make demo") < README.index("## ")


def test_config_table_matches_the_code():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "config_table.py"), "--check"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, "docs/configuration.md's key table is stale: " \
                                   "run scripts/config_table.py"


def test_the_readme_leads_to_the_configuration_reference():
    assert "](docs/configuration.md)" in README


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: p.name)
def test_local_links_resolve(document):
    for target in re.findall(r"\]\(([^)#]+)\)", document.read_text(encoding="utf-8")):
        if "://" not in target:
            assert (document.parent / target).exists(), f"{document.name}: {target}"


def test_every_command_is_documented():
    from streaming.cli.main import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    for name in commands:
        assert f"groupscope {name}" in README, name


def test_benchmark_commands_name_existing_benchmarks():
    for document in (README, (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")):
        for name in re.findall(r"python -m benchmarks\.(\w+)", document):
            assert (ROOT / "benchmarks" / f"{name}.py").is_file(), name
