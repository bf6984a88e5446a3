//! The packs a store file lists, and the objects of a snapshot read across them.
//!
//! The list lives in the store file, written in the same redb transaction as whatever made or
//! removed a pack, so a pack is in the store exactly when that transaction committed: a pack
//! file is written and made durable first, and a crash before the commit leaves a file the list
//! does not name, which the next writer of that number replaces or a later tidy removes. Packs
//! are read newest first: a record in a newer pack hides one of the same id in an older one.
//! Merges take the newest packs, so a merged pack is as new as the newest it replaces.
//!
//! A process opens each pack once ([`PackCache`]), and every snapshot holds the ones its list
//! names: a pack a merge removed stays readable to the snapshots that still hold it.

use super::{Dictionary, Entry, Pack, PackInfo, PackWriter};
use crate::error::{Error, Result};
use crate::storage::backend::{Key, ObjectTable, ReadTx, ScanFn, WriteTx};
use crate::storage::codec;
use crate::storage::journal::segment::StoreId;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The list of packs, postcard-encoded (absent: none).
pub(crate) const META_PACKS: &str = "pack.list";
/// A dictionary's bytes are under this prefix and its id.
const META_DICTIONARY: &str = "pack.dictionary.";
/// The size of a dictionary trained on the store's records: 16 KiB compresses this workload
/// as well as 64 or 110 KiB (docs/decisions.md, "Objects in packs").
const DICTIONARY_SIZE: usize = 16 << 10;
/// The most of the records a dictionary is trained on: zstd's trainer takes time in
/// proportion to its samples (on all 14.7 MB of a 10,000-message import it made the import
/// three times slower), and more do not make a better dictionary of 16 KiB.
const TRAIN_MAX_BYTES: usize = 1 << 20;
/// A merge takes the newest packs while the next older one is less than this many times
/// their total: sizes then grow geometrically, so a store of N bytes has about log2(N) packs
/// and each record is copied about that many times over its life (git's geometric repack).
const MERGE_FACTOR: u64 = 2;

/// A pack as the list names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Listed {
    /// Its number, which names its file.
    pub(crate) number: u64,
    /// Its records.
    pub(crate) objects: u64,
    /// Its file's size.
    pub(crate) bytes: u64,
}

impl From<PackInfo> for Listed {
    fn from(p: PackInfo) -> Self {
        Listed {
            number: p.number,
            objects: p.objects,
            bytes: p.bytes,
        }
    }
}

/// What the store file records of its packs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PackList {
    /// The number the next pack gets (numbers are never reused).
    pub(crate) next: u64,
    /// The dictionary new packs are compressed with (0: none yet).
    pub(crate) dictionary: u32,
    /// The packs, oldest first.
    pub(crate) packs: Vec<Listed>,
}

impl PackList {
    /// The list a transaction reads.
    pub(crate) fn of(tx: &(impl ReadTx + ?Sized)) -> Result<Self> {
        match tx.meta(META_PACKS)? {
            Some(v) => postcard::from_bytes(&v)
                .map_err(|e| Error::corrupt(format!("the store's list of packs: {e}"))),
            None => Ok(PackList {
                next: 1,
                ..PackList::default()
            }),
        }
    }

    fn save(&self, w: &mut dyn WriteTx) -> Result<()> {
        let bytes = postcard::to_allocvec(self)
            .map_err(|e| Error::corrupt(format!("the store's list of packs: {e}")))?;
        w.set_meta(META_PACKS, Some(&bytes))
    }

    /// The packs a merge would take now: the newest, while the next older one is smaller than
    /// [`MERGE_FACTOR`] times their total (at least two, or none).
    pub(crate) fn merge_plan(&self) -> Vec<u64> {
        // The newest k+1 are taken when pack k (0 the newest) is under the factor times the
        // k newer ones; the largest such k wins (a binary counter's carry).
        let mut sum = 0u64;
        let mut take = 0usize;
        for (k, p) in self.packs.iter().rev().enumerate() {
            if k > 0 && p.bytes < MERGE_FACTOR.saturating_mul(sum) {
                take = k + 1;
            }
            sum = sum.saturating_add(p.bytes);
        }
        if take < 2 {
            return Vec::new();
        }
        self.packs[self.packs.len() - take..]
            .iter()
            .map(|p| p.number)
            .collect()
    }
}

/// The packs of one snapshot, newest first.
#[derive(Clone, Default)]
pub(crate) struct Packs {
    packs: Vec<Arc<Pack>>,
}

impl Packs {
    /// The record of `table` and `key`, from the newest pack that has it. A record that does
    /// not read back (a damaged pack) is handed up as [`codec::unreadable`]: it fails as a
    /// damaged record, naming its id, where it is read or checked.
    pub(crate) fn get(&self, table: ObjectTable, key: &Key) -> Result<Option<Vec<u8>>> {
        for p in &self.packs {
            if let Some(i) = p.find(table, key)
                && let Some(e) = p.entry(i)
            {
                return Ok(Some(read_or_unreadable(p, &e)));
            }
        }
        Ok(None)
    }

    /// Whether a pack has it.
    pub(crate) fn has(&self, table: ObjectTable, key: &Key) -> bool {
        self.packs.iter().any(|p| p.find(table, key).is_some())
    }

    /// Every record of `table` with an id from `low` to `high`, in id order (the newest pack's
    /// of equal ids), at most `limit`.
    pub(crate) fn scan(
        &self,
        table: ObjectTable,
        low: &Key,
        high: &Key,
        limit: Option<usize>,
        f: &mut ScanFn<'_>,
    ) -> Result<()> {
        let mut cursors: Vec<(&Pack, std::ops::Range<usize>)> = self
            .packs
            .iter()
            .map(|p| (&**p, p.range(table, low, high)))
            .collect();
        let mut left = limit.unwrap_or(usize::MAX);
        while left > 0 {
            // The smallest id under any cursor; of equal ones the newest pack's (the first).
            let mut best: Option<(usize, Entry)> = None;
            for (n, (p, r)) in cursors.iter().enumerate() {
                if r.start < r.end
                    && let Some(e) = p.entry(r.start)
                    && best.as_ref().is_none_or(|(_, b)| e.key < b.key)
                {
                    best = Some((n, e));
                }
            }
            let Some((n, e)) = best else { break };
            let record = read_or_unreadable(cursors[n].0, &e);
            for (p, r) in &mut cursors {
                if r.start < r.end && p.entry(r.start).is_some_and(|x| x.key == e.key) {
                    r.start += 1;
                }
            }
            f(e.key, &record)?;
            left -= 1;
        }
        Ok(())
    }

    /// Every pack, newest first.
    pub(crate) fn all(&self) -> &[Arc<Pack>] {
        &self.packs
    }
}

/// The record of an entry, or [`codec::unreadable`] saying why it does not read back.
fn read_or_unreadable(p: &Pack, e: &Entry) -> Vec<u8> {
    p.read(e)
        .unwrap_or_else(|err| codec::unreadable(&format!("it does not read back: {err}")))
}

/// The packs and dictionaries a process has open for one store file, shared by its snapshots.
pub(crate) struct PackCache {
    dir: PathBuf,
    store: StoreId,
    open: Mutex<HashMap<u64, Arc<Pack>>>,
    dictionaries: Mutex<HashMap<u32, Arc<Dictionary>>>,
}

impl PackCache {
    /// The packs of store `store`, in its journal directory `dir`.
    pub(crate) fn new(dir: &Path, store: StoreId) -> Self {
        PackCache {
            dir: dir.to_path_buf(),
            store,
            open: Mutex::new(HashMap::new()),
            dictionaries: Mutex::new(HashMap::new()),
        }
    }

    /// The journal directory the packs are in.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Dictionary `id`, from the store's metadata as `tx` reads it.
    fn dictionary(&self, id: u32, tx: &(impl ReadTx + ?Sized)) -> Result<Arc<Dictionary>> {
        let mut dicts = self.dictionaries.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(d) = dicts.get(&id) {
            return Ok(Arc::clone(d));
        }
        let bytes = tx
            .meta(&format!("{META_DICTIONARY}{id}"))?
            .ok_or_else(|| Error::corrupt(format!("pack dictionary {id} is missing")))?;
        let d = Arc::new(Dictionary::new(id, &bytes)?);
        dicts.insert(id, Arc::clone(&d));
        Ok(d)
    }

    /// The packs `list` names, open (those this process had open already, shared). A pack file
    /// that is not there is an I/O error of kind `NotFound`: the list was read before a merge
    /// removed it, and the caller reads it again.
    pub(crate) fn packs(&self, list: &PackList, tx: &(impl ReadTx + ?Sized)) -> Result<Packs> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let mut packs = Vec::with_capacity(list.packs.len());
        for l in list.packs.iter().rev() {
            if let Some(p) = open.get(&l.number) {
                packs.push(Arc::clone(p));
                continue;
            }
            let p = Arc::new(Pack::open(
                &self.dir,
                &self.store,
                l.number,
                |id| match id {
                    0 => Ok(None),
                    id => self.dictionary(id, tx).map(Some),
                },
            )?);
            open.insert(l.number, Arc::clone(&p));
            packs.push(p);
        }
        // Packs the list no longer names are let go (snapshots holding them keep them).
        if open.len() > packs.len() {
            let named: HashSet<u64> = list.packs.iter().map(|l| l.number).collect();
            open.retain(|n, _| named.contains(n));
        }
        Ok(Packs { packs })
    }

    /// Removes the files of packs no list names any more (after the transaction that dropped
    /// them committed): `dropped`, and any file numbered below `list.next` that `list` does not
    /// name (a removal a crash cut short). Readers that still map one keep reading it.
    pub(crate) fn remove_unlisted(&self, list: &PackList) -> Result<()> {
        let named: HashSet<u64> = list.packs.iter().map(|l| l.number).collect();
        let mut removed = false;
        for n in super::pack_numbers(&self.dir)? {
            if n < list.next && !named.contains(&n) {
                let path = super::pack_path(&self.dir, n);
                match std::fs::remove_file(&path) {
                    Ok(()) => removed = true,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(Error::io(&path, e)),
                }
            }
        }
        if removed {
            crate::storage::journal::sync_dir(&self.dir)?;
        }
        Ok(())
    }
}

/// The objects one redb transaction writes to packs: the records put (oldest first; of one id
/// the last counts) and the ids removed.
#[derive(Default)]
pub(crate) struct ObjectWrites {
    puts: Vec<(ObjectTable, Key, Vec<u8>)>,
    at: HashMap<(ObjectTable, Key), usize>,
    removed: HashSet<(ObjectTable, Key)>,
}

impl ObjectWrites {
    /// A record put.
    pub(crate) fn put(&mut self, table: ObjectTable, key: Key, record: Vec<u8>) {
        self.removed.remove(&(table, key));
        match self.at.get(&(table, key)) {
            Some(&i) => self.puts[i].2 = record,
            None => {
                self.at.insert((table, key), self.puts.len());
                self.puts.push((table, key, record));
            }
        }
    }

    /// A record removed.
    pub(crate) fn remove(&mut self, table: ObjectTable, key: Key) {
        if let Some(i) = self.at.remove(&(table, key)) {
            // Left in place, emptied: positions of the others stay valid.
            self.puts[i].2 = Vec::new();
        }
        self.removed.insert((table, key));
    }

    /// Nothing to write.
    pub(crate) fn is_empty(&self) -> bool {
        self.at.is_empty() && self.removed.is_empty()
    }
}

/// Writes `objects` in the redb write transaction `w`: the records put into a new pack, and
/// every pack holding a removed id rewritten without it. With `replace` (store-wide work:
/// redaction, repairs, sync), a record put under an id an older pack holds with other bytes
/// takes that one out too, so a redacted payload is in no pack. The new list is saved in `w`;
/// the caller removes the files it no longer names once `w` commits
/// ([`PackCache::remove_unlisted`]).
pub(crate) fn write_objects(
    cache: &PackCache,
    w: &mut dyn WriteTx,
    objects: ObjectWrites,
    replace: bool,
) -> Result<PackList> {
    let mut list = PackList::of(&*w)?;
    if objects.is_empty() {
        return Ok(list);
    }
    let packs = cache.packs(&list, &*w)?;
    let ObjectWrites {
        puts, at, removed, ..
    } = objects;
    // Each id's last put, where it stands (an id removed after its put is in none).
    let puts: Vec<_> = puts
        .into_iter()
        .enumerate()
        .filter(|(i, (t, k, _))| at.get(&(*t, *k)) == Some(i))
        .map(|(_, put)| put)
        .collect();
    let mut gone: HashSet<(ObjectTable, Key)> = removed;
    if replace {
        for (t, k, record) in &puts {
            if let Some(old) = packs.get(*t, k)? {
                let has_tokens = *t == ObjectTable::Blobs;
                if codec::expanded(&old, has_tokens)? != codec::expanded(record, has_tokens)? {
                    gone.insert((*t, *k));
                }
            }
        }
    }
    // Packs holding a removed id are written again without it (the newest of them first, so
    // the rewritten ones keep their order among themselves, after every other pack).
    let mut rewrite: Vec<&Arc<Pack>> = Vec::new();
    if !gone.is_empty() {
        for p in packs.all() {
            if gone.iter().any(|(t, k)| p.find(*t, k).is_some()) {
                rewrite.push(p);
            }
        }
    }
    if !rewrite.is_empty() {
        let numbers: HashSet<u64> = rewrite.iter().map(|p| p.number()).collect();
        let info = copy_packs(cache, &mut list, &packs, &numbers, &gone, w)?;
        list.packs.retain(|l| !numbers.contains(&l.number));
        if let Some(info) = info {
            list.packs.push(info.into());
        }
    }
    if !puts.is_empty() {
        let dict = dictionary_for(cache, &mut list, &puts, w)?;
        let number = list.next;
        list.next += 1;
        let mut pack = PackWriter::create(cache.dir(), &cache.store, number, dict.as_deref())?;
        for (t, k, record) in &puts {
            pack.add(*t, k, record)?;
        }
        list.packs.push(pack.finish()?.into());
    }
    list.save(w)?;
    Ok(list)
}

/// About how many records the first pass of [`training_order`] takes: the step between them
/// is the batch's records over this.
const TRAIN_STRIDE_SAMPLES: usize = 1024;

/// The records (not chunks) of `puts` in the order the trainer takes them, up to its cap:
/// spread over the whole batch, every `step`-th one, then those after each of them, and so on.
/// A fold's records come grouped by table (every commit, then every blob), so the first
/// megabyte alone would be commits, whose ids do not compress, and a dictionary trained on
/// them left most messages uncompressed (10,000 items: 1.29 bytes per text byte against 0.76).
fn training_order(puts: &[(ObjectTable, Key, Vec<u8>)]) -> Vec<&(ObjectTable, Key, Vec<u8>)> {
    let records: Vec<_> = puts
        .iter()
        .filter(|(t, _, _)| *t != ObjectTable::Chunks)
        .collect();
    let step = (records.len() / TRAIN_STRIDE_SAMPLES).max(1);
    let mut order = Vec::with_capacity(records.len());
    for start in 0..step {
        order.extend(records.iter().skip(start).step_by(step).copied());
    }
    order
}

/// The dictionary new packs use: the store's, or one trained now on `puts` when the store has
/// none yet and they are enough to train on (saved in `w`).
fn dictionary_for(
    cache: &PackCache,
    list: &mut PackList,
    puts: &[(ObjectTable, Key, Vec<u8>)],
    w: &mut dyn WriteTx,
) -> Result<Option<Arc<Dictionary>>> {
    if list.dictionary != 0 {
        return cache.dictionary(list.dictionary, &*w).map(Some);
    }
    let mut expanded: Vec<std::borrow::Cow<'_, [u8]>> = Vec::new();
    let mut total = 0usize;
    for (t, _, r) in training_order(puts) {
        if total >= TRAIN_MAX_BYTES {
            break;
        }
        let e = codec::expanded(r, *t == ObjectTable::Blobs)?;
        total += e.len();
        expanded.push(e);
    }
    let samples: Vec<&[u8]> = expanded.iter().map(|c| c.as_ref()).collect();
    let Some(bytes) = Dictionary::train(&samples, DICTIONARY_SIZE) else {
        return Ok(None);
    };
    let id = 1;
    w.set_meta(&format!("{META_DICTIONARY}{id}"), Some(&bytes))?;
    list.dictionary = id;
    // Not kept in the cache: the transaction may not commit, and another process may then
    // train a dictionary 1 of other bytes. The cache loads it from what committed.
    Dictionary::new(id, &bytes).map(|d| Some(Arc::new(d)))
}

/// Writes the records of the packs of `all` that `from` names, less those in `leave`, into
/// one new pack (numbered from `list`), each id once: the newest pack's record. The new pack
/// is read before every other, so a record a newer pack outside `from` also holds is left
/// out (it would hide that one). `None` when nothing is left.
fn copy_packs(
    cache: &PackCache,
    list: &mut PackList,
    all: &Packs,
    from: &HashSet<u64>,
    leave: &HashSet<(ObjectTable, Key)>,
    w: &mut dyn WriteTx,
) -> Result<Option<PackInfo>> {
    let dict = match list.dictionary {
        0 => None,
        id => Some(cache.dictionary(id, &*w)?),
    };
    let number = list.next;
    list.next += 1;
    let mut pack = PackWriter::create(cache.dir(), &cache.store, number, dict.as_deref())?;
    // Oldest first: the writer keeps the last record added under an id.
    let packs = all.all();
    for (at, p) in packs.iter().enumerate().rev() {
        if !from.contains(&p.number()) {
            continue;
        }
        let newer: Vec<&Arc<Pack>> = packs[..at]
            .iter()
            .filter(|q| !from.contains(&q.number()))
            .collect();
        let same = p.dictionary().map(|d| d.id()) == dict.as_ref().map(|d| d.id());
        for i in 0..p.len() {
            let e = p.entry(i).ok_or_else(|| {
                Error::corrupt(format!(
                    "{}: an index entry names no table",
                    p.path().display()
                ))
            })?;
            if leave.contains(&(e.table, e.key))
                || newer.iter().any(|q| q.find(e.table, &e.key).is_some())
            {
                continue;
            }
            if same {
                pack.add_stored(e.table, &e.key, p.stored(&e)?, e.plain())?;
            } else {
                pack.add(e.table, &e.key, &p.read(&e)?)?;
            }
        }
    }
    if pack.len() == 0 {
        drop(pack);
        let _ = std::fs::remove_file(super::pack_path(cache.dir(), number));
        return Ok(None);
    }
    pack.finish().map(Some)
}

/// Merges the packs `numbers` names (the newest of the list, from [`PackList::merge_plan`])
/// into one, in `w`; the new list is saved there.
pub(crate) fn merge(cache: &PackCache, w: &mut dyn WriteTx, numbers: &[u64]) -> Result<PackList> {
    let mut list = PackList::of(&*w)?;
    let packs = cache.packs(&list, &*w)?;
    let from: HashSet<u64> = packs
        .all()
        .iter()
        .map(|p| p.number())
        .filter(|n| numbers.contains(n))
        .collect();
    if from.len() < 2 {
        return Ok(list);
    }
    let info = copy_packs(cache, &mut list, &packs, &from, &HashSet::new(), w)?;
    list.packs.retain(|l| !numbers.contains(&l.number));
    if let Some(info) = info {
        list.packs.push(info.into());
    }
    list.save(w)?;
    Ok(list)
}

/// Moves every object record of the tables `w` reads into one new pack and removes it from
/// the tables (the upgrade to store format 5): a dictionary is trained first on the first
/// records of the store's commits and blobs, when they are enough. The new list is saved in
/// `w`.
pub(crate) fn pack_tables(cache: &PackCache, w: &mut dyn WriteTx) -> Result<PackList> {
    const TABLES: [ObjectTable; 3] = [
        ObjectTable::Commits,
        ObjectTable::Blobs,
        ObjectTable::Chunks,
    ];
    const SAMPLES: usize = 2000;
    let (low, high) = ([0u8; 32], [0xffu8; 32]);
    let mut list = PackList::of(&*w)?;
    let mut samples = Vec::new();
    for t in [ObjectTable::Blobs, ObjectTable::Commits] {
        w.scan(t, &low, &high, Some(SAMPLES), &mut |k, v| {
            samples.push((t, k, v.to_vec()));
            Ok(())
        })?;
    }
    let dict = dictionary_for(cache, &mut list, &samples, w)?;
    drop(samples);
    let number = list.next;
    list.next += 1;
    let mut pack = PackWriter::create(cache.dir(), &cache.store, number, dict.as_deref())?;
    let mut moved: Vec<(ObjectTable, Vec<Key>)> = Vec::new();
    for t in TABLES {
        let mut keys = Vec::new();
        w.scan(t, &low, &high, None, &mut |k, v| {
            pack.add(t, &k, v)?;
            keys.push(k);
            Ok(())
        })?;
        moved.push((t, keys));
    }
    if pack.len() == 0 {
        drop(pack);
        let path = super::pack_path(cache.dir(), number);
        std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
    } else {
        list.packs.push(pack.finish()?.into());
    }
    for (t, keys) in moved {
        for some in keys.chunks(4096) {
            w.remove_objects(t, some)?;
        }
    }
    list.save(w)?;
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fold's records come grouped by table; the trainer's first megabyte has commits and
    /// blobs as the batch has them, and every record comes once.
    #[test]
    fn the_dictionary_is_trained_on_records_spread_over_the_batch() {
        let key = |i: usize| {
            let mut k = [0u8; 32];
            k[..8].copy_from_slice(&(i as u64).to_le_bytes());
            k
        };
        let mut puts: Vec<(ObjectTable, Key, Vec<u8>)> = Vec::new();
        puts.extend((0..9000).map(|i| (ObjectTable::Commits, key(i), vec![1; 80])));
        puts.extend((0..9000).map(|i| (ObjectTable::Blobs, key(i), vec![2; 300])));
        puts.extend((0..10).map(|i| (ObjectTable::Chunks, key(i), vec![3; 300])));
        let order = training_order(&puts);
        assert_eq!(order.len(), 18_000);
        let mut seen = HashSet::new();
        assert!(order.iter().all(|(t, k, _)| seen.insert((*t, *k))));
        let (mut bytes, mut commits, mut blobs) = (0, 0usize, 0usize);
        for (t, _, r) in order {
            if bytes >= TRAIN_MAX_BYTES {
                break;
            }
            bytes += r.len();
            match t {
                ObjectTable::Commits => commits += 1,
                _ => blobs += 1,
            }
        }
        // About half of the samples each, as in the batch, at most the commits of the one
        // pass the cap cut short apart (a pass takes every 17th record); the first megabyte
        // alone would be commits only.
        assert!(
            blobs > 2000 && commits > 2000,
            "{commits} commits, {blobs} blobs"
        );
        assert!(
            commits.abs_diff(blobs) <= 9000 / 17 + 5,
            "{commits} commits, {blobs} blobs"
        );
    }

    /// Folds of equal size, each a pack, merged as the plan says: packs stay about log2 of
    /// the folds, and each fold's bytes are copied about that many times.
    #[test]
    fn merges_keep_packs_logarithmic_and_copies_bounded() {
        let mut list = PackList {
            next: 1,
            ..PackList::default()
        };
        let mut copied = 0u64;
        let folds = 1000u64;
        for _ in 0..folds {
            list.packs.push(Listed {
                number: list.next,
                objects: 1,
                bytes: 100,
            });
            list.next += 1;
            let plan = list.merge_plan();
            if !plan.is_empty() {
                // Only the newest packs, in order.
                let newest: Vec<u64> = list.packs[list.packs.len() - plan.len()..]
                    .iter()
                    .map(|p| p.number)
                    .collect();
                assert_eq!(plan, newest);
                let bytes: u64 = list.packs[list.packs.len() - plan.len()..]
                    .iter()
                    .map(|p| p.bytes)
                    .sum();
                copied += bytes;
                list.packs.truncate(list.packs.len() - plan.len());
                list.packs.push(Listed {
                    number: list.next,
                    objects: 1,
                    bytes,
                });
                list.next += 1;
            }
            // Oldest first, so sizes shrink towards the newest.
            assert!(list.packs.len() <= 12, "{} packs", list.packs.len());
        }
        assert_eq!(list.packs.iter().map(|p| p.bytes).sum::<u64>(), folds * 100);
        // log2(1000) is about 10: each byte copied at most that often.
        assert!(copied <= folds * 100 * 11, "{copied}");
        assert!(list.merge_plan().len() != 1);
    }
}
