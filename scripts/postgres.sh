#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests and the bench: `scripts/postgres.sh start DIR`
# installs the server if it is missing (Debian's package), makes a cluster in DIR, starts it on
# 127.0.0.1 and prints the URL of its `tract` database; `stop DIR` stops it; `crash DIR` stops it
# at once as a crash would (`-m immediate`) and `restart DIR` starts it again (for the tests of a
# server that goes away).
# PostgreSQL refuses to run as root, so under root the cluster belongs to the user `tractpg`.
set -euo pipefail

cmd=${1:?usage: postgres.sh start|stop|crash|restart DIR}
dir=${2:?usage: postgres.sh start|stop|crash|restart DIR}
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

# The server's settings, given again on every start (the port chosen at `start` is kept in DIR).
server_options() {
    echo "-c listen_addresses=127.0.0.1 -p $(cat "$1/port") -k $1 -c max_connections=300 -c fsync=on -c synchronous_commit=on"
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
    if [ -f "$dir/data/postmaster.pid" ]; then
        as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >&2 || true
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    # A free port on 127.0.0.1 (TRACT_PG_PORT to choose it).
    port=${TRACT_PG_PORT:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
    echo "$port" >"$dir/port"
    printf '%s\n' "$password" >"$dir/pwfile"
    if [ "$(id -u)" = 0 ]; then
        chown -R tractpg "$dir"
    fi
    as_owner "$bin/initdb" -D "$dir/data" -U tract --pwfile="$dir/pwfile" \
        --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
        { cat "$dir/initdb.log" >&2; exit 1; }
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "$(server_options "$dir")" \
        start >&2 || { cat "$dir/server.log" >&2; exit 1; }
    as_owner "$bin/createdb" -h "$dir" -p "$port" -U tract tract >&2
    echo "postgresql://tract:$password@127.0.0.1:$port/tract"
    ;;
crash)
    as_owner "$(find_bin)/pg_ctl" -D "$dir/data" -m immediate -w stop >&2
    ;;
restart)
    dir=$(cd "$dir" && pwd)
    as_owner "$(find_bin)/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
        -o "$(server_options "$dir")" start >&2
    ;;
stop)
    bin=$(find_bin)
    if [ -n "$bin" ] && [ -d "$dir/data" ]; then
        as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || true
    fi
    ;;
*)
    echo "usage: postgres.sh start|stop|crash|restart DIR" >&2
    exit 2
    ;;
esac
