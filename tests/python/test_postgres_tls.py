"""A PostgreSQL store reached the way libpq reaches a server: every `sslmode` against the test
server's TLS, certificate problems named, client certificates, libpq's environment and password
file, the same TLS URL on every surface (CLI, Python, sync, `tract serve`, `tract mcp`), and bad
input that is refused before anything is made.

Needs the servers `scripts/postgres.sh start` runs (`scripts/test.sh` starts them and exports
their URLs and certificates); each test is skipped when what it needs is not set."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import socket
import ssl
import subprocess
import sys
import textwrap
import threading
import urllib.parse
import urllib.request
import uuid

import pytest

import tract

PASSWORD = "tract-test-password"
DIRECT = os.environ.get("TRACT_TEST_POSTGRES") or None
PGBOUNCER = os.environ.get("TRACT_TEST_PGBOUNCER") or None
PGBOUNCER_STATEMENT = os.environ.get("TRACT_TEST_PGBOUNCER_STATEMENT") or None
CA = os.environ.get("TRACT_TEST_PG_CA") or None
OTHER_CA = os.environ.get("TRACT_TEST_PG_OTHER_CA") or None
CLIENT_CERT = os.environ.get("TRACT_TEST_PG_CLIENT_CERT") or None
CLIENT_KEY = os.environ.get("TRACT_TEST_PG_CLIENT_KEY") or None
EXPIRED_CERT = os.environ.get("TRACT_TEST_PG_EXPIRED_CERT") or None
EXPIRED_KEY = os.environ.get("TRACT_TEST_PG_EXPIRED_KEY") or None

pytestmark = pytest.mark.skipif(
    not (DIRECT and CA and OTHER_CA and CLIENT_CERT and CLIENT_KEY),
    reason="no TLS test server: TRACT_TEST_POSTGRES and TRACT_TEST_PG_* are not set "
    "(scripts/postgres.sh start DIR, then source DIR/env; scripts/test.sh does both)",
)
needs_psql = pytest.mark.skipif(shutil.which("psql") is None, reason="psql is not installed")


def new_schema() -> str:
    return f"tls_{uuid.uuid4().hex[:16]}"


def pg_url(
    base: str | None = None,
    *,
    user: str = "tract",
    password: str | None = PASSWORD,
    host: str | None = None,
    port: int | None = None,
    schema: str | None = None,
    **params: str,
) -> str:
    """A URL to the server of `base` (the direct one by default): its database, with the given
    user, password (None: none), host, port and parameters, and a fresh schema unless named."""
    parts = urllib.parse.urlsplit(base or DIRECT)
    auth = user if password is None else f"{user}:{password}"
    query = {**params, "schema": schema or new_schema()}
    encoded = "&".join(f"{k}={urllib.parse.quote(str(v), safe='/')}" for k, v in query.items())
    return f"postgresql://{auth}@{host or parts.hostname}:{port or parts.port}{parts.path}?{encoded}"


def psql(sql: str) -> str:
    """Runs `sql` on the server as `tract`, directly (libpq's psql, not tract)."""
    out = subprocess.run(
        ["psql", DIRECT, "-XAtq", "-v", "ON_ERROR_STOP=1", "-c", sql],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def encrypted(app: str) -> set[str]:
    """Whether each server session named `app` is over TLS (`t`/`f`), as the server sees it."""
    rows = psql(
        "select s.ssl from pg_stat_ssl s join pg_stat_activity a using (pid) "
        f"where a.application_name = '{app}'"
    )
    return set(rows.split())


def schemas_absent(names: list[str]) -> None:
    listed = ",".join(f"'{n}'" for n in names)
    assert psql(f"select nspname from pg_namespace where nspname in ({listed})") == "", names


def schema_of(url: str) -> str:
    return urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)["schema"][0]


# ---------------------------------------------------------------------------------------------
# Every sslmode, and the certificates


# (id, user, password, host, parameters, whether the session is encrypted)
CONNECTS = [
    ("require", "tract", PASSWORD, None, {"sslmode": "require"}, "t"),
    ("prefer-by-default", "tract", PASSWORD, None, {}, "t"),
    ("prefer", "tract", PASSWORD, None, {"sslmode": "prefer"}, "t"),
    ("disable", "tract", PASSWORD, None, {"sslmode": "disable"}, "f"),
    # libpq's allow: without TLS first, and the server takes `tract` so.
    ("allow", "tract", PASSWORD, None, {"sslmode": "allow"}, "f"),
    # ... and with TLS when the server refuses the role without it.
    ("allow-tls-only-role", "tract_tls", PASSWORD, None, {"sslmode": "allow"}, "t"),
    ("require-tls-only-role", "tract_tls", PASSWORD, None, {"sslmode": "require"}, "t"),
    ("verify-ca", "tract", PASSWORD, None, {"sslmode": "verify-ca", "sslrootcert": "CA"}, "t"),
    ("verify-full-ip", "tract", PASSWORD, "127.0.0.1", {"sslmode": "verify-full", "sslrootcert": "CA"}, "t"),
    ("verify-full-localhost", "tract", PASSWORD, "localhost",
     {"sslmode": "verify-full", "sslrootcert": "CA"}, "t"),
    # verify-ca checks the chain, not the name.
    ("verify-ca-other-name", "tract", PASSWORD, "wrong.example",
     {"hostaddr": "127.0.0.1", "sslmode": "verify-ca", "sslrootcert": "CA"}, "t"),
    ("client-certificate", "tract_cert", None, "localhost",
     {"sslmode": "verify-full", "sslrootcert": "CA", "sslcert": "CERT", "sslkey": "KEY"}, "t"),
]


def files(params: dict) -> dict:
    """`params` with the placeholders CA, OTHER_CA, CERT and KEY replaced by the files."""
    named = {"CA": CA, "OTHER_CA": OTHER_CA, "CERT": CLIENT_CERT, "KEY": CLIENT_KEY}
    return {k: named.get(v, v) for k, v in params.items()}


@needs_psql
@pytest.mark.parametrize(
    "user,password,host,params,ssl_on", [c[1:] for c in CONNECTS], ids=[c[0] for c in CONNECTS]
)
def test_every_sslmode_connects_as_libpq_does(user, password, host, params, ssl_on) -> None:
    """Each sslmode connects, and the server sees TLS exactly when libpq would have used it."""
    app = f"tls{uuid.uuid4().hex[:12]}"
    url = pg_url(user=user, password=password, host=host, application_name=app, **files(params))
    with tract.Tract.open(url) as t:
        t.user("over the wire")
        assert [m["content"] for m in t.compile().messages] == ["over the wire"]
        # The pool keeps its connections open: the server lists them under the URL's name.
        assert encrypted(app) == {ssl_on}


UNTRUSTED = "TLS: the server's certificate is not signed by a trusted CA"

# (id, user, password, host, parameters, what the reason says). hostaddr with localhost: where
# localhost has two addresses, the client reports the error of the last one it tried.
REFUSED = [
    ("verify-full-other-ca", "tract", PASSWORD, "localhost",
     {"hostaddr": "127.0.0.1", "sslmode": "verify-full", "sslrootcert": "OTHER_CA"}, [UNTRUSTED]),
    ("verify-ca-other-ca", "tract", PASSWORD, None, {"sslmode": "verify-ca", "sslrootcert": "OTHER_CA"}, [UNTRUSTED]),
    # libpq: a root certificate given is checked under require too.
    ("require-other-ca", "tract", PASSWORD, None, {"sslmode": "require", "sslrootcert": "OTHER_CA"}, [UNTRUSTED]),
    ("verify-full-wrong-name", "tract", PASSWORD, "wrong.example",
     {"hostaddr": "127.0.0.1", "sslmode": "verify-full", "sslrootcert": "CA"},
     ["does not name the host connected to"]),
    ("disable-tls-only-role", "tract_tls", PASSWORD, None, {"sslmode": "disable"},
     ["no encryption", "sslmode=require"]),
    ("no-client-certificate", "tract_cert", None, "localhost",
     {"hostaddr": "127.0.0.1", "sslmode": "verify-full", "sslrootcert": "CA"},
     ["requires a valid client certificate"]),
]


@needs_psql
@pytest.mark.parametrize(
    "user,password,host,params,says", [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED]
)
def test_a_refused_connection_names_the_problem_and_makes_nothing(user, password, host, params, says) -> None:
    """A certificate, host name, TLS or client-certificate refusal is a DatabaseError naming it
    (without the password), and the store's schema was not made."""
    url = pg_url(user=user, password=password, host=host, **files(params))
    with pytest.raises(tract.DatabaseError) as e:
        tract.Tract.open(url)
    for part in says:
        assert part in e.value.reason, e.value.reason
    assert PASSWORD not in str(e.value) and PASSWORD not in e.value.store
    assert e.value.store.startswith(f"postgresql://{user}")
    schemas_absent([schema_of(url)])


def test_an_expired_server_certificate_is_named(tmp_path) -> None:
    """A server (a fake on 127.0.0.1 that speaks only the TLS start) whose certificate, signed by
    the trusted CA, has expired: the reason says so."""
    if not (EXPIRED_CERT and EXPIRED_KEY):
        pytest.skip("TRACT_TEST_PG_EXPIRED_CERT/KEY are not set")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(EXPIRED_CERT, EXPIRED_KEY)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    handshakes = []

    def serve() -> None:
        try:
            conn, _ = listener.accept()
        except OSError:
            return  # closed by the test: the client never came
        with conn:
            conn.settimeout(10)
            request = conn.recv(8)  # the SSLRequest: length 8, code 80877103
            handshakes.append(request)
            conn.sendall(b"S")
            try:
                context.wrap_socket(conn, server_side=True).close()
            except (ssl.SSLError, OSError):
                pass  # the client aborts the handshake

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        url = pg_url(host="localhost", port=port, hostaddr="127.0.0.1", sslmode="verify-full", sslrootcert=CA)
        with pytest.raises(tract.DatabaseError) as e:
            tract.Tract.open(url)
        assert "TLS: the server's certificate has expired" in e.value.reason, e.value.reason
        server.join(timeout=10)
        assert handshakes == [b"\x00\x00\x00\x08\x04\xd2\x16\x2f"], "the client asked for TLS first"
    finally:
        listener.close()


def test_a_client_key_others_may_read_is_refused(tmp_path) -> None:
    """libpq's rule for the client key: 0600 (0640 for root's) or less; 0644 is refused, naming
    the key and the mode wanted, before any connection is made."""
    key = tmp_path / "client.key"
    shutil.copyfile(CLIENT_KEY, key)
    key.chmod(0o600)
    params = {"sslmode": "verify-full", "sslrootcert": CA, "sslcert": CLIENT_CERT}
    with tract.Tract.open(pg_url(user="tract_cert", password=None, host="localhost", sslkey=str(key), **params)) as t:
        t.user("with my own key")
    key.chmod(0o644)
    with pytest.raises(tract.InvalidInputError) as e:
        tract.Tract.open(pg_url(user="tract_cert", password=None, host="localhost", sslkey=str(key), **params))
    assert str(key) in str(e.value) and "0600" in str(e.value), str(e.value)


def test_sslmode_does_not_apply_to_a_unix_socket() -> None:
    """A URL naming the server's Unix socket directory connects whatever its sslmode, as libpq
    does (the server offers no TLS on a socket; `PGSSLMODE=require` set for a whole environment
    must not stop local connections)."""
    home = os.environ.get("TRACT_TEST_POSTGRES_DIR")
    if not home or not os.path.isdir(os.path.join(home, "run")):
        pytest.skip("the server's directory is not known (TRACT_TEST_POSTGRES_DIR)")
    socket_dir = os.path.realpath(os.path.join(home, "run"))
    port = urllib.parse.urlsplit(DIRECT).port
    for mode in ({"sslmode": "require"}, {"sslmode": "verify-full", "sslrootcert": CA}):
        # The socket's login is `trust` (scripts/postgres.sh): no password.
        query = urllib.parse.urlencode({"host": socket_dir, "port": port, **mode, "schema": new_schema()})
        with tract.Tract.open(f"postgresql://tract@/tract?{query}") as t:
            t.user("over the socket")


# ---------------------------------------------------------------------------------------------
# libpq's environment and password file, in processes with an environment of the test's own

CHILD = textwrap.dedent(
    """
    import json, sys, tract
    try:
        with tract.Tract.open(sys.argv[1]) as t:
            t.user("from the environment")
            print(json.dumps({"ok": True, "store": t.path}))
    except tract.TractError as e:
        print(json.dumps({"ok": False, "type": type(e).__name__, "message": str(e),
                          "reason": getattr(e, "reason", "")}))
    """
)


def open_in_child(url: str, home: pathlib.Path, **env: str) -> dict:
    """Opens `url` and appends in a new process whose environment is only PATH, HOME and `env`
    (no PG* variable of the caller's, HOME an empty directory unless the test filled it)."""
    home.mkdir(exist_ok=True)
    child_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), **env}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, url], env=child_env, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def port_of(base: str) -> str:
    return str(urllib.parse.urlsplit(base).port)


def pgpass(path: pathlib.Path, mode: int) -> pathlib.Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# host:port:db:user:password\n127.0.0.1:{port_of(DIRECT)}:tract:tract:{PASSWORD}\n")
    path.chmod(mode)
    return path


def test_a_password_from_pgpassword_or_a_password_file(tmp_path) -> None:
    """No password in the URL: PGPASSWORD gives it, then a PGPASSFILE (0600), then ~/.pgpass;
    a password file group or others may read is passed over (the login fails)."""
    home = tmp_path / "home"
    assert open_in_child(pg_url(password=None), home, PGPASSWORD=PASSWORD)["ok"]
    passfile = pgpass(tmp_path / "passfile", 0o600)
    assert open_in_child(pg_url(password=None), home, PGPASSFILE=str(passfile))["ok"]
    pgpass(home / ".pgpass", 0o600)
    assert open_in_child(pg_url(password=None), home)["ok"]
    passfile.chmod(0o644)
    out = open_in_child(pg_url(password=None), home / "empty", PGPASSFILE=str(passfile))
    assert not out["ok"] and out["type"] == "DatabaseError", out
    assert PASSWORD not in out["message"]


def test_a_password_file_others_may_read_is_named_when_the_login_fails(tmp_path) -> None:
    """The failed login says which password file was not read, and the mode it must have."""
    passfile = pgpass(tmp_path / "passfile", 0o644)
    out = open_in_child(pg_url(password=None), tmp_path / "home", PGPASSFILE=str(passfile))
    assert not out["ok"] and out["type"] == "DatabaseError", out
    assert str(passfile) in out["reason"] and "0600" in out["reason"], out


def test_pgsslmode_disable_reaches_a_tls_only_role_without_tls_and_is_refused(tmp_path) -> None:
    """PGSSLMODE applies when the URL says no sslmode; disable for a role the server takes only
    over TLS is refused with the advice to use sslmode=require."""
    out = open_in_child(pg_url(user="tract_tls"), tmp_path / "home", PGSSLMODE="disable")
    assert not out["ok"] and out["type"] == "DatabaseError", out
    assert "no encryption" in out["reason"] and "sslmode=require" in out["reason"], out


def test_host_port_user_and_database_from_the_environment(tmp_path) -> None:
    """`postgresql:///?schema=x`: PGHOST, PGPORT, PGUSER, PGDATABASE and PGPASSWORD say the rest."""
    out = open_in_child(
        f"postgresql:///?schema={new_schema()}",
        tmp_path / "home",
        PGHOST="127.0.0.1",
        PGPORT=port_of(DIRECT),
        PGUSER="tract",
        PGDATABASE="tract",
        PGPASSWORD=PASSWORD,
    )
    assert out["ok"], out


def test_root_certificates_from_pgsslrootcert_or_home(tmp_path) -> None:
    """verify-full with the root certificate from PGSSLROOTCERT (the other CA there fails, so
    the variable is read), from ~/.postgresql/root.crt, and with none at all (refused before
    connecting, naming what is missing)."""
    home = tmp_path / "home"
    url = lambda: pg_url(host="localhost")  # noqa: E731
    assert open_in_child(url(), home, PGSSLMODE="verify-full", PGSSLROOTCERT=CA)["ok"]
    out = open_in_child(url(), home, PGSSLMODE="verify-full", PGSSLROOTCERT=OTHER_CA)
    assert not out["ok"] and "not signed by a trusted CA" in out["reason"], out
    bare = open_in_child(url(), home, PGSSLMODE="verify-full")
    assert not bare["ok"] and bare["type"] == "InvalidInputError", bare
    assert "needs a root certificate" in bare["message"], bare
    (home / ".postgresql").mkdir()
    shutil.copyfile(CA, home / ".postgresql" / "root.crt")
    assert open_in_child(url(), home, PGSSLMODE="verify-full")["ok"]


def test_a_client_certificate_from_home(tmp_path) -> None:
    """libpq's default client certificate, ~/.postgresql/postgresql.crt and .key, logs in as
    tract_cert with no password."""
    home = tmp_path / "home"
    (home / ".postgresql").mkdir(parents=True)
    shutil.copyfile(CLIENT_CERT, home / ".postgresql" / "postgresql.crt")
    key = home / ".postgresql" / "postgresql.key"
    shutil.copyfile(CLIENT_KEY, key)
    key.chmod(0o600)
    out = open_in_child(pg_url(user="tract_cert", password=None, host="localhost", sslmode="verify-full",
                               sslrootcert=CA), home)
    assert out["ok"], out


# ---------------------------------------------------------------------------------------------
# One verify-full URL on every surface


def verified(base: str | None = None, **params: str) -> str:
    """A URL that checks the server's certificate and name (the test CA, host localhost)."""
    return pg_url(base, host="localhost", sslmode="verify-full", sslrootcert=CA, **params)


def tract_bin() -> pathlib.Path:
    from serve_store import TRACT_BIN

    if not TRACT_BIN.is_file():
        pytest.skip(f"{TRACT_BIN} is missing: build it with `cargo build -p tract-cli`")
    return TRACT_BIN


def cli(url: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(tract_bin()), "--store", url, *args], capture_output=True, text=True, timeout=60)


def test_the_cli_over_verified_tls() -> None:
    url = verified()
    init = cli(url, "init")
    assert init.returncode == 0 and "Initialized empty" in init.stdout, init
    assert PASSWORD not in init.stdout + init.stderr
    added = cli(url, "add", "from the terminal")
    assert added.returncode == 0, added.stderr
    log = cli(url, "log", "--json")
    assert log.returncode == 0, log.stderr
    assert [c["message"]["content"] for c in json.loads(log.stdout)] == ["from the terminal"]
    again = cli(url, "init")
    assert again.returncode == 0 and "Reinitialized existing" in again.stdout, again


def log_of(store: str) -> list[tuple[str, str]]:
    with tract.Tract.open(store) as t:
        return [(c.commit_hash, c.content) for c in t.log()]


def test_sync_between_a_file_tls_and_pgbouncer(tmp_path) -> None:
    """push, pull and clone between a file, a verify-full TLS URL to the server and a
    verify-full TLS URL to PgBouncer: the same commits, ids and all."""
    if not PGBOUNCER:
        pytest.skip("TRACT_TEST_PGBOUNCER is not set")
    origin = tmp_path / "origin.redb"
    tls, bouncer = verified(), verified(PGBOUNCER)
    for receiver in (tls, bouncer):  # push and pull need a store at each end
        tract.Tract.open(receiver).close()
    with tract.Tract.open(origin) as src:
        src.user("one")
        src.assistant("two")
        assert src.push(tls)["commits"] == 2
        with tract.Tract.open(tls) as mid:
            mid.user("three")
            assert mid.push(bouncer)["commits"] == 3
        with tract.Tract.open(bouncer) as far:
            far.assistant("four")
        with tract.Tract.open(tls) as mid:
            assert mid.pull(bouncer)["commits"] == 1
        assert src.pull(tls)["commits"] == 2
    expected = log_of(str(origin))
    assert [c for _, c in expected] == ["four", "three", "two", "one"]
    assert log_of(tls) == expected and log_of(bouncer) == expected
    copies = [verified(), verified(PGBOUNCER)]
    tract.clone(str(origin), copies[0]).close()
    tract.clone(copies[0], copies[1]).close()
    tract.clone(copies[1], str(tmp_path / "back.redb")).close()
    for c in [*copies, str(tmp_path / "back.redb")]:
        assert log_of(c) == expected, c


def test_serve_over_verified_tls(tmp_path) -> None:
    """`tract serve --store URL` answers its API from the store."""
    from serve_store import Serve

    tract_bin()
    url = verified()
    with tract.Tract.open(url) as t:
        t.user("served over TLS")
    with Serve(url, cwd=tmp_path) as s:
        with urllib.request.urlopen(s.url + "api/view?branch=main", timeout=15) as r:
            view = json.loads(r.read())
        with urllib.request.urlopen(s.url + "api/store", timeout=15) as r:
            store = json.loads(r.read())
    assert [e["content"] for e in view["entries"]] == ["served over TLS"], view
    assert PASSWORD not in json.dumps(store) and store["store"].startswith("postgresql://tract:***@localhost")


def test_mcp_over_verified_tls() -> None:
    """`tract mcp --store URL`, driven by the MCP client as in test_mcp.py: a tool call answers
    from the store (its handlers run on the server's runtime, the database calls on tract's)."""
    pytest.importorskip("mcp")
    import asyncio

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    url = verified()
    with tract.Tract.open(url) as t:
        asked = t.user("asked over MCP")

    async def go():
        server = StdioServerParameters(command=str(tract_bin()), args=["--store", url, "mcp"])
        async with stdio_client(server) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await session.call_tool("log", {"limit": 5})

    result = asyncio.run(asyncio.wait_for(go(), 60))
    text = "".join(c.text for c in result.content if getattr(c, "type", None) == "text")
    assert not result.is_error, text
    assert [c["commit_hash"] for c in json.loads(text)] == [asked.commit_hash], text


# ---------------------------------------------------------------------------------------------
# Bad input: a clear error, and nothing made


@needs_psql
def test_bad_tls_parameters_are_refused_before_connecting(tmp_path) -> None:
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    missing = tmp_path / "nowhere" / "ca.pem"
    cases = [
        (pg_url(sslmode="bogus"), ["sslmode=bogus", "must be one of"]),
        (pg_url(sslmode="verify-ca", sslrootcert=str(missing)), [str(missing), "cannot read it"]),
        (pg_url(sslmode="verify-full", sslrootcert=str(junk)), [str(junk), "holds no PEM certificate"]),
        (pg_url(sslmode="require", sslrootcert="system"), ["use sslmode=verify-full"]),
        (pg_url(sslpassword="x"), ["sslpassword", "not supported"]),
        (pg_url(connect_timeout="soon"), ["connect_timeout=soon"]),
    ]
    for url, says in cases:
        with pytest.raises(tract.InvalidInputError) as e:
            tract.Tract.open(url)
        for part in says:
            assert part in str(e.value), (url, str(e.value))
        assert PASSWORD not in str(e.value)
    schemas_absent([schema_of(url) for url, _ in cases])


@needs_psql
def test_a_statement_mode_pooler_is_refused_before_anything_is_made() -> None:
    """PgBouncer in statement mode cannot carry a transaction: refused with the pool mode to use,
    and the schema is not made (through the same PgBouncer in transaction mode, `tract init`
    then makes it)."""
    if not (PGBOUNCER and PGBOUNCER_STATEMENT):
        pytest.skip("TRACT_TEST_PGBOUNCER and TRACT_TEST_PGBOUNCER_STATEMENT are not set")
    schema = new_schema()
    with pytest.raises(tract.DatabaseError) as e:
        tract.Tract.open(pg_url(PGBOUNCER_STATEMENT, schema=schema))
    assert "statement pooling mode" in e.value.reason and "pool_mode=transaction" in e.value.reason, e.value.reason
    schemas_absent([schema])
    init = cli(pg_url(PGBOUNCER, schema=schema), "init")
    assert init.returncode == 0 and "Initialized empty" in init.stdout, init


@needs_psql
def test_a_role_without_create_is_told_which_right_it_lacks() -> None:
    url = pg_url(user="tract_nocreate")
    with pytest.raises(tract.DatabaseError) as e:
        tract.Tract.open(url)
    assert "permission denied" in e.value.reason and "CREATE privilege" in e.value.reason, e.value.reason
    schemas_absent([schema_of(url)])
