# Two commands matter: `make run` (the app with demo data) and `make test` (the whole suite).
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEV_ENV := DEBUG=1
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD := 1
# `make run PORT=8765` serves on another port; HOST=0.0.0.0 listens beyond this machine (add it to ALLOWED_HOSTS).
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install run test bench faults lock clean upstream-check

$(STAMP): requirements.lock requirements-nodeps.lock pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info[:2] == (3, 11), f"Python 3.11 is needed, found {sys.version.split()[0]}"'
	$(PY) -m pip --version >/dev/null 2>&1 || { rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); }
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.lock
	$(PY) -m pip install --quiet --no-deps -r requirements-nodeps.lock
	touch $(STAMP)

install: $(STAMP)

# axe-core for the accessibility checks of the browser tests (npm registry only).
NODE_STAMP := node_modules/.installed
$(NODE_STAMP): package.json package-lock.json
	scripts/ensure-npm.sh
	npm ci --no-audit --no-fund --silent
	touch $(NODE_STAMP)

run: install
	$(DEV_ENV) $(PY) manage.py migrate --noinput
	$(DEV_ENV) $(PY) manage.py load_demo
	$(DEV_ENV) $(PY) manage.py demo_accounts
	$(DEV_ENV) $(PY) manage.py demo_judges
	$(DEV_ENV) $(PY) manage.py studio $(HOST):$(PORT)

test: install $(NODE_STAMP)
	scripts/ensure-chromium.sh
	$(VENV)/bin/lint-imports  # the layers of pyproject.toml: an upward import fails the build
	scripts/with-postgres.sh $(PY) -m pytest $(PYTEST_ARGS)

# `make bench ARGS="--against 2bc7722"` passes options on to `python -m bench` (GNU make itself
# rejects `make bench --against …`: it reads every dash-argument as one of its own options).
bench: install
	scripts/with-postgres.sh $(PY) -m bench $(ARGS)

# The production topology on free local ports and the faults it must survive (faults/__init__.py);
# it uses the machine's PostgreSQL, Redis and RabbitMQ when they answer, never restarts them.
faults: install
	$(PY) -m faults

lock:
	$(PY) -m pip install --quiet pip-tools
	$(VENV)/bin/pip-compile --quiet --extra test --strip-extras --no-emit-index-url --no-emit-find-links -o requirements.lock pyproject.toml

clean:
	rm -rf $(VENV) var staticfiles

# Import each benchmark repository, as cloned in UPSTREAM_DIR (SurveyLens, deepscholar-bench, ReportBench,
# DeepSynth-Eval, SciSage), whole into a fresh database and print the table docs/formats.md keeps.
upstream-check: install
	@test -n "$(UPSTREAM_DIR)" || { echo "usage: make upstream-check UPSTREAM_DIR=/path/to/clones"; exit 2; }
	$(DEV_ENV) $(PY) manage.py upstream_check $(UPSTREAM_DIR)
