# One test command: lint, types, and the whole suite (SQLite and, with CONSOLE_TEST_POSTGRES_URL, PostgreSQL).
# It sets itself up: .venv is created and `.[dev]` installed into it when missing, and again whenever
# pyproject.toml changes. PYTHON=... runs everything with another interpreter instead (no set-up).
VENV := .venv
PYTHON ?= $(VENV)/bin/python
SETUP := $(if $(filter $(VENV)/bin/python,$(PYTHON)),$(VENV)/.installed)

.PHONY: test lint types pytest demo bench

test: lint types pytest

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/python -m pip install --quiet --upgrade pip
	$(VENV)/bin/python -m pip install --quiet -e '.[dev]'
	touch $@

lint: $(SETUP)
	$(PYTHON) -m ruff check console tests migrations benchmarks
	$(PYTHON) -m ruff format --check console tests migrations benchmarks

types: $(SETUP)
	$(PYTHON) -m mypy

pytest: $(SETUP)
	$(PYTHON) -m pytest -q

demo: $(SETUP)
	$(PYTHON) -m console.cli demo

# Benchmarks B1-B5 (see benchmarks/README.md): prints tables, writes benchmarks/results/latest.json.
bench: $(SETUP)
	$(PYTHON) -m benchmarks
