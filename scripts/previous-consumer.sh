#!/bin/sh
# Builds seckill-orders as it was before the table's version-2 migration
# (the consumer a rolling upgrade runs beside the new one), for the
# schema-upgrade tests, and prints the binary's path. Prints nothing, and
# the tests that need it skip, when that commit is not in this clone.
set -eu
# The last commit whose consumer wrote version 1 of the table.
rev="5d57ac2~1"
root=$(pwd)
commit=$(git rev-parse --verify -q "$rev^{commit}" 2>/dev/null) || {
    echo "previous consumer: commit $rev not in this clone: its tests are skipped" >&2
    exit 0
}
out="$root/target/previous-consumer/$commit"
if [ ! -x "$out/seckill-orders" ]; then
    src="$root/target/previous-consumer/src"
    rm -rf "$src"
    mkdir -p "$src" "$out"
    git archive "$commit" | tar -x -C "$src"
    echo "previous consumer: building seckill-orders of $commit" >&2
    (cd "$src" && cargo build --release -p seckill-orders --target-dir "$root/target/previous-consumer/build") >&2
    cp "$root/target/previous-consumer/build/release/seckill-orders" "$out/seckill-orders"
fi
echo "$out/seckill-orders"
