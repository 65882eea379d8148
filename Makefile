# One entry point for the two README commands and the lint/type check.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup check test demo bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

setup: $(BIN)/python
	$(BIN)/pip install -q -e '.[dev,jdbc,spark]'

check: setup
	$(BIN)/ruff check connectrt connectors tests bench
	$(BIN)/ruff format --check connectrt connectors tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

test: setup
	$(BIN)/pytest -q

demo: setup
	$(BIN)/connectrt demo $(DEMO_ARGS)

bench: setup
	$(BIN)/python bench/run_all.py
