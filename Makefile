# One test command: lint, types, and the whole suite (SQLite and, with CONSOLE_TEST_POSTGRES_URL, PostgreSQL).
# It sets itself up: .venv is created and `.[dev]` installed into it when missing, and again whenever
# pyproject.toml changes. PYTHON=... runs everything with another interpreter instead (no set-up).
VENV := .venv
PYTHON ?= $(VENV)/bin/python
SETUP := $(if $(filter $(VENV)/bin/python,$(PYTHON)),$(VENV)/.installed)

.PHONY: test lint types docs pytest screenshots demo bench chaos fuzz faults image

# import-linter's command, run with $(PYTHON) like every other tool (its package has no __main__); the
# contracts (the layers of ARCHITECTURE.md) are in pyproject.toml.
export LINT_IMPORTS := import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())

test: lint types docs pytest

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e '.[dev]'
	touch $@

lint: $(SETUP)
	$(PYTHON) -m ruff check console tests migrations benchmarks docs/hooks
	$(PYTHON) -m ruff format --check console tests migrations benchmarks docs/hooks
	$(PYTHON) -c "$$LINT_IMPORTS" --no-cache

types: $(SETUP)
	$(PYTHON) -m mypy

# The documentation site (mkdocs.yml) into site/: --strict fails on any warning, so a page missing from the
# nav, a broken link or anchor, a setting without a description or an unreadable benchmark result stops it.
# It prints three lines when all is well: --quiet would hide the warnings, and --strict then lets them pass.
# (NO_MKDOCS_2_WARNING silences the theme's notice about its successor, which is not about this site.)
docs: $(SETUP)
	NO_MKDOCS_2_WARNING=1 $(PYTHON) -m mkdocs build --strict --site-dir site

# Most slow tests wait on processes they started (servers, browsers, the conformance suite), so the suite runs
# in more workers than a small machine has cores; PYTEST_WORKERS=0 runs it in one process.
PYTEST_WORKERS ?= 3

pytest: $(SETUP)
	$(PYTHON) -m pytest -q --durations=30 -n $(PYTEST_WORKERS) --dist worksteal

# The screenshots the docs show (docs/assets/screenshots/), taken from a running `console demo` by the
# browser test that otherwise writes them under test-artifacts/; commit what changed.
screenshots: $(SETUP)
	CONSOLE_UPDATE_SCREENSHOTS=1 CONSOLE_REQUIRE_BROWSER=1 $(PYTHON) -m pytest -q -p no:randomly -n 0 tests/web/test_screenshots.py

demo: $(SETUP)
	$(PYTHON) -m console.cli demo

# Benchmarks B1-B7 (see benchmarks/README.md): prints tables, writes benchmarks/results/latest.json, which
# docs/performance.md shows; commit it after a full run on a quiet machine.
bench: $(SETUP)
	$(PYTHON) -m benchmarks

# The chaos test (benchmarks/chaos): 3 serve + 1 worker on a throwaway PostgreSQL database, 32 agents and 8
# approvers for 60 s while a console process is killed every 10 s; RUNS runs, a report table each.
RUNS ?= 3

chaos: $(SETUP)
	$(PYTHON) -m benchmarks.chaos --runs $(RUNS)

# The agent API fuzzed with Schemathesis (tests/web/test_api_fuzz.py) at length: EXAMPLES requests of each
# kind per operation, on SQLite and, with CONSOLE_TEST_POSTGRES_URL, PostgreSQL. The suite runs it briefly.
EXAMPLES ?= 200

fuzz: $(SETUP)
	CONSOLE_FUZZ_EXAMPLES=$(EXAMPLES) $(PYTHON) -m pytest -q -p no:cacheprovider -o timeout=3600 tests/web/test_api_fuzz.py

# The fault injections (tests marked `faults`: a private PostgreSQL cluster each test starts and stops, MCP
# server processes, ...) with their long variants, which the suite skips (a 60 s database outage, 12
# agents on 20 connections). Bounded: each test fails after 400 s, and the whole run takes under 10 minutes.
faults: $(SETUP)
	CONSOLE_FAULTS_LONG=1 $(PYTHON) -m pytest -q -p no:randomly -m faults -n 2 --durations=0

# The container image (Containerfile) built and run as compose.yaml runs it, a call walked through it
# (tests/deploy/test_image.py): needs podman, mmdebstrap and runc (apt-get install podman mmdebstrap runc)
# and CONSOLE_TEST_POSTGRES_URL. Its Debian base is made from Debian packages and kept in .cache/image/;
# about 3 minutes with a new base on 2 cores, 1.5 with the kept one. The suite runs only the quick checks
# (tests/deploy: the files, and the entry point without the container).
image: $(SETUP)
	CONSOLE_TEST_IMAGE=1 $(PYTHON) -m pytest -q -p no:randomly -n 0 --durations=0 tests/deploy/test_image.py
