# Vigil — the two commands: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
KAFKA_STATE ?= .kafka-local
DEMO_OUT ?= out/demo

.PHONY: demo test install system-deps lint unit rules-test schemas quality bench clean

## Set up a virtual environment and scan the bundled example log (no Kafka needed).
demo: install
	$(BIN)/vigil scan examples/chat-events.jsonl examples/long-answer.jsonl --out $(DEMO_OUT)

## Install everything (Debian packages and Python), start Kafka, run the whole suite, stop Kafka.
test: system-deps install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/vigil rules test
	bash deploy/kafka/with-broker.sh $(KAFKA_STATE) $(BIN)/python -m pytest -q

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

## Debian packages the suite uses: Java + Maven (local Kafka broker), Prometheus tools.
system-deps:
	bash deploy/system-deps.sh

lint: install
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy

## Tests that need no broker.
unit: install
	$(BIN)/python -m pytest -q tests/unit

rules-test: install
	$(BIN)/vigil rules test

schemas: install
	$(BIN)/vigil schemas export

## Regenerate docs/detection-quality.md from ../shared/corpora.
quality: install
	$(BIN)/python benchmarks/detection_quality.py --write docs/detection-quality.md

bench: install
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) out .pytest_cache .mypy_cache .ruff_cache $(KAFKA_STATE)
