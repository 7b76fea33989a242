#!/bin/sh
# Builds what `make dist` ships, into target/dist:
#   libseckill.so        the module, linked against glibc 2.17 symbols at most
#                        (cargo-zigbuild with Zig from PyPI's ziglang), so it
#                        loads on RHEL 8, Ubuntu 20.04, Amazon Linux 2 and on;
#   seckill_VERSION_amd64.deb
#                        the same file in /usr/lib/redis/modules/, the path
#                        the README's loadmodule line names.
# The module is executable: Redis 7 refuses to load one that is not.
# Refuses (exit 1) a build that needs a newer glibc symbol than 2.17.
set -eu
cd "$(dirname "$0")/.."
pip_install() {
    python3 -m pip install --quiet "$@" 2>/dev/null \
        || python3 -m pip install --quiet --break-system-packages "$@"
}
if ! command -v objdump >/dev/null 2>&1; then
    echo "dist: installing binutils (objdump)"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends binutils
fi
if ! command -v cargo-zigbuild >/dev/null 2>&1 || ! python3 -c "import ziglang" 2>/dev/null; then
    echo "dist: installing ziglang and cargo-zigbuild (pip)"
    pip_install ziglang cargo-zigbuild
fi
out=target/dist
build=target/dist-build/x86_64-unknown-linux-gnu/release
cargo zigbuild --release -p seckill --target x86_64-unknown-linux-gnu.2.17 --target-dir target/dist-build
rm -rf "$out"
mkdir -p "$out"
cp "$build/libseckill.so" "$out/libseckill.so"

newest=$(objdump -T "$out/libseckill.so" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
if [ "$(printf '%s\n2.17\n' "$newest" | sort -V | tail -1)" != "2.17" ]; then
    echo "dist: libseckill.so needs glibc $newest, more than 2.17" >&2
    exit 1
fi
echo "dist: $out/libseckill.so needs glibc $newest at most"

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
package="$out/deb"
mkdir -p "$package/DEBIAN" "$package/usr/lib/redis/modules"
install -m 0755 "$out/libseckill.so" "$package/usr/lib/redis/modules/libseckill.so"
cat >"$package/DEBIAN/control" <<CONTROL
Package: seckill
Version: $version
Architecture: amd64
Maintainer: seckill developers
Depends: libc6 (>= 2.17)
Recommends: redis-server (>= 5:7.0) | valkey-server
Section: database
Priority: optional
Description: flash-sale inventory as native Redis and Valkey commands
 A Redis module (SECKILL.* commands): stock, per-user limits, idempotent
 request ids, holds that lapse, refunds and an order stream in one atomic
 step. Load it with: loadmodule /usr/lib/redis/modules/libseckill.so
CONTROL
dpkg-deb --root-owner-group --build "$package" "$out/seckill_${version}_amd64.deb" >/dev/null
rm -rf "$package"
echo "dist: $out/seckill_${version}_amd64.deb"
