#!/usr/bin/env bash
# Fetch the JVM jars the tests run (real Apache Kafka brokers and tools; Spark's Kafka connector)
# from Maven Central into .cache/, through jvm/pom.xml. Idempotent: a folder whose stamp file
# (.fetched) exists is skipped, so `make test` can call this every time.
#
#   KAFKA_VERSIONS       Kafka releases to fetch (default: "4.4.0 3.9.2")
#   SPARK_KAFKA_VERSION  spark-sql-kafka-0-10 version (default: the pyspark pin in pyproject.toml);
#                        "none" skips it. When Maven Central does not serve that patch release,
#                        the same minor release's first one (x.y.0) is fetched instead: a
#                        connector runs on every patch release of its minor. Neither served is a
#                        warning only: tests/broker/test_spark_kafka_source.py skips without it.
#   HARNESS              "none" skips building the client harness (jvm/harness: real KafkaConsumers
#                        for tests/broker/test_rebalance_truth.py and benchmarks/rebalance_truth.py)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache="$root/.cache"
repo="$cache/maven/repository"
pom="$root/jvm/pom.xml"
KAFKA_VERSIONS=${KAFKA_VERSIONS:-"4.4.0 3.9.2"}
pin=$(sed -n 's/.*"pyspark\[sql\]==\([0-9.]*\)".*/\1/p' "$root/pyproject.toml" | head -1)
SPARK_KAFKA_VERSION=${SPARK_KAFKA_VERSION:-${pin:-none}}

command -v mvn >/dev/null 2>&1 || {
  echo "fetch-jvm-deps: 'mvn' (Apache Maven) is not on PATH; install it, e.g. 'apt-get install maven'." >&2; exit 1; }
command -v java >/dev/null 2>&1 || {
  echo "fetch-jvm-deps: 'java' is not on PATH; Kafka 4.x needs Java 17 or newer (apt-get install openjdk-17-jre-headless)." >&2; exit 1; }
jv=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
if [ -z "$jv" ] || [ "$jv" -lt 17 ]; then
  echo "fetch-jvm-deps: Kafka 4.x needs Java 17 or newer; found: $(java -version 2>&1 | head -1)" >&2; exit 1
fi

mvn_q() {  # quiet, batch, repo-local repository (no ~/.m2 writes), failures shown in full
  local log; log=$(mktemp)
  if mvn -B -q -f "${MVN_POM:-$pom}" -Dmaven.repo.local="$repo" "$@" >"$log" 2>&1; then rm -f "$log"; return 0; fi
  cat "$log" >&2; rm -f "$log"; return 1
}

for v in $KAFKA_VERSIONS; do
  dir="$cache/kafka-$v"
  if [ -f "$dir/.fetched" ]; then echo "kafka $v: cached in .cache/kafka-$v/libs ($(cat "$dir/.fetched"))"; continue; fi
  rm -rf "$dir"; start=$SECONDS
  # 3.x poms bring their own SLF4J binding (reload4j): -Dkafka3 leaves out the log4j2 one.
  case "$v" in 3.*) extra=(-Dkafka3) ;; *) extra=() ;; esac
  mvn_q "${extra[@]}" -Dkafka.version="$v" package || { echo "kafka $v: fetch FAILED (see Maven's output above)" >&2; exit 1; }
  n=$(ls "$dir/libs"/*.jar | wc -l)
  echo "$n jars" >"$dir/.fetched"
  echo "kafka $v: fetched $n jars into .cache/kafka-$v/libs in $((SECONDS - start))s"
done

if [ "$SPARK_KAFKA_VERSION" != none ]; then
  dir="$cache/spark-kafka-$SPARK_KAFKA_VERSION"
  miss="$cache/spark-kafka-$SPARK_KAFKA_VERSION.not-served"
  if [ -f "$dir/.fetched" ]; then
    echo "spark-sql-kafka $SPARK_KAFKA_VERSION: cached in .cache/spark-kafka-$SPARK_KAFKA_VERSION/jars ($(cat "$dir/.fetched"))"
  elif [ -n "$(find "$miss" -mmin -1440 2>/dev/null)" ]; then  # asked less than a day ago: no new Maven run
    echo "spark-sql-kafka $SPARK_KAFKA_VERSION: WARNING not served by Maven Central (checked $(date -r "$miss" '+%F %R')); skipped" >&2
  else
    rm -rf "$dir" "$miss"; start=$SECONDS
    served=""
    for candidate in "$SPARK_KAFKA_VERSION" "${SPARK_KAFKA_VERSION%.*}.0"; do
      if mvn_q -Dspark-kafka -Dspark.version="$candidate" -Dspark.runtime="$SPARK_KAFKA_VERSION" package 2>/dev/null; then
        served=$candidate; break
      fi
      [ "$candidate" != "${SPARK_KAFKA_VERSION%.*}.0" ] || break
    done
    if [ -n "$served" ]; then
      # Drop what PySpark already ships (same artifactId in pyspark/jars, any version): two copies
      # of e.g. kafka-clients' zstd-jni or slf4j on Spark's classpath would clash.
      pyjars=$("$root/.venv/bin/python" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))' 2>/dev/null || true)
      dropped=0
      if [ -n "$pyjars" ] && [ -d "$pyjars" ]; then
        list=$(mktemp)
        mvn_q -Dspark-kafka -Dspark.version="$served" -Dspark.runtime="$SPARK_KAFKA_VERSION" dependency:list -DincludeScope=runtime -DoutputFile="$list"
        while IFS=: read -r _g a _t ver _s; do
          a=${a// /}
          if compgen -G "$pyjars/$a-[0-9]*.jar" >/dev/null && [ -f "$dir/jars/$a-$ver.jar" ]; then
            rm -f "$dir/jars/$a-$ver.jar"; dropped=$((dropped + 1))
          fi
        done < <(grep -E '^\s+[^ ]+:[^ ]+:jar:' "$list" | sed 's/^ *//; s/ .*//')
        rm -f "$list"
      else
        echo "spark-sql-kafka: pyspark not found in .venv; kept every runtime jar (no de-duplication)" >&2
      fi
      n=$(ls "$dir/jars"/*.jar | wc -l)
      echo "$n jars of connector $served, $dropped left out as shipped by pyspark" >"$dir/.fetched"
      echo "spark-sql-kafka $SPARK_KAFKA_VERSION: fetched $n jars of connector $served into .cache/spark-kafka-$SPARK_KAFKA_VERSION/jars ($dropped left out: PySpark ships them) in $((SECONDS - start))s"
    else
      rm -rf "$dir"; touch "$miss"
      echo "spark-sql-kafka $SPARK_KAFKA_VERSION: WARNING Maven Central does not serve org.apache.spark:spark-sql-kafka-0-10_2.13:$SPARK_KAFKA_VERSION; skipped (set SPARK_KAFKA_VERSION to a served one, or none)" >&2
    fi
  fi
fi

# The client harness is built, not fetched: its stamp holds a hash of its pom and sources, so an
# edit rebuilds it and an unchanged tree is skipped. Offline first (-o: everything is usually in
# .cache/maven/repository already), online only when a plugin or jar is missing.
if [ "${HARNESS:-}" != none ]; then
  hdir="$cache/harness"
  sum=$(cd "$root/jvm/harness" && find pom.xml src -type f | sort | xargs sha256sum | sha256sum | cut -c1-16)
  if [ -f "$hdir/.built" ] && [ "$(cat "$hdir/.built")" = "$sum" ] && [ -f "$hdir/client-harness.jar" ]; then
    echo "client harness: built in .cache/harness ($sum)"
  else
    rm -rf "$hdir"; start=$SECONDS
    export MVN_POM="$root/jvm/harness/pom.xml"
    mvn_q -o package 2>/dev/null || mvn_q package || { echo "client harness: build FAILED (see Maven's output above)" >&2; exit 1; }
    unset MVN_POM
    echo "$sum" >"$hdir/.built"
    echo "client harness: built .cache/harness/client-harness.jar in $((SECONDS - start))s"
  fi
fi
