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
//! Nothing outlives a transaction, so the store works through a pooler in transaction mode
//! (PgBouncer): every statement is unnamed (parsed with its parameters' types, never prepared
//! by name), every table is named with its schema (no `search_path`), settings are `SET LOCAL`
//! and locks are transaction-scoped. Connecting, TLS, timeouts and the pool of connections are
//! [`crate::postgres_connect`]'s. The password of a URL is never shown: not in
//! [`PgBackend::location`], not in an error.

use crate::backend::{
    Key, ObjectTable, RawReflogEntry, ReadTx, Records, Row, ScanFn, WriteScope, WriteTx,
};
use crate::error::{Error, LockReason, Result};
use crate::postgres_connect::{Pool, Pooled, RunError, Settings};
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
}

/// A statement's parameters with their types (statements are parsed unnamed, with them).
type Params<'a> = [(&'a (dyn ToSql + Sync), Type)];

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
        let backend = PgBackend {
            pool: Pool::new(settings, lock_timeout)?,
            prefix,
            store_lock,
        };
        let created = backend.prepare_schema(create, lock_timeout)?;
        let key = backend.location().to_string();
        Ok((backend, key, created))
    }

    /// How many write transactions a process runs at once (its groups of writes to different
    /// branches commit side by side): half the pool, so reads always find connections too.
    pub(crate) fn concurrent_writes(&self) -> usize {
        (self.settings().pool_size / 2).clamp(1, 8)
    }

    /// Whether this backend was opened by the process this one forked from (its connections
    /// are not this process's to use).
    pub(crate) fn forked(&self) -> bool {
        self.pool.forked()
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
    fn prepare_schema(&self, create: bool, lock_timeout: Duration) -> Result<bool> {
        let schema = self.settings().schema.clone();
        let mut conn = Some(self.pool.get()?);
        // Looked at inside a transaction of its own, so a pooler that cannot carry one
        // (statement mode) is refused here, before anything is made.
        self.batch(&mut conn, &self.begin(" READ ONLY", None))?;
        let exists = {
            let Some(c) = conn.as_ref() else {
                return Err(Error::invalid_op("no connection"));
            };
            let found = self.pool.run(
                c,
                c.client.query_typed(
                    "SELECT to_regclass(quote_ident($1) || '.meta') IS NOT NULL",
                    &[(&schema, Type::TEXT)],
                ),
            );
            let failed = match found {
                Ok(rows) => Ok(rows.first().is_some_and(|r| r.get::<_, bool>(0))),
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
        if exists {
            return Ok(false);
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
        Ok(true)
    }

    /// A read transaction: one consistent state.
    pub(crate) fn read(self: &Arc<Self>) -> Result<Box<dyn ReadTx + Sync>> {
        let mut conn = Some(self.pool.get()?);
        self.batch(
            &mut conn,
            &self.begin(" ISOLATION LEVEL REPEATABLE READ READ ONLY", None),
        )?;
        Ok(Box::new(PgTx {
            backend: Arc::clone(self),
            conn: Mutex::new(conn),
            failed: Mutex::new(None),
            scope: None,
            locked: Mutex::default(),
            tips: Mutex::default(),
        }))
    }

    /// A write transaction holding the locks `scope` needs, each waited for up to
    /// `lock_timeout`.
    pub(crate) fn write(
        self: &Arc<Self>,
        scope: &WriteScope,
        lock_timeout: Duration,
    ) -> Result<Box<dyn WriteTx>> {
        let mut conn = Some(self.pool.get()?);
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
        self.batch(&mut conn, &sql)
            .map_err(|e| self.lock_error(e, lock_timeout))?;
        Ok(Box::new(PgTx {
            backend: Arc::clone(self),
            conn: Mutex::new(conn),
            failed: Mutex::new(None),
            scope: Some(scope.clone()),
            locked: Mutex::new(locked),
            tips: Mutex::default(),
        }))
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

    /// Rewrites the object tables, so removed and redacted records leave no bytes behind.
    pub(crate) fn compact(&self) -> Result<()> {
        let conn = self.pool.get()?;
        let sql = self.sql("VACUUM FULL @.commits, @.blobs, @.chunks");
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
struct PgTx {
    backend: Arc<PgBackend>,
    conn: Mutex<Option<Pooled>>,
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
}

impl PgTx {
    /// The transaction's first statement error, if one failed.
    fn failure(&self) -> MutexGuard<'_, Option<Error>> {
        self.failed.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn conn(&self) -> MutexGuard<'_, Option<Pooled>> {
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
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

    /// Runs one statement (`@.` naming the schema) and returns its rows.
    fn query(&self, sql: &str, params: &Params<'_>) -> Result<Vec<PgRow>> {
        let sql = self.backend.sql(sql);
        let mut guard = self.conn();
        let Some(c) = guard.as_ref() else {
            return Err(Error::invalid_op("the transaction has ended"));
        };
        let result = self.backend.pool.run(c, c.client.query_typed(&sql, params));
        result.map_err(|e| self.failed_with(&mut guard, e))
    }

    /// Runs one statement and returns how many rows it changed.
    fn execute(&self, sql: &str, params: &Params<'_>) -> Result<u64> {
        let sql = self.backend.sql(sql);
        let mut guard = self.conn();
        let Some(c) = guard.as_ref() else {
            return Err(Error::invalid_op("the transaction has ended"));
        };
        let result = self
            .backend
            .pool
            .run(c, c.client.execute_typed(&sql, params));
        result.map_err(|e| self.failed_with(&mut guard, e))
    }

    /// In a write transaction scoped to some refs, takes the lock of a ref it had not named
    /// before touching it (so a plain append through the store's `HEAD` still waits for the
    /// branch's other writers rather than failing).
    fn lock_ref(&self, name: &str) -> Result<()> {
        let Some(WriteScope::Refs(_)) = &self.scope else {
            return Ok(());
        };
        if self
            .locked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(name)
        {
            return Ok(());
        }
        let key = lock_key(&self.backend.settings().schema, Some(name));
        self.query("SELECT pg_advisory_xact_lock($1)", &[(&key, Type::INT8)])?;
        self.locked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.to_string());
        Ok(())
    }

    fn known_tips(&self) -> MutexGuard<'_, HashMap<String, Option<Key>>> {
        self.tips.lock().unwrap_or_else(|e| e.into_inner())
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

    fn end(&self, sql: &str) -> Result<()> {
        let mut conn = self.conn.lock().unwrap_or_else(|e| e.into_inner()).take();
        if conn.is_none() {
            return Ok(());
        }
        let result = self.backend.batch(&mut conn, sql);
        let failed = self.failure().is_some();
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

fn key_of(bytes: &[u8]) -> Result<Key> {
    Key::try_from(bytes).map_err(|_| Error::corrupt("a stored id is not 32 bytes"))
}

impl ReadTx for PgTx {
    fn object(&self, table: ObjectTable, key: &Key) -> Result<Option<Vec<u8>>> {
        let sql = per_table!(
            table,
            "SELECT record FROM @.commits WHERE id = $1",
            "SELECT record FROM @.blobs WHERE id = $1",
            "SELECT record FROM @.chunks WHERE id = $1"
        );
        let rows = self.query(sql, &[(&key.as_slice(), Type::BYTEA)])?;
        Ok(rows.first().map(|r| r.get(0)))
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
        // An id asked twice (two commits of one payload) gets its record twice.
        Ok(keys.iter().map(|k| found.get(k).cloned()).collect())
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
        let sql = "WITH RECURSIVE chain(id, parent, record, depth) AS (
                SELECT id, parent, record, 0 FROM @.commits WHERE id = $1
                UNION ALL
                SELECT c.id, c.parent, c.record, chain.depth + 1
                FROM chain JOIN @.commits c ON c.id = chain.parent
                WHERE $2::bytea IS NULL OR chain.parent <> $2::bytea
            ) SELECT id, record FROM chain ORDER BY depth";
        let stop = stop.map(|s| s.as_slice());
        let rows = self.query(
            sql,
            &[(&head.as_slice(), Type::BYTEA), (&stop, Type::BYTEA)],
        )?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            out.push((key_of(row.get::<_, &[u8]>(0))?, row.get(1)));
        }
        Ok(Some(out))
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
        let rows = self.query(
            "SELECT value FROM @.meta WHERE key = $1",
            &[(&key, Type::TEXT)],
        )?;
        Ok(rows.first().map(|r| r.get(0)))
    }

    fn tip(&self, name: &str) -> Result<Option<Key>> {
        if self.scope.is_none() {
            return self.stored_tip(name);
        }
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
        if rows.is_empty() {
            return Ok(());
        }
        // In id order: two writers storing the same objects wait for each other's rows in
        // one order, never in a cycle.
        let mut rows: Vec<&Row<'_>> = rows.iter().collect();
        rows.sort_unstable_by_key(|r| r.key);
        rows.dedup_by_key(|r| r.key);
        let ids: Vec<&[u8]> = rows.iter().map(|r| r.key.as_slice()).collect();
        let records: Vec<&[u8]> = rows.iter().map(|r| r.record).collect();
        if table == ObjectTable::Commits {
            let parents: Vec<Option<&[u8]>> = rows
                .iter()
                .map(|r| r.parent.as_ref().map(|p| p.as_slice()))
                .collect();
            return self
                .execute(
                    "INSERT INTO @.commits (id, parent, record)
                     SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::bytea[])
                     ON CONFLICT (id) DO UPDATE SET parent = excluded.parent, record = excluded.record",
                    &[
                        (&ids, Type::BYTEA_ARRAY),
                        (&parents, Type::BYTEA_ARRAY),
                        (&records, Type::BYTEA_ARRAY),
                    ],
                )
                .map(|_| ());
        }
        let sql = per_table!(
            table,
            "",
            "INSERT INTO @.blobs (id, record) SELECT * FROM unnest($1::bytea[], $2::bytea[])
             ON CONFLICT (id) DO UPDATE SET record = excluded.record",
            "INSERT INTO @.chunks (id, record) SELECT * FROM unnest($1::bytea[], $2::bytea[])
             ON CONFLICT (id) DO UPDATE SET record = excluded.record"
        );
        self.execute(
            sql,
            &[(&ids, Type::BYTEA_ARRAY), (&records, Type::BYTEA_ARRAY)],
        )
        .map(|_| ())
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
        self.execute(sql, &[(&ids, Type::BYTEA_ARRAY)]).map(|_| ())
    }

    fn set_meta(&mut self, key: &str, value: Option<&[u8]>) -> Result<()> {
        match value {
            Some(v) => self.execute(
                "INSERT INTO @.meta (key, value) VALUES ($1, $2)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                &[(&key, Type::TEXT), (&v, Type::BYTEA)],
            ),
            None => self.execute("DELETE FROM @.meta WHERE key = $1", &[(&key, Type::TEXT)]),
        }
        .map(|_| ())
    }

    fn set_tip(&mut self, name: &str, old: Option<Key>, new: Option<Key>) -> Result<()> {
        self.lock_ref(name)?;
        let old_s = old.as_ref().map(|k| k.as_slice());
        let new_s = new.as_ref().map(|k| k.as_slice());
        let moved = match (old_s, new_s) {
            (Some(o), Some(n)) => self.execute(
                "UPDATE @.refs SET tip = $2 WHERE name = $1 AND tip = $3",
                &[(&name, Type::TEXT), (&n, Type::BYTEA), (&o, Type::BYTEA)],
            )?,
            (None, Some(n)) => self.execute(
                "INSERT INTO @.refs (name, tip) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
                &[(&name, Type::TEXT), (&n, Type::BYTEA)],
            )?,
            (Some(o), None) => self.execute(
                "DELETE FROM @.refs WHERE name = $1 AND tip = $2",
                &[(&name, Type::TEXT), (&o, Type::BYTEA)],
            )?,
            (None, None) => return Ok(()),
        };
        if moved == 1 {
            self.known_tips().insert(name.to_string(), new);
            return Ok(());
        }
        let actual = self.stored_tip(name)?;
        Err(Error::HeadMoved {
            branch: name.to_string(),
            expected: old.map(crate::id::CommitId::from_bytes),
            actual: actual.map(crate::id::CommitId::from_bytes),
        })
    }

    fn push_reflog(&mut self, name: &str, entry: &[u8]) -> Result<()> {
        self.lock_ref(name)?;
        self.execute(
            "INSERT INTO @.reflog (name, seq, entry)
             SELECT $1, COALESCE(MAX(seq) + 1, 0), $2 FROM @.reflog WHERE name = $1",
            &[(&name, Type::TEXT), (&entry, Type::BYTEA)],
        )
        .map(|_| ())
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
        self.execute(
            "DELETE FROM @.reflog r USING unnest($1::text[], $2::bigint[]) AS d(name, seq)
             WHERE r.name = d.name AND r.seq = d.seq",
            &[(&names, Type::TEXT_ARRAY), (&seqs, Type::INT8_ARRAY)],
        )
        .map(|_| ())
    }

    fn set_stats(&mut self, name: &str, stats: Option<&[u8]>) -> Result<()> {
        match stats {
            Some(v) => self.execute(
                "INSERT INTO @.branch_stats (name, stats) VALUES ($1, $2)
                 ON CONFLICT (name) DO UPDATE SET stats = excluded.stats",
                &[(&name, Type::TEXT), (&v, Type::BYTEA)],
            ),
            None => self.execute(
                "DELETE FROM @.branch_stats WHERE name = $1",
                &[(&name, Type::TEXT)],
            ),
        }
        .map(|_| ())
    }

    fn clear_stats(&mut self) -> Result<()> {
        self.execute("DELETE FROM @.branch_stats", &[]).map(|_| ())
    }

    fn commit(self: Box<Self>) -> Result<()> {
        let failed = self.failure().clone();
        if let Some(error) = failed {
            // `end` drops the connection rather than pooling it, as the flag is still set.
            let _ = self.end("ROLLBACK");
            return Err(error);
        }
        self.end("COMMIT")
    }
}
