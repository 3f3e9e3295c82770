"""Run as `python -m tests.support.zygote_probe MODE ARGS...` by tests/spark/test_python_zygote.py: reports
what a process started through the zygote sees."""
import json
import os
import signal
import sys
import time


def main() -> None:
    mode = sys.argv[1]
    if mode == "report":
        with open("/proc/self/cmdline", "rb") as fh:
            cmdline = fh.read().replace(b"\0", b" ").decode()
        with open("/proc/self/comm") as fh:
            comm = fh.read().strip()
        sys.stderr.write("to stderr\n")
        print(json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "stdin": sys.stdin.read(),
                          "probe": os.environ.get("PROBE"), "cmdline": cmdline,
                          "name": __name__, "comm": comm}))
        sys.exit(int(sys.argv[2]))
    if mode == "wait":
        def on_term(number, _frame):
            print(f"signal {number}", flush=True)
            sys.exit(0)

        signal.signal(signal.SIGTERM, on_term)
        with open(sys.argv[2], "w") as fh:
            fh.write(str(os.getpid()))
        time.sleep(60)
        sys.exit(5)
    if mode == "fail":
        raise RuntimeError("probe failed")


if __name__ == "__main__":
    main()
