#!/bin/sh
# Starts redis-server with the module in the foreground, as `make run` does:
#   scripts/run.sh [PORT] [DIR]
# PORT defaults to 6379. DIR is where the server keeps its AOF and RDB; by
# default a new, empty one each run (so that the README's first transcript
# answers as shown every time), printed at start. The configuration is
# redis.conf.example with the module's absolute path, written into DIR.
# SECKILL_SERVER and SECKILL_MODULE name another server binary or module.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
port="${1:-6379}"
dir="${2:-}"
if [ -z "$dir" ]; then
    dir=$(mktemp -d "${TMPDIR:-/tmp}/seckill-run.XXXXXX")
fi
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
module="${SECKILL_MODULE:-$root/target/release/libseckill.so}"
if [ ! -f "$module" ]; then
    echo "run: no module at $module: build it with make build" >&2
    exit 1
fi
sed -e "s|^loadmodule .*|loadmodule $module|" -e "s|^port .*|port $port|" \
    "$root/redis.conf.example" >"$dir/redis.conf"
echo "run: redis-server on 127.0.0.1:$port, data in $dir"
exec "${SECKILL_SERVER:-redis-server}" "$dir/redis.conf" --dir "$dir"
