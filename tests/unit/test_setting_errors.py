"""A setting error found while the job makes its Kafka clients is a user error: one line naming
the setting, exit status 2, no stack trace."""
from __future__ import annotations

import os
import subprocess
import sys

import yaml

from tests.support.paths import ROOT


def test_an_unset_secret_variable_stops_the_job_in_one_line(tmp_path):
    config = tmp_path / "groupscope.yaml"
    config.write_text(yaml.safe_dump({
        "source": {"bootstrap_servers": "127.0.0.1:1", "kafka": {
            "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
                                'required username="u" password="${env:GS_KAFKA_PASSWORD}";'}},
        "checkpoint": {"path": str(tmp_path / "checkpoint")},
        "history": {"path": str(tmp_path / "history")},
        "exporter": {"listen": "127.0.0.1:0"}}))
    env = {k: v for k, v in os.environ.items()
           if k != "GS_KAFKA_PASSWORD" and not k.startswith("GROUPSCOPE_")}
    done = subprocess.run([sys.executable, "-m", "streaming.cli.main", "run", "-c", str(config)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines == ["groupscope: error: source: kafka.sasl.jaas.config: environment variable "
                     "GS_KAFKA_PASSWORD is not set"], done.stderr
