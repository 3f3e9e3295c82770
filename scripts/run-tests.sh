#!/usr/bin/env bash
# `make test`'s test run, in two lanes on the machine's cores:
# - the main lane: the tests that need a broker (tests/broker), one pytest session with one
#   broker and one Spark session; they wait on Kafka and Spark a good part of the time, which
#   leaves a core idle;
# - a side lane at lower CPU priority (nice), using that idle core, each step a session of its
#   own: the tests that need neither (tests/unit, tests/prometheus, tests/deploy), the tests that
#   need Spark but no broker (tests/spark, one Spark session), then the job's end-to-end tests
#   again with local-mode tuning off (a Spark session), then the admin source's broker tests and
#   the restart test (SIDE_BROKER_TESTS: a session with a broker of its own, at normal priority,
#   since the broker it starts would inherit the lane's); those wait on Kafka's group protocols
#   and on a job's restart most of their time, which the main lane would otherwise wait through
#   too, and they keep the two lanes about as long as each other.
# The side lane's output is printed once the main lane is done; the run fails if either does.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
# Without local-mode tuning: the replay and the stop, in the lane's own Spark session. A restart
# after SIGKILL is not run again here: untuned, the checkpoint is Spark's own file manager's, and
# the job untuned end to end is tests/broker/test_spark_cluster.py (a standalone master).
JOB_TESTS=(tests/spark/test_job_replay.py tests/spark/test_job_stop.py)
SIDE_BROKER_TESTS=(tests/broker/test_admin_source.py tests/broker/test_restart_monotonic.py)

side_log=$(mktemp "${TMPDIR:-/tmp}/groupscope-side-lane.XXXXXX")
# In a process group of its own (setsid), so that a stop reaches every process it started.
PY="$PY" SIDE_BROKER_TESTS="${SIDE_BROKER_TESTS[*]}" setsid bash -c '
  nice -n 10 "$PY" -m pytest -q -p no:cacheprovider tests/unit tests/prometheus tests/deploy
  pure=$?
  echo "== tests that need Spark but no broker"
  nice -n 10 "$PY" -m pytest -q -p no:cacheprovider tests/spark
  spark=$?
  echo "== the job'"'"'s end-to-end tests again, without local-mode tuning (spark.local_tuning: off)"
  GROUPSCOPE_SPARK__LOCAL_TUNING=off nice -n 10 "$PY" -m pytest -q -p no:cacheprovider "$@"
  untuned=$?
  echo "== the admin source'"'"'s tests and the restart test, with a broker of their own"
  "$PY" -m pytest -q -p no:cacheprovider $SIDE_BROKER_TESTS
  admin=$?
  [ "$pure" -eq 0 ] && [ "$spark" -eq 0 ] && [ "$untuned" -eq 0 ] && [ "$admin" -eq 0 ]
' side-lane "${JOB_TESTS[@]}" >"$side_log" 2>&1 </dev/null &
side=$!
stop_side() { kill -TERM -- "-$side" 2>/dev/null; rm -f "$side_log"; exit 130; }
trap stop_side INT TERM

echo "== tests that need a broker (the others run beside them; their output follows)"
"$PY" -m pytest -q tests/broker "${SIDE_BROKER_TESTS[@]/#/--ignore=}"
main=$?
wait "$side"
side_rc=$?
echo "== the side lane: tests that need neither Spark nor a broker, then Spark, then the job's tests without local-mode tuning, then the admin source's and the restart test"
cat "$side_log"
rm -f "$side_log"
[ "$main" -eq 0 ] && [ "$side_rc" -eq 0 ]
