"""Spark's Python processes forked from the zygote (streaming/localmode/python_zygote.py) through the
interpreter wrapper (streaming/localmode/worker_python.py) behave as `python -m` started them: arguments,
environment, standard streams, exit status and signals; anything the interpreter fixes at
start-up that differs makes the zygote decline, and the process starts the usual way."""
from __future__ import annotations

import json
import os
import signal
import sys
import subprocess
import time

import pytest

from tests.support.driver_session import ROOT, STARTUP_REPORT, run_new_session
from streaming.localmode.python_zygote import ENV_KEY, start_zygote
from streaming.localmode.worker_python import worker_python


@pytest.fixture(scope="module")
def zygote(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("zygote") / "z.sock")
    cwd = os.getcwd()
    os.chdir(ROOT)  # the zygote's working directory is its processes' (`python -m` semantics)
    try:
        started = start_zygote(path)
    finally:
        os.chdir(cwd)
    assert started is not None
    path, process = started
    deadline = time.monotonic() + 60
    while not os.path.exists(path):
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    yield path, process
    process.stdin.close()
    process.wait(timeout=30)


def _env(path, **extra):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return {**env, ENV_KEY: path, "PYTHONUNBUFFERED": "YES",
            "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0"), **extra}


def _run(args, env, stdin=""):
    return subprocess.run([worker_python(), "-m", "tests.support.zygote_probe", *args], cwd=ROOT,
                          env=env, input=stdin, capture_output=True, text=True, timeout=60)


def test_a_forked_process_runs_the_module_on_the_callers_streams(zygote):
    path, _ = zygote
    out = _run(["report", "3", "x y"], _env(path, PROBE="seen"), stdin="from stdin")
    assert out.returncode == 3
    assert out.stderr == "to stderr\n"
    got = json.loads(out.stdout)
    assert got["argv"] == ["report", "3", "x y"] and got["stdin"] == "from stdin"
    assert got["probe"] == "seen" and got["cwd"] == ROOT and got["name"] == "__main__"
    assert "streaming.localmode.python_zygote" in got["cmdline"]  # forked from the zygote
    assert got["comm"] == "zygote_probe"  # what `top` shows for it


def test_the_zygote_declines_what_the_interpreter_fixes_at_start(zygote):
    path, _ = zygote
    for env in (_env(path, PYTHONPATH=os.path.join(ROOT, "tests")),
                _env(path, PYTHONHASHSEED="7")):
        out = _run(["report", "0"], env)
        assert out.returncode == 0, out.stderr
        assert "streaming.localmode.python_zygote" not in json.loads(out.stdout)["cmdline"]


def test_without_a_zygote_the_process_starts_as_usual(tmp_path):
    out = _run(["report", "4"], _env(str(tmp_path / "none.sock")))
    assert out.returncode == 4
    assert "streaming.localmode.python_zygote" not in json.loads(out.stdout)["cmdline"]


def test_an_exception_ends_the_process_as_python_would(zygote):
    out = _run(["fail"], _env(zygote[0]))
    assert out.returncode == 1
    assert "RuntimeError: probe failed" in out.stderr


def _wait_for_pid(pid_file):
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text()):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return int(pid_file.read_text())


def _gone(pid, within=10.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                if fh.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except (FileNotFoundError, ProcessLookupError):  # reaped, or exiting as it was read
            return True
        time.sleep(0.02)
    return False


def test_signals_reach_the_forked_process_and_a_killed_caller_takes_it_along(zygote, tmp_path):
    path, _ = zygote
    pid_file = tmp_path / "pid"
    caller = subprocess.Popen([worker_python(), "-m", "tests.support.zygote_probe", "wait", str(pid_file)],
                              cwd=ROOT, env=_env(path), stdout=subprocess.PIPE, text=True)
    forked = _wait_for_pid(pid_file)
    assert forked != caller.pid  # the caller stands in for a forked process
    caller.send_signal(signal.SIGTERM)
    assert caller.wait(timeout=30) == 0
    assert caller.stdout.read() == f"signal {int(signal.SIGTERM)}\n"

    pid_file.unlink()
    caller = subprocess.Popen([worker_python(), "-m", "tests.support.zygote_probe", "wait", str(pid_file)],
                              cwd=ROOT, env=_env(path), stdout=subprocess.DEVNULL)
    forked = _wait_for_pid(pid_file)
    caller.kill()
    caller.wait(timeout=30)
    assert _gone(forked)


def test_the_zygote_ends_with_its_driver(tmp_path):
    started = start_zygote(str(tmp_path / "z.sock"))
    assert started is not None
    path, process = started
    deadline = time.monotonic() + 60
    while not os.path.exists(path):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    process.stdin.close()  # what the driver's exit does
    assert process.wait(timeout=30) == 0
    assert not os.path.exists(path)


def _session_python(tmp_path) -> str:
    """The same virtualenv reached through a symlink, as a release folder behind a `current`
    link is."""
    link = tmp_path / "current"
    link.symlink_to(sys.prefix, target_is_directory=True)
    return str(link / "bin" / os.path.basename(sys.executable))


def _through_the_zygote(runs: list[dict]) -> None:
    # The source's creator may start before the zygote is up: then it starts the usual way, and
    # the session was started again (up to three times).
    for run in runs:
        assert len(run["zygotes"]) == 1
    assert any("create_data_source" in c for c in runs[-1]["clients"])


def test_the_jobs_session_starts_spark_python_through_its_zygote(startup):
    _through_the_zygote(startup["auto"])
    off = startup["off"][0]
    assert off["zygotes"] == [] and off["clients"] == []
    assert off["python"]  # started by the JVM itself


def test_a_session_from_a_symlinked_virtualenv_starts_spark_python_through_its_zygote(tmp_path):
    capture = tmp_path / "empty.jsonl"
    capture.write_text("")
    script = STARTUP_REPORT.replace("CAPTURE", repr(str(capture)))
    runs = []
    for _ in range(3):
        runs.append(run_new_session(script, tmp_path, python=_session_python(tmp_path)))
        if runs[-1]["clients"]:
            break
    _through_the_zygote(runs)
