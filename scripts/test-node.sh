#!/bin/sh
# Runs the Node.js client's tests (clients/node) against real servers:
#   SECKILL_MODULE=target/release/libseckill.so sh scripts/test-node.sh
# SECKILL_MODULE (required) is the module to load; SECKILL_SERVER (optional,
# default redis-server) the server binary, e.g. a valkey-server. Installs the
# client's dev dependencies with `npm ci` when node_modules is missing or
# older than the lockfile.
set -eu

cd "$(dirname "$0")/.."
root=$(pwd)

if [ -z "${SECKILL_MODULE:-}" ]; then
    echo "test-node: set SECKILL_MODULE to the seckill module to load (e.g. target/release/libseckill.so)" >&2
    exit 2
fi
case "$SECKILL_MODULE" in
    /*) ;;
    *) SECKILL_MODULE="$root/$SECKILL_MODULE" ;;
esac
if [ ! -f "$SECKILL_MODULE" ]; then
    echo "test-node: SECKILL_MODULE=$SECKILL_MODULE does not exist (build it with make build)" >&2
    exit 2
fi
export SECKILL_MODULE

# A relative server path (one with a slash) is taken from the repository root.
if [ -n "${SECKILL_SERVER:-}" ]; then
    case "$SECKILL_SERVER" in
        /*) ;;
        */*) SECKILL_SERVER="$root/$SECKILL_SERVER" ;;
    esac
    export SECKILL_SERVER
fi
server=${SECKILL_SERVER:-redis-server}
if ! command -v "$server" >/dev/null 2>&1; then
    echo "test-node: server binary '$server' not found (set SECKILL_SERVER, or install redis-server)" >&2
    exit 2
fi

for tool in node npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "test-node: $tool not found; the tests need Node.js 20 or later with npm" >&2
        exit 2
    fi
done
# The dev dependencies (redis 6, ioredis 6, @valkey/valkey-glide 2, the
# clients the tests run the library over) need Node.js 20; Debian 12's
# own nodejs is 18. Then Node.js 20 is taken from the npm registry (the
# `node` package ships the binary) into target/, once.
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ] || [ -n "${SECKILL_NODE_FROM_NPM:-}" ]; then
    local_node="$root/target/node-20"
    if [ ! -x "$local_node/node_modules/.bin/node" ]; then
        echo "test-node: Node.js $(node --version) here, the tests need 20: installing node@20 from npm into target/node-20"
        npm install --no-audit --no-fund --prefix "$local_node" node@20 >/dev/null
    fi
    PATH="$local_node/node_modules/.bin:$PATH"
    export PATH
    echo "test-node: using Node.js $(node --version)"
fi

cd clients/node
if [ ! -f node_modules/.package-lock.json ] \
    || [ -n "$(find package-lock.json -newer node_modules/.package-lock.json)" ]; then
    npm ci --no-audit --no-fund
fi

node --test test/*.test.js

# The example service (examples/node), over HTTP, with its own packages.
cd ../../examples/node
if [ ! -f node_modules/.package-lock.json ] \
    || [ -n "$(find package-lock.json -newer node_modules/.package-lock.json)" ]; then
    npm ci --no-audit --no-fund
fi
exec node --test shop.test.js
