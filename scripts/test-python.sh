#!/bin/sh
# Runs the Python client's tests (clients/python) against real servers with the module loaded:
# a standalone server and a 3-master cluster, sync and asyncio, RESP2 and RESP3, over redis-py
# (and, in the client-parity tests, valkey-py and Valkey GLIDE too); and the example
# service's (examples/python), over HTTP.
#
#   SECKILL_MODULE=target/release/libseckill.so sh scripts/test-python.sh [pytest args]
#
# SECKILL_SERVER picks the server binary (default redis-server; a valkey-server works too).
# The first run creates a virtualenv in target/python-venv and installs the client there with
# its test extra and every client library it runs over (redis-py, valkey-py, Valkey GLIDE asyncio
# and sync: the client-parity tests run each); later runs reuse it (and reinstall only when
# pyproject.toml changed).
set -eu

if [ -z "${SECKILL_MODULE:-}" ]; then
    echo "test-python: set SECKILL_MODULE to the built module, e.g." >&2
    echo "  SECKILL_MODULE=target/release/libseckill.so sh scripts/test-python.sh" >&2
    exit 2
fi
case $SECKILL_MODULE in
    /*) ;;
    *) SECKILL_MODULE=$PWD/$SECKILL_MODULE ;;
esac
if [ ! -f "$SECKILL_MODULE" ]; then
    echo "test-python: SECKILL_MODULE=$SECKILL_MODULE is not a file (build it with: make build)" >&2
    exit 2
fi
export SECKILL_MODULE

cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
venv=target/python-venv

if [ ! -x "$venv/bin/python" ]; then
    if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
        echo "test-python: the Python client needs Python 3.11 or later ($python is older)" >&2
        exit 1
    fi
    mkdir -p target
    if ! "$python" -m venv "$venv"; then
        rm -rf "$venv"
        echo "test-python: '$python -m venv' failed. On Debian or Ubuntu the venv module is a" >&2
        echo "separate package: apt-get install python3-venv (make deps installs it)." >&2
        exit 1
    fi
fi

stamp=$venv/.seckill-client-installed
if [ ! -f "$stamp" ] || [ clients/python/pyproject.toml -nt "$stamp" ]; then
    "$venv/bin/python" -m pip install -q -e 'clients/python[test,examples,redis,valkey,glide,glide-sync]'
    touch "$stamp"
fi

exec "$venv/bin/python" -m pytest -q -p no:cacheprovider clients/python/tests examples/python "$@"
