# The README's commands. Every target does its own set-up from a fresh clone.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: all venv run test test-unit lint clean

all: venv

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

## make run: the main job
run: venv
	$(BIN)/highwater demo

## make test: every test suite (unit, integration, docker, scenarios)
test: venv lint
	$(BIN)/pytest -q -ra

test-unit: venv
	$(BIN)/pytest -q -ra tests/unit

lint: venv
	$(BIN)/ruff check .

clean:
	-$(BIN)/highwater clean
	rm -rf $(VENV) store
