# Shortcuts only: everything here is a plain cargo or redis-server call.

MODULE := target/release/libseckill.so

.PHONY: help deps build run test bench lint clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'

deps: ## Install redis-server, redis-tools and libclang-dev if missing
	@./scripts/deps.sh

build: deps ## Build the release module (target/release/libseckill.so)
	cargo build --release

run: build ## Start redis-server on 127.0.0.1:6379 with the module, in the foreground
	redis-server redis.conf.example

test: build ## Run every test: unit, property, integration (real redis-server, PostgreSQL)
	SECKILL_MODULE=$(CURDIR)/$(MODULE) cargo test --workspace

bench: build ## Measure against Lua, Functions, WATCH and PostgreSQL; writes BENCHMARKS.md
	@./scripts/deps.sh --bench
	SECKILL_MODULE=$(CURDIR)/$(MODULE) cargo run --release -p seckill-bench

lint: ## rustfmt and clippy, warnings are errors
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

clean: ## Remove build output
	cargo clean
