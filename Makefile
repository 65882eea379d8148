# One entry point for the two README commands and the lint/type check.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup check test test-kafka test-stress demo bench bench-quix-env clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# Installs again only when pyproject.toml or the C extension (setup.py, connectrt/_speedups.c:
# optional, built in place by the editable install) changes, so `make demo` and `make test` start
# at once (`make -B setup` forces a reinstall).
INSTALLED := $(VENV)/.installed

setup: $(INSTALLED)

$(INSTALLED): pyproject.toml setup.py connectrt/_speedups.c | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev,jdbc,cdc,spark,objectstore,iceberg,mimalloc]'
	@touch $@

check: setup
	$(BIN)/ruff check connectrt connectors tests bench scripts
	$(BIN)/ruff format --check connectrt connectors tests bench scripts
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The README's test command: the whole suite on Apache Kafka wherever Java 17+ runs (Maven
# fetches the broker's jars into ~/.cache/connectrt/kafka the first time; the embedded broker
# elsewhere; CONNECTRT_TEST_BROKER=embedded|kafka|HOST:PORT chooses), in PYTEST_WORKERS
# pytest-xdist processes (a broker each; one test module per unit of work, the Spark tests in
# three units), then the smoke tier on the embedded broker, the zero-Java path of `make demo`.
# The 25 slowest test phases are listed at the end (where the wall time goes).
# A crashed xdist process ends the run with its test failed (no restart: a replaced process
# left the rest of its unit unscheduled and the run waiting forever).
PYTEST_WORKERS ?= 6
XDIST = -n $(PYTEST_WORKERS) --dist loadgroup --no-loadscope-reorder --max-worker-restart=0
# The smoke tier: only the modules that carry the mark are collected (each xdist process of a
# whole-suite collection imported all ~550 test modules to keep 9 tests: about 25 s of the
# tier's 50), in as many processes as it has modules.
SMOKE_XDIST = -n 4 --dist loadgroup --no-loadscope-reorder --max-worker-restart=0
# pytest keeps its assertion-rewritten test modules in __pycache__ unless bytecode writing is
# off (PYTHONDONTWRITEBYTECODE, set on some machines): then every xdist process of both tiers
# rewrote all ~550 modules again, about 25 s of CPU each.
PYTEST = PYTHONDONTWRITEBYTECODE= $(BIN)/pytest
# Bytecode compiled once up front: the suite starts a few hundred Python processes (workers,
# task processes, Spark's Python workers), and where PYTHONDONTWRITEBYTECODE is set each one
# would otherwise compile every module it imports from source again. Then the jars, Go binaries
# and Debian packages the tests use are fetched or built into their caches (a no-op when there),
# before the suite rather than in the middle of its timed tests (connectrt/testing/prefetch.py).
test: setup
	$(BIN)/python -m compileall -q -j 0 connectrt connectors tests > /dev/null
	$(BIN)/python -m connectrt.testing.prefetch
	CONNECTRT_TEST_BROKER=$${CONNECTRT_TEST_BROKER:-$$($(BIN)/python -m connectrt.testing.broker_choice)} \
	  $(PYTEST) -q $(XDIST) --durations=25 $(PYTEST_ARGS)
	CONNECTRT_TEST_BROKER=embedded $(PYTEST) -q -m smoke $(SMOKE_XDIST) $(PYTEST_ARGS) \
	  $$(grep -rl --include='test_*.py' 'pytest.mark.smoke' tests)

# The integration tests on a single-node Apache Kafka broker started for the run (Java 17+;
# Maven fetches the broker's jars into ~/.cache/connectrt/kafka the first time).
test-kafka: setup
	CONNECTRT_TEST_BROKER=kafka $(BIN)/pytest -q -m integration $(PYTEST_ARGS)

# The integration, e2e and Spark tests while a CPU hog keeps STRESS_CORES cores busy, as on a
# laptop doing other work. The hogs are stopped however pytest ends.
STRESS_CORES ?= 2
test-stress: setup
	@bash -c 'pids=(); for i in $$(seq $(STRESS_CORES)); do $(BIN)/python -c "while True: pass" & pids+=($$!); done; \
	  trap "kill $${pids[*]} 2>/dev/null" EXIT; \
	  echo "test-stress: $(STRESS_CORES) busy processes: $${pids[*]}"; \
	  $(BIN)/pytest -q -m "integration or spark" $(PYTEST_ARGS)'

demo: setup
	$(BIN)/connectrt demo $(DEMO_ARGS)

bench: setup
	$(BIN)/python bench/run_all.py

# The Quix Streams side of bench/bench_file_pipeline.py runs in an environment of its own:
# Quix Streams pins confluent-kafka below the version connectrt requires, so .venv-quix holds
# quixstreams and orjson only (no connectrt). Without it that bench skips the Quix side.
QUIX_VENV := .venv-quix
bench-quix-env:
	$(PY) -m venv $(QUIX_VENV)
	$(QUIX_VENV)/bin/pip install -q --upgrade pip
	$(QUIX_VENV)/bin/pip install -q quixstreams orjson
