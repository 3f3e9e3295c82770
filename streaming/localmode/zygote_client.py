"""Starts one of Spark's Python processes by asking the job's zygote (streaming/localmode/python_zygote.py)
to fork it, and stands in for it until it exits.

Run by the local-mode interpreter wrapper (streaming/localmode/worker_python.py) as
`python -I -S zygote_client.py PYTHON -m MODULE ARGS...`: isolated and without site-packages, so
it starts in a few milliseconds. It hands the zygote its arguments, environment, working
directory and standard streams; the zygote forks a process that runs MODULE on those streams.
Signals sent to this process go on to that one, and this process exits as it did. When the
zygote cannot be reached, or declines, it execs PYTHON itself: the process starts as it would
have without a zygote.

Standard library only: this file runs without site-packages and without the package around it.
"""
import json
import os
import signal
import socket
import struct
import sys

# A zygote that has not forked within this long is broken: start the usual way instead.
_ANSWER_S = 30.0
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
              signal.SIGUSR2)


def _exec(python, args):
    os.execv(python, [python, *args])


def _recv_int(conn):
    data = b""
    while len(data) < 4:
        chunk = conn.recv(4 - len(data))
        if not chunk:
            return None
        data += chunk
    return struct.unpack("!i", data)[0]


def main(argv):
    python, args = argv[0], argv[1:]
    path = os.environ.get("GROUPSCOPE_ZYGOTE")
    if not path or args[:1] != ["-m"] or len(args) < 2:
        _exec(python, args)
    # Signals are taken from the start: one that came before the forked process is known is
    # passed on once it is, rather than killing this process and, with it, that one.
    target, pending = [], []

    def forward(number, _frame):
        if not target:
            pending.append(number)
            return
        try:
            os.kill(target[0], number)
        except ProcessLookupError:  # it has just exited; its status is on the way
            pass

    for sig in _FORWARDED:
        signal.signal(sig, forward)
    try:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(_ANSWER_S)
        conn.connect(path)
        request = json.dumps({"argv": args, "env": dict(os.environ), "cwd": os.getcwd()}).encode()
        socket.send_fds(conn, [struct.pack("!i", len(request)) + request], [0, 1, 2])
        pid = _recv_int(conn)
    except (OSError, ValueError):  # ValueError: an environment JSON cannot carry
        pid = None
    if pid is None or pid <= 0:  # no zygote, or it declined: start the usual way
        for sig in _FORWARDED:
            signal.signal(sig, signal.SIG_DFL)
        for number in pending:  # what the signal would have done to that process
            os.kill(os.getpid(), number)
        _exec(python, args)
    conn.settimeout(None)  # the forked process may run for as long as the session
    target.append(pid)
    for number in pending:
        forward(number, None)
    status = _recv_int(conn)
    if status is None:  # the zygote went away: the process it forked was killed with it
        os._exit(1)
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)


if __name__ == "__main__":
    main(sys.argv[1:])
