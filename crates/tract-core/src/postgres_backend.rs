//! The PostgreSQL backend: a store in one schema of a database, for agents on many machines.
//!
//! Each table of the model is a table of the schema (`meta`, `commits`, `blobs`, `chunks`,
//! `refs`, `reflog`, `branch_stats`). A read is a `REPEATABLE READ READ ONLY` transaction (one
//! consistent state). A write is one transaction that first takes the schema's advisory lock
//! (`pg_advisory_xact_lock`, waited for at most the handle's lock timeout): writers on every
//! machine take turns as redb's do in one file, so a writer that read a branch tip moves it
//! from that tip; the ref update also names the tip it replaces (`UPDATE ... WHERE tip = old`)
//! and fails with `HeadMoved` if it does not match. Commits are synchronous
//! (`synchronous_commit = on`): an append is durable when it returns.
//!
//! Connections are pooled per store and process; a connection that failed is dropped, so the
//! next call connects again. Every statement is bounded (`statement_timeout`), connecting too.
//! The password of a URL is never shown: not in [`PgBackend::location`], not in an error.

use crate::backend::{Key, ObjectTable, RawReflogEntry, ReadTx, Records, Row, ScanFn, WriteTx};
use crate::error::{Error, LockReason, Result};
use postgres::{Client, Config, NoTls, Statement};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// The schema a URL without `?schema=` uses.
const DEFAULT_SCHEMA: &str = "tract";
/// How long connecting may take when the URL does not say (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one statement may run.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(120);
/// Idle connections kept per store and process.
const POOL_SIZE: usize = 8;

/// A store in a PostgreSQL schema.
pub(crate) struct PgBackend {
    config: Config,
    schema: String,
    location: String,
    password: Option<String>,
    /// The advisory lock every write transaction of this schema takes.
    lock_key: i64,
    idle: Mutex<Vec<Conn>>,
}

/// A connection and the statements prepared on it.
struct Conn {
    client: Client,
    statements: HashMap<&'static str, Statement>,
}

impl PgBackend {
    /// Connects to the store a `postgresql://` URL names, creating its schema and tables if
    /// `create` allows; returns the backend, the key under which this process shares it, and
    /// whether the tables were made now.
    pub(crate) fn connect(
        url: &str,
        create: bool,
        lock_timeout: Duration,
    ) -> Result<(Self, String, bool)> {
        let parsed = ParsedUrl::parse(url)?;
        let mut config: Config = parsed.libpq_url.parse().map_err(|e: postgres::Error| {
            Error::invalid_input(format!(
                "{}: not a PostgreSQL URL: {}",
                parsed.location,
                scrub(&e.to_string(), parsed.password.as_deref())
            ))
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        config.keepalives(true);
        config.keepalives_idle(Duration::from_secs(30));
        let lock_key = {
            let h = blake3::hash(parsed.schema.as_bytes());
            let mut b = [0u8; 8];
            b.copy_from_slice(&h.as_bytes()[..8]);
            i64::from_le_bytes(b)
        };
        let backend = PgBackend {
            config,
            schema: parsed.schema,
            location: parsed.location,
            password: parsed.password,
            lock_key,
            idle: Mutex::default(),
        };
        let created = backend.prepare_schema(create, lock_timeout)?;
        let key = backend.location.clone();
        Ok((backend, key, created))
    }

    /// The URL without its password.
    pub(crate) fn location(&self) -> &str {
        &self.location
    }

    fn error(&self, e: &postgres::Error) -> Error {
        database_error(&self.location, self.password.as_deref(), e)
    }

    fn connect_one(&self) -> Result<Conn> {
        let mut client = self.config.connect(NoTls).map_err(|e| self.error(&e))?;
        let setup = format!(
            "SET search_path TO \"{}\"; SET synchronous_commit = on; \
             SET statement_timeout = {}; SET idle_in_transaction_session_timeout = {}",
            self.schema,
            STATEMENT_TIMEOUT.as_millis(),
            STATEMENT_TIMEOUT.as_millis()
        );
        client.batch_execute(&setup).map_err(|e| self.error(&e))?;
        Ok(Conn {
            client,
            statements: HashMap::new(),
        })
    }

    fn take(&self) -> Result<Conn> {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        match idle {
            Some(c) if !c.client.is_closed() => Ok(c),
            _ => self.connect_one(),
        }
    }

    fn give_back(&self, conn: Conn) {
        if conn.client.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < POOL_SIZE {
            idle.push(conn);
        }
    }

    /// Checks that the schema holds a store, or makes one (schema and tables, under the
    /// schema's lock so two processes creating it at once do not collide). Returns whether it
    /// made the tables now.
    fn prepare_schema(&self, create: bool, lock_timeout: Duration) -> Result<bool> {
        let mut conn = self.connect_one()?;
        let exists: bool = conn
            .client
            .query_one(
                "SELECT to_regclass(quote_ident($1) || '.meta') IS NOT NULL",
                &[&self.schema],
            )
            .map_err(|e| self.error(&e))?
            .get(0);
        if exists {
            self.give_back(conn);
            return Ok(false);
        }
        if !create {
            return Err(Error::NotAStore {
                path: PathBuf::from(&self.location),
                reason: format!("schema \"{}\" holds no tract store", self.schema),
            });
        }
        let s = &self.schema;
        let sql = format!(
            "BEGIN;
             SET LOCAL lock_timeout = {timeout};
             SELECT pg_advisory_xact_lock({key});
             CREATE SCHEMA IF NOT EXISTS \"{s}\";
             CREATE TABLE IF NOT EXISTS \"{s}\".meta (key text COLLATE \"C\" PRIMARY KEY, value bytea NOT NULL);
             CREATE TABLE IF NOT EXISTS \"{s}\".commits (id bytea PRIMARY KEY, parent bytea, record bytea NOT NULL);
             CREATE TABLE IF NOT EXISTS \"{s}\".blobs (id bytea PRIMARY KEY, record bytea NOT NULL);
             CREATE TABLE IF NOT EXISTS \"{s}\".chunks (id bytea PRIMARY KEY, record bytea NOT NULL);
             CREATE TABLE IF NOT EXISTS \"{s}\".refs (name text COLLATE \"C\" PRIMARY KEY, tip bytea NOT NULL);
             CREATE TABLE IF NOT EXISTS \"{s}\".reflog (name text COLLATE \"C\", seq bigint, entry bytea NOT NULL, PRIMARY KEY (name, seq));
             CREATE TABLE IF NOT EXISTS \"{s}\".branch_stats (name text COLLATE \"C\" PRIMARY KEY, stats bytea NOT NULL);
             ALTER TABLE \"{s}\".commits ALTER COLUMN record SET STORAGE EXTERNAL;
             ALTER TABLE \"{s}\".blobs ALTER COLUMN record SET STORAGE EXTERNAL;
             ALTER TABLE \"{s}\".chunks ALTER COLUMN record SET STORAGE EXTERNAL;
             COMMIT;",
            timeout = lock_timeout.as_millis().max(1),
            key = self.lock_key,
        );
        conn.client
            .batch_execute(&sql)
            .map_err(|e| self.error(&e))?;
        self.give_back(conn);
        Ok(true)
    }

    /// A read transaction: one consistent state.
    pub(crate) fn read(self: &Arc<Self>) -> Result<Box<dyn ReadTx + Sync>> {
        let mut conn = self.take()?;
        conn.client
            .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .map_err(|e| self.error(&e))?;
        Ok(Box::new(PgTx {
            backend: Arc::clone(self),
            conn: Mutex::new(Some(conn)),
            failed: Mutex::new(None),
        }))
    }

    /// The one write transaction of the schema, waiting up to `lock_timeout` for another's.
    pub(crate) fn write(self: &Arc<Self>, lock_timeout: Duration) -> Result<Box<dyn WriteTx>> {
        let mut conn = self.take()?;
        let begin = format!(
            "BEGIN; SET LOCAL lock_timeout = {}; SELECT pg_advisory_xact_lock({})",
            lock_timeout.as_millis().max(1),
            self.lock_key
        );
        if let Err(e) = conn.client.batch_execute(&begin) {
            if e.code() == Some(&postgres::error::SqlState::LOCK_NOT_AVAILABLE) {
                let _ = conn.client.batch_execute("ROLLBACK");
                self.give_back(conn);
                return Err(Error::StoreLocked {
                    path: PathBuf::from(&self.location),
                    reason: LockReason::Busy {
                        waited: lock_timeout,
                    },
                });
            }
            return Err(self.error(&e));
        }
        Ok(Box::new(PgTx {
            backend: Arc::clone(self),
            conn: Mutex::new(Some(conn)),
            failed: Mutex::new(None),
        }))
    }

    /// Rewrites the object tables, so removed and redacted records leave no bytes behind.
    pub(crate) fn compact(&self) -> Result<()> {
        let mut conn = self.take()?;
        conn.client
            .batch_execute("VACUUM FULL commits, blobs, chunks")
            .map_err(|e| self.error(&e))?;
        self.give_back(conn);
        Ok(())
    }
}

/// A transaction on one connection (reading, or the one writer). Its connection goes back to
/// the pool when it ends, unless a statement failed on it.
struct PgTx {
    backend: Arc<PgBackend>,
    conn: Mutex<Option<Conn>>,
    /// The first statement error: a caller may have handled it (a read whose miss is not
    /// fatal), but the transaction is aborted on the server, so `commit` reports it.
    failed: Mutex<Option<Error>>,
}

impl PgTx {
    /// The transaction's first statement error, if one failed.
    fn failure(&self) -> MutexGuard<'_, Option<Error>> {
        self.failed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `f` with the connection and a prepared statement for `sql`.
    fn with<T>(
        &self,
        sql: &'static str,
        f: impl FnOnce(&mut Client, &Statement) -> std::result::Result<T, postgres::Error>,
    ) -> Result<T> {
        let mut guard: MutexGuard<'_, Option<Conn>> =
            self.conn.lock().unwrap_or_else(|e| e.into_inner());
        let Some(conn) = guard.as_mut() else {
            return Err(Error::invalid_op("the transaction has ended"));
        };
        let result = match conn.statements.get(sql) {
            Some(s) => Ok(s.clone()),
            None => conn.client.prepare(sql).inspect(|s| {
                conn.statements.insert(sql, s.clone());
            }),
        }
        .and_then(|statement| f(&mut conn.client, &statement));
        result.map_err(|e| {
            let error = self.backend.error(&e);
            self.failure().get_or_insert_with(|| error.clone());
            error
        })
    }

    fn end(&self, sql: &str) -> Result<()> {
        let conn = self.conn.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(mut conn) = conn else {
            return Ok(());
        };
        let result = conn.client.batch_execute(sql);
        let failed = self.failure().is_some();
        if result.is_ok() && !failed {
            self.backend.give_back(conn);
        }
        result.map_err(|e| self.backend.error(&e))
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
            "SELECT record FROM commits WHERE id = $1",
            "SELECT record FROM blobs WHERE id = $1",
            "SELECT record FROM chunks WHERE id = $1"
        );
        self.with(sql, |c, s| {
            Ok(c.query_opt(s, &[&key.as_slice()])?.map(|r| r.get(0)))
        })
    }

    fn objects(&self, table: ObjectTable, keys: &[Key]) -> Result<Vec<Option<Vec<u8>>>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let sql = per_table!(
            table,
            "SELECT id, record FROM commits WHERE id = ANY($1)",
            "SELECT id, record FROM blobs WHERE id = ANY($1)",
            "SELECT id, record FROM chunks WHERE id = ANY($1)"
        );
        let ids: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
        let rows = self.with(sql, |c, s| c.query(s, &[&ids]))?;
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
            "SELECT id FROM commits WHERE id = ANY($1)",
            "SELECT id FROM blobs WHERE id = ANY($1)",
            "SELECT id FROM chunks WHERE id = ANY($1)"
        );
        let ids: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
        let rows = self.with(sql, |c, s| c.query(s, &[&ids]))?;
        let mut found = std::collections::HashSet::with_capacity(rows.len());
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
                SELECT id, parent, record, 0 FROM commits WHERE id = $1
                UNION ALL
                SELECT c.id, c.parent, c.record, chain.depth + 1
                FROM chain JOIN commits c ON c.id = chain.parent
                WHERE $2::bytea IS NULL OR chain.parent <> $2::bytea
            ) SELECT id, record FROM chain ORDER BY depth";
        let stop = stop.map(|s| s.as_slice());
        let rows = self.with(sql, |c, s| c.query(s, &[&head.as_slice(), &stop]))?;
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
            "SELECT id, record FROM commits WHERE id >= $1 AND id <= $2 ORDER BY id LIMIT $3",
            "SELECT id, record FROM blobs WHERE id >= $1 AND id <= $2 ORDER BY id LIMIT $3",
            "SELECT id, record FROM chunks WHERE id >= $1 AND id <= $2 ORDER BY id LIMIT $3"
        );
        let mut left = limit.unwrap_or(usize::MAX);
        let mut from = *low;
        while left > 0 {
            let page = left.min(SCAN_PAGE);
            let n = i64::try_from(page).unwrap_or(i64::MAX);
            let rows = self.with(sql, |c, s| {
                c.query(s, &[&from.as_slice(), &high.as_slice(), &n])
            })?;
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
        self.with("SELECT value FROM meta WHERE key = $1", |c, s| {
            Ok(c.query_opt(s, &[&key])?.map(|r| r.get(0)))
        })
    }

    fn tip(&self, name: &str) -> Result<Option<Key>> {
        let raw: Option<Vec<u8>> = self.with("SELECT tip FROM refs WHERE name = $1", |c, s| {
            Ok(c.query_opt(s, &[&name])?.map(|r| r.get(0)))
        })?;
        raw.map(|r| key_of(&r)).transpose()
    }

    fn tips(&self) -> Result<Vec<(String, Key)>> {
        let rows = self.with("SELECT name, tip FROM refs ORDER BY name", |c, s| {
            c.query(s, &[])
        })?;
        rows.iter()
            .map(|r| Ok((r.get(0), key_of(r.get::<_, &[u8]>(1))?)))
            .collect()
    }

    fn reflog(&self, name: &str, limit: Option<usize>) -> Result<Vec<Vec<u8>>> {
        let limit = limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
        let rows = self.with(
            "SELECT entry FROM reflog WHERE name = $1 ORDER BY seq DESC LIMIT $2",
            |c, s| c.query(s, &[&name, &limit]),
        )?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    fn reflog_all(&self) -> Result<Vec<RawReflogEntry>> {
        let rows = self.with(
            "SELECT name, seq, entry FROM reflog ORDER BY name, seq",
            |c, s| c.query(s, &[]),
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
        self.with("SELECT stats FROM branch_stats WHERE name = $1", |c, s| {
            Ok(c.query_opt(s, &[&name])?.map(|r| r.get(0)))
        })
    }

    fn all_stats(&self) -> Result<Vec<(String, Vec<u8>)>> {
        let rows = self.with(
            "SELECT name, stats FROM branch_stats ORDER BY name",
            |c, s| c.query(s, &[]),
        )?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }
}

impl WriteTx for PgTx {
    fn put_objects(&mut self, table: ObjectTable, rows: &[Row<'_>]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let ids: Vec<&[u8]> = rows.iter().map(|r| r.key.as_slice()).collect();
        let records: Vec<&[u8]> = rows.iter().map(|r| r.record).collect();
        if table == ObjectTable::Commits {
            let parents: Vec<Option<&[u8]>> = rows
                .iter()
                .map(|r| r.parent.as_ref().map(|p| p.as_slice()))
                .collect();
            return self.with(
                "INSERT INTO commits (id, parent, record)
                 SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::bytea[])
                 ON CONFLICT (id) DO UPDATE SET parent = excluded.parent, record = excluded.record",
                |c, s| c.execute(s, &[&ids, &parents, &records]).map(|_| ()),
            );
        }
        let sql = per_table!(
            table,
            "",
            "INSERT INTO blobs (id, record) SELECT * FROM unnest($1::bytea[], $2::bytea[])
             ON CONFLICT (id) DO UPDATE SET record = excluded.record",
            "INSERT INTO chunks (id, record) SELECT * FROM unnest($1::bytea[], $2::bytea[])
             ON CONFLICT (id) DO UPDATE SET record = excluded.record"
        );
        self.with(sql, |c, s| c.execute(s, &[&ids, &records]).map(|_| ()))
    }

    fn remove_objects(&mut self, table: ObjectTable, keys: &[Key]) -> Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        let sql = per_table!(
            table,
            "DELETE FROM commits WHERE id = ANY($1)",
            "DELETE FROM blobs WHERE id = ANY($1)",
            "DELETE FROM chunks WHERE id = ANY($1)"
        );
        let ids: Vec<&[u8]> = keys.iter().map(|k| k.as_slice()).collect();
        self.with(sql, |c, s| c.execute(s, &[&ids]).map(|_| ()))
    }

    fn set_meta(&mut self, key: &str, value: Option<&[u8]>) -> Result<()> {
        match value {
            Some(v) => self.with(
                "INSERT INTO meta (key, value) VALUES ($1, $2)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                |c, s| c.execute(s, &[&key, &v]).map(|_| ()),
            ),
            None => self.with("DELETE FROM meta WHERE key = $1", |c, s| {
                c.execute(s, &[&key]).map(|_| ())
            }),
        }
    }

    fn set_tip(&mut self, name: &str, old: Option<Key>, new: Option<Key>) -> Result<()> {
        let old_s = old.as_ref().map(|k| k.as_slice());
        let new_s = new.as_ref().map(|k| k.as_slice());
        let moved = match (old_s, new_s) {
            (Some(o), Some(n)) => self.with(
                "UPDATE refs SET tip = $2 WHERE name = $1 AND tip = $3",
                |c, s| c.execute(s, &[&name, &n, &o]),
            )?,
            (None, Some(n)) => self.with(
                "INSERT INTO refs (name, tip) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
                |c, s| c.execute(s, &[&name, &n]),
            )?,
            (Some(o), None) => self
                .with("DELETE FROM refs WHERE name = $1 AND tip = $2", |c, s| {
                    c.execute(s, &[&name, &o])
                })?,
            (None, None) => return Ok(()),
        };
        if moved == 1 {
            return Ok(());
        }
        let actual = self.tip(name)?;
        Err(Error::HeadMoved {
            branch: name.to_string(),
            expected: old.map(crate::id::CommitId::from_bytes),
            actual: actual.map(crate::id::CommitId::from_bytes),
        })
    }

    fn push_reflog(&mut self, name: &str, entry: &[u8]) -> Result<()> {
        self.with(
            "INSERT INTO reflog (name, seq, entry)
             SELECT $1, COALESCE(MAX(seq) + 1, 0), $2 FROM reflog WHERE name = $1",
            |c, s| c.execute(s, &[&name, &entry]).map(|_| ()),
        )
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
        self.with(
            "DELETE FROM reflog r USING unnest($1::text[], $2::bigint[]) AS d(name, seq)
             WHERE r.name = d.name AND r.seq = d.seq",
            |c, s| c.execute(s, &[&names, &seqs]).map(|_| ()),
        )
    }

    fn set_stats(&mut self, name: &str, stats: Option<&[u8]>) -> Result<()> {
        match stats {
            Some(v) => self.with(
                "INSERT INTO branch_stats (name, stats) VALUES ($1, $2)
                 ON CONFLICT (name) DO UPDATE SET stats = excluded.stats",
                |c, s| c.execute(s, &[&name, &v]).map(|_| ()),
            ),
            None => self.with("DELETE FROM branch_stats WHERE name = $1", |c, s| {
                c.execute(s, &[&name]).map(|_| ())
            }),
        }
    }

    fn clear_stats(&mut self) -> Result<()> {
        self.with("DELETE FROM branch_stats", |c, s| {
            c.execute(s, &[]).map(|_| ())
        })
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

/// A `postgresql://` URL taken apart: what the client is given (without `schema`), the
/// schema, the password, and the URL to show (without the password).
struct ParsedUrl {
    libpq_url: String,
    schema: String,
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
                    password = Some(pw.to_string());
                    format!("{user}:***@{host}")
                }
                None => authority.to_string(),
            },
            None => authority.to_string(),
        };
        let mut schema = DEFAULT_SCHEMA.to_string();
        let mut kept = Vec::new();
        let mut shown = Vec::new();
        for pair in query.into_iter().flat_map(|q| q.split('&')) {
            if pair.is_empty() {
                continue;
            }
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            match k {
                "schema" => schema = v.to_string(),
                "password" => {
                    password = Some(v.to_string());
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
            password: password.filter(|p| !p.is_empty()),
            location,
        })
    }
}

/// `text` with every occurrence of the password replaced.
fn scrub(text: &str, password: Option<&str>) -> String {
    match password {
        Some(p) if !p.is_empty() => text.replace(p, "***"),
        _ => text.to_string(),
    }
}

/// A client error as tract's: what the server said (or why it could not be reached), named
/// after the store, the password scrubbed.
fn database_error(location: &str, password: Option<&str>, e: &postgres::Error) -> Error {
    let reason = match e.as_db_error() {
        Some(db) => {
            let mut r = format!("{} ({})", db.message(), db.code().code());
            if let Some(detail) = db.detail() {
                r.push_str(": ");
                r.push_str(detail);
            }
            r
        }
        None if e.is_closed() => "the connection to the server was lost".to_string(),
        None => e.to_string(),
    };
    Error::Database {
        store: location.to_string(),
        reason: scrub(&reason, password),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            "postgresql://ann:s3cret@db.example:5433/agents?sslmode=disable"
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
}
