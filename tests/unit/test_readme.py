"""The README a newcomer reads first stays true to the code."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from tests.support.paths import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_opens_with_the_two_setup_commands():
    first_block = re.search(r"```sh\n(.*?)```", README, re.S).group(1)
    commands = [line.split("#")[0].strip() for line in first_block.strip().splitlines()]
    assert commands == ["make demo", "make test"]
    assert README.index("make demo") < README.index("## ")


def test_config_table_matches_the_code():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "config_table.py"), "--check"],
                            cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, "README's config table is stale: run scripts/config_table.py"


def test_every_config_key_is_in_the_readme():
    from streaming.config import defaults_table

    for key, _default, _doc in defaults_table():
        assert f"`{key}`" in README, key


def test_local_links_resolve():
    for target in re.findall(r"\]\(([^)#]+)\)", README):
        if "://" not in target:
            assert (ROOT / target).exists(), target


def test_every_command_is_documented():
    from streaming.cli.main import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    for name in commands:
        assert f"groupscope {name}" in README, name
