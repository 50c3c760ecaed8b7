# MemoryHub developer commands. `make` prints this help.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# DEBUG defaults to off (memoryhub/settings.py), for deployments; these developer commands run
# with it on unless the environment says otherwise. `make serve` refuses it on.
DEBUG ?= true
export DEBUG

.DEFAULT_GOAL := help
.PHONY: help setup run serve test lint fmt typecheck pytest bench bench-load bench-hostile browser-deps

help: ## Show the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-13s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# The CPU build of torch first: any other spec would pull a multi-GB CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP) ## Create the virtualenv and install everything (reuses what exists)
	$(BIN)/python manage.py export_embedding_model

run: setup ## Start the embedded database, migrate, load demo data, serve web + worker + beat
	DEBUG=true $(BIN)/python manage.py runstack

serve: setup ## The production process model locally (set DEBUG=false and the secrets first: README)
	$(BIN)/python manage.py runstack --production $(SERVE_FLAGS)

test: setup lint typecheck pytest ## Lint, type-check, check migrations and run the whole suite

lint: setup ## ruff check and format check
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

fmt: setup ## Format and auto-fix
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

typecheck: setup ## mypy --strict
	$(BIN)/mypy memoryhub dashboard review accounts admin_tools

pytest: setup
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/pytest

bench: setup ## Retrieval, bilingual (every embedding model), latency and extraction benchmarks (bench/results/*.json)
	$(BIN)/python manage.py bench_retrieval
	$(BIN)/python manage.py bench_bilingual
	$(BIN)/python manage.py bench_extraction

bench-load: setup ## Load benchmark: 1, 8, 32 agents x 1, 2 web workers (bench/results/load-*.json)
	$(BIN)/python bench/load.py

bench-hostile: setup ## Worst inputs at the size limit on every route vs a concurrent search (bench/results/hostile-*.json)
	$(BIN)/python bench/hostile.py
