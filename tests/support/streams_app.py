"""jvm/streams-app/StreamsApp.java (a one-line Kafka Streams topology on the KIP-1071 streams
protocol), compiled with `javac` against a broker's own jars, which include kafka-streams: no
Maven build, and the client always matches the broker the test starts."""
from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.kafka_broker import JVM_FAST, REPO_ROOT, KafkaBroker

SOURCE = REPO_ROOT / "jvm" / "streams-app" / "StreamsApp.java"


def compile_streams_app(broker: KafkaBroker, out_dir: Path) -> str:
    """Compiles StreamsApp into `out_dir`; returns the classpath to run it with."""
    out_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(["javac", "-d", str(out_dir), "-cp", broker.libs, str(SOURCE)], check=True,
                   capture_output=True, text=True, timeout=180)
    return f"{out_dir}:{broker.libs}"


def start_streams_app(broker: KafkaBroker, classpath: str, app_id: str, source: str, sink: str,
                      state_dir: Path) -> subprocess.Popen:
    """One instance (one stream thread); stdout a text pipe of its "state X" lines."""
    return subprocess.Popen(["java", *JVM_FAST, "-Xmx256m", broker._tool_log_config, "-cp", classpath,
                             "StreamsApp", broker.bootstrap, app_id, source, sink, str(state_dir)],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                            text=True)
