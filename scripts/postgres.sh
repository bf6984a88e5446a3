#!/usr/bin/env bash
# A throwaway PostgreSQL server, with a PgBouncer in front of it, for the tests and the bench:
#   `scripts/postgres.sh start DIR`    installs what is missing (Debian's postgresql and pgbouncer
#                                      packages), makes the certificates and a cluster, starts the
#                                      server (TLS on) and PgBouncer on 127.0.0.1, writes DIR/env
#                                      (the URLs, certificates and DIR, as `export` lines for bash)
#                                      and prints the server's URL of its `tract` database;
#   `scripts/postgres.sh stop DIR`     stops both and removes everything start made;
#   `scripts/postgres.sh crash DIR`    stops PostgreSQL at once as a crash would (`-m immediate`);
#   `scripts/postgres.sh restart DIR`  starts it again (PgBouncer stays up through both).
# PostgreSQL and PgBouncer refuse to run as root, so under root they run as the user `tractpg`.
# That user may not reach DIR (a clone under /root is 0700), so the server's files live in a
# directory of their own, /tmp/tract-pg.XXXXXX, that DIR/run points to.
set -euo pipefail

usage="usage: postgres.sh start|stop|crash|restart DIR"
cmd=${1:?$usage}
dir=${2:?$usage}
password=tract-test-password

find_bin() {
    local b
    for b in /usr/lib/postgresql/*/bin; do
        if [ -x "$b/initdb" ]; then
            echo "$b"
            return 0
        fi
    done
}

find_pgbouncer() {
    # /usr/sbin is not on every user's PATH.
    command -v pgbouncer || { [ -x /usr/sbin/pgbouncer ] && echo /usr/sbin/pgbouncer; } || true
}

# Runs a command as the servers' owner, from / (the caller's directory may be out of its reach).
as_owner() {
    if [ "$(id -u)" = 0 ]; then
        (cd / && runuser -u tractpg -- "$@")
    else
        "$@"
    fi
}

# The server's directory DIR points to, if it is still there.
run_dir() {
    local r
    r=$(readlink "$1/run" 2>/dev/null) || return 1
    # Only ever a directory start made: stop removes it with rm -rf.
    case "$r" in /tmp/tract-pg.*) ;; *) return 1 ;; esac
    [ -d "$r" ] || return 1
    echo "$r"
}

need_run_dir() {
    run_dir "$1" || { echo "postgres.sh: no server started in $1" >&2; exit 1; }
}

start_postgres() {
    as_owner "$(find_bin)/pg_ctl" -D "$1/data" -l "$1/server.log" -w -t 60 start >&2 ||
        { cat "$1/server.log" >&2; return 1; }
}

# Stops PgBouncer and PostgreSQL (PostgreSQL with the given pg_ctl mode) and removes the server's
# directory and what DIR held of it.
stop_all() {
    local d=$1 mode=$2 r pid="" bin i
    if r=$(run_dir "$d"); then
        # The pid only if it is still PgBouncer's. SIGTERM: shut down at once (it takes about a
        # second, spent while PostgreSQL stops).
        if [ -f "$r/pgbouncer.pid" ]; then
            pid=$(cat "$r/pgbouncer.pid")
            if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = pgbouncer ]; then
                kill -TERM "$pid" 2>/dev/null || true
            else
                pid=""
            fi
        fi
        bin=$(find_bin)
        if [ -n "$bin" ] && [ -f "$r/data/postmaster.pid" ]; then
            as_owner "$bin/pg_ctl" -D "$r/data" -m "$mode" -w stop >&2 || true
        fi
        if [ -n "$pid" ]; then
            for i in $(seq 100); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
            kill -KILL "$pid" 2>/dev/null || true
        fi
        rm -rf "$r"
    fi
    rm -f "$d/run" "$d/env"
}

# Two different free ports on 127.0.0.1 (TRACT_PG_PORT and TRACT_PGBOUNCER_PORT to choose them).
free_ports() {
    python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s:
    x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))'
}

# The certificates, made in the server's directory $1 with the openssl CLI: a CA, a server
# certificate for localhost and 127.0.0.1, a client certificate for the role tract_cert, an
# expired server certificate (for the tests' fake TLS server) and an unrelated CA. EC P-256 keys:
# quick to make, and rustls takes them.
make_certificates() {
    local r=$1
    mkdir "$r/ca"
    echo 01 >"$r/ca/serial"
    : >"$r/ca/index.txt"
    cat >"$r/openssl.cnf" <<EOF
[ca]
default_ca = tract_ca
[tract_ca]
database = $r/ca/index.txt
new_certs_dir = $r/ca
serial = $r/ca/serial
default_md = sha256
policy = any_name
unique_subject = no
email_in_dn = no
[any_name]
commonName = supplied
[req]
distinguished_name = dn
[dn]
[ext_ca]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
[ext_server]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, IP:127.0.0.1
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
[ext_client]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF
    ossl() { openssl "$@" 2>>"$r/openssl.log" || { cat "$r/openssl.log" >&2; return 1; }; }
    # cert NAME CN EXTENSIONS SIGNER-ARGS...: a key, and a certificate `openssl ca` signs.
    cert() {
        local name=$1 cn=$2 ext=$3
        shift 3
        (umask 077 && ossl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$r/$name.key")
        ossl req -new -config "$r/openssl.cnf" -key "$r/$name.key" -subj "/CN=$cn" -out "$r/$name.csr"
        ossl ca -batch -notext -config "$r/openssl.cnf" -extensions "$ext" -in "$r/$name.csr" \
            -out "$r/$name.crt" "$@"
    }
    # The CAs start before the expired certificate, so that expiry is its only fault.
    cert ca "tract test CA" ext_ca -selfsign -keyfile "$r/ca.key" -startdate 20190101000000Z -days 3650
    cert other-ca "tract other test CA" ext_ca -selfsign -keyfile "$r/other-ca.key" \
        -startdate 20190101000000Z -days 3650
    local signer=(-cert "$r/ca.crt" -keyfile "$r/ca.key")
    cert server localhost ext_server "${signer[@]}" -days 3650
    cert client tract_cert ext_client "${signer[@]}" -days 3650
    cert expired localhost ext_server "${signer[@]}" -startdate 20200101000000Z -enddate 20210101000000Z
    rm -f "$r"/*.csr
}

case "$cmd" in
start)
    bin=$(find_bin)
    pgbouncer=$(find_pgbouncer)
    missing=()
    [ -n "$bin" ] || missing+=(postgresql)
    [ -n "$pgbouncer" ] || missing+=(pgbouncer)
    command -v openssl >/dev/null || missing+=(openssl)
    if [ ${#missing[@]} -gt 0 ]; then
        echo "postgres.sh: installing Debian's ${missing[*]}" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >&2
        apt-get install -y -qq "${missing[@]}" >&2
        bin=$(find_bin)
        pgbouncer=$(find_pgbouncer)
    fi
    if [ "$(id -u)" = 0 ] && ! id tractpg >/dev/null 2>&1; then
        useradd --system --no-create-home --shell /usr/sbin/nologin tractpg
    fi
    # A server a previous start left running (also one of the layout with the cluster in DIR/data).
    if [ -d "$dir" ]; then
        stop_all "$dir" immediate
        if [ -f "$dir/data/postmaster.pid" ]; then
            as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >&2 || true
        fi
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    run=$(mktemp -d /tmp/tract-pg.XXXXXX)
    ln -s "$run" "$dir/run"
    # A start that fails half way leaves nothing running.
    undo_failed_start() {
        local rc=$?
        [ "$rc" = 0 ] || stop_all "$dir" immediate
        exit "$rc"
    }
    trap undo_failed_start EXIT

    read -r port bport <<<"$(free_ports)"
    port=${TRACT_PG_PORT:-$port}
    bport=${TRACT_PGBOUNCER_PORT:-$bport}
    make_certificates "$run"
    printf '%s\n' "$password" >"$run/pwfile"
    (umask 077 && printf '"tract" "%s"\n' "$password" >"$run/userlist.txt")
    cat >"$run/pgbouncer.ini" <<EOF
[databases]
tract = host=127.0.0.1 port=$port dbname=tract
tract_statement = host=127.0.0.1 port=$port dbname=tract pool_mode=statement

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $bport
unix_socket_dir = $run
pidfile = $run/pgbouncer.pid
logfile = $run/pgbouncer.log
auth_type = scram-sha-256
auth_file = $run/userlist.txt
admin_users = tract
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 40
; Sent by some clients (JDBC, sqlx); PgBouncer refuses parameters it does not know otherwise.
ignore_startup_parameters = extra_float_digits
; Back soon after the server's crash-and-restart tests (the default waits 15 s after a failure),
; and a client left waiting for a server that is down fails in 15 s, not the default 120.
server_login_retry = 1
query_wait_timeout = 15
client_tls_sslmode = allow
client_tls_cert_file = $run/server.crt
client_tls_key_file = $run/server.key
client_tls_ca_file = $run/ca.crt
server_tls_sslmode = prefer
EOF
    if [ "$(id -u)" = 0 ]; then
        # What the servers read or write is tractpg's (PostgreSQL wants its key to be its own,
        # 0600); the client's key stays the caller's, as libpq-like clients want.
        chown tractpg "$run" "$run/pwfile" "$run/userlist.txt" "$run/pgbouncer.ini" \
            "$run/ca.crt" "$run/server.crt" "$run/server.key"
    fi
    # Others may read the certificates (every key is 0600).
    chmod 755 "$run"

    as_owner "$bin/initdb" -D "$run/data" -U tract --pwfile="$run/pwfile" \
        --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$run/initdb.log" 2>&1 ||
        { cat "$run/initdb.log" >&2; exit 1; }
    # The settings live in the cluster, so that restart needs none (later lines win).
    as_owner tee -a "$run/data/postgresql.conf" >/dev/null <<EOF

# scripts/postgres.sh
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$run'
max_connections = 300
fsync = on
synchronous_commit = on
ssl = on
ssl_cert_file = '$run/server.crt'
ssl_key_file = '$run/server.key'
ssl_ca_file = '$run/ca.crt'
EOF
    # First match wins: tract_tls only over TLS, tract_cert only by its client certificate.
    as_owner tee "$run/data/pg_hba.conf" >/dev/null <<EOF
local     all  all                     trust
hostnossl all  tract_tls   127.0.0.1/32  reject
hostssl   all  tract_cert  127.0.0.1/32  cert
host      all  all         127.0.0.1/32  scram-sha-256
host      all  all         ::1/128       scram-sha-256
EOF
    start_postgres "$run"
    as_owner "$bin/createdb" -h "$run" -p "$port" -U tract tract >&2
    # The roles of the TLS and rights tests: tract_cert has no password (its certificate is its
    # login), tract_nocreate may not create the schema of a store.
    as_owner "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$run" -p "$port" -U tract -d tract >&2 <<EOF
CREATE ROLE tract_tls LOGIN PASSWORD '$password';
CREATE ROLE tract_cert LOGIN;
CREATE ROLE tract_nocreate LOGIN PASSWORD '$password';
GRANT CREATE ON DATABASE tract TO tract_tls, tract_cert;
EOF
    as_owner "$pgbouncer" -d -q "$run/pgbouncer.ini" >&2 ||
        { cat "$run/pgbouncer.log" >&2 2>/dev/null; exit 1; }
    for i in $(seq 100); do
        "$bin/pg_isready" -q -h 127.0.0.1 -p "$bport" -U tract -d tract && break
        [ "$i" -lt 100 ] || { echo "postgres.sh: PgBouncer did not start" >&2; cat "$run/pgbouncer.log" >&2; exit 1; }
        sleep 0.1
    done

    # What callers need: `source DIR/env`.
    {
        printf 'export %s=%q\n' \
            TRACT_TEST_POSTGRES "postgresql://tract:$password@127.0.0.1:$port/tract" \
            TRACT_TEST_PGBOUNCER "postgresql://tract:$password@127.0.0.1:$bport/tract" \
            TRACT_TEST_PGBOUNCER_STATEMENT "postgresql://tract:$password@127.0.0.1:$bport/tract_statement" \
            TRACT_TEST_PG_CA "$run/ca.crt" \
            TRACT_TEST_PG_OTHER_CA "$run/other-ca.crt" \
            TRACT_TEST_PG_CLIENT_CERT "$run/client.crt" \
            TRACT_TEST_PG_CLIENT_KEY "$run/client.key" \
            TRACT_TEST_PG_EXPIRED_CERT "$run/expired.crt" \
            TRACT_TEST_PG_EXPIRED_KEY "$run/expired.key" \
            TRACT_TEST_POSTGRES_DIR "$dir"
    } >"$dir/env"
    echo "postgresql://tract:$password@127.0.0.1:$port/tract"
    ;;
crash)
    run=$(need_run_dir "$dir")
    as_owner "$(find_bin)/pg_ctl" -D "$run/data" -m immediate -w stop >&2
    ;;
restart)
    run=$(need_run_dir "$dir")
    start_postgres "$run"
    # Returns once PgBouncer serves again: after logins failed while the server was down it
    # refuses the first client (server_login_retry) before it connects anew.
    # shellcheck source=/dev/null
    bouncer=$(source "$dir/env" && echo "$TRACT_TEST_PGBOUNCER")
    for i in $(seq 50); do
        PGCONNECT_TIMEOUT=5 "$(find_bin)/psql" -X -Atq -c 'select 1' "$bouncer" >/dev/null 2>&1 && break
        [ "$i" -lt 50 ] || { echo "postgres.sh: PgBouncer does not reach the restarted server" >&2; exit 1; }
        sleep 0.2
    done
    ;;
stop)
    stop_all "$dir" fast
    ;;
*)
    echo "$usage" >&2
    exit 2
    ;;
esac
