"""The driver JVM the job launches in local mode keeps to the quick JIT compiler, unless the
user's JVM options choose otherwise."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from streaming.jvm_jit import QUICK_JIT, with_quick_jit

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_quick_jit_goes_ahead_of_the_users_other_options():
    conf = {"spark.driver.extraJavaOptions": "-Xss4m", "spark.ui.enabled": "false"}
    assert with_quick_jit(conf) == {"spark.driver.extraJavaOptions": f"{QUICK_JIT} -Xss4m",
                                    "spark.ui.enabled": "false"}
    assert with_quick_jit({}) == {"spark.driver.extraJavaOptions": QUICK_JIT}


def test_the_users_own_jit_choice_wins():
    for flags in ("-XX:TieredStopAtLevel=4", "-Xss4m -XX:-TieredCompilation"):
        conf = {"spark.driver.extraJavaOptions": flags}
        assert with_quick_jit(conf) == conf


_RUN = """
import json
from streaming.config import Config, SparkConfig
from streaming.job import build_spark
spark = build_spark(Config(spark=SparkConfig(master="local[1]", conf=CONF)))
jvm = spark.sparkContext._jvm
args = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
print(json.dumps(args))
"""


def _driver_jvm_args(conf: dict, cache_home) -> list[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home)}
    env.pop("PYSPARK_PYTHON", None)
    out = subprocess.run([sys.executable, "-c", _RUN.replace("CONF", repr(conf))], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_driver_jvm_runs_with_the_quick_jit_and_the_users_options(tmp_path):
    # -Xshare:auto leaves out the class-data archive, which a JVM would otherwise spend
    # seconds writing into tmp_path on its way out.
    args = _driver_jvm_args({"spark.driver.extraJavaOptions": "-Xss4m -Xshare:auto"}, tmp_path)
    assert QUICK_JIT in args and "-Xss4m" in args
    assert args.index(QUICK_JIT) < args.index("-Xss4m")
