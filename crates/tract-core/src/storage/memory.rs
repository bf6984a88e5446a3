//! A store in this process's memory: ordered maps behind the backend interface, and the worked
//! example of a kind of store (docs/architecture.md, "A new kind of store").
//!
//! The store is one immutable set of tables behind an `Arc`: a read transaction holds the set
//! that was current when it began, so it sees one state however long it lives; the one write
//! transaction at a time keeps its changes beside that set (its reads see them) and, at commit,
//! applies them to the current set (copied first only if a reader still holds it) and makes
//! the result current. Nothing outlives the process. Its search index is tantivy's, in memory.

use crate::error::{Error, LockReason, Result};
use crate::storage::backend::{
    Backend, Key, ObjectTable, RawReflogEntry, ReadTx, Row, ScanFn, WriteScope, WriteTx,
};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Everything a store keeps.
#[derive(Debug, Clone, Default)]
struct Tables {
    /// Commits, blobs and chunks, by [`slot`].
    objects: [BTreeMap<Key, Vec<u8>>; 3],
    meta: BTreeMap<String, Vec<u8>>,
    refs: BTreeMap<String, Key>,
    /// Each ref's moves by sequence number.
    reflog: BTreeMap<ReflogKey, Vec<u8>>,
    stats: BTreeMap<String, Vec<u8>>,
}

/// A write transaction's changes to the tables: each key's new value, or `None` for removed.
#[derive(Debug, Default)]
struct Changes {
    objects: [BTreeMap<Key, Option<Vec<u8>>>; 3],
    meta: BTreeMap<String, Option<Vec<u8>>>,
    refs: BTreeMap<String, Option<Key>>,
    reflog: BTreeMap<ReflogKey, Option<Vec<u8>>>,
    stats: BTreeMap<String, Option<Vec<u8>>>,
    /// Every row of counts removed before `stats`' changes.
    stats_cleared: bool,
}

/// An object table's place among the tables.
fn slot(table: ObjectTable) -> usize {
    match table {
        ObjectTable::Commits => 0,
        ObjectTable::Blobs => 1,
        ObjectTable::Chunks => 2,
    }
}

/// `base`'s entries in `range` with `changes` applied, in key order (newest first with
/// `newest_first`), at most `limit`: a walk that stops at the limit, so the last move of a long
/// reflog costs one step.
fn merged<'a, K: Ord, V>(
    base: &'a BTreeMap<K, V>,
    changes: &'a BTreeMap<K, Option<V>>,
    range: impl RangeBounds<K> + Clone,
    limit: Option<usize>,
    newest_first: bool,
) -> Vec<(&'a K, &'a V)> {
    let (a, b): (Box<dyn Iterator<Item = _>>, Box<dyn Iterator<Item = _>>) = match newest_first {
        false => (
            Box::new(base.range(range.clone())),
            Box::new(changes.range(range)),
        ),
        true => (
            Box::new(base.range(range.clone()).rev()),
            Box::new(changes.range(range).rev()),
        ),
    };
    let (mut a, mut b) = (a.peekable(), b.peekable());
    let mut out = Vec::new();
    while limit.is_none_or(|l| out.len() < l) {
        let changed = match (a.peek(), b.peek()) {
            (None, None) => break,
            (Some(_), None) => false,
            (None, Some(_)) => true,
            (Some((ka, _)), Some((kb, _))) => match (ka.cmp(kb), newest_first) {
                (Ordering::Less, false) | (Ordering::Greater, true) => false,
                (Ordering::Greater, false) | (Ordering::Less, true) => true,
                (Ordering::Equal, _) => {
                    // Changed in the transaction: its value, or its removal, wins.
                    a.next();
                    true
                }
            },
        };
        match changed {
            false => out.extend(a.next()),
            true => {
                if let Some((k, Some(v))) = b.next() {
                    out.push((k, v));
                }
            }
        }
    }
    out
}

/// One key of `base` with `changes` applied.
fn one<'a, K: Ord, V>(
    base: &'a BTreeMap<K, V>,
    changes: &'a BTreeMap<K, Option<V>>,
    key: &K,
) -> Option<&'a V> {
    match changes.get(key) {
        Some(changed) => changed.as_ref(),
        None => base.get(key),
    }
}

/// A reflog entry's key: its ref and its sequence number.
type ReflogKey = (String, u64);

/// The range of keys of one ref's reflog.
fn reflog_range(name: &str) -> std::ops::RangeInclusive<ReflogKey> {
    (name.to_string(), 0)..=(name.to_string(), u64::MAX)
}

/// Reads of a set of tables with a transaction's changes on top (none for a read).
struct Reads<'a> {
    base: &'a Tables,
    changes: &'a Changes,
}

impl Reads<'_> {
    fn object(&self, table: ObjectTable, key: &Key) -> Option<Vec<u8>> {
        let s = slot(table);
        one(&self.base.objects[s], &self.changes.objects[s], key).cloned()
    }

    fn scan(
        &self,
        table: ObjectTable,
        low: &Key,
        high: &Key,
        limit: Option<usize>,
        f: &mut ScanFn<'_>,
    ) -> Result<()> {
        let s = slot(table);
        for (k, v) in merged(
            &self.base.objects[s],
            &self.changes.objects[s],
            *low..=*high,
            limit,
            false,
        ) {
            f(*k, v)?;
        }
        Ok(())
    }

    fn meta(&self, key: &str) -> Option<Vec<u8>> {
        one(&self.base.meta, &self.changes.meta, &key.to_string()).cloned()
    }

    fn meta_keys(&self, prefix: &str) -> Vec<String> {
        merged(
            &self.base.meta,
            &self.changes.meta,
            (Bound::Included(prefix.to_string()), Bound::Unbounded),
            None,
            false,
        )
        .into_iter()
        .map(|(k, _)| k)
        .take_while(|k| k.starts_with(prefix))
        .cloned()
        .collect()
    }

    fn tip(&self, name: &str) -> Option<Key> {
        one(&self.base.refs, &self.changes.refs, &name.to_string()).copied()
    }

    fn tips(&self) -> Vec<(String, Key)> {
        merged(&self.base.refs, &self.changes.refs, .., None, false)
            .into_iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    }

    /// A ref's entries with their sequence numbers, newest first, at most `limit`.
    fn reflog_of(&self, name: &str, limit: Option<usize>) -> Vec<(u64, Vec<u8>)> {
        merged(
            &self.base.reflog,
            &self.changes.reflog,
            reflog_range(name),
            limit,
            true,
        )
        .into_iter()
        .map(|((_, n), v)| (*n, v.clone()))
        .collect()
    }

    fn reflog_all(&self) -> Vec<RawReflogEntry> {
        merged(&self.base.reflog, &self.changes.reflog, .., None, false)
            .into_iter()
            .map(|((name, n), v)| (name.clone(), *n, v.clone()))
            .collect()
    }

    /// The rows of counts under the transaction's changes.
    fn stats_base(&self) -> &BTreeMap<String, Vec<u8>> {
        static NONE: BTreeMap<String, Vec<u8>> = BTreeMap::new();
        match self.changes.stats_cleared {
            true => &NONE,
            false => &self.base.stats,
        }
    }

    fn stats(&self, name: &str) -> Option<Vec<u8>> {
        one(self.stats_base(), &self.changes.stats, &name.to_string()).cloned()
    }

    fn all_stats(&self) -> Vec<(String, Vec<u8>)> {
        merged(self.stats_base(), &self.changes.stats, .., None, false)
            .into_iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

/// The reads of a transaction, forwarded to its [`Reads`].
macro_rules! reads {
    () => {
        fn object(&self, table: ObjectTable, key: &Key) -> Result<Option<Vec<u8>>> {
            Ok(self.reads().object(table, key))
        }

        fn scan(
            &self,
            table: ObjectTable,
            low: &Key,
            high: &Key,
            limit: Option<usize>,
            f: &mut ScanFn<'_>,
        ) -> Result<()> {
            self.reads().scan(table, low, high, limit, f)
        }

        fn meta(&self, key: &str) -> Result<Option<Vec<u8>>> {
            Ok(self.reads().meta(key))
        }

        fn meta_keys(&self, prefix: &str) -> Result<Vec<String>> {
            Ok(self.reads().meta_keys(prefix))
        }

        fn tip(&self, name: &str) -> Result<Option<Key>> {
            Ok(self.reads().tip(name))
        }

        fn tips(&self) -> Result<Vec<(String, Key)>> {
            Ok(self.reads().tips())
        }

        fn reflog(&self, name: &str, limit: Option<usize>) -> Result<Vec<Vec<u8>>> {
            let newest = self.reads().reflog_of(name, limit);
            Ok(newest.into_iter().map(|(_, e)| e).collect())
        }

        fn reflog_all(&self) -> Result<Vec<RawReflogEntry>> {
            Ok(self.reads().reflog_all())
        }

        fn stats(&self, name: &str) -> Result<Option<Vec<u8>>> {
            Ok(self.reads().stats(name))
        }

        fn all_stats(&self) -> Result<Vec<(String, Vec<u8>)>> {
            Ok(self.reads().all_stats())
        }
    };
}

/// What the backend and its transactions share.
#[derive(Debug, Default)]
struct Inner {
    /// The tables as last committed.
    current: Mutex<Arc<Tables>>,
    /// Whether a write transaction is under way.
    writing: Mutex<bool>,
    /// Told when one ends.
    ended: Condvar,
}

impl Inner {
    fn current(&self) -> MutexGuard<'_, Arc<Tables>> {
        self.current.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A store in memory.
#[derive(Debug, Default)]
pub(crate) struct MemoryBackend {
    inner: Arc<Inner>,
}

impl MemoryBackend {
    /// An empty store (its first metadata is written by the store, as for every backend).
    pub(crate) fn new() -> MemoryBackend {
        MemoryBackend::default()
    }
}

impl Backend for MemoryBackend {
    fn read(&self) -> Result<Box<dyn ReadTx + Sync>> {
        Ok(Box::new(MemoryRead {
            tables: Arc::clone(&self.inner.current()),
            none: Changes::default(),
        }))
    }

    fn write(&self, _scope: &WriteScope, lock_timeout: Duration) -> Result<Box<dyn WriteTx>> {
        // One writer at a time, whatever it moves: a write is a few map insertions.
        let deadline = Instant::now() + lock_timeout;
        let mut writing = self.inner.writing.lock().unwrap_or_else(|e| e.into_inner());
        while *writing {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::StoreLocked {
                    path: PathBuf::new(),
                    reason: LockReason::Busy {
                        waited: lock_timeout,
                    },
                });
            }
            writing = self
                .inner
                .ended
                .wait_timeout(writing, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        *writing = true;
        drop(writing);
        Ok(Box::new(MemoryWrite {
            lock: WriterLock(Arc::clone(&self.inner)),
            base: Arc::clone(&self.inner.current()),
            changes: Changes::default(),
        }))
    }

    fn read_only(&self) -> Option<&str> {
        None
    }

    fn location(&self) -> Option<String> {
        None
    }

    fn compact(self: Box<Self>, _lock_timeout: Duration) -> Result<()> {
        // What was removed was dropped with the tables that held it.
        Ok(())
    }
}

/// A read transaction: the tables as they were when it began.
struct MemoryRead {
    tables: Arc<Tables>,
    none: Changes,
}

impl MemoryRead {
    fn reads(&self) -> Reads<'_> {
        Reads {
            base: &self.tables,
            changes: &self.none,
        }
    }
}

impl ReadTx for MemoryRead {
    reads!();
}

/// The write lock of a store in memory, let go when its transaction ends however it ends.
struct WriterLock(Arc<Inner>);

impl Drop for WriterLock {
    fn drop(&mut self) {
        *self.0.writing.lock().unwrap_or_else(|e| e.into_inner()) = false;
        self.0.ended.notify_one();
    }
}

/// The write transaction: the tables it began on, and its changes.
struct MemoryWrite {
    lock: WriterLock,
    base: Arc<Tables>,
    changes: Changes,
}

impl MemoryWrite {
    fn reads(&self) -> Reads<'_> {
        Reads {
            base: &self.base,
            changes: &self.changes,
        }
    }
}

impl ReadTx for MemoryWrite {
    reads!();
}

impl WriteTx for MemoryWrite {
    fn put_objects(&mut self, table: ObjectTable, rows: &[Row<'_>]) -> Result<()> {
        let changes = &mut self.changes.objects[slot(table)];
        for row in rows {
            changes.insert(row.key, Some(row.record.to_vec()));
        }
        Ok(())
    }

    fn remove_objects(&mut self, table: ObjectTable, keys: &[Key]) -> Result<()> {
        let changes = &mut self.changes.objects[slot(table)];
        for key in keys {
            changes.insert(*key, None);
        }
        Ok(())
    }

    fn set_meta(&mut self, key: &str, value: Option<&[u8]>) -> Result<()> {
        self.changes
            .meta
            .insert(key.to_string(), value.map(<[u8]>::to_vec));
        Ok(())
    }

    fn set_tip(&mut self, name: &str, _old: Option<Key>, new: Option<Key>) -> Result<()> {
        // One write transaction at a time: the tip this one read is still the tip.
        self.changes.refs.insert(name.to_string(), new);
        Ok(())
    }

    fn push_reflog(&mut self, name: &str, entry: &[u8]) -> Result<()> {
        let next = self
            .reads()
            .reflog_of(name, Some(1))
            .first()
            .map_or(0, |(n, _)| n + 1);
        self.changes
            .reflog
            .insert((name.to_string(), next), Some(entry.to_vec()));
        Ok(())
    }

    fn remove_reflog(&mut self, entries: &[(String, u64)]) -> Result<()> {
        for (name, n) in entries {
            self.changes.reflog.insert((name.clone(), *n), None);
        }
        Ok(())
    }

    fn set_stats(&mut self, name: &str, stats: Option<&[u8]>) -> Result<()> {
        self.changes
            .stats
            .insert(name.to_string(), stats.map(<[u8]>::to_vec));
        Ok(())
    }

    fn clear_stats(&mut self) -> Result<()> {
        self.changes.stats.clear();
        self.changes.stats_cleared = true;
        Ok(())
    }

    fn commit(self: Box<Self>) -> Result<()> {
        let MemoryWrite {
            lock,
            base,
            changes,
        } = *self;
        // Readers that began before hold `base`: the new tables are made beside it then.
        drop(base);
        let mut current = lock.0.current();
        let tables = Arc::make_mut(&mut current);
        for (s, changed) in changes.objects.into_iter().enumerate() {
            apply(&mut tables.objects[s], changed);
        }
        apply(&mut tables.meta, changes.meta);
        apply(&mut tables.refs, changes.refs);
        apply(&mut tables.reflog, changes.reflog);
        if changes.stats_cleared {
            tables.stats.clear();
        }
        apply(&mut tables.stats, changes.stats);
        drop(current);
        drop(lock);
        Ok(())
    }
}

/// Applies a transaction's changes to one table.
fn apply<K: Ord, V>(table: &mut BTreeMap<K, V>, changes: BTreeMap<K, Option<V>>) {
    for (k, v) in changes {
        match v {
            Some(v) => table.insert(k, v),
            None => table.remove(&k),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(key: u8, record: &[u8]) -> Row<'_> {
        Row {
            key: [key; 32],
            record,
            parent: None,
        }
    }

    fn scan_all(tx: &dyn ReadTx) -> Vec<(Key, Vec<u8>)> {
        let mut out = Vec::new();
        tx.scan(
            ObjectTable::Blobs,
            &[0; 32],
            &[255; 32],
            None,
            &mut |k, v| {
                out.push((k, v.to_vec()));
                Ok(())
            },
        )
        .unwrap();
        out
    }

    #[test]
    fn a_read_sees_one_state_and_a_write_its_own_changes() {
        let b = MemoryBackend::new();
        let mut w = b.write(&WriteScope::Store, Duration::ZERO).unwrap();
        w.put_objects(ObjectTable::Blobs, &[row(1, b"a"), row(3, b"c")])
            .unwrap();
        w.set_tip("main", None, Some([1; 32])).unwrap();
        w.push_reflog("main", b"first").unwrap();
        w.commit().unwrap();

        let before = b.read().unwrap();
        let mut w = b.write(&WriteScope::Store, Duration::ZERO).unwrap();
        w.put_objects(ObjectTable::Blobs, &[row(2, b"b")]).unwrap();
        w.remove_objects(ObjectTable::Blobs, &[[3; 32]]).unwrap();
        w.push_reflog("main", b"second").unwrap();
        // The transaction reads its own changes, merged in order.
        let keys: Vec<u8> = scan_all(&*w).iter().map(|(k, _)| k[0]).collect();
        assert_eq!(keys, [1, 2]);
        assert_eq!(w.reflog("main", Some(1)).unwrap(), [b"second".to_vec()]);
        // A second writer waits, then gives up.
        assert!(matches!(
            b.write(&WriteScope::Store, Duration::from_millis(10)),
            Err(Error::StoreLocked { .. })
        ));
        w.commit().unwrap();

        // The read that began before still sees the state it began on.
        let keys: Vec<u8> = scan_all(&*before).iter().map(|(k, _)| k[0]).collect();
        assert_eq!(keys, [1, 3]);
        let after = b.read().unwrap();
        let keys: Vec<u8> = scan_all(&*after).iter().map(|(k, _)| k[0]).collect();
        assert_eq!(keys, [1, 2]);
        assert_eq!(
            after.reflog_all().unwrap(),
            [
                ("main".to_string(), 0, b"first".to_vec()),
                ("main".to_string(), 1, b"second".to_vec())
            ]
        );
    }

    #[test]
    fn a_write_dropped_changes_nothing_and_lets_the_next_one_in() {
        let b = MemoryBackend::new();
        let mut w = b.write(&WriteScope::Store, Duration::ZERO).unwrap();
        w.set_meta("k", Some(b"v")).unwrap();
        w.set_stats("main", Some(b"s")).unwrap();
        drop(w);
        let r = b.read().unwrap();
        assert_eq!(r.meta("k").unwrap(), None);
        let mut w = b.write(&WriteScope::Store, Duration::ZERO).unwrap();
        w.set_meta("k/1", Some(b"1")).unwrap();
        w.set_meta("k/2", Some(b"2")).unwrap();
        w.set_meta("l", Some(b"3")).unwrap();
        w.set_stats("main", Some(b"s")).unwrap();
        w.commit().unwrap();
        let mut w = b.write(&WriteScope::Store, Duration::ZERO).unwrap();
        w.clear_stats().unwrap();
        w.set_stats("side", Some(b"t")).unwrap();
        assert_eq!(
            w.all_stats().unwrap(),
            [("side".to_string(), b"t".to_vec())]
        );
        w.commit().unwrap();
        let r = b.read().unwrap();
        assert_eq!(r.meta_keys("k/").unwrap(), ["k/1", "k/2"]);
        assert_eq!(
            r.all_stats().unwrap(),
            [("side".to_string(), b"t".to_vec())]
        );
    }
}
