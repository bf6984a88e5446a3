//! Connecting to PostgreSQL the way libpq does, and keeping a bounded pool of connections.
//!
//! A `postgresql://` URL means what it means to libpq: its parameters first, then the `PG*`
//! environment variables, then `~/.pgpass` (or `PGPASSFILE`) for a password, then libpq's
//! defaults. TLS follows `sslmode` (`disable`, `allow`, `prefer` (the default), `require`,
//! `verify-ca`, `verify-full`), `sslrootcert` (a PEM file, or `system` for the system's store),
//! `sslcert`/`sslkey` (a client certificate; `~/.postgresql/postgresql.crt` and `.key` when they
//! exist), with libpq's rule that a root certificate, once given or present at
//! `~/.postgresql/root.crt`, is always checked. TLS is rustls's (ring); nothing of it is written
//! here but the choice of what to verify.
//!
//! Three parameters are tract's own and never reach the server: `schema` (where the store
//! lives), `pool_size` (connections kept per store and process) and `statement_timeout` (ms).
//!
//! Every wait is bounded on the client: `connect_timeout` covers the whole login (TCP, TLS,
//! authentication, the first statement), every round trip is bounded by the statement timeout
//! plus a grace (so a server that stops answering, which the server's own timeout cannot cover,
//! is an error, never a hang), and the socket has a TCP user timeout and keepalives so a peer that
//! vanished is noticed within 30 s. A connection that failed or timed out is discarded; the next
//! call connects again.
//!
//! The client is async (tokio-postgres); tract's calls are synchronous, so one small runtime
//! per process drives every connection and each call waits for its own round trip.

use crate::error::{Error, Result};
use deadpool::managed::{self, Metrics, PoolError, RecycleError, RecycleResult, TimeoutType};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_postgres::config::{Host, SslMode as WireSslMode};
use tokio_postgres::{Client, Config, NoTls};
use tokio_postgres_rustls::MakeRustlsConnect;

/// The schema a URL without `?schema=` uses.
pub(crate) const DEFAULT_SCHEMA: &str = "tract";
/// How long logging in may take when neither the URL nor `PGCONNECT_TIMEOUT` says.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one statement may run on the server when the URL does not say.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long past the statement timeout the client waits for an answer: the server cancels
/// first, with its own error, whenever it can.
const ANSWER_GRACE: Duration = Duration::from_secs(5);
/// How long sent data may stay unacknowledged before the kernel gives the connection up.
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(30);
/// Connections kept per store and process when the URL does not say.
const POOL_SIZE: usize = 8;
/// The Unix socket directories libpq's builds use, in the order tried when no host is named.
const SOCKET_DIRS: [&str; 2] = ["/var/run/postgresql", "/tmp"];

/// One runtime per process drives every PostgreSQL connection: two threads, whatever the
/// number of stores and connections. A child forked without exec has none of its parent's
/// threads, so it gets a runtime of its own (the parent's is left alone, never dropped), and
/// the stores it opens again get connections of their own.
static RUNTIME: Mutex<Option<(u32, &'static tokio::runtime::Runtime)>> = Mutex::new(None);

/// This process's runtime, made on first use.
fn runtime() -> std::result::Result<&'static tokio::runtime::Runtime, String> {
    let mut slot = RUNTIME.lock().unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    match *slot {
        Some((owner, rt)) if owner == pid => Ok(rt),
        _ => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("tract-postgres")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            let rt: &'static tokio::runtime::Runtime = Box::leak(Box::new(rt));
            *slot = Some((pid, rt));
            Ok(rt)
        }
    }
}

/// Runs `f` to completion from a synchronous caller. The caller's thread polls `f` (so `f`
/// may borrow), inside the runtime's context (so timers and spawned connections belong to
/// it, and its threads drive them); this works from a thread that drives another runtime
/// too, such as the MCP server's handlers, where the runtime's own `block_on` may not run.
pub(crate) fn block_on<F: Future>(f: F) -> Result<F::Output> {
    match runtime() {
        Ok(rt) => {
            let _context = rt.enter();
            Ok(futures_executor::block_on(f))
        }
        Err(e) => Err(Error::invalid_op(format!(
            "cannot start the PostgreSQL client's runtime: {e}"
        ))),
    }
}

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SslMode {
    /// Never TLS.
    Disable,
    /// Without TLS first; with it if the server refuses that.
    Allow,
    /// With TLS if the server offers it (libpq's default).
    Prefer,
    /// Only with TLS; the certificate is checked only against a root certificate given.
    Require,
    /// Only with TLS, the certificate signed by a trusted CA.
    VerifyCa,
    /// Only with TLS, the certificate signed by a trusted CA and naming the host.
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> Result<Self> {
        Ok(match value {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => {
                return Err(Error::invalid_input(format!(
                    "sslmode={other}: must be one of disable, allow, prefer, require, \
                     verify-ca, verify-full"
                )));
            }
        })
    }

    fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Allow => "allow",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// Everything needed to connect to one store, read once from its URL and the environment.
pub(crate) struct Settings {
    /// Host, port, user, database, password and socket options, as the client takes them.
    config: Config,
    sslmode: SslMode,
    /// The TLS connector, unless `sslmode=disable`.
    tls: Option<MakeRustlsConnect>,
    /// The schema holding the store.
    pub schema: String,
    /// Connections kept per store and process.
    pub pool_size: usize,
    /// The server's bound on one statement.
    pub statement_timeout: Duration,
    /// The bound on a whole login.
    connect_timeout: Option<Duration>,
    /// The URL as shown: no password.
    pub location: String,
    /// The password, to keep it out of every message.
    password: Option<String>,
    /// Why a password file was passed over, said when a login then fails for want of one.
    pgpass_note: Option<String>,
}

/// Where the environment comes from: the process's, or a fixed map in tests.
type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

impl Settings {
    /// Reads a `postgresql://` URL as libpq would, with this process's environment.
    pub(crate) fn from_url(url: &str) -> Result<Self> {
        Self::from_url_with(url, &process_env)
    }

    fn from_url_with(url: &str, env: Env<'_>) -> Result<Self> {
        let parsed = ParsedUrl::parse(url)?;
        let fail =
            |message: String| Error::invalid_input(format!("{}: {message}", parsed.location));
        let mut config: Config = parsed
            .libpq_url
            .parse()
            .map_err(|e: tokio_postgres::Error| {
                fail(format!(
                    "not a PostgreSQL URL: {}",
                    scrub(&e.to_string(), parsed.password.as_deref())
                ))
            })?;
        // What the URL leaves out, the environment says (libpq's `PG*` variables).
        if config.get_hosts().is_empty() {
            match env("PGHOST") {
                Some(hosts) => {
                    for h in hosts.split(',') {
                        config.host(h);
                    }
                }
                None => {
                    config.host(default_host(env));
                }
            }
        }
        if config.get_hostaddrs().is_empty()
            && let Some(addrs) = env("PGHOSTADDR")
        {
            for a in addrs.split(',') {
                let ip = a
                    .parse()
                    .map_err(|_| fail(format!("PGHOSTADDR={a}: not an IP address")))?;
                config.hostaddr(ip);
            }
        }
        if config.get_ports().is_empty()
            && let Some(port) = env("PGPORT")
        {
            for p in port.split(',') {
                config.port(
                    p.parse()
                        .map_err(|_| fail(format!("PGPORT={p}: not a port number")))?,
                );
            }
        }
        if config.get_user().is_none() {
            let user = env("PGUSER")
                .or_else(|| env("USER"))
                .or_else(|| env("LOGNAME"))
                .ok_or_else(|| fail("no user name: name one in the URL or in PGUSER".into()))?;
            config.user(user);
        }
        if config.get_dbname().is_none() {
            let db = env("PGDATABASE")
                .or_else(|| config.get_user().map(str::to_string))
                .unwrap_or_default();
            config.dbname(db);
        }
        if config.get_application_name().is_none() {
            config.application_name(env("PGAPPNAME").unwrap_or_else(|| "tract".into()));
        }
        if config.get_options().is_none()
            && let Some(options) = env("PGOPTIONS")
        {
            config.options(options);
        }
        let connect_timeout = parsed
            .connect_timeout
            .clone()
            .or_else(|| env("PGCONNECT_TIMEOUT"));
        let connect_timeout = match connect_timeout {
            None => Some(CONNECT_TIMEOUT),
            Some(v) => {
                let secs: i64 = v.trim().parse().map_err(|_| {
                    fail(format!(
                        "connect_timeout={v}: not a whole number of seconds"
                    ))
                })?;
                // libpq: zero or less waits without end; 1 s is taken as 2 s.
                (secs > 0).then(|| Duration::from_secs(secs.max(2).unsigned_abs()))
            }
        };
        if let Some(t) = connect_timeout {
            config.connect_timeout(t);
        }
        if config.get_tcp_user_timeout().is_none() {
            config.tcp_user_timeout(TCP_USER_TIMEOUT);
        }
        config.keepalives(true);
        config.keepalives_idle(Duration::from_secs(10));
        if config.get_keepalives_interval().is_none() {
            config.keepalives_interval(Duration::from_secs(5));
        }
        if config.get_keepalives_retries().is_none() {
            config.keepalives_retries(3);
        }

        let mut password = parsed.password.clone();
        let mut pgpass_note = None;
        if config.get_password().is_none() {
            if let Some(p) = env("PGPASSWORD") {
                config.password(p.clone());
                password = Some(p);
            } else {
                match password_from_file(&config, env) {
                    Ok(Some(p)) => {
                        config.password(p.clone());
                        password = Some(p);
                    }
                    Ok(None) => {}
                    Err(note) => pgpass_note = Some(note),
                }
            }
        }

        let ssl = |key: &str, var: &str| -> Option<String> {
            parsed
                .ssl
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
                .or_else(|| env(var))
        };
        let rootcert = ssl("sslrootcert", "PGSSLROOTCERT");
        let sslmode = match ssl("sslmode", "PGSSLMODE") {
            Some(m) => SslMode::parse(&m).map_err(|e| fail(e.to_string()))?,
            // libpq: with the system's store, the default is to check everything.
            None if rootcert.as_deref() == Some("system") => SslMode::VerifyFull,
            None => SslMode::Prefer,
        };
        if rootcert.as_deref() == Some("system") && sslmode != SslMode::VerifyFull {
            return Err(fail(format!(
                "sslmode={} may not be used with sslrootcert=system: use sslmode=verify-full",
                sslmode.name()
            )));
        }
        let tls = if sslmode == SslMode::Disable {
            None
        } else {
            let client =
                ClientCert::locate(ssl("sslcert", "PGSSLCERT"), ssl("sslkey", "PGSSLKEY"), env);
            Some(tls_connector(sslmode, rootcert, client, env).map_err(&fail)?)
        };
        config.ssl_mode(match sslmode {
            SslMode::Disable | SslMode::Allow => WireSslMode::Disable,
            SslMode::Prefer => WireSslMode::Prefer,
            _ => WireSslMode::Require,
        });

        let pool_size = match &parsed.pool_size {
            None => POOL_SIZE,
            Some(v) => v
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=1000).contains(n))
                .ok_or_else(|| fail(format!("pool_size={v}: must be a number from 1 to 1000")))?,
        };
        let statement_timeout = match &parsed.statement_timeout {
            None => STATEMENT_TIMEOUT,
            Some(v) => v
                .parse::<u64>()
                .ok()
                .filter(|ms| *ms > 0)
                .map(Duration::from_millis)
                .ok_or_else(|| {
                    fail(format!(
                        "statement_timeout={v}: must be a number of milliseconds above 0"
                    ))
                })?,
        };
        Ok(Settings {
            config,
            sslmode,
            tls,
            schema: parsed.schema,
            pool_size,
            statement_timeout,
            connect_timeout,
            location: parsed.location,
            password: password.filter(|p| !p.is_empty()),
            pgpass_note,
        })
    }

    /// The bound on one round trip once connected.
    pub(crate) fn answer_bound(&self) -> Duration {
        self.statement_timeout + ANSWER_GRACE
    }

    /// A client error as tract's: what the server said, or why it could not be reached, named
    /// after the store, the password scrubbed.
    pub(crate) fn error(&self, e: &tokio_postgres::Error) -> Error {
        Error::Database {
            store: self.location.clone(),
            reason: scrub(&describe(e), self.password.as_deref()),
        }
    }

    /// An error of this store with `reason`.
    pub(crate) fn failure(&self, reason: impl Into<String>) -> Error {
        Error::Database {
            store: self.location.clone(),
            reason: scrub(&reason.into(), self.password.as_deref()),
        }
    }

    /// Connects once, within the login bound (TCP, TLS, authentication).
    async fn connect(&self) -> Result<Conn> {
        let attempt = async {
            match (self.sslmode, &self.tls) {
                (SslMode::Allow, Some(tls)) => {
                    match self.connect_with(WireSslMode::Disable, None).await {
                        // libpq's `allow`: the server refused a connection without TLS.
                        Err(e) if e.as_db_error().is_some() => {
                            self.connect_with(WireSslMode::Require, Some(tls)).await
                        }
                        other => other,
                    }
                }
                // libpq: TLS is for TCP; a Unix socket is local and never negotiates it.
                _ if self
                    .config
                    .get_hosts()
                    .iter()
                    .all(|h| !matches!(h, Host::Tcp(_))) =>
                {
                    self.connect_with(WireSslMode::Disable, None).await
                }
                (_, tls) => {
                    self.connect_with(self.config.get_ssl_mode(), tls.as_ref())
                        .await
                }
            }
        };
        let result = match self.connect_timeout {
            Some(bound) => match tokio::time::timeout(bound, attempt).await {
                Ok(r) => r,
                Err(_) => {
                    return Err(self.failure(format!(
                        "no answer while logging in within connect_timeout ({} s): the server \
                         accepted the connection but did not complete the login",
                        bound.as_secs()
                    )));
                }
            },
            None => attempt.await,
        };
        result.map_err(|e| self.login_error(&e))
    }

    async fn connect_with(
        &self,
        mode: WireSslMode,
        tls: Option<&MakeRustlsConnect>,
    ) -> std::result::Result<Conn, tokio_postgres::Error> {
        let mut config = self.config.clone();
        config.ssl_mode(mode);
        let (client, task) = match tls {
            Some(tls) => {
                let (client, connection) = config.connect(tls.clone()).await?;
                (client, tokio::spawn(async move { drop(connection.await) }))
            }
            None => {
                let (client, connection) = config.connect(NoTls).await?;
                (client, tokio::spawn(async move { drop(connection.await) }))
            }
        };
        Ok(Conn { client, task })
    }

    /// A failed login explained: the certificate problem, the missing TLS, the statement-mode
    /// pooler.
    fn login_error(&self, e: &tokio_postgres::Error) -> Error {
        let mut reason = describe(e);
        if let Some(db) = e.as_db_error()
            && db.code().code() == "28000"
            && db.message().contains("no encryption")
        {
            reason.push_str(&format!(
                " (this connection was made without TLS, sslmode={}: the server accepts \
                 this role only with TLS; use sslmode=require or stronger)",
                self.sslmode.name()
            ));
        }
        // No password at all fails in the client, a wrong one on the server: either way, a
        // password file passed over is why.
        let password_refused = e
            .as_db_error()
            .is_some_and(|db| db.code().code() == "28P01")
            || reason.contains("password missing");
        if password_refused && let Some(note) = &self.pgpass_note {
            reason.push_str(&format!(" ({note})"));
        }
        self.failure(reason)
    }
}

/// An open connection and the task that drives it.
pub(crate) struct Conn {
    /// The client side of the connection.
    pub client: Client,
    task: tokio::task::JoinHandle<()>,
}

impl Conn {
    /// Ends a connection that cannot be trusted any more (a round trip that timed out, a
    /// transaction whose outcome is unknown): its socket is closed at once, so the server
    /// rolls back whatever it had open.
    pub(crate) fn discard(self) {
        self.task.abort();
    }
}

/// Makes and checks the pool's connections.
pub(crate) struct Manager {
    settings: Arc<Settings>,
}

impl managed::Manager for Manager {
    type Type = Conn;
    type Error = Error;

    async fn create(&self) -> Result<Conn> {
        self.settings.connect().await
    }

    async fn recycle(&self, conn: &mut Conn, _: &Metrics) -> RecycleResult<Error> {
        if conn.client.is_closed() || conn.task.is_finished() {
            return Err(RecycleError::message("the connection was closed"));
        }
        Ok(())
    }

    fn detach(&self, conn: &mut Conn) {
        conn.task.abort();
    }
}

/// A bounded pool of connections to one store, shared by the threads of a process.
pub(crate) struct Pool {
    pool: managed::Pool<Manager>,
    settings: Arc<Settings>,
    wait: Duration,
    /// The process that made it: a child forked from it must not use its connections.
    pid: u32,
    /// The round trips waited for, counted for tests of how many a read takes.
    #[cfg(feature = "testing")]
    round_trips: std::sync::atomic::AtomicU64,
}

/// A connection taken from the pool; given back when dropped, unless discarded.
pub(crate) type Pooled = managed::Object<Manager>;

impl Pool {
    /// A pool of at most `settings.pool_size` connections; a caller finding them all in use
    /// waits up to `wait`.
    pub(crate) fn new(settings: Settings, wait: Duration) -> Result<Self> {
        let settings = Arc::new(settings);
        let pool = managed::Pool::builder(Manager {
            settings: Arc::clone(&settings),
        })
        .max_size(settings.pool_size)
        .runtime(deadpool::Runtime::Tokio1)
        .wait_timeout(Some(wait))
        .build()
        .map_err(|e| Error::invalid_op(format!("cannot make a connection pool: {e}")))?;
        Ok(Pool {
            pool,
            settings,
            wait,
            pid: std::process::id(),
            #[cfg(feature = "testing")]
            round_trips: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// Whether this pool was made by the process this one forked from.
    pub(crate) fn forked(&self) -> bool {
        self.pid != std::process::id()
    }

    /// How many round trips this pool's connections have waited for (tests only).
    #[cfg(feature = "testing")]
    pub(crate) fn round_trips(&self) -> u64 {
        self.round_trips.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// What the pool connects with.
    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }

    /// A connection: an idle one, or a new one if the pool is not full.
    pub(crate) fn get(&self) -> Result<Pooled> {
        if self.forked() {
            // Its sockets are the parent's too: using them would mix two processes' traffic.
            return Err(self.settings.failure(
                "this store was opened before the process forked: open it again in the child",
            ));
        }
        block_on(self.pool.get())?.map_err(|e| match e {
            PoolError::Backend(e) => e,
            PoolError::Timeout(TimeoutType::Wait) => self.settings.failure(format!(
                "all {} connections of this process's pool were in use for {} ms \
                 (pool_size in the URL sets how many)",
                self.settings.pool_size,
                self.wait.as_millis()
            )),
            other => self.settings.failure(other.to_string()),
        })
    }

    /// Runs one round trip on `conn`, bounded by the statement timeout and its grace: a server
    /// that stops answering is an error, and the connection is discarded.
    pub(crate) fn run<T>(
        &self,
        conn: &Conn,
        f: impl Future<Output = std::result::Result<T, tokio_postgres::Error>>,
    ) -> std::result::Result<T, RunError> {
        self.run_bounded(conn, self.settings.answer_bound(), f)
    }

    /// [`Pool::run`] with a bound of the caller's (work known to take long).
    pub(crate) fn run_bounded<T>(
        &self,
        conn: &Conn,
        bound: Duration,
        f: impl Future<Output = std::result::Result<T, tokio_postgres::Error>>,
    ) -> std::result::Result<T, RunError> {
        #[cfg(feature = "testing")]
        self.round_trips
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        match block_on(async move { tokio::time::timeout(bound, f).await }) {
            Err(e) => Err(RunError::Lost(e)),
            Ok(Ok(Ok(t))) => Ok(t),
            Ok(Ok(Err(e))) => Err(RunError::Server(e)),
            Ok(Err(_)) => {
                conn.task.abort();
                Err(RunError::Lost(self.settings.failure(format!(
                    "no answer from the server within {} ms; the connection was closed \
                     (nothing of the transaction was committed unless this was its COMMIT)",
                    bound.as_millis()
                ))))
            }
        }
    }
}

/// Why a round trip failed.
pub(crate) enum RunError {
    /// The server (or the client library) answered with an error.
    Server(tokio_postgres::Error),
    /// No answer in time, or no runtime: the connection is gone.
    Lost(Error),
}

/// What a client error says, in a user's words: the server's message and code, a certificate
/// problem, a lost connection.
fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut r = format!("{} ({})", db.message(), db.code().code());
        if let Some(detail) = db.detail() {
            r.push_str(": ");
            r.push_str(detail);
        }
        if db
            .message()
            .contains("transaction blocks not allowed in statement pooling mode")
        {
            r.push_str(
                " (a pooler in statement mode cannot carry a transaction: tract needs \
                 pool_mode=transaction or session)",
            );
        }
        return r;
    }
    // A TLS problem is the innermost source: the certificate, the host name, the handshake.
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = source {
        // An I/O error carries the TLS error inside it, not as its source.
        let inner = s
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .map(|e| e as &(dyn std::error::Error + 'static));
        if let Some(tls) = inner.unwrap_or(s).downcast_ref::<rustls::Error>() {
            return format!("TLS: {}", describe_tls(tls));
        }
        source = s.source();
    }
    if e.is_closed() {
        return "the connection to the server was lost".to_string();
    }
    let mut text = e.to_string();
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

/// A TLS error in words that name the certificate problem.
fn describe_tls(e: &rustls::Error) -> String {
    match e {
        rustls::Error::InvalidCertificate(c) => match c {
            CertificateError::UnknownIssuer => "the server's certificate is not signed by a \
                trusted CA (check sslrootcert)"
                .into(),
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                format!(
                    "the server's certificate does not name the host connected to ({c:?}); \
                     sslmode=verify-full checks it"
                )
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                format!("the server's certificate has expired ({c:?})")
            }
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                format!("the server's certificate is not valid yet ({c:?})")
            }
            other => format!("the server's certificate was refused: {other:?}"),
        },
        rustls::Error::AlertReceived(alert) => {
            format!(
                "the server refused the TLS handshake ({alert:?}); a client certificate may be missing, expired or not trusted"
            )
        }
        other => other.to_string(),
    }
}

/// The host libpq connects to when none is named: the first Unix socket directory holding a
/// server's socket, else `localhost`.
fn default_host(env: Env<'_>) -> String {
    let port = env("PGPORT").unwrap_or_else(|| "5432".into());
    SOCKET_DIRS
        .iter()
        .find(|d| Path::new(d).join(format!(".s.PGSQL.{port}")).exists())
        .map(|d| d.to_string())
        .unwrap_or_else(|| "localhost".into())
}

fn home(env: Env<'_>) -> Option<PathBuf> {
    env("HOME").map(PathBuf::from)
}

/// The password `~/.pgpass` (or `PGPASSFILE`) holds for this host, port, database and user;
/// `Err` says why a file that exists was passed over (group or world may read it).
fn password_from_file(
    config: &Config,
    env: Env<'_>,
) -> std::result::Result<Option<String>, String> {
    let Some(path) = env("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| home(env).map(|h| h.join(".pgpass")))
    else {
        return Ok(None);
    };
    let Ok(meta) = std::fs::metadata(&path) else {
        return Ok(None);
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(format!(
                "the password file {} was not read: group or others may read it; \
                 it must be u=rw (0600) or less",
                path.display()
            ));
        }
    }
    if !meta.is_file() {
        return Ok(None);
    }
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(None);
    };
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        // libpq matches a Unix socket against `localhost`.
        _ => "localhost".to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let db = config.get_dbname().unwrap_or_default();
    let user = config.get_user().unwrap_or_default();
    Ok(pgpass_lookup(&text, &host, &port, db, user))
}

/// The password of the first `.pgpass` line matching (`*` matches anything; `\:` and `\\`
/// escape).
fn pgpass_lookup(text: &str, host: &str, port: &str, db: &str, user: &str) -> Option<String> {
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let mut fields = Vec::new();
        let mut field = String::new();
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => field.extend(chars.next()),
                ':' if fields.len() < 4 => fields.push(std::mem::take(&mut field)),
                c => field.push(c),
            }
        }
        fields.push(field);
        if fields.len() != 5 {
            continue;
        }
        let matches = |pattern: &str, value: &str| pattern == "*" || pattern == value;
        if matches(&fields[0], host)
            && matches(&fields[1], port)
            && matches(&fields[2], db)
            && matches(&fields[3], user)
        {
            return Some(fields.swap_remove(4));
        }
    }
    None
}

/// A client certificate and its key, as named or found at libpq's default paths.
struct ClientCert {
    cert: PathBuf,
    key: PathBuf,
    /// Named by the URL or the environment (an error if missing), rather than a default that
    /// may not exist.
    named: bool,
}

impl ClientCert {
    fn locate(cert: Option<String>, key: Option<String>, env: Env<'_>) -> Option<Self> {
        let dir = home(env).map(|h| h.join(".postgresql"));
        let named = cert.is_some();
        let cert = cert
            .map(PathBuf::from)
            .or_else(|| dir.as_ref().map(|d| d.join("postgresql.crt")))?;
        let key = key
            .map(PathBuf::from)
            .or_else(|| dir.as_ref().map(|d| d.join("postgresql.key")))?;
        (named || cert.exists()).then_some(ClientCert { cert, key, named })
    }
}

/// The TLS connector `sslmode` and the certificates call for.
fn tls_connector(
    mode: SslMode,
    rootcert: Option<String>,
    client: Option<ClientCert>,
    env: Env<'_>,
) -> std::result::Result<MakeRustlsConnect, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let default_root = home(env).map(|h| h.join(".postgresql").join("root.crt"));
    // libpq: a root certificate given, or present at the default path, is always checked.
    let roots = match rootcert.as_deref() {
        Some("system") => Some(system_roots()?),
        Some(path) => Some(roots_from(Path::new(path), "sslrootcert")?),
        None => match &default_root {
            Some(p) if p.exists() => Some(roots_from(p, "the default root certificate")?),
            _ => None,
        },
    };
    let verifier: Arc<dyn ServerCertVerifier> = match (mode, roots) {
        (SslMode::VerifyCa | SslMode::VerifyFull, None) => {
            return Err(format!(
                "sslmode={} needs a root certificate to check the server's against: \
                 sslrootcert=PATH (or system), or one at {}",
                mode.name(),
                default_root
                    .map(|p| p.display().to_string())
                    .unwrap_or_else(|| "~/.postgresql/root.crt".into())
            ));
        }
        (mode, roots) => {
            let chain = roots
                .map(|roots| {
                    WebPkiServerVerifier::builder_with_provider(
                        Arc::new(roots),
                        Arc::clone(&provider),
                    )
                    .build()
                    .map_err(|e| format!("sslrootcert: {e}"))
                })
                .transpose()?;
            match chain {
                Some(full) if mode == SslMode::VerifyFull => full,
                chain => Arc::new(NameUnchecked {
                    provider: Arc::clone(&provider),
                    chain,
                }),
            }
        }
    };
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let config = match client {
        None => builder.with_no_client_auth(),
        Some(c) => {
            let (chain, key) = client_identity(&c)?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("sslcert={}: {e}", c.cert.display()))?
        }
    };
    Ok(MakeRustlsConnect::new(config))
}

/// The certificates of a PEM file, as trust anchors.
fn roots_from(path: &Path, what: &str) -> std::result::Result<RootCertStore, String> {
    let shown = path.display();
    let bytes = std::fs::read(path).map_err(|e| format!("{what} {shown}: cannot read it: {e}"))?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&bytes) {
        let cert = cert.map_err(|e| format!("{what} {shown}: not a PEM certificate file: {e}"))?;
        roots
            .add(cert)
            .map_err(|e| format!("{what} {shown}: a certificate in it was refused: {e}"))?;
    }
    if roots.is_empty() {
        return Err(format!("{what} {shown}: holds no PEM certificate"));
    }
    Ok(roots)
}

/// The system's trust store, for `sslrootcert=system`.
fn system_roots() -> std::result::Result<RootCertStore, String> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        let why = found
            .errors
            .first()
            .map(|e| format!(": {e}"))
            .unwrap_or_default();
        return Err(format!(
            "sslrootcert=system: the system's certificate store holds no certificate{why}"
        ));
    }
    Ok(roots)
}

/// A client certificate chain and its key, checked as libpq checks the key's permissions.
fn client_identity(
    c: &ClientCert,
) -> std::result::Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let cert_shown = c.cert.display();
    let bytes = match std::fs::read(&c.cert) {
        Ok(b) => b,
        Err(e) if c.named || e.kind() != std::io::ErrorKind::NotFound => {
            return Err(format!("sslcert {cert_shown}: cannot read it: {e}"));
        }
        Err(_) => return Err(format!("sslcert {cert_shown}: not found")),
    };
    let chain = CertificateDer::pem_slice_iter(&bytes)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| format!("sslcert {cert_shown}: not a PEM certificate file: {e}"))?;
    if chain.is_empty() {
        return Err(format!("sslcert {cert_shown}: holds no PEM certificate"));
    }
    let key_shown = c.key.display();
    let meta = std::fs::metadata(&c.key).map_err(|e| format!("sslkey {key_shown}: {e}"))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        // libpq: u=rw (0600) or less for the owner's key; u=rw,g=r (0640) for root's.
        let mode = meta.permissions().mode();
        let loose = if meta.uid() == 0 {
            mode & 0o137 != 0
        } else {
            mode & 0o077 != 0
        };
        if loose {
            return Err(format!(
                "sslkey {key_shown}: group or others may read it; it must be u=rw (0600) or less"
            ));
        }
    }
    let key = PrivateKeyDer::from_pem_file(&c.key)
        .map_err(|e| format!("sslkey {key_shown}: not an unencrypted PEM private key: {e}"))?;
    Ok((chain, key))
}

/// The verifier of the modes that do not check the host name: the chain to a trusted root
/// when there is a root certificate (`verify-ca`, and `require` with one), nothing otherwise
/// (`prefer`/`require` without one, as libpq does: encrypted, not authenticated). The
/// handshake's signatures are checked either way.
#[derive(Debug)]
struct NameUnchecked {
    provider: Arc<CryptoProvider>,
    chain: Option<Arc<WebPkiServerVerifier>>,
}

impl ServerCertVerifier for NameUnchecked {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// A `postgresql://` URL taken apart: what the client is given (without tract's parameters and
/// the TLS ones read here), tract's parameters, the TLS parameters, the password, and the URL
/// to show (without the password).
struct ParsedUrl {
    libpq_url: String,
    schema: String,
    pool_size: Option<String>,
    statement_timeout: Option<String>,
    connect_timeout: Option<String>,
    ssl: Vec<(String, String)>,
    password: Option<String>,
    location: String,
}

impl ParsedUrl {
    fn parse(url: &str) -> Result<Self> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| Error::invalid_input("not a URL"))?;
        let (before_query, query) = match rest.split_once('?') {
            Some((b, q)) => (b, Some(q)),
            None => (rest, None),
        };
        let (authority, path) = match before_query.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (before_query, None),
        };
        let mut password = None;
        let shown_authority = match authority.rsplit_once('@') {
            Some((userinfo, host)) => match userinfo.split_once(':') {
                Some((user, pw)) => {
                    password = Some(percent_decode(pw));
                    format!("{user}:***@{host}")
                }
                None => authority.to_string(),
            },
            None => authority.to_string(),
        };
        let mut schema = DEFAULT_SCHEMA.to_string();
        let (mut pool_size, mut statement_timeout, mut connect_timeout) = (None, None, None);
        let mut ssl = Vec::new();
        let mut kept = Vec::new();
        let mut shown = Vec::new();
        for pair in query.into_iter().flat_map(|q| q.split('&')) {
            if pair.is_empty() {
                continue;
            }
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let value = percent_decode(v);
            match k {
                "schema" => schema = value,
                "pool_size" => {
                    pool_size = Some(value);
                    shown.push(pair.to_string());
                }
                "statement_timeout" => {
                    statement_timeout = Some(value);
                    shown.push(pair.to_string());
                }
                // Read here: libpq bounds the whole login, the client only the TCP connect.
                "connect_timeout" => {
                    connect_timeout = Some(value);
                    shown.push(pair.to_string());
                }
                "sslmode" | "sslrootcert" | "sslcert" | "sslkey" => {
                    ssl.push((k.to_string(), value));
                    shown.push(pair.to_string());
                }
                "sslpassword" | "sslcrl" | "sslcrldir" | "sslsni" | "requiressl" => {
                    return Err(Error::invalid_input(format!(
                        "{k}: not supported by tract's PostgreSQL client (sslmode, sslrootcert, \
                         sslcert and sslkey are)"
                    )));
                }
                "password" => {
                    password = Some(value);
                    kept.push(pair);
                    shown.push("password=***".to_string());
                }
                _ => {
                    kept.push(pair);
                    shown.push(pair.to_string());
                }
            }
        }
        let valid = !schema.is_empty()
            && schema.len() <= 63
            && schema
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
            && schema
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        let path_part = path.map(|p| format!("/{p}")).unwrap_or_default();
        let query_of = |parts: &[String]| {
            if parts.is_empty() {
                String::new()
            } else {
                format!("?{}", parts.join("&"))
            }
        };
        let mut shown_query = shown.clone();
        shown_query.push(format!("schema={schema}"));
        let location = format!(
            "{scheme}://{shown_authority}{path_part}{}",
            query_of(&shown_query)
        );
        if !valid {
            return Err(Error::invalid_input(format!(
                "{location}: schema must be 1 to 63 lowercase letters, digits or '_', \
                 starting with a letter or '_'"
            )));
        }
        let kept: Vec<String> = kept.iter().map(|s| s.to_string()).collect();
        Ok(ParsedUrl {
            libpq_url: format!("{scheme}://{authority}{path_part}{}", query_of(&kept)),
            schema,
            pool_size,
            statement_timeout,
            connect_timeout,
            ssl,
            password: password.filter(|p| !p.is_empty()),
            location,
        })
    }
}

/// A URL component with its `%XX` escapes decoded (an escape that is not one stays as it is).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `text` with every occurrence of the password replaced.
pub(crate) fn scrub(text: &str, password: Option<&str>) -> String {
    match password {
        Some(p) if !p.is_empty() => text.replace(p, "***"),
        _ => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn a_url_is_shown_without_its_password_and_keeps_its_schema() {
        let p = ParsedUrl::parse(
            "postgresql://ann:s3cret@db.example:5433/agents?schema=team_a&sslmode=disable",
        )
        .unwrap();
        assert_eq!(p.schema, "team_a");
        assert_eq!(p.password.as_deref(), Some("s3cret"));
        assert_eq!(
            p.location,
            "postgresql://ann:***@db.example:5433/agents?sslmode=disable&schema=team_a"
        );
        assert_eq!(
            p.libpq_url,
            "postgresql://ann:s3cret@db.example:5433/agents"
        );
        let q = ParsedUrl::parse("postgresql://ann@h/db?password=hunter2").unwrap();
        assert!(!q.location.contains("hunter2"));
        assert_eq!(q.schema, DEFAULT_SCHEMA);
        assert_eq!(
            scrub("bad hunter2 here", q.password.as_deref()),
            "bad *** here"
        );
    }

    #[test]
    fn a_schema_that_is_not_a_plain_name_is_refused() {
        for bad in ["A", "1x", "x;drop", "", "x\"y"] {
            let url = format!("postgresql://h/db?schema={bad}");
            assert!(
                matches!(ParsedUrl::parse(&url), Err(Error::InvalidInput { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_url_comes_first_then_the_environment_then_the_defaults() {
        let env = env_of(&[
            ("PGHOST", "envhost"),
            ("PGPORT", "6543"),
            ("PGUSER", "envuser"),
            ("PGDATABASE", "envdb"),
            ("PGPASSWORD", "envpw"),
            ("PGCONNECT_TIMEOUT", "7"),
            ("PGSSLMODE", "disable"),
        ]);
        let s = Settings::from_url_with("postgresql:///?schema=s", &env).unwrap();
        assert_eq!(s.config.get_hosts(), &[Host::Tcp("envhost".into())]);
        assert_eq!(s.config.get_ports(), &[6543]);
        assert_eq!(s.config.get_user(), Some("envuser"));
        assert_eq!(s.config.get_dbname(), Some("envdb"));
        assert_eq!(s.config.get_password(), Some(&b"envpw"[..]));
        assert_eq!(s.connect_timeout, Some(Duration::from_secs(7)));
        assert_eq!(s.sslmode, SslMode::Disable);
        assert!(s.tls.is_none());
        let s = Settings::from_url_with(
            "postgresql://u:p@h:1/d?connect_timeout=1&sslmode=require&pool_size=3&statement_timeout=900",
            &env,
        )
        .unwrap();
        assert_eq!(s.config.get_hosts(), &[Host::Tcp("h".into())]);
        assert_eq!(s.config.get_user(), Some("u"));
        assert_eq!(s.config.get_password(), Some(&b"p"[..]));
        // libpq takes 1 s as 2 s.
        assert_eq!(s.connect_timeout, Some(Duration::from_secs(2)));
        assert_eq!(s.sslmode, SslMode::Require);
        assert_eq!(s.pool_size, 3);
        assert_eq!(s.statement_timeout, Duration::from_millis(900));
        let s = Settings::from_url_with("postgresql://h/d", &env_of(&[("USER", "me")])).unwrap();
        assert_eq!(s.config.get_user(), Some("me"));
        assert_eq!(s.sslmode, SslMode::Prefer, "libpq's default");
        assert_eq!(s.connect_timeout, Some(CONNECT_TIMEOUT));
        assert_eq!(s.pool_size, POOL_SIZE);
    }

    #[test]
    fn bad_tls_settings_are_refused_with_what_is_wrong() {
        let env = env_of(&[("USER", "me"), ("HOME", "/nonexistent")]);
        let err = |url: &str| match Settings::from_url_with(url, &env) {
            Err(Error::InvalidInput { message }) => message,
            Err(other) => panic!("{url}: {other}"),
            Ok(_) => panic!("{url}: accepted"),
        };
        assert!(err("postgresql://h/d?sslmode=bogus").contains("sslmode=bogus: must be one of"));
        assert!(err("postgresql://h/d?sslmode=verify-full").contains("needs a root certificate"));
        assert!(
            err("postgresql://h/d?sslmode=verify-ca&sslrootcert=/nonexistent/ca.pem")
                .contains("/nonexistent/ca.pem: cannot read it")
        );
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not a certificate\n").unwrap();
        assert!(
            err(&format!(
                "postgresql://h/d?sslmode=verify-full&sslrootcert={}",
                junk.display()
            ))
            .contains("holds no PEM certificate")
        );
        assert!(
            err("postgresql://h/d?sslmode=require&sslrootcert=system")
                .contains("use sslmode=verify-full")
        );
        assert!(err("postgresql://h/d?sslpassword=x").contains("not supported"));
        assert!(err("postgresql://h/d?pool_size=0").contains("pool_size=0"));
        assert!(err("postgresql://h/d?connect_timeout=soon").contains("connect_timeout=soon"));
    }

    #[test]
    fn pgpass_lines_match_as_libpq_reads_them() {
        let text = "# comment\nother:5432:db:ann:no\nh\\:x:*:db:ann:first\n*:5432:*:ann:pass\\:word\n*:*:*:*:any";
        assert_eq!(
            pgpass_lookup(text, "h:x", "1", "db", "ann").as_deref(),
            Some("first")
        );
        assert_eq!(
            pgpass_lookup(text, "db.example", "5432", "x", "ann").as_deref(),
            Some("pass:word")
        );
        assert_eq!(
            pgpass_lookup(text, "q", "1", "x", "bob").as_deref(),
            Some("any")
        );
        assert_eq!(pgpass_lookup("a:b:c", "a", "b", "c", "d"), None);
    }

    #[test]
    fn a_pgpass_file_others_may_read_is_passed_over() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(&file, "*:*:*:*:secret\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let path = file.display().to_string();
        let env = env_of(&[("PGPASSFILE", &path), ("USER", "me")]);
        let s = Settings::from_url_with("postgresql://h/d?sslmode=disable", &env).unwrap();
        assert_eq!(s.config.get_password(), Some(&b"secret"[..]));
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let s = Settings::from_url_with("postgresql://h/d?sslmode=disable", &env).unwrap();
        assert_eq!(s.config.get_password(), None);
        assert!(s.pgpass_note.unwrap().contains("0600"));
    }

    #[test]
    fn percent_escapes_are_decoded() {
        assert_eq!(percent_decode("%2Ftmp%2Fca.pem"), "/tmp/ca.pem");
        assert_eq!(percent_decode("100%"), "100%");
    }
}
