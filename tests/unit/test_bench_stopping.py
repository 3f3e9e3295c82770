"""benchmarks/_stopping.py on a process tree of its own: a benchmark-like program with an orphaned
grandchild (its parent exited at once), a child that ignores SIGTERM, and a child's temporary
folder, stopped by SIGTERM or SIGINT, leaves none of them."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
PROGRAM = """
import json, subprocess, time
from benchmarks._stopping import stop_everything_at_exit

stop_everything_at_exit(child_grace_s=1, left_grace_s=1)
# a child's, as a job killed before its own cleanup leaves its TLS material
folder = subprocess.run(["mktemp", "-d"], capture_output=True, text=True).stdout.strip()
# its parent exits at once: only a subreaper still has it below itself
orphan = int(subprocess.run(["sh", "-c", "sleep 600 > /dev/null 2>&1 & echo $!"], capture_output=True,
                            text=True).stdout)
# SIGTERM ignored, by the shell and the sleep it starts: only SIGKILL ends them
stubborn = subprocess.Popen(["sh", "-c", "trap '' TERM; sleep 600 & wait"])
try:
    print(json.dumps({"folder": folder, "pids": [orphan, stubborn.pid]}), flush=True)
    time.sleep(600)
finally:
    print("finally ran", flush=True)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=lambda s: signal.Signals(s).name)
def test_a_stop_signal_ends_every_descendant_and_removes_the_temporary_folders(tmp_path, sig):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    bench = subprocess.Popen([sys.executable, "-c", PROGRAM], cwd=REPO_ROOT, text=True,
                             env=dict(os.environ, TMPDIR=str(scratch), PYTHONPATH=str(REPO_ROOT)),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    started = {}
    try:
        started = json.loads(bench.stdout.readline())
        assert Path(started["folder"]).is_dir() and all(map(_alive, started["pids"]))
        bench.send_signal(sig)
        out, err = bench.communicate(timeout=120)
        assert [pid for pid in started["pids"] if _alive(pid)] == []
        assert not Path(started["folder"]).exists() and list(scratch.iterdir()) == []
        assert out == "finally ran\n"
        assert err == f"{signal.Signals(sig).name}: stopping what the benchmark started\n"
        assert bench.returncode == 128 + sig
    finally:   # what a failed stop left, never left for the next test: the session is the test's
        try:
            os.killpg(bench.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        for pid in started.get("pids", []):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        bench.wait()
