"""The modules the worker zygote imports before it makes its process thread-free start no
thread: numpy's BLAS starts its pool on import, and a zygote with a second thread refuses to
fork Spark's Python processes (streaming/localmode/python_zygote.py)."""
from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("module", ["streaming.config", "streaming.exporter.catalog",
                                    "streaming.localmode.python_zygote"])
def test_importing_it_starts_no_thread(module):
    out = subprocess.run([sys.executable, "-c", f"import os, {module}; "
                          "print(len(os.listdir('/proc/self/task')))"],
                         capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "1"
