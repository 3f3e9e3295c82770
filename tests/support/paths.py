"""Where the repository and the tests' data are, for tests and benchmarks alike."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
