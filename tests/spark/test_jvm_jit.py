"""The driver JVM the job launches in local mode keeps to the quick JIT compiler, unless the
user's JVM options choose otherwise."""
from __future__ import annotations

from streaming.localmode.jvm_jit import QUICK_JIT, with_quick_jit


def test_the_quick_jit_goes_ahead_of_the_users_other_options():
    conf = {"spark.driver.extraJavaOptions": "-Xss4m", "spark.ui.enabled": "false"}
    assert with_quick_jit(conf) == {"spark.driver.extraJavaOptions": f"{QUICK_JIT} -Xss4m",
                                    "spark.ui.enabled": "false"}
    assert with_quick_jit({}) == {"spark.driver.extraJavaOptions": QUICK_JIT}


def test_the_users_own_jit_choice_wins():
    for flags in ("-XX:TieredStopAtLevel=4", "-Xss4m -XX:-TieredCompilation"):
        conf = {"spark.driver.extraJavaOptions": flags}
        assert with_quick_jit(conf) == conf


def test_the_driver_jvm_runs_with_the_quick_jit_and_the_users_options(startup):
    for run in startup["auto"]:  # the user's options: -Xss4m and a class-sharing option
        args = run["args"]
        assert QUICK_JIT in args and "-Xss4m" in args
        assert args.index(QUICK_JIT) < args.index("-Xss4m")
