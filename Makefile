# One test command: lint, types, and the whole suite (SQLite and, with CONSOLE_TEST_POSTGRES_URL, PostgreSQL).
PYTHON ?= python3

.PHONY: test lint types pytest demo bench

test: lint types pytest

lint:
	$(PYTHON) -m ruff check console tests migrations benchmarks
	$(PYTHON) -m ruff format --check console tests migrations benchmarks

types:
	$(PYTHON) -m mypy

pytest:
	$(PYTHON) -m pytest -q

demo:
	$(PYTHON) -m console.cli demo

# Benchmarks B1-B5 (see benchmarks/README.md): prints tables, writes benchmarks/results/latest.json.
bench:
	$(PYTHON) -m benchmarks
