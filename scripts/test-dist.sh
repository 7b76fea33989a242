#!/bin/sh
# Checks what `make dist` built (target/dist): the portable module passes
# integration tests on Redis 7.0 (Debian 12's) and Valkey 9.1, and the
# Debian package installs with dpkg -i and loads from the path the README
# names. The package is removed again at the end.
set -eu
cd "$(dirname "$0")/.."
module="$(pwd)/target/dist/libseckill.so"
deb=$(ls target/dist/seckill_*_amd64.deb)
tests="--test readme --test holds --test persistence --test replication --test order_stream --test scan --test contract"
for server in redis-server "$(./scripts/servers.sh valkey9)"; do
    echo "test-dist: $module on $server"
    # shellcheck disable=SC2086
    SECKILL_SERVER="$server" SECKILL_MODULE="$module" cargo test -p seckill $tests
done

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "test-dist: dpkg -i $deb"
$sudo dpkg -i "$deb" >/dev/null
dir=$(mktemp -d)
port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
    --loadmodule /usr/lib/redis/modules/libseckill.so --daemonize yes --logfile "$dir/log"
for _ in 1 2 3 4 5 6 7 8 9 10; do
    redis-cli -p "$port" PING >/dev/null 2>&1 && break
    sleep 0.5
done
loaded=$(redis-cli -p "$port" SECKILL.INIT sku:deb 1 || true)
redis-cli -p "$port" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
$sudo dpkg -r seckill >/dev/null
if [ "$loaded" != "1" ]; then
    echo "test-dist: the packaged module did not answer SECKILL.INIT ($loaded):" >&2
    cat "$dir/log" >&2
    exit 1
fi
rm -rf "$dir"
echo "test-dist: the .deb installs, and redis-server loads /usr/lib/redis/modules/libseckill.so"
