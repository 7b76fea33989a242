#!/bin/sh
# Builds a workspace crate as it was at another commit and prints the path
# of what it made:
#   scripts/build-at-commit.sh REV PACKAGE FILE
# FILE is the build's output under target/release (libseckill.so, or a
# binary). Each commit is built once, from `git archive`, in a target
# directory of its own: the same crate from another path would overwrite
# target/release. Prints nothing, and leaves what wanted it to skip, when
# the commit is not in this clone (a shallow one) or does not build.
# Used for the bench's rows against an earlier module (BASELINE) and for
# the previous consumer in the schema upgrade tests.
set -eu
rev="$1" package="$2" file="$3"
root=$(pwd)
commit=$(git rev-parse --verify -q "$rev^{commit}" 2>/dev/null) || {
    echo "build-at-commit: no commit $rev here: what needs its $package is skipped" >&2
    exit 0
}
out="$root/target/at-commit/$commit"
if [ ! -f "$out/$file" ]; then
    src="$root/target/at-commit/src"
    rm -rf "$src"
    mkdir -p "$src" "$out"
    git archive "$commit" | tar -x -C "$src"
    echo "build-at-commit: building $package of $rev ($commit)" >&2
    if ! (cd "$src" && cargo build --release -p "$package" --target-dir "$root/target/at-commit/build") >&2; then
        echo "build-at-commit: $package of $rev does not build: what needs it is skipped" >&2
        exit 0
    fi
    cp "$root/target/at-commit/build/release/$file" "$out/$file"
fi
echo "$out/$file"
