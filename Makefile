# The README's commands. Every target does its own set-up from a fresh clone.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: all venv sysdeps images run test test-unit lint clean rdkafka-suite

all: venv

# setup.py and the C source too: an editable install compiles the extension only when it runs.
$(STAMP): pyproject.toml setup.py broker_app/storage/_recordwalk.c
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

# Debian tools the images and tests need: debootstrap builds the base image
# without any registry. Installed only when missing; needs root or sudo.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# chromium renders the HTML report in the report's browser test; kcat is a column of the client
# compatibility table (tests/integration/cluster/test_client_compat.py).
SYSDEPS := debootstrap chromium kcat
sysdeps:
	@missing=""; for c in $(SYSDEPS); do command -v $$c >/dev/null || missing="$$missing $$c"; done; \
	if [ -n "$$missing" ]; then $(SUDO) apt-get update -q && \
		$(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; fi

## container images, built locally (no registry); a no-op when up to date
images: venv sysdeps
	$(BIN)/highwater images build

## make run: the main job
run: venv images
	$(BIN)/highwater run chaos_plans/smoke.yaml

## make test: every test suite (unit, integration, docker, scenarios)
# Two xdist workers: one runs the container, broker-process and Spark tests one at a time, the
# other the in-process tests beside them (tests/conftest.py says which are which).
test: venv lint images
	$(BIN)/pytest -q -ra --durations=40 -n 2

test-unit: venv
	$(BIN)/pytest -q -ra tests/unit

## make rdkafka-suite: librdkafka's own integration tests against highwater (about 30 min;
## Debian's librdkafka source, built once; rapidjson-dev lets its statistics tests run)
RDKAFKA_DEPS := rapidjson-dev g++ make
rdkafka-suite: venv
	@missing=""; for p in $(RDKAFKA_DEPS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then $(SUDO) apt-get update -q && \
		$(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$missing; fi
	$(BIN)/highwater bench rdkafka-suite

lint: venv
	$(BIN)/ruff check .

clean:
	-$(BIN)/highwater clean
	rm -rf $(VENV) store
