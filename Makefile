# TokenDance's everyday commands. `./scripts/setup` (or `make setup`) first; it installs
# make itself where it is missing.
#
#   make run                the API, the relay, the projections and the web app on :8000
#   make test               everything CI runs (.ci/run = ./scripts/setup --test && make test)
#   make test-unit          the fast tier: no servers
#   make lock               re-resolve the lock files after editing pyproject.toml

VENV := .venv
BIN := $(VENV)/bin
# Three test processes by default: on 2 cores the suite's tests wait on the servers they
# start, and three finished the suite 1.5-2 minutes sooner than two (docs/development.md).
# WORKERS=1 runs one, WORKERS=auto one a core. Each has its own Postgres, NATS and fork
# server, every test its own database.
WORKERS ?= 3
PYTEST := $(BIN)/python -m pytest -n $(WORKERS) --dist worksteal
# The web app's Vite needs Node.js 20.19+ or 22.12+; with an older one it is not checked.
NODE_OK := node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.exit(a===20&&b>=19||a===22&&b>=12||a>22?0:1)'
UV_VERSION := $(shell sed -n 's/^UV_VERSION=\([0-9.]*\).*/\1/p' scripts/setup)
LOCK_FLAGS := --universal --python-version 3.11 --generate-hashes --quiet \
	--custom-compile-command "make lock" \
	$(if $(UPGRADE),--upgrade) $(if $(UPGRADE_PACKAGE),--upgrade-package $(UPGRADE_PACKAGE))

.PHONY: help setup setup-test run test test-web bytecode typecheck lint format test-unit \
	test-integration test-e2e lock

help:
	@sed -n 's/^\([a-z0-9-]*\):.*## \(.*\)/  make \1\t\2/p' $(MAKEFILE_LIST) | expand -t 26

setup: ## install what is missing: system packages, .venv from the lock, the web app
	./scripts/setup

setup-test: ## the same and what the tests need
	./scripts/setup --test

run: ## tokendance serve on the embedded servers (./.tokendance), http://localhost:8000/
	$(BIN)/tokendance serve

# The checks two at a time (the web app's and mypy take about half a minute each), each
# one's output kept together; then the suite.
test: ## everything CI runs: web checks, mypy, ruff, the whole suite
	$(MAKE) --no-print-directory -j2 --output-sync=target test-web typecheck lint bytecode
	$(PYTEST) --durations=30

test-web: ## the web app's checks (generated types, vue-tsc, ESLint, Vitest) and its build
	@if ! command -v npm >/dev/null; then \
		echo "npm not installed: the web app is not built or checked" >&2; \
	elif $(NODE_OK); then \
		npm --prefix web run verify && npm --prefix web run build; \
	else \
		echo "Node.js $$(node --version) is too old for the web app (20.19 or later): it is not built or checked" >&2; \
	fi

bytecode: ## compile the project's modules once: every server a test starts reads them
	@$(BIN)/python -m compileall -q -j 0 adapters application domain projections schemas \
		skills sandbox tests >/dev/null

typecheck: ## mypy --strict on everything but the tests
	$(BIN)/mypy

lint: ## ruff's lint and format checks
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: ## ruff format, in place
	$(BIN)/ruff format .

test-unit: ## unit tests: fakes and in-memory stores, no servers
	$(PYTEST) tests/unit

test-integration: bytecode ## real Postgres, NATS and S3 (started by the tests), and the sandboxes
	$(PYTEST) tests/integration tests/sandbox

test-e2e: bytecode ## a real server over HTTP and SSE, and the fault tests that kill its processes
	$(PYTEST) tests/e2e tests/faults

lock: ## re-resolve requirements{,-test,-deploy}.lock (UPGRADE=1 or UPGRADE_PACKAGE=x)
	$(BIN)/python -m pip install -q "uv==$(UV_VERSION)"
	$(BIN)/uv pip compile pyproject.toml --extra embedded $(LOCK_FLAGS) -o requirements.lock
	$(BIN)/uv pip compile pyproject.toml --extra test $(LOCK_FLAGS) \
		-c requirements.lock -o requirements-test.lock
	$(BIN)/uv pip compile pyproject.toml --extra s3 $(LOCK_FLAGS) \
		-c requirements-test.lock -o requirements-deploy.lock
