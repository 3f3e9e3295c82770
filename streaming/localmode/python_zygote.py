"""A Python process with what Spark's Python processes import already imported, which forks them
on request (local mode).

A new session's first query waits on Spark's Python processes one after the other: the daemon
that creates the source and its worker, the source's offsets runner, the state processor's
`init` on the driver, the daemon that plans the reads and its worker. Each started a new
interpreter and imported PySpark, pyarrow and the job's modules, about 0.15-0.25 s of wall time
apiece on the 2-core reference machine; every later query still starts two of them. The zygote
does that start-up once, while the session's JVM starts, and forks each of these processes in
a few milliseconds instead.

`groupscope run` in local mode starts it (`start_zygote`) and names its socket in
`GROUPSCOPE_ZYGOTE`, which Spark's processes inherit; the interpreter wrapper Spark runs
(streaming/localmode/worker_python.py) hands each `python -m MODULE ...` start to streaming/localmode/zygote_client.py,
which passes its arguments, environment, working directory and standard streams over that
socket. The forked process takes them over and runs MODULE as `python -m` would. The zygote
declines, and the process starts the usual way, when anything the interpreter fixes at start-up
differs (a `PYTHON*` environment variable such as PYTHONPATH or PYTHONHASHSEED, the locale, the
working directory), when the zygote
is not up yet, or when it has more than one thread (a fork would copy a process whose other
threads are gone). The zygote ends when the driver does (its standard input closes).
"""
from __future__ import annotations

import json
import os
import re
import runpy
import warnings
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import traceback

from streaming.config import ZYGOTE_VARIABLE
from streaming.localmode.spark_daemon import native_threads, preload

ENV_KEY = ZYGOTE_VARIABLE
# What Spark's planning and streaming runners import, besides the task workers' modules
# (streaming.localmode.spark_daemon.PRELOADED).
RUNNERS = (
    "pyspark.daemon",
    "pyspark.sql.worker.create_data_source",
    "pyspark.sql.worker.plan_data_source_read",
    "pyspark.sql.streaming.python_streaming_source_runner",
    "pyspark.sql.streaming.transform_with_state_driver_worker",
    "streaming.localmode.spark_daemon",
    "kafka",
)


# The interpreter's own variables (PYTHONPATH, PYTHONHASHSEED, ...; Spark's are PYTHON_*) and the
# locale, which sets the interpreter's encodings when it starts.
_INTERPRETER_VAR = re.compile(r"PYTHON[A-Z0-9]*|LANG|LC_ALL|LC_CTYPE")


def _interpreter_env(env) -> dict[str, str]:
    """The variables a Python interpreter reads when it starts."""
    return {k: v for k, v in env.items() if _INTERPRETER_VAR.fullmatch(k)}


def _send_int(conn: socket.socket, value: int) -> None:
    try:
        conn.sendall(struct.pack("!i", value))
    except OSError:
        pass


def _recv_request(conn: socket.socket):
    """(request, fds), or None for a request that did not arrive whole."""
    conn.settimeout(5.0)  # the client sends at once; one that does not must not stall the loop
    try:
        message, fds, _flags, _addr = socket.recv_fds(conn, 1 << 20, 3)
    except OSError:
        return None
    if len(message) < 4 or len(fds) != 3:
        for fd in fds:
            os.close(fd)
        return None
    size = struct.unpack("!i", message[:4])[0]
    body = message[4:]
    try:
        while len(body) < size:
            chunk = conn.recv(size - len(body))
            if not chunk:
                break
            body += chunk
        return json.loads(body[:size]), fds
    except (OSError, ValueError):
        for fd in fds:
            os.close(fd)
        return None


def _run_child(request: dict, fds: list[int]) -> None:
    """In the forked process: become `python -m MODULE ARGS...` on the client's streams."""
    code = 1
    try:
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL if sig != signal.SIGPIPE else signal.SIG_IGN)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        module, args = request["argv"][1], request["argv"][2:]
        sys.argv = [module, *args]
        try:  # its command line stays the zygote's; `top` and `ps -o comm` show the module
            with open("/proc/self/comm", "w") as fh:
                fh.write(module.rsplit(".", 1)[-1][:15])
        except OSError:
            pass
        # The zygote imported MODULE already (that is its point); runpy warns about exactly
        # that, once per process, on stderr of every Spark Python process it forks.
        warnings.filterwarnings("ignore", category=RuntimeWarning,
                                message=r".* found in sys\.modules after import of package")
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # noqa: BLE001 - reported as `python -m` would, then exit 1
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


def serve(path: str) -> None:
    """Accepts requests on the Unix socket `path` until standard input closes."""
    preload(RUNNERS)
    forkable = native_threads() <= 1
    if not forkable:
        print(f"groupscope zygote: {native_threads()} threads after preloading; Python "
              "processes start without it", file=sys.stderr)
    own, home = _interpreter_env(os.environ), os.getcwd()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    partial = f"{path}.{os.getpid()}"
    listener.bind(partial)
    listener.listen(64)
    os.replace(partial, path)  # clients see the socket only once it accepts
    clients: dict[socket.socket, int] = {}  # connection -> forked pid
    by_pid: dict[int, socket.socket | None] = {}  # forked pid -> its client, None once gone
    # A child's exit wakes the loop at once: its client exits as it did, without a delay.
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    try:
        while True:
            ready, _, _ = select.select([listener, sys.stdin, wake_r, *clients], [], [], 1.0)
            if wake_r in ready:
                try:
                    os.read(wake_r, 4096)
                except BlockingIOError:
                    pass
            if sys.stdin in ready and not os.read(sys.stdin.fileno(), 4096):
                return  # the driver is gone
            if listener in ready:
                conn, _ = listener.accept()
                received = _recv_request(conn)
                if received is None:
                    conn.close()
                else:
                    request, fds = received
                    if (not forkable or _interpreter_env(request["env"]) != own
                            or request["cwd"] != home):  # `python -m` puts its cwd on sys.path
                        for fd in fds:
                            os.close(fd)
                        _send_int(conn, -1)
                        conn.close()
                    else:
                        pid = os.fork()
                        if pid == 0:
                            signal.set_wakeup_fd(-1)
                            os.close(wake_r)
                            os.close(wake_w)
                            listener.close()
                            for other in clients:
                                other.close()
                            conn.close()
                            _run_child(request, fds)
                        for fd in fds:
                            os.close(fd)
                        _send_int(conn, pid)
                        clients[conn] = pid
                        by_pid[pid] = conn
            for conn in [c for c in ready if c in clients]:
                try:
                    gone = not conn.recv(1)
                except OSError:
                    gone = True
                if gone:  # the client was killed: so is what it stood for
                    pid = clients.pop(conn)
                    by_pid[pid] = None
                    conn.close()
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            while by_pid:
                try:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                conn = by_pid.pop(pid, None)
                if conn is not None:
                    clients.pop(conn, None)
                    _send_int(conn, status)
                    conn.close()
    finally:
        listener.close()
        try:
            os.unlink(path)
        except OSError:
            pass


def start_zygote(path: str | None = None, python: str = sys.executable
                 ) -> tuple[str, subprocess.Popen] | None:
    """Starts a zygote for this process's Spark session: the path of its socket (to put in
    ENV_KEY before the JVM starts) and the process, or None when this platform lacks what it
    needs. It serves from when its socket appears until this process ends."""
    if not hasattr(socket, "AF_UNIX") or not hasattr(socket, "send_fds"):
        return None
    if path is None:
        folder = os.path.join(tempfile.gettempdir(), f"groupscope-{os.getuid()}")
        os.makedirs(folder, mode=0o700, exist_ok=True)
        if os.stat(folder).st_uid != os.getuid():  # anyone who can reach it can run code as us
            return None
        path = os.path.join(folder, f"zygote-{os.getpid()}.sock")
    if len(path.encode()) > 100:  # sun_path holds 108 bytes
        return None
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    # What Spark gives its Python processes, so that the zygote's interpreter matches theirs.
    env = {**os.environ, "PYTHONUNBUFFERED": "YES",
           "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0")}
    env.pop(ENV_KEY, None)
    process = subprocess.Popen([python, "-m", "streaming.localmode.python_zygote", path],
                               stdin=subprocess.PIPE, env=env, start_new_session=True)
    return path, process


if __name__ == "__main__":
    serve(sys.argv[1])
