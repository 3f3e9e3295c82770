"""A Spark standalone cluster on 127.0.0.1 for tests and benchmarks: one master and N workers
started from the installed PySpark distribution (`pyspark/bin/spark-class`; the wheel has no
sbin/start-*.sh for them), plus `spark_submit_command` to run a Python file on it in client mode.

Each daemon runs in a process group of its own, so that killing a worker takes its executor and
the executor's Python workers with it (they are the worker's children and inherit its group), as
when a machine dies. Logs and work directories live in one temporary directory, removed on stop.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import pyspark

from tests.support.jvm_archives import spark_classes
from tests.support.kafka_broker import free_port

SPARK_HOME = Path(pyspark.__file__).parent
SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"
SPARK_SUBMIT = SPARK_HOME / "bin" / "spark-submit"
# Short-lived JVMs start faster with C1 only and the serial GC (no GC threads to spin up on a
# small machine); for the daemons always, for drivers and executors where a test asks
# (`spark_submit_command(..., quick_jvms=True)`), not for benchmarks.
QUICK_JVM = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def quick_jvm() -> str:
    """QUICK_JVM, mapping the local driver's class archive when there is one."""
    return " ".join([QUICK_JVM, *spark_classes()])


def loopback_env(python: str = sys.executable) -> dict[str, str]:
    """This process's environment with Spark kept on 127.0.0.1, Spark's Python processes (driver
    and executors) running `python` (the venv's, where groupscope is installed) and small
    daemon JVMs; groupscope's own GROUPSCOPE_* overrides dropped."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GROUPSCOPE_", "SPARK_", "PYSPARK_"))}
    env.update({
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOCAL_HOSTNAME": "127.0.0.1",
        "PYSPARK_PYTHON": python,
        "PYSPARK_DRIVER_PYTHON": python,
        # The master and workers only schedule: the default 1 GB heaps would be wasted.
        "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_DAEMON_JAVA_OPTS": quick_jvm(),
    })
    return env


@dataclass
class Daemon:
    name: str
    process: subprocess.Popen
    log_path: Path

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL to the daemon's whole process group (its executors and their Python too)."""
        if self.process.poll() is None or _group_alive(self.process.pid):
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


@dataclass
class SparkCluster:
    """A running standalone cluster; `url` is the master's spark:// address."""

    workdir: Path
    master_port: int
    master_ui_port: int
    env: dict[str, str]
    worker_cores: int = 1
    worker_memory: str = "1g"
    master: Daemon | None = None
    workers: list[Daemon] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    def _start(self, name: str, main_class: str, *args: str) -> Daemon:
        log_path = self.workdir / f"{name}.log"
        with open(log_path, "ab") as log:
            process = subprocess.Popen([str(SPARK_CLASS), main_class, *args], cwd=self.workdir,
                                       stdout=log, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, env=self.env,
                                       start_new_session=True)
        return Daemon(name, process, log_path)

    def start_master(self) -> None:
        self.master = self._start("master", MASTER_CLASS, "--host", "127.0.0.1",
                                  "--port", str(self.master_port),
                                  "--webui-port", str(self.master_ui_port))

    def _start_worker(self, index: int) -> Daemon:
        work_dir = self.workdir / f"worker-{index}"
        work_dir.mkdir(exist_ok=True)
        return self._start(f"worker-{index}", WORKER_CLASS, "--host", "127.0.0.1",
                           "--port", str(free_port()), "--webui-port", str(free_port()),
                           "--cores", str(self.worker_cores), "--memory", self.worker_memory,
                           "--work-dir", str(work_dir), self.url)

    def start_workers(self, count: int) -> None:
        self.workers += [self._start_worker(len(self.workers) + i) for i in range(count)]
        self.wait_workers(len(self.workers))

    def restore_workers(self) -> None:
        """Start again every worker that was killed, and wait until all are registered."""
        for index, worker in enumerate(self.workers):
            if not worker.alive():
                self.workers[index] = self._start_worker(index)
        self.wait_workers(len(self.workers))

    def state(self) -> dict:
        """The master's own account (its web UI's /json): workers, applications."""
        url = f"http://127.0.0.1:{self.master_ui_port}/json/"
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.load(response)

    def alive_workers(self) -> int:
        return sum(1 for w in self.state().get("workers", []) if w.get("state") == "ALIVE")

    def wait_workers(self, count: int, timeout_s: float = 90.0) -> None:
        """Until the master lists `count` ALIVE workers."""
        deadline = time.monotonic() + timeout_s
        last: Exception | str = "no answer"
        while time.monotonic() < deadline:
            for daemon in [self.master, *self.workers]:
                if daemon is not None and not daemon.alive():
                    raise RuntimeError(f"Spark {daemon.name} exited with "
                                       f"{daemon.process.returncode}:\n{daemon.log()[-3000:]}")
            try:
                alive = self.alive_workers()
                if alive >= count:
                    return
                last = f"{alive} of {count} workers alive"
            except (urllib.error.URLError, OSError, ValueError) as exc:
                last = exc
            time.sleep(0.5)
        raise RuntimeError(f"Spark standalone cluster not up in {timeout_s}s ({last}); logs in "
                           f"{self.workdir}:\n{self.master.log()[-2000:] if self.master else ''}")

    def kill_worker(self, index: int) -> None:
        """SIGKILL worker `index` with its executor: a machine lost mid-stream."""
        self.workers[index].kill()

    def executors_of(self, index: int) -> list[int]:
        """Process ids of the executors worker `index` started (its process group's JVMs
        running CoarseGrainedExecutorBackend)."""
        pgid = self.workers[index].process.pid
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                if os.getpgid(int(entry)) != pgid:
                    continue
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    if b"CoarseGrainedExecutorBackend" in fh.read():
                        found.append(int(entry))
            except (OSError, ProcessLookupError):
                continue
        return found

    def stop(self) -> None:
        """Kill every daemon (workers first) and remove logs and work directories."""
        for daemon in [*self.workers, self.master]:
            if daemon is not None:
                daemon.kill()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def logs(self) -> str:
        """The tail of every daemon's log and of every executor's stderr, for failure messages."""
        daemons = [f"--- {d.name} ---\n{d.log()[-2000:]}"
                   for d in [self.master, *self.workers] if d is not None]
        executors = [f"--- {path.relative_to(self.workdir)} ---\n"
                     f"{path.read_text(errors='replace')[-2000:]}"
                     for path in sorted(self.workdir.glob("worker-*/app-*/*/stderr"))]
        return "\n".join(daemons + executors)


@contextmanager
def spark_cluster(workers: int = 2, cores: int = 1, memory: str = "1g") -> Iterator[SparkCluster]:
    """A master and `workers` workers (each `cores` cores, `memory`) on 127.0.0.1, all killed
    and their files removed on exit."""
    if shutil.which("java") is None:
        raise RuntimeError("a Spark standalone cluster needs `java` on PATH")
    cluster = SparkCluster(Path(tempfile.mkdtemp(prefix="groupscope-spark-cluster-")),
                           free_port(), free_port(), loopback_env(), cores, memory)
    try:
        cluster.start_master()
        cluster.start_workers(workers)
        yield cluster
    finally:
        cluster.stop()


def spark_submit_command(cluster: SparkCluster, app: str | Path, app_args: Sequence[str],
                         conf: dict[str, str] | None = None, jars: Sequence[str | Path] = (),
                         quick_jvms: bool = False) -> list[str]:
    """`spark-submit --master <cluster> --deploy-mode client <app> <app_args>`, the driver bound
    to 127.0.0.1 and executors of 512 MB (two fit a 1 GB worker's share of a small machine)."""
    settings = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                "spark.executor.memory": "512m", "spark.ui.enabled": "false"}
    if quick_jvms:
        settings.update({"spark.driver.extraJavaOptions": quick_jvm(),
                         "spark.executor.extraJavaOptions": quick_jvm()})
    settings.update(conf or {})
    command = [str(SPARK_SUBMIT), "--master", cluster.url, "--deploy-mode", "client"]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    if jars:
        command += ["--jars", ",".join(str(j) for j in jars)]
    return [*command, str(app), *app_args]


def start_submitted(command: Sequence[str], env: Mapping[str, str], cwd: Path,
                    log_path: Path) -> subprocess.Popen:
    """Run a spark-submit command in a session of its own (its driver JVM and the Python driver
    it starts stop together, see `stop_submitted`), output to `log_path`."""
    with open(log_path, "ab") as log:
        return subprocess.Popen(list(command), cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=dict(env), start_new_session=True)


def stop_submitted(process: subprocess.Popen, timeout_s: float = 30.0) -> None:
    """SIGTERM to the spark-submit session (the Python driver stops its query, then Spark),
    SIGKILL to whatever is left after `timeout_s`."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=timeout_s)
    except ProcessLookupError:
        return
    except subprocess.TimeoutExpired:
        pass
    deadline = time.monotonic() + timeout_s
    while _group_alive(process.pid) and time.monotonic() < deadline:
        time.sleep(0.2)  # the Python driver ends after the JVM
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=10)
