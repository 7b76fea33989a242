#!/bin/sh
# Builds the module as it was at another commit (the previous one unless
# told), for the bench's rows against it, and prints the path of its .so.
# Prints nothing, and leaves the bench to skip those rows, when the commit
# cannot be found (a shallow clone) or does not build.
set -eu
rev="${1:-HEAD~1}"
root=$(pwd)
commit=$(git rev-parse --verify -q "$rev^{commit}" 2>/dev/null) || {
    echo "baseline: no commit $rev here: the bench's rows against it are skipped" >&2
    exit 0
}
out="$root/target/baseline/$commit"
if [ ! -f "$out/libseckill.so" ]; then
    src="$root/target/baseline/src"
    rm -rf "$src"
    mkdir -p "$src" "$out"
    git archive "$commit" | tar -x -C "$src"
    echo "baseline: building the module of $rev ($commit)" >&2
    # A target directory of its own: the same crate from another path would
    # overwrite target/release/libseckill.so.
    if ! (cd "$src" && cargo build --release -p seckill --target-dir "$root/target/baseline/build") >&2; then
        echo "baseline: $rev does not build: the bench's rows against it are skipped" >&2
        exit 0
    fi
    cp "$root/target/baseline/build/release/libseckill.so" "$out/libseckill.so"
fi
echo "$out/libseckill.so"
