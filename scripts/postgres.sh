#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests and the bench: `scripts/postgres.sh start DIR`
# installs the server if it is missing (Debian's package), makes a cluster in DIR, starts it on
# 127.0.0.1 and prints the URL of its `tract` database; `scripts/postgres.sh stop DIR` stops it.
# PostgreSQL refuses to run as root, so under root the cluster belongs to the user `tractpg`.
set -euo pipefail

cmd=${1:?usage: postgres.sh start|stop DIR}
dir=${2:?usage: postgres.sh start|stop DIR}
port=${TRACT_PG_PORT:-54329}
password=tract-test-password

find_bin() {
    local b
    for b in /usr/lib/postgresql/*/bin; do
        if [ -x "$b/initdb" ]; then
            echo "$b"
            return
        fi
    done
}

# Runs a command as the cluster's owner.
as_owner() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u tractpg -- "$@"
    else
        "$@"
    fi
}

case "$cmd" in
start)
    bin=$(find_bin)
    if [ -z "$bin" ]; then
        echo "postgres.sh: installing PostgreSQL (Debian's postgresql package)" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >&2
        apt-get install -y -qq postgresql >&2
        bin=$(find_bin)
    fi
    if [ "$(id -u)" = 0 ] && ! id tractpg >/dev/null 2>&1; then
        useradd --system --no-create-home --shell /usr/sbin/nologin tractpg
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    printf '%s\n' "$password" >"$dir/pwfile"
    if [ "$(id -u)" = 0 ]; then
        chown -R tractpg "$dir"
    fi
    as_owner "$bin/initdb" -D "$dir/data" -U tract --pwfile="$dir/pwfile" \
        --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
        { cat "$dir/initdb.log" >&2; exit 1; }
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=300 -c fsync=on -c synchronous_commit=on" \
        start >&2 || { cat "$dir/server.log" >&2; exit 1; }
    as_owner "$bin/createdb" -h "$dir" -p "$port" -U tract tract >&2
    echo "postgresql://tract:$password@127.0.0.1:$port/tract"
    ;;
stop)
    bin=$(find_bin)
    if [ -n "$bin" ] && [ -d "$dir/data" ]; then
        as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || true
    fi
    ;;
*)
    echo "usage: postgres.sh start|stop DIR" >&2
    exit 2
    ;;
esac
