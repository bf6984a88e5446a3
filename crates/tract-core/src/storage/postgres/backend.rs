//! The PostgreSQL backend: a store in one schema of a database, for agents on many machines.
//!
//! Each table of the model is a table of the schema (`meta`, `commits`, `blobs`, `chunks`,
//! `refs`, `reflog`, `branch_stats`). A read is a `REPEATABLE READ READ ONLY` transaction (one
//! consistent state). A write is one transaction that first takes advisory locks
//! (`pg_advisory_xact_lock`, waited for at most the handle's lock timeout): the store's lock
//! shared and one lock per ref it moves, in a fixed order, or the store's lock alone and
//! exclusive for store-wide work (gc, redaction, sync, schema creation). Writers of different
//! branches so write side by side, on every machine, while writers of one branch take turns
//! as redb's do in one file: a writer that read a branch tip moves it from that tip. The ref
//! update also names the tip it replaces (`UPDATE ... WHERE tip = old`) and fails with
//! `HeadMoved` if it does not match. Objects are immutable and keyed by their hash, so writers
//! of different branches may store the same one; rows are written in id order so two such
//! writers never wait for each other in a cycle. Commits are synchronous
//! (`synchronous_commit = on`): an append is durable when it returns.
//!
//! A transaction sends nothing until it needs an answer: its `BEGIN` goes with its first
//! statement, and a write transaction's writes are held back ([`crate::storage::postgres::writes`]) and
//! sent with its next read or its `COMMIT`, in one round trip. A group of appends so costs the
//! round trips and statements of one.
//!
//! Nothing outlives a transaction, so the store works through a pooler in transaction mode
//! (PgBouncer): every statement is unnamed (parsed with its parameters' types, never prepared
//! by name), every table is named with its schema (no `search_path`), settings are `SET LOCAL`
//! and locks are transaction-scoped. Connecting, TLS, timeouts and the pool of connections are
//! [`crate::storage::postgres::connect`]'s. The password of a URL is never shown: not in
//! [`PgBackend::location`], not in an error.

use crate::error::{Error, LockReason, Result};
use crate::storage::backend::{
    Backend, Key, ObjectTable, RawReflogEntry, ReadTx, Records, Row, ScanFn, WriteScope, WriteTx,
};
use crate::storage::postgres::connect::{Pool, Pooled, RunError, Settings};
use crate::storage::postgres::writes::Writes;
use futures_util::FutureExt;
use futures_util::future::{LocalBoxFuture, join_all};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio_postgres::Row as PgRow;
use tokio_postgres::types::{ToSql, Type};

/// How long an idle open transaction may hold its snapshot or locks on the server.
const IDLE_IN_TRANSACTION: Duration = Duration::from_secs(120);
/// The client's bound on a compaction (`VACUUM FULL` rewrites whole tables).
const COMPACT_BOUND: Duration = Duration::from_secs(3600);

/// A store in a PostgreSQL schema.
pub(crate) struct PgBackend {
    pool: Pool,
    /// The schema's name, quoted, with the dot that tables follow.
    prefix: String,
    /// The advisory lock of the whole store: shared by writers, exclusive for store-wide work.
    store_lock: i64,
    /// Why the server lets this role only read the store (`None`: it may write).
    read_only: Option<String>,
}

/// A statement's parameters with their types (statements are parsed unnamed, with them).
pub(crate) type Params<'a> = [(&'a (dyn ToSql + Sync), Type)];

impl PgBackend {
    /// Connects to the store a `postgresql://` URL names, creating its schema and tables if
    /// `create` allows; returns the backend, the key under which this process shares it, and
    /// whether the tables were made now.
    pub(crate) fn connect(
        url: &str,
        create: bool,
        lock_timeout: Duration,
    ) -> Result<(Self, String, bool)> {
        let settings = Settings::from_url(url)?;
        let prefix = format!("\"{}\".", settings.schema);
        let store_lock = lock_key(&settings.schema, None);
        let mut backend = PgBackend {
            pool: Pool::new(settings, lock_timeout)?,
            prefix,
            store_lock,
            read_only: None,
        };
        let (created, read_only) = backend.prepare_schema(create, lock_timeout)?;
        backend.read_only = read_only;
        let key = backend.location().to_string();
        Ok((backend, key, created))
    }

    /// Whether this backend was opened by the process this one forked from (its connections
    /// are not this process's to use).
    pub(crate) fn forked(&self) -> bool {
        self.pool.forked()
    }

    /// Why the server lets this role only read the store (`None`: it may write).
    pub(crate) fn read_only(&self) -> Option<&str> {
        self.read_only.as_deref()
    }

    /// The URL without its password.
    pub(crate) fn location(&self) -> &str {
        &self.pool.settings().location
    }

    fn settings(&self) -> &Settings {
        self.pool.settings()
    }

    /// `sql` with `@.` naming this store's schema.
    fn sql(&self, sql: &str) -> String {
        sql.replace("@.", &self.prefix)
    }

    /// The settings every transaction starts with: nothing is set for the session, so a
    /// pooler may hand the server connection to another client after the transaction.
    fn begin(&self, kind: &str, lock_timeout: Option<Duration>) -> String {
        let mut sql = format!(
            "BEGIN{kind}; SET LOCAL statement_timeout = {}; \
             SET LOCAL idle_in_transaction_session_timeout = {}; \
             SET LOCAL synchronous_commit = on",
            self.settings().statement_timeout.as_millis(),
            IDLE_IN_TRANSACTION
                .max(self.settings().statement_timeout)
                .as_millis(),
        );
        if let Some(t) = lock_timeout {
            sql.push_str(&format!(
                "; SET LOCAL lock_timeout = {}",
                t.as_millis().max(1)
            ));
        }
        sql
    }

    /// Runs a batch of statements (the simple protocol: nothing is prepared) on `conn`.
    fn batch(&self, conn: &mut Option<Pooled>, sql: &str) -> Result<()> {
        let Some(c) = conn.as_ref() else {
            return Err(Error::invalid_op("the transaction has ended"));
        };
        let result = match self.pool.run(c, c.client.batch_execute(sql)) {
            Ok(()) => return Ok(()),
            Err(RunError::Server(e)) => self.settings().error(&e),
            Err(RunError::Lost(e)) => e,
        };
        // A batch that failed may have left a transaction open or aborted on the server: the
        // connection is not given back to the pool.
        if let Some(c) = conn.take() {
            Pooled::take(c).discard();
        }
        Err(result)
    }

    /// Checks that the schema holds a store, or makes one (schema and tables, under the
    /// store's lock so two processes creating it at once do not collide). Returns whether it
    /// made the tables now.
    fn prepare_schema(
        &self,
        create: bool,
        lock_timeout: Duration,
    ) -> Result<(bool, Option<String>)> {
        let schema = self.settings().schema.clone();
        let mut conn = Some(self.pool.get()?);
        // Looked at inside a transaction of its own, so a pooler that cannot carry one
        // (statement mode) is refused here, before anything is made.
        self.batch(&mut conn, &self.begin(" READ ONLY", None))?;
        let exists = {
            let Some(c) = conn.as_ref() else {
                return Err(Error::invalid_op("no connection"));
            };
            // Whether the store is there, and whether the server lets this role write it: a
            // server or database whose transactions are read-only, a standby, a role without
            // the privileges (asked of the tables a write always changes).
            let found = self.pool.run(
                c,
                c.client.query_typed(
                    "SELECT to_regclass(quote_ident($1) || '.meta') IS NOT NULL,
                            CASE WHEN pg_is_in_recovery() THEN 'the server is a standby in recovery'
                                 WHEN current_setting('default_transaction_read_only') = 'on'
                                 THEN 'its transactions are read-only (default_transaction_read_only)'
                                 WHEN to_regclass(quote_ident($1) || '.refs') IS NOT NULL
                                  AND NOT (has_table_privilege(quote_ident($1) || '.commits', 'INSERT')
                                       AND has_table_privilege(quote_ident($1) || '.refs', 'INSERT')
                                       AND has_table_privilege(quote_ident($1) || '.refs', 'UPDATE')
                                       AND has_table_privilege(quote_ident($1) || '.meta', 'INSERT'))
                                 THEN 'role ' || quote_ident(current_user) || ' may not write its tables'
                            END",
                    &[(&schema, Type::TEXT)],
                ),
            );
            let failed = match found {
                Ok(rows) => Ok(rows.first().map_or((false, None), |r| {
                    (r.get::<_, bool>(0), r.get::<_, Option<String>>(1))
                })),
                Err(RunError::Server(e)) => Err(self.settings().error(&e)),
                Err(RunError::Lost(e)) => Err(e),
            };
            if failed.is_err()
                && let Some(c) = conn.take()
            {
                Pooled::take(c).discard();
            }
            failed?
        };
        self.batch(&mut conn, "COMMIT")?;
        let (exists, read_only) = exists;
        if exists {
            return Ok((false, read_only));
        }
        if !create {
            return Err(Error::NotAStore {
                path: PathBuf::from(self.location()),
                reason: format!("schema \"{schema}\" holds no tract store"),
            });
        }
        let sql = format!(
            "{begin};
             SELECT pg_advisory_xact_lock({key});
             CREATE SCHEMA IF NOT EXISTS \"{schema}\";
             CREATE TABLE IF NOT EXISTS @.meta (key text COLLATE \"C\" PRIMARY KEY, value bytea NOT NULL);
             CREATE TABLE IF NOT EXISTS @.commits (id bytea PRIMARY KEY, parent bytea, record bytea NOT NULL);
             CREATE TABLE IF NOT EXISTS @.blobs (id bytea PRIMARY KEY, record bytea NOT NULL);
             CREATE TABLE IF NOT EXISTS @.chunks (id bytea PRIMARY KEY, record bytea NOT NULL);
             CREATE TABLE IF NOT EXISTS @.refs (name text COLLATE \"C\" PRIMARY KEY, tip bytea NOT NULL);
             CREATE TABLE IF NOT EXISTS @.reflog (name text COLLATE \"C\", seq bigint, entry bytea NOT NULL, PRIMARY KEY (name, seq));
             CREATE TABLE IF NOT EXISTS @.branch_stats (name text COLLATE \"C\" PRIMARY KEY, stats bytea NOT NULL);
             ALTER TABLE @.commits ALTER COLUMN record SET STORAGE EXTERNAL;
             ALTER TABLE @.blobs ALTER COLUMN record SET STORAGE EXTERNAL;
             ALTER TABLE @.chunks ALTER COLUMN record SET STORAGE EXTERNAL;
             COMMIT;",
            begin = self.begin("", Some(lock_timeout)),
            key = self.store_lock,
        );
        self.batch(&mut conn, &self.sql(&sql))
            .map_err(|e| explain_create(e, &schema))?;
        Ok((true, None))
    }

    /// A read transaction: one consistent state. Its `BEGIN` goes with its first statement.
    pub(crate) fn read(self: &Arc<Self>) -> Result<PgTx> {
        self.reader(" ISOLATION LEVEL REPEATABLE READ READ ONLY")
    }

    /// A transaction of `kind` that takes no lock and moves no ref.
    fn reader(self: &Arc<Self>, kind: &str) -> Result<PgTx> {
        let begin = self.begin(kind, None);
        PgTx::new(self, begin, None, None, HashSet::new())
    }

    /// A transaction that reads as [`PgBackend::read`] does, but at read committed (each
    /// statement sees what was committed before it) and allowed to write through
    /// [`PgTx::sql`]: the search index's upkeep, which reads the store and writes its own
    /// tables on one connection, then commits with [`PgTx::commit_sql`].
    pub(crate) fn read_write(self: &Arc<Self>) -> Result<PgTx> {
        self.reader("")
    }

    /// A write transaction holding the locks `scope` needs, each waited for up to
    /// `lock_timeout`.
    pub(crate) fn write(
        self: &Arc<Self>,
        scope: &WriteScope,
        lock_timeout: Duration,
    ) -> Result<Box<dyn WriteTx>> {
        let mut sql = self.begin("", Some(lock_timeout));
        let mut locked = HashSet::new();
        match scope {
            WriteScope::Store => {
                sql.push_str(&format!(
                    "; SELECT pg_advisory_xact_lock({})",
                    self.store_lock
                ));
            }
            WriteScope::Refs(names) => {
                sql.push_str(&format!(
                    "; SELECT pg_advisory_xact_lock_shared({})",
                    self.store_lock
                ));
                // One fixed order for every process: by key.
                let mut keys: Vec<i64> = names
                    .iter()
                    .map(|n| lock_key(&self.settings().schema, Some(n)))
                    .collect();
                keys.sort_unstable();
                keys.dedup();
                for k in keys {
                    sql.push_str(&format!("; SELECT pg_advisory_xact_lock({k})"));
                }
                locked.extend(names.iter().cloned());
            }
        }
        // Sent with the transaction's first statement.
        PgTx::new(self, sql, Some(lock_timeout), Some(scope.clone()), locked)
            .map(|tx| Box::new(tx) as Box<dyn WriteTx>)
    }

    /// A lock not had within the lock timeout is a busy store, as redb's.
    fn lock_error(&self, e: Error, lock_timeout: Duration) -> Error {
        match &e {
            Error::Database { reason, .. } if reason.contains("(55P03)") => Error::StoreLocked {
                path: PathBuf::from(self.location()),
                reason: LockReason::Busy {
                    waited: lock_timeout,
                },
            },
            _ => e,
        }
    }

    /// Rewrites the object tables (and the search index's table, when there is one), so
    /// removed and redacted records leave no bytes behind.
    fn compact(self: &Arc<Self>) -> Result<()> {
        let mut tables = "@.commits, @.blobs, @.chunks".to_string();
        let search = self
            .read()?
            .sql("SELECT to_regclass('@.search') IS NOT NULL", &[])?;
        if search.first().is_some_and(|r| r.get::<_, bool>(0)) {
            tables.push_str(", @.search");
        }
        let conn = self.pool.get()?;
        let sql = self.sql(&format!("VACUUM FULL {tables}"));
        match self
            .pool
            .run_bounded(&conn, COMPACT_BOUND, conn.client.batch_execute(&sql))
        {
            Ok(()) => Ok(()),
            Err(RunError::Server(e)) => Err(self.settings().error(&e)),
            Err(RunError::Lost(e)) => {
                Pooled::take(conn).discard();
                Err(e)
            }
        }
    }
}

/// A store in a PostgreSQL schema, as the store opens it (shared by the handles of this
/// process, and by its transactions).
impl Backend for Arc<PgBackend> {
    fn read(&self) -> Result<Box<dyn ReadTx + Sync>> {
        Ok(Box::new(PgBackend::read(self)?))
    }

    fn write(&self, scope: &WriteScope, lock_timeout: Duration) -> Result<Box<dyn WriteTx>> {
        PgBackend::write(self, scope, lock_timeout)
    }

    fn read_only(&self) -> Option<&str> {
        PgBackend::read_only(self)
    }

    fn is_database(&self) -> bool {
        true
    }

    fn location(&self) -> Option<String> {
        Some(PgBackend::location(self).to_string())
    }

    fn compact(self: Box<Self>, _lock_timeout: Duration) -> Result<()> {
        PgBackend::compact(&self)
    }

    fn shareable(&self) -> bool {
        !self.forked()
    }

    #[cfg(feature = "testing")]
    fn round_trips(&self) -> Option<u64> {
        Some(self.pool.round_trips())
    }
}

impl PgBackend {
    /// A transaction-scoped advisory lock of this store for work that is not a ref's or the
    /// whole store's (`what` names it: the search index's writer).
    pub(crate) fn lock_of(&self, what: &str) -> i64 {
        lock_key(&self.settings().schema, Some(&format!("\0{what}")))
    }
}

/// The advisory lock of a store's schema (`name` `None`) or of one of its refs.
fn lock_key(schema: &str, name: Option<&str>) -> i64 {
    let mut h = blake3::Hasher::new();
    h.update(schema.as_bytes());
    if let Some(n) = name {
        h.update(b"\0ref\0");
        h.update(n.as_bytes());
    }
    let mut b = [0u8; 8];
    b.copy_from_slice(&h.finalize().as_bytes()[..8]);
    i64::from_le_bytes(b)
}

/// A failed schema creation, with the right the role lacks.
fn explain_create(e: Error, schema: &str) -> Error {
    match e {
        Error::Database { store, reason } if reason.contains("(42501)") => Error::Database {
            store,
            reason: format!(
                "{reason}: making the store's schema \"{schema}\" needs the CREATE privilege \
                 on the database (GRANT CREATE ON DATABASE ... TO the role), or a schema \
                 \"{schema}\" that the role owns"
            ),
        },
        other => other,
    }
}

/// A transaction on one connection (reading, or writing). Its connection goes back to the
/// pool when it ends, unless a statement failed on it.
///
/// Nothing is sent until the transaction needs an answer: its `BEGIN` (with its settings and
/// locks) and the writes it holds back ([`Writes`]) go in the round trip of its next read or
/// of its `COMMIT`. A write transaction keeps what it read under its locks (tips, counts, the
/// tips' commits), which nobody else can change before it ends.
pub(crate) struct PgTx {
    backend: Arc<PgBackend>,
    conn: Mutex<Option<Pooled>>,
    /// The `BEGIN` batch, until it is sent; a transaction that sent nothing ends without a
    /// round trip.
    begin: Mutex<Option<String>>,
    /// A write transaction's lock timeout, to name a lock not had in time.
    lock_timeout: Option<Duration>,
    /// The first statement error: a caller may have handled it (a read whose miss is not
    /// fatal), but the transaction is aborted on the server, so `commit` reports it.
    failed: Mutex<Option<Error>>,
    /// What a write transaction may move (`None` for a read).
    scope: Option<WriteScope>,
    /// The refs whose locks this transaction holds.
    locked: Mutex<HashSet<String>>,
    /// The tips a write transaction has read or set: under their locks nobody else moves
    /// them, so each is read once.
    tips: Mutex<HashMap<String, Option<Key>>>,
    /// Writes held back until the next round trip.
    writes: Mutex<Writes>,
    /// Metadata keys a read asked for ahead, sent with its next statement.
    wanted: Mutex<Vec<String>>,
    /// What a write transaction read, or wrote, of its locked refs' counts and commits.
    known: Mutex<Known>,
}

/// A write transaction's reads that need no round trip again.
#[derive(Default)]
struct Known {
    /// Whether the tips, counts and tip commits of the scope's refs were read.
    fetched: bool,
    /// The counts of locked refs (`None`: it has none).
    stats: HashMap<String, Option<Vec<u8>>>,
    /// Commit records read (immutable under their ids).
    commits: HashMap<Key, Vec<u8>>,
    /// A read transaction's metadata values read: it sees one state of the store, so each is
    /// read once (a cold read asks for the redaction count and a branch's checkpoint from
    /// several places).
    metas: HashMap<String, Option<Vec<u8>>>,
}

/// What a round trip asks after the `BEGIN` and the held-back writes.
enum Ask<'a> {
    /// Nothing more: the writes are sent, their outcome checked.
    Nothing,
    /// A statement's rows.
    Rows(&'a str, &'a Params<'a>),
    /// The `COMMIT`.
    Commit,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl PgTx {
    fn new(
        backend: &Arc<PgBackend>,
        begin: String,
        lock_timeout: Option<Duration>,
        scope: Option<WriteScope>,
        locked: HashSet<String>,
    ) -> Result<Self> {
        Ok(PgTx {
            conn: Mutex::new(Some(backend.pool.get()?)),
            backend: Arc::clone(backend),
            begin: Mutex::new(Some(begin)),
            lock_timeout,
            failed: Mutex::new(None),
            scope,
            locked: Mutex::new(locked),
            tips: Mutex::default(),
            writes: Mutex::default(),
            wanted: Mutex::default(),
            known: Mutex::default(),
        })
    }

    /// The transaction's first statement error, if one failed.
    fn failure(&self) -> MutexGuard<'_, Option<Error>> {
        lock(&self.failed)
    }

    fn conn(&self) -> MutexGuard<'_, Option<Pooled>> {
        lock(&self.conn)
    }

    fn writes(&self) -> MutexGuard<'_, Writes> {
        lock(&self.writes)
    }

    fn known(&self) -> MutexGuard<'_, Known> {
        lock(&self.known)
    }

    /// An error of this transaction: the first one is kept for `commit`; a lost connection
    /// is discarded.
    fn failed_with(&self, guard: &mut Option<Pooled>, e: RunError) -> Error {
        let error = match e {
            RunError::Server(e) => self.backend.settings().error(&e),
            RunError::Lost(e) => {
                if let Some(c) = guard.take() {
                    Pooled::take(c).discard();
                }
                e
            }
        };
        self.failure().get_or_insert_with(|| error.clone());
        error
    }

    /// One round trip: the `BEGIN` if not sent yet, the held-back writes, then what `ask`
    /// asks, all sent before any answer is awaited. Returns the rows asked for. A held-back
    /// ref move that did not happen is `HeadMoved`, and fails the transaction.
    fn round_trip(&self, ask: Ask<'_>) -> Result<Vec<PgRow>> {
        let begin = lock(&self.begin).take();
        let statements = std::mem::take(&mut *self.writes()).statements();
        if begin.is_none() && statements.is_empty() && matches!(ask, Ask::Nothing) {
            return Ok(Vec::new());
        }
        let sqls: Vec<String> = statements.iter().map(|s| self.backend.sql(s.sql)).collect();
        let params: Vec<Vec<(&(dyn ToSql + Sync), Type)>> = statements
            .iter()
            .map(|s| {
                s.params
                    .iter()
                    .map(|(v, t)| (&**v as &(dyn ToSql + Sync), t.clone()))
                    .collect()
            })
            .collect();
        let asked = match &ask {
            Ask::Rows(sql, params) => Some((self.backend.sql(sql), *params)),
            _ => None,
        };
        // Metadata a read asked for ahead goes just before the statement asked.
        let wanted = match asked.is_some() && self.scope.is_none() {
            true => std::mem::take(&mut *lock(&self.wanted)),
            false => Vec::new(),
        };
        let wanted_sql = (!wanted.is_empty()).then(|| self.backend.sql(WANTED_METAS));
        let wanted_params: [(&(dyn ToSql + Sync), Type); 1] = [(&wanted, Type::TEXT_ARRAY)];
        let mut guard = self.conn();
        let Some(c) = guard.as_ref() else {
            return Err(Error::invalid_op("the transaction has ended"));
        };
        let client = &c.client;
        type Answer<'f> =
            LocalBoxFuture<'f, std::result::Result<Vec<PgRow>, tokio_postgres::Error>>;
        let mut futures: Vec<Answer<'_>> = Vec::with_capacity(statements.len() + 2);
        if let Some(b) = &begin {
            futures.push(Box::pin(async move {
                client.batch_execute(b).await.map(|()| Vec::new())
            }));
        }
        for (sql, p) in sqls.iter().zip(&params) {
            futures.push(Box::pin(client.query_typed(sql, p)));
        }
        if let Some(sql) = &wanted_sql {
            futures.push(Box::pin(client.query_typed(sql, &wanted_params)));
        }
        if let Some((sql, p)) = &asked {
            futures.push(Box::pin(client.query_typed(sql, p)));
        }
        if let Ask::Commit = ask {
            futures.push(Box::pin(async move {
                client.batch_execute("COMMIT").await.map(|()| Vec::new())
            }));
        }
        // Pipelined: `join_all` polls its futures in order (fewer than 30 of them here), and
        // each sends its request on its first poll. After a failed statement the server
        // refuses the rest (the transaction is aborted; a `COMMIT` rolls back), so the first
        // error in order is the one to report.
        let result = self.backend.pool.run(c, async move {
            join_all(futures)
                .await
                .into_iter()
                .collect::<std::result::Result<Vec<_>, _>>()
        });
        let mut answers = match result {
            Ok(a) => a,
            Err(e) => {
                let e = self.failed_with(&mut guard, e);
                // A lock not had in time (the `BEGIN`'s, or a ref's taken later) is a busy
                // store.
                return Err(match self.lock_timeout {
                    Some(t) => self.backend.lock_error(e, t),
                    None => e,
                });
            }
        };
        drop(guard);
        let rows = match ask {
            Ask::Rows(..) => answers.pop().unwrap_or_default(),
            _ => Vec::new(),
        };
        if !wanted.is_empty() {
            let mut found: HashMap<String, Vec<u8>> = answers
                .pop()
                .unwrap_or_default()
                .into_iter()
                .map(|r| (r.get(0), r.get(1)))
                .collect();
            let mut known = self.known();
            for key in wanted {
                let value = found.remove(&key);
                known.metas.insert(key, value);
            }
        }
        let skip = usize::from(begin.is_some());
        for (s, answer) in statements.iter().zip(answers.iter().skip(skip)) {
            if s.moves.is_empty() {
                continue;
            }
            let moved: HashSet<&str> = answer.iter().map(|r| r.get::<_, &str>(0)).collect();
            if let Some((name, old)) = s.moves.iter().find(|(n, _)| !moved.contains(n.as_str())) {
                let actual = self.stored_tip(name)?;
                let error = Error::HeadMoved {
                    branch: name.clone(),
                    expected: old.map(crate::id::CommitId::from_bytes),
                    actual: actual.map(crate::id::CommitId::from_bytes),
                };
                self.failure().get_or_insert_with(|| error.clone());
                return Err(error);
            }
        }
        Ok(rows)
    }

    /// Runs one statement (`@.` naming the schema), after what is held back, and returns its
    /// rows.
    fn query(&self, sql: &str, params: &Params<'_>) -> Result<Vec<PgRow>> {
        self.round_trip(Ask::Rows(sql, params))
    }

    /// In a write transaction scoped to some refs, takes the lock of a ref it had not named
    /// before touching it (so a plain append through the store's `HEAD` still waits for the
    /// branch's other writers rather than failing).
    fn lock_ref(&self, name: &str) -> Result<()> {
        let Some(WriteScope::Refs(_)) = &self.scope else {
            return Ok(());
        };
        if lock(&self.locked).contains(name) {
            return Ok(());
        }
        let key = lock_key(&self.backend.settings().schema, Some(name));
        self.query("SELECT pg_advisory_xact_lock($1)", &[(&key, Type::INT8)])?;
        lock(&self.locked).insert(name.to_string());
        Ok(())
    }

    fn known_tips(&self) -> MutexGuard<'_, HashMap<String, Option<Key>>> {
        lock(&self.tips)
    }

    /// A branch's tip as the database holds it now.
    fn stored_tip(&self, name: &str) -> Result<Option<Key>> {
        let rows = self.query(
            "SELECT tip FROM @.refs WHERE name = $1",
            &[(&name, Type::TEXT)],
        )?;
        rows.first()
            .map(|r| key_of(r.get::<_, &[u8]>(0)))
            .transpose()
    }

    /// In a write transaction scoped to refs, reads each one's tip, counts and tip commit
    /// once, in one statement: what a group of appends reads before it writes.
    fn fetch_scope(&self) -> Result<()> {
        let Some(WriteScope::Refs(names)) = &self.scope else {
            return Ok(());
        };
        if std::mem::replace(&mut self.known().fetched, true) || names.is_empty() {
            return Ok(());
        }
        let rows = self.query(
            "SELECT n.name, r.tip, s.stats, c.record FROM unnest($1::text[]) AS n(name)
             LEFT JOIN @.refs r ON r.name = n.name
             LEFT JOIN @.branch_stats s ON s.name = n.name
             LEFT JOIN @.commits c ON c.id = r.tip",
            &[(names, Type::TEXT_ARRAY)],
        )?;
        let mut tips = self.known_tips();
        let mut known = self.known();
        for row in rows {
            let name: String = row.get(0);
            let tip = row.get::<_, Option<&[u8]>>(1).map(key_of).transpose()?;
            if let (Some(tip), Some(record)) = (tip, row.get::<_, Option<Vec<u8>>>(3)) {
                known.commits.insert(tip, record);
            }
            known
                .stats
                .entry(name.clone())
                .or_insert_with(|| row.get(2));
            tips.entry(name).or_insert(tip);
        }
        Ok(())
    }

    /// Ends the transaction with `sql` (`COMMIT` or `ROLLBACK`); one that sent nothing just
    /// gives its connection back.
    fn end(&self, sql: &str) -> Result<()> {
        let mut conn = self.conn().take();
        if conn.is_none() || lock(&self.begin).take().is_some() {
            return Ok(());
        }
        let failed = self.failure().is_some();
        if sql == "ROLLBACK"
            && self.scope.is_none()
            && !failed
            && let Some(c) = conn.take()
        {
            // A read's end is sent, not waited for: the connection answers its requests in
            // order, so whoever takes it next from the pool is answered after the ROLLBACK,
            // and a connection lost meanwhile fails that next request. One round trip less
            // per read.
            let _ = c.client.batch_execute(sql).now_or_never();
            return Ok(());
        }
        let result = self.backend.batch(&mut conn, sql);
        if let Some(c) = conn
            && (result.is_err() || failed)
        {
            Pooled::take(c).discard();
        }
        result
    }
}

impl Drop for PgTx {
    fn drop(&mut self) {
        let _ = self.end("ROLLBACK");
    }
}

/// The metadata values a read asked for ahead ([`ReadTx::want_metas`]).
const WANTED_METAS: &str = "SELECT key, value FROM @.meta WHERE key = ANY($1)";

/// One statement per table, chosen without formatting SQL at run time (statements are
/// prepared once per connection under their text).
macro_rules! per_table {
    ($table:expr, $commits:expr, $blobs:expr, $chunks:expr) => {
        match $table {
            ObjectTable::Commits => $commits,
            ObjectTable::Blobs => $blobs,
            ObjectTable::Chunks => $chunks,
        }
    };
}

/// Rows a scan reads per query.
const SCAN_PAGE: usize = 512;

/// The id right after `key` in byte order, `None` after the last one.
fn next_key(mut key: Key) -> Option<Key> {
    for b in key.iter_mut().rev() {
        if *b == 0xff {
            *b = 0;
        } else {
            *b += 1;
            return Some(key);
        }
    }
    None
}

/// The values `found` holds for `keys`, in order: each moved out where its key is asked once
/// (a batch of a view's messages is a megabyte), copied for a key asked again (two commits of
/// one payload).
fn each_once<K: std::hash::Hash + Eq>(
    keys: &[K],
    mut found: HashMap<K, Vec<u8>>,
) -> Vec<Option<Vec<u8>>> {
    let mut left: HashMap<&K, usize> = HashMap::with_capacity(keys.len());
    for k in keys {
        *left.entry(k).or_insert(0) += 1;
    }
    keys.iter()
        .map(|k| {
            let n = left.get_mut(k)?;
            *n -= 1;
            match *n {
                0 => found.remove(k),
                _ => found.get(k).cloned(),
            }
        })
        .collect()
}

fn key_of(bytes: &[u8]) -> Result<Key> {
    Key::try_from(bytes).map_err(|_| Error::corrupt("a stored id is not 32 bytes"))
}

impl PgTx {
    /// Runs one statement in this transaction (`@.` naming the store's schema) and returns
    /// its rows: the backend's own work beside the store's tables (its search index's), in
    /// the state the reads see and on their connection.
    pub(crate) fn sql(&self, sql: &str, params: &Params<'_>) -> Result<Vec<PgRow>> {
        self.query(sql, params)
    }

    /// Commits what [`PgTx::sql`] wrote, in a transaction opened to write it
    /// ([`PgBackend::read_write`]); a statement that failed fails it, and nothing is kept.
    pub(crate) fn commit_sql(self) -> Result<()> {
        let failed = self.failure().clone();
        if let Some(error) = failed {
            let _ = self.end("ROLLBACK");
            return Err(error);
        }
        self.end("COMMIT")
    }
}

impl PgTx {
    /// The commit records from `head` back along first parents, newest first, in one query:
    /// stopping before `stop`, and after `limit` records.
    ///
    /// The recursion carries ids only, each step one lookup of the parent by primary key, and
    /// each record is read once at the end. Both are subqueries so the planner cannot choose a
    /// join: a hash join scans the whole table at every step of a recursion it expects to be
    /// short (173 ms for 1,000 commits, against 5 ms this way).
    fn chain(&self, head: &Key, stop: Option<&Key>, limit: Option<usize>) -> Result<Records> {
        let sql = "WITH RECURSIVE chain(id, parent, depth) AS (
                SELECT id, parent, 1 FROM @.commits WHERE id = $1
                UNION ALL
                SELECT chain.parent,
                       (SELECT c.parent FROM @.commits c WHERE c.id = chain.parent),
                       chain.depth + 1
                FROM chain
                WHERE chain.parent IS NOT NULL
                  AND ($2::bytea IS NULL OR chain.parent <> $2::bytea)
                  AND ($3::integer IS NULL OR chain.depth < $3)
            ) SELECT id, (SELECT c.record FROM @.commits c WHERE c.id = chain.id)
              FROM chain ORDER BY depth";
        let stop = stop.map(|s| s.as_slice());
        let limit = limit.map(|l| i32::try_from(l).unwrap_or(i32::MAX));
        let rows = self.query(
            sql,
            &[
                (&head.as_slice(), Type::BYTEA),
                (&stop, Type::BYTEA),
                (&limit, Type::INT4),
            ],
        )?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            // A parent the table does not hold ends the chain here; the caller's walk reads
            // on from it and says what is missing.
            let Some(record) = row.get::<_, Option<Vec<u8>>>(1) else {
                break;
            };
            out.push((key_of(row.get::<_, &[u8]>(0))?, record));
        }
        Ok(out)
    }
}

impl ReadTx for PgTx {
    fn object(&self, table: ObjectTable, key: &Key) -> Result<Option<Vec<u8>>> {
        let remember = self.scope.is_some() && table == ObjectTable::Commits;
        if remember && let Some(record) = self.known().commits.get(key) {
            return Ok(Some(record.clone()));
        }
        let sql = per_table!(
            table,
            "SELECT record FROM @.commits WHERE id = $1",
            "SELECT record FROM @.blobs WHERE id = $1",
            "SELECT record FROM @.chunks WHERE id = $1"
        );
        let rows = self.query(sql, &[(&key.as_slice(), Type::BYTEA)])?;
        let record: Option<Vec<u8>> = rows.first().map(|r| r.get(0));
        if remember && let Some(r) = &record {
            self.known().commits.insert(*key, r.clone());
        }
        Ok(record)
    }

    fn objects(&self, table: ObjectTable, keys: &[Key]) -> Result<Vec<Option<Vec<u8>>>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let sql = per_table!(
            table,
            "SELECT id, record FROM @.commits WHERE id = ANY($1)",
            "SELECT id, record FROM @.blobs WHERE id = ANY($1)",
            "SELECT id, record FROM @.chunks WHERE id = ANY($1)"
        );
        let ids: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
        let rows = self.query(sql, &[(&ids, Type::BYTEA_ARRAY)])?;
        let mut found: HashMap<Key, Vec<u8>> = HashMap::with_capacity(rows.len());
        for row in rows {
            found.insert(key_of(row.get::<_, &[u8]>(0))?, row.get(1));
        }
        Ok(each_once(keys, found))
    }

    fn has_objects(&self, table: ObjectTable, keys: &[Key]) -> Result<Vec<bool>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let sql = per_table!(
            table,
            "SELECT id FROM @.commits WHERE id = ANY($1)",
            "SELECT id FROM @.blobs WHERE id = ANY($1)",
            "SELECT id FROM @.chunks WHERE id = ANY($1)"
        );
        let ids: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
        let rows = self.query(sql, &[(&ids, Type::BYTEA_ARRAY)])?;
        let mut found = HashSet::with_capacity(rows.len());
        for row in rows {
            found.insert(key_of(row.get::<_, &[u8]>(0))?);
        }
        Ok(keys.iter().map(|k| found.contains(k)).collect())
    }

    fn batched(&self) -> bool {
        true
    }

    fn first_parent_records(&self, head: &Key, stop: Option<&Key>) -> Result<Option<Records>> {
        self.chain(head, stop, None).map(Some)
    }

    fn first_parent_records_upto(&self, head: &Key, limit: usize) -> Result<Option<Records>> {
        self.chain(head, None, Some(limit)).map(Some)
    }

    fn scan(
        &self,
        table: ObjectTable,
        low: &Key,
        high: &Key,
        limit: Option<usize>,
        f: &mut ScanFn<'_>,
    ) -> Result<()> {
        // Pages by id, so `f` runs with the connection free (it may read more, a blob's chunks)
        // and a scan of a whole table never holds it all in memory.
        let sql = per_table!(
            table,
            "SELECT id, record FROM @.commits WHERE id >= $1 AND id <= $2 ORDER BY id LIMIT $3",
            "SELECT id, record FROM @.blobs WHERE id >= $1 AND id <= $2 ORDER BY id LIMIT $3",
            "SELECT id, record FROM @.chunks WHERE id >= $1 AND id <= $2 ORDER BY id LIMIT $3"
        );
        let mut left = limit.unwrap_or(usize::MAX);
        let mut from = *low;
        while left > 0 {
            let page = left.min(SCAN_PAGE);
            let n = i64::try_from(page).unwrap_or(i64::MAX);
            let rows = self.query(
                sql,
                &[
                    (&from.as_slice(), Type::BYTEA),
                    (&high.as_slice(), Type::BYTEA),
                    (&n, Type::INT8),
                ],
            )?;
            let mut last = None;
            for row in &rows {
                let key = key_of(row.get::<_, &[u8]>(0))?;
                f(key, row.get::<_, &[u8]>(1))?;
                last = Some(key);
            }
            left -= rows.len();
            match last.and_then(next_key) {
                Some(next) if rows.len() == page => from = next,
                _ => break,
            }
        }
        Ok(())
    }

    fn meta(&self, key: &str) -> Result<Option<Vec<u8>>> {
        let read = self.scope.is_none();
        if read && let Some(value) = self.known().metas.get(key) {
            return Ok(value.clone());
        }
        let rows = self.query(
            "SELECT value FROM @.meta WHERE key = $1",
            &[(&key, Type::TEXT)],
        )?;
        let value: Option<Vec<u8>> = rows.first().map(|r| r.get(0));
        if read {
            self.known().metas.insert(key.to_string(), value.clone());
        }
        Ok(value)
    }

    fn read_ahead(&self, tip: &str, keys: &[String], named: Option<(&str, &str)>) -> Result<()> {
        // Only a read sees one state throughout; a write reads what it locks as it locks it.
        if self.scope.is_some() {
            return Ok(());
        }
        let (by, prefix) = named.unzip();
        let rows = self.query(
            "SELECT true, name, tip FROM @.refs WHERE name = $1
             UNION ALL
             SELECT false, key, value FROM @.meta
             WHERE key = ANY($2) OR key = $3 || encode((SELECT value FROM @.meta WHERE key = $4), 'hex')",
            &[
                (&tip, Type::TEXT),
                (&keys, Type::TEXT_ARRAY),
                (&prefix, Type::TEXT),
                (&by, Type::TEXT),
            ],
        )?;
        let mut found_tip = None;
        let mut found: HashMap<String, Vec<u8>> = HashMap::with_capacity(rows.len());
        for row in rows {
            match row.get::<_, bool>(0) {
                true => found_tip = Some(key_of(row.get::<_, &[u8]>(2))?),
                false => {
                    found.insert(row.get(1), row.get(2));
                }
            }
        }
        // What was asked and not found is known not to be there.
        let pointed = named.and_then(|(by, prefix)| {
            let value = found.get(by)?;
            let hex: String = value.iter().map(|b| format!("{b:02x}")).collect();
            Some(format!("{prefix}{hex}"))
        });
        let mut known = self.known();
        for key in keys.iter().chain(pointed.as_ref()) {
            known.metas.insert(key.clone(), found.remove(key));
        }
        drop(known);
        self.known_tips().insert(tip.to_string(), found_tip);
        Ok(())
    }

    fn metas(&self, keys: &[String]) -> Result<Vec<Option<Vec<u8>>>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        // A read sees one state: what it read, or asked for ahead, is answered from memory.
        if self.scope.is_none() {
            let known = self.known();
            let hit: Option<Vec<Option<Vec<u8>>>> =
                keys.iter().map(|k| known.metas.get(k).cloned()).collect();
            if let Some(values) = hit {
                return Ok(values);
            }
        }
        let rows = self.query(WANTED_METAS, &[(&keys, Type::TEXT_ARRAY)])?;
        let mut found: HashMap<String, Vec<u8>> = HashMap::with_capacity(rows.len());
        for row in rows {
            found.insert(row.get(0), row.get(1));
        }
        Ok(each_once(keys, found))
    }

    fn want_metas(&self, keys: &[String]) {
        // Only a read sees one state throughout; a write reads what it locks as it locks it.
        if self.scope.is_some() {
            return;
        }
        let known = self.known();
        let mut wanted = lock(&self.wanted);
        for key in keys {
            if !known.metas.contains_key(key) && !wanted.contains(key) {
                wanted.push(key.clone());
            }
        }
    }

    fn meta_keys(&self, prefix: &str) -> Result<Vec<String>> {
        // `starts_with` rather than LIKE: a prefix holds no pattern characters to escape.
        let rows = self.query(
            "SELECT key FROM @.meta WHERE starts_with(key, $1) ORDER BY key COLLATE \"C\"",
            &[(&prefix, Type::TEXT)],
        )?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    fn tip(&self, name: &str) -> Result<Option<Key>> {
        if self.scope.is_none() {
            // One state of the store: each tip is read once.
            if let Some(tip) = self.known_tips().get(name) {
                return Ok(*tip);
            }
            let tip = self.stored_tip(name)?;
            self.known_tips().insert(name.to_string(), tip);
            return Ok(tip);
        }
        if let Some(tip) = self.known_tips().get(name) {
            return Ok(*tip);
        }
        self.fetch_scope()?;
        if let Some(tip) = self.known_tips().get(name) {
            return Ok(*tip);
        }
        self.lock_ref(name)?;
        let tip = self.stored_tip(name)?;
        self.known_tips().insert(name.to_string(), tip);
        Ok(tip)
    }

    fn tips(&self) -> Result<Vec<(String, Key)>> {
        let rows = self.query("SELECT name, tip FROM @.refs ORDER BY name", &[])?;
        rows.iter()
            .map(|r| Ok((r.get(0), key_of(r.get::<_, &[u8]>(1))?)))
            .collect()
    }

    fn reflog(&self, name: &str, limit: Option<usize>) -> Result<Vec<Vec<u8>>> {
        let limit = limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
        let rows = self.query(
            "SELECT entry FROM @.reflog WHERE name = $1 ORDER BY seq DESC LIMIT $2",
            &[(&name, Type::TEXT), (&limit, Type::INT8)],
        )?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    fn reflog_all(&self) -> Result<Vec<RawReflogEntry>> {
        let rows = self.query(
            "SELECT name, seq, entry FROM @.reflog ORDER BY name, seq",
            &[],
        )?;
        Ok(rows
            .iter()
            .map(|r| {
                let seq: i64 = r.get(1);
                (r.get(0), u64::try_from(seq).unwrap_or(0), r.get(2))
            })
            .collect())
    }

    fn stats(&self, name: &str) -> Result<Option<Vec<u8>>> {
        if self.scope.is_some() {
            self.fetch_scope()?;
            if let Some(stats) = self.known().stats.get(name) {
                return Ok(stats.clone());
            }
        }
        let rows = self.query(
            "SELECT stats FROM @.branch_stats WHERE name = $1",
            &[(&name, Type::TEXT)],
        )?;
        Ok(rows.first().map(|r| r.get(0)))
    }

    fn all_stats(&self) -> Result<Vec<(String, Vec<u8>)>> {
        let rows = self.query("SELECT name, stats FROM @.branch_stats ORDER BY name", &[])?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }
}

impl WriteTx for PgTx {
    fn put_objects(&mut self, table: ObjectTable, rows: &[Row<'_>]) -> Result<()> {
        let mut known = self.known();
        let mut writes = self.writes();
        for r in rows {
            if table == ObjectTable::Commits {
                known.commits.remove(&r.key);
            }
            writes.put_object(table, r.key, r.record, r.parent);
        }
        Ok(())
    }

    fn remove_objects(&mut self, table: ObjectTable, keys: &[Key]) -> Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        let sql = per_table!(
            table,
            "DELETE FROM @.commits WHERE id = ANY($1)",
            "DELETE FROM @.blobs WHERE id = ANY($1)",
            "DELETE FROM @.chunks WHERE id = ANY($1)"
        );
        let ids: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
        self.query(sql, &[(&ids, Type::BYTEA_ARRAY)])?;
        let mut known = self.known();
        for k in keys {
            known.commits.remove(k);
        }
        Ok(())
    }

    fn set_meta(&mut self, key: &str, value: Option<&[u8]>) -> Result<()> {
        self.writes().set_meta(key, value);
        Ok(())
    }

    fn set_tip(&mut self, name: &str, old: Option<Key>, new: Option<Key>) -> Result<()> {
        self.lock_ref(name)?;
        // Read under the ref's lock: what the held-back move replaces, checked again by the
        // statement that makes it.
        let actual = self.tip(name)?;
        if actual != old {
            return Err(Error::HeadMoved {
                branch: name.to_string(),
                expected: old.map(crate::id::CommitId::from_bytes),
                actual: actual.map(crate::id::CommitId::from_bytes),
            });
        }
        self.writes().move_ref(name, old, new);
        self.known_tips().insert(name.to_string(), new);
        Ok(())
    }

    fn push_reflog(&mut self, name: &str, entry: &[u8]) -> Result<()> {
        self.lock_ref(name)?;
        self.writes().log(name, entry);
        Ok(())
    }

    fn remove_reflog(&mut self, entries: &[(String, u64)]) -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
        let seqs: Vec<i64> = entries
            .iter()
            .map(|(_, s)| i64::try_from(*s).unwrap_or(i64::MAX))
            .collect();
        self.query(
            "DELETE FROM @.reflog r USING unnest($1::text[], $2::bigint[]) AS d(name, seq)
             WHERE r.name = d.name AND r.seq = d.seq",
            &[(&names, Type::TEXT_ARRAY), (&seqs, Type::INT8_ARRAY)],
        )
        .map(|_| ())
    }

    fn set_stats(&mut self, name: &str, stats: Option<&[u8]>) -> Result<()> {
        self.writes().set_stats(name, stats);
        self.known()
            .stats
            .insert(name.to_string(), stats.map(<[u8]>::to_vec));
        Ok(())
    }

    fn clear_stats(&mut self) -> Result<()> {
        self.query("DELETE FROM @.branch_stats", &[])?;
        self.known().stats.clear();
        Ok(())
    }

    fn commit(self: Box<Self>) -> Result<()> {
        let failed = self.failure().clone();
        if let Some(error) = failed {
            // `end` drops the connection rather than pooling it, as the flag is still set.
            let _ = self.end("ROLLBACK");
            return Err(error);
        }
        if lock(&self.begin).is_some() && self.writes().is_empty() {
            return self.end("COMMIT"); // nothing was sent: nothing to commit
        }
        // A write that may be refused is checked before the `COMMIT` goes.
        if self.writes().may_be_refused() {
            self.round_trip(Ask::Nothing)?;
        }
        self.round_trip(Ask::Commit)?;
        // Committed: the connection goes back to the pool.
        drop(self.conn().take());
        Ok(())
    }
}
