"""Fixtures of the Spark tests."""
from __future__ import annotations

import pytest

from tests.support.driver_session import startup_reports


@pytest.fixture(scope="session")
def startup(tmp_path_factory) -> dict[str, list[dict]]:
    """What new job sessions decide at start-up (tests.support.driver_session.startup_reports),
    run once for every test that checks a part of it: each run is a new driver JVM."""
    root = tmp_path_factory.mktemp("startup")
    capture = root / "empty.jsonl"
    capture.write_text("")
    return startup_reports(root, str(capture))
