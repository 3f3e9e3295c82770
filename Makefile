# groupscope: the two entry points are `make demo` and `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test check-java venv clean bench

check-java:
	@command -v java >/dev/null 2>&1 || { echo "groupscope needs Java 17 or newer on PATH (Spark runs on the JVM). Install a JDK, e.g. 'apt-get install openjdk-17-jre-headless'."; exit 1; }
	@v=$$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1); \
	  if [ -z "$$v" ] || [ "$$v" -lt 17 ]; then echo "groupscope needs Java 17 or newer; found: $$(java -version 2>&1 | head -1)"; exit 1; fi

# uv installs the same packages in about half pip's time (it fetches and unpacks in parallel,
# and leaves compiling to the first import); pip does it when uv cannot be had.
$(STAMP): pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV)
	@if $(PY) -m pip install --quiet uv; then \
	  echo "$(VENV)/bin/uv pip install -e '.[test]'"; \
	  $(VENV)/bin/uv pip install --quiet --python $(PY) -e '.[test]'; \
	else \
	  echo "$(PY) -m pip install -e '.[test]'"; $(PY) -m pip install --quiet -e '.[test]'; fi
	@touch $(STAMP)

venv: $(STAMP)

demo: check-java $(STAMP)
	$(VENV)/bin/groupscope demo

# Kafka's jars and the client harness are fetched while the virtualenv installs (neither needs
# the other); the Spark connector after it, since what PySpark ships is left out of it, while
# the Spark driver's class archive is written if missing (tests/support/warm_class_cache.py).
test: check-java
	@bash scripts/ensure-promtool.sh
	@SPARK_KAFKA_VERSION=none bash scripts/fetch-jvm-deps.sh & jvm=$$!; \
	  $(MAKE) --no-print-directory venv; venv=$$?; wait $$jvm && [ $$venv -eq 0 ]
	@$(PY) -m tests.support.warm_class_cache 2>.cache/warm-class-cache.log & warm=$$!; \
	  bash scripts/fetch-jvm-deps.sh; jvm=$$?; \
	  wait $$warm || echo "no driver class archive (.cache/warm-class-cache.log): tests go on"; \
	  [ $$jvm -eq 0 ]
	@PY=$(PY) bash scripts/run-tests.sh

# Each benchmark is a module of the package benchmarks/ (those named _* are helpers); some start Kafka.
# The soak runs for an hour: `python -m benchmarks.soak`, on its own.
bench: check-java $(STAMP)
	@bash scripts/fetch-jvm-deps.sh
	@for b in $(filter-out _% soak,$(basename $(notdir $(wildcard benchmarks/*.py)))); do \
	  echo "== benchmarks.$$b"; $(PY) -m benchmarks.$$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
