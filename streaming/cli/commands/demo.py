"""`groupscope demo`: the whole monitor on a simulated cluster, no Kafka needed (`make demo`).

Local Spark reads the coordinator simulator's live `__consumer_offsets` (one group per assignor
running the same scenario), the exporter serves /metrics on localhost, and the terminal shows
groups, lag and rebalances as they happen. Configuration comes from the demo's defaults, then
`GROUPSCOPE_*` environment variables, then the flags; checkpoint, history and the simulated log
live in a work directory (a temporary one, removed at exit, unless --workdir is given).
"""
from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
import warnings
from typing import Iterator, Mapping

from streaming.errors import UserError
from streaming.cli.commands.signals import spark_outside_the_process_group, stop_on_signals
from streaming.config import CONFIG_PATH_VARIABLE, ENV_PREFIX, Config, load_config

DEMO_DEFAULTS = {
    "GROUPSCOPE_TRIGGER__INTERVAL": "2s",
    "GROUPSCOPE_LAG__POLL_INTERVAL": "2s",
    "GROUPSCOPE_SPARK__MASTER": "local[2]",
    "GROUPSCOPE_SPARK__APP_NAME": "groupscope-demo",
    # A handful of simulated groups: every dashboard panel has data, lag per member included.
    "GROUPSCOPE_METRICS__MEMBER_LAG": "true",
    # Local only (no UI port, driver on loopback); Python workers get time to connect back on
    # a busy machine.
    "GROUPSCOPE_SPARK__CONF": "{spark.ui.enabled: 'false', spark.driver.host: 127.0.0.1, "
                              "spark.driver.bindAddress: 127.0.0.1, "
                              "spark.python.authenticate.socketTimeout: 120s}",
}
STOP_POLL_S = 0.5
MESSAGE_CHARS = 400


class DemoFailed(UserError):
    """The simulator or the query died while the demo ran."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo", help="run the monitor on the coordinator simulator, with a live terminal view",
        description="Local Spark reads the simulator's __consumer_offsets (the scenario under "
                    "every strategy, one group each), /metrics is served on localhost and the "
                    "terminal shows groups, lag and rebalances. Ctrl-C stops it.")
    parser.add_argument("--scenario", help="built-in scenario or scenario YAML file "
                        "(default: canary-rollout)")
    parser.add_argument("--speed", type=float,
                        help="simulated seconds per wall-clock second (default: 3)")
    parser.add_argument("--strategy", action="append", dest="strategies", metavar="STRATEGY",
                        help="run only these strategies (repeatable; default: all the scenario "
                             "lists)")
    parser.add_argument("--seed", type=int, help="random seed of the simulations (default: 0)")
    parser.add_argument("--duration", type=float,
                        help="stop after this many wall-clock seconds (default: until Ctrl-C)")
    parser.add_argument("--no-view", dest="view", action="store_false",
                        help="no terminal view; just serve /metrics")
    parser.add_argument("--listen", help="host:port of /metrics (default: 127.0.0.1:9464)")
    parser.add_argument("--workdir", help="keep the simulated log, checkpoint and history here "
                        "(default: a temporary directory, removed at exit)")
    parser.set_defaults(func=run)


def demo_config(args: argparse.Namespace, work_dir: str,
                env: Mapping[str, str] | None = None) -> Config:
    """The demo's defaults < GROUPSCOPE_* variables < flags; the source is always the simulator
    and its state lives in `work_dir` (a checkpoint of another log would not match)."""
    env = os.environ if env is None else env
    merged = dict(DEMO_DEFAULTS)
    merged.update({k: v for k, v in env.items() if k.upper().startswith(ENV_PREFIX)
                   and k.upper() != CONFIG_PATH_VARIABLE})
    flags = {"SIMULATOR__SCENARIO": args.scenario, "SIMULATOR__SPEED": args.speed,
             "SIMULATOR__SEED": args.seed, "EXPORTER__LISTEN": args.listen,
             "SIMULATOR__STRATEGIES": ",".join(args.strategies) if args.strategies else None}
    merged.update({ENV_PREFIX + k: str(v) for k, v in flags.items() if v is not None})
    merged.update({
        "GROUPSCOPE_SOURCE__TYPE": "simulator",
        "GROUPSCOPE_CHECKPOINT__PATH": os.path.join(work_dir, "checkpoint"),
        "GROUPSCOPE_HISTORY__PATH": os.path.join(work_dir, "history"),
    })
    if args.duration is not None and args.duration <= 0:
        raise UserError("--duration: must be a positive number of seconds")
    return load_config(None, env=merged)


class Demo:
    """The simulator feed, the job on it and the view they share."""

    def __init__(self, config: Config, work_dir: str, spark=None) -> None:
        self.config = config
        self.work_dir = work_dir
        self.spark = spark
        self.feed = None
        self.job = None
        self._own_spark = spark is None

    def start(self) -> "Demo":
        from streaming.job.lifecycle import Job
        from streaming.job.session import build_spark
        from streaming.job.settings import view_settings
        from streaming.sources.simulator import feed_dataframe, feed_from_config
        from streaming.cli.terminal_view import RebalanceLogView

        config = self.config
        self.feed = feed_from_config(config, self.work_dir)
        view = RebalanceLogView(view_settings(config), clock=self.feed.clock)
        if self.spark is None:
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
            with spark_outside_the_process_group():
                self.spark = build_spark(config)
        self.spark.sparkContext.setLogLevel("ERROR")  # keep Spark's warnings off the screen
        self.job = Job(config, spark=self.spark, view=view,
                       source_df=feed_dataframe(self.spark, config, self.feed),
                       progress_target=self.feed.progress_target,
                       offsets_client_factory=self.feed.offsets_client)
        try:
            self.job.start()
        except OSError as exc:  # e.g. the exporter's port is taken
            self.stop()
            raise UserError(f"cannot start: {exc} (choose another port with --listen)") from None
        self.feed.start()
        return self

    @property
    def view(self):
        return self.job.view

    def metrics_url(self) -> str:
        host = self.config.exporter.listen.rpartition(":")[0]
        return f"http://{host}:{self.job.exporter.port}/metrics"

    def failure(self) -> str | None:
        """Why the demo cannot go on, if it cannot."""
        from py4j.protocol import Py4JError

        if self.feed is not None and self.feed.error is not None:
            return f"the simulator failed: {self.feed.error}"
        query = self.job.query if self.job is not None else None
        try:
            active = query is None or query.isActive
            error = None if active else query.exception()
        except (Py4JError, OSError) as exc:
            return f"lost the Spark JVM: {exc}"
        if not active:
            if error is None:
                return "the streaming query stopped"
            first = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
            return f"the streaming query failed: {first[:MESSAGE_CHARS]}"
        return None

    def title(self) -> list[str]:
        feed, settings = self.feed, self.config.simulator
        scenario = feed.scenario
        total = scenario.duration_ms // 1000
        progress = (f"scenario finished ({total}s simulated); Ctrl-C to quit" if feed.finished
                    else f"simulated {feed.simulated_ms() // 1000}s of {total}s")
        return [f"groupscope demo: {scenario.name}, {len(feed.sims)} groups (one per strategy), "
                f"speed {settings.speed:g}x, {progress}",
                f"metrics: {self.metrics_url()}"]

    def stop(self) -> None:
        if self.job is not None:
            self.job.stop()
        if self.feed is not None:
            self.feed.stop()
        if self._own_spark and self.spark is not None:
            from py4j.protocol import Py4JError

            # The JVM may be gone already: a service manager signals every process at once.
            try:
                with warnings.catch_warnings():  # PySpark's own warning that it is gone
                    warnings.simplefilter("ignore", RuntimeWarning)
                    self.spark.stop()
            except (Py4JError, OSError):
                pass
            self.spark = None


def run(args: argparse.Namespace, spark=None, stop: threading.Event | None = None) -> int:
    """The command. Tests pass their Spark session, and may end the demo through `stop`."""
    own_dir = args.workdir is None
    work_dir = tempfile.mkdtemp(prefix="groupscope-demo-") if own_dir else args.workdir
    failed = False
    try:
        try:
            os.makedirs(work_dir, exist_ok=True)
        except OSError as exc:
            raise UserError(f"demo work directory {work_dir}: {exc.strerror or exc}") from None
        config = demo_config(args, work_dir)
        log_path = os.path.join(work_dir, "demo.log")
        try:
            with _stderr_to(log_path if args.view else None):
                _run_demo(args, config, work_dir, spark, stop)
        except DemoFailed as exc:
            failed = True  # keep the work directory: the log says more
            if args.view:
                raise UserError(f"{exc} (Spark's log: {log_path})") from None
            raise
    finally:
        if own_dir and not failed:
            shutil.rmtree(work_dir, ignore_errors=True)
    return 0


def _run_demo(args: argparse.Namespace, config: Config, work_dir: str, spark,
              stop: threading.Event | None) -> None:
    from streaming.cli.terminal_view import TerminalView

    print(f"groupscope demo: starting Spark and the simulator ({config.simulator.scenario}) ...",
          flush=True)
    stop = stop_on_signals(stop or threading.Event())  # a stop asked for while Spark starts too
    demo = Demo(config, work_dir, spark=spark).start()
    stop_on_signals(stop)  # again: Spark's SparkContext installs a SIGINT handler of its own
    try:
        print(f"metrics: {demo.metrics_url()}", flush=True)
        screen = TerminalView(demo.view, demo.title) if args.view else None
        started = time.monotonic()
        _run_until(demo, screen, stop, started + args.duration if args.duration else None)
        print(_summary(demo, time.monotonic() - started), flush=True)
    finally:
        demo.stop()


def _run_until(demo: Demo, screen, stop: threading.Event, deadline: float | None) -> None:
    next_draw = 0.0
    while True:
        now = time.monotonic()
        if screen is not None and now >= next_draw:
            screen.draw()
            next_draw = now + screen.interval_s
        # The stop first: a failure once it was asked for is the stop's (Spark's JVM and
        # workers may have had the same signal).
        if stop.is_set() or (deadline is not None and now >= deadline):
            return
        problem = demo.failure()
        if problem is not None:
            raise DemoFailed(problem)
        stop.wait(STOP_POLL_S)


def _summary(demo: Demo, elapsed_s: float) -> str:
    view = demo.view
    with view.lock:
        groups = len(view.groups)
        rebalances = sum(g.rebalances for g in view.groups.values())
        records = sum(view.records_total.values())
    return (f"groupscope demo: stopped after {elapsed_s:.0f}s; {groups} groups, "
            f"{rebalances} rebalances, {records} records read")


@contextlib.contextmanager
def _stderr_to(path: str | None) -> Iterator[None]:
    """While the screen is in use, everything written to stderr (the JVM's and its Python
    workers' logs included: they inherit the descriptor) goes to `path` instead."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    saved = None
    if path is not None:
        sys.stderr.flush()
        saved = os.dup(2)
        with open(path, "ab") as log_file:
            os.dup2(log_file.fileno(), 2)
    try:
        yield
    finally:
        root.removeHandler(handler)
        if saved is not None:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
