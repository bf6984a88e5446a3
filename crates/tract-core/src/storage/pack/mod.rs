//! Packs: where a store file's objects live once the journal's frames are folded
//! (docs/decisions.md, "Objects in packs").
//!
//! A pack is one file in the journal's directory, `pack-<number>`, written once from start to
//! end and made durable before the store file lists it (`set`), never changed after:
//! - a header naming the store, the pack's number and the dictionary its records were
//!   compressed with, and a check;
//! - the records, each compressed on its own (zstd, with the store's dictionary), so one is
//!   read without the others, in the order they were written (a branch's commits lie together);
//! - the index: a fanout table (for each table and first byte of an id, how many entries come
//!   up to it, as git's pack indexes have), then one entry for each (table, id), sorted: the
//!   id, where its record starts and how long it is;
//! - a footer: where the index starts, how many entries it has, checks of the records and of
//!   the index, and its own check, over the store's id and the pack's number too, so a pack of
//!   another store or renamed never opens.
//!
//! Opening a pack checks its header, its footer and the index's shape, never every byte: that
//! is fsck's ([`Pack::check`]). A record read is checked above, against its id, as every
//! backend's records are.

pub(crate) mod set;

use crate::error::{Error, Result};
use crate::storage::backend::{Key, ObjectTable};
use crate::storage::journal::segment::StoreId;
use memmap2::Mmap;
use std::cell::RefCell;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a pack file starts with.
const MAGIC: &[u8; 16] = b"tract pack\0\0\0\0\0\0";
/// The layout of packs this build writes and reads.
const PACK_FORMAT: u32 = 1;
/// The header: magic, format, dictionary, store id, number, zeros, check.
const HEADER_LEN: usize = 64;
/// The footer: index offset, entries, records check, index check, zeros, check.
const FOOTER_LEN: usize = 64;
/// An index entry: table, id, offset (6 bytes), stored length (4).
const ENTRY_LEN: usize = 1 + 32 + 6 + 4;
/// One count for each table and first byte of an id.
const FANOUT: usize = 3 * 256;
const FANOUT_LEN: usize = FANOUT * 4;
/// The stored length's top bit: the record is stored as it is (compressing did not shrink it).
const STORED_PLAIN: u32 = 1 << 31;
/// The most a record may claim to decompress to: a damaged frame header is refused before
/// anything is allocated for it. Records are at most a chunk (about 1 MiB) with its head, or a
/// chunk list of 32 bytes per MiB of a blob.
const RECORD_MAX: u64 = 64 << 20;
/// zstd's level: its default, about 2 µs for a 400-byte record with a 16 KiB dictionary on
/// this workload, and within 5% of level 9's size there (docs/decisions.md).
const LEVEL: i32 = 3;

/// The file of pack `number` in the journal directory `dir`.
pub(crate) fn pack_path(dir: &Path, number: u64) -> PathBuf {
    dir.join(format!("pack-{number:016}"))
}

/// The numbers of the pack files in `dir`, in order.
pub(crate) fn pack_numbers(dir: &Path) -> Result<Vec<u64>> {
    crate::storage::journal::numbered_files(dir, "pack-")
}

fn table_byte(t: ObjectTable) -> u8 {
    match t {
        ObjectTable::Commits => 0,
        ObjectTable::Blobs => 1,
        ObjectTable::Chunks => 2,
    }
}

fn table_of(b: u8) -> Option<ObjectTable> {
    match b {
        0 => Some(ObjectTable::Commits),
        1 => Some(ObjectTable::Blobs),
        2 => Some(ObjectTable::Chunks),
        _ => None,
    }
}

/// BLAKE3 over `parts`, cut to `N` bytes.
fn check<const N: usize>(parts: &[&[u8]]) -> [u8; N] {
    let mut h = blake3::Hasher::new();
    for p in parts {
        h.update(p);
    }
    let mut out = [0u8; N];
    h.finalize_xof().fill(&mut out);
    out
}

fn corrupt(path: &Path, reason: impl Into<String>) -> Error {
    Error::CorruptJournal {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// A compression dictionary of the store's, as zstd uses it, with its id (packs name it).
pub(crate) struct Dictionary {
    id: u32,
    bytes: Vec<u8>,
    /// Made when a pack is first written with it (about a millisecond): a process that only
    /// reads never makes it.
    encoder: std::sync::OnceLock<zstd::dict::EncoderDictionary<'static>>,
    decoder: zstd::dict::DecoderDictionary<'static>,
}

impl Dictionary {
    /// The dictionary `id` from its bytes.
    pub(crate) fn new(id: u32, bytes: &[u8]) -> Result<Self> {
        let decoder = zstd::dict::DecoderDictionary::try_copy(bytes)
            .map_err(|e| Error::corrupt(format!("pack dictionary {id}: {e}")))?;
        Ok(Dictionary {
            id,
            bytes: bytes.to_vec(),
            encoder: std::sync::OnceLock::new(),
            decoder,
        })
    }

    fn encoder(&self) -> &zstd::dict::EncoderDictionary<'static> {
        self.encoder
            .get_or_init(|| zstd::dict::EncoderDictionary::copy(&self.bytes, LEVEL))
    }

    /// Trains a dictionary of at most `size` bytes on `samples` (records as packs hold them),
    /// `None` when they are too few to train on.
    pub(crate) fn train(samples: &[&[u8]], size: usize) -> Option<Vec<u8>> {
        let total: usize = samples.iter().map(|s| s.len()).sum();
        // zstd's trainer wants many samples, and a dictionary is only worth it for small ones.
        if samples.len() < 256 || total < 4 * size {
            return None;
        }
        zstd::dict::from_samples(samples, size).ok()
    }

    /// Its id.
    pub(crate) fn id(&self) -> u32 {
        self.id
    }
}

thread_local! {
    /// A decompression context for each thread, made once (it is a few hundred KiB).
    static DCTX: RefCell<zstd::zstd_safe::DCtx<'static>> =
        RefCell::new(zstd::zstd_safe::DCtx::create());
}

/// Decompresses one record stored as a zstd frame.
fn decompress(frame: &[u8], dict: Option<&Dictionary>) -> std::result::Result<Vec<u8>, String> {
    let size = match zstd::zstd_safe::get_frame_content_size(frame) {
        Ok(Some(n)) if n <= RECORD_MAX => n as usize,
        Ok(Some(n)) => return Err(format!("a record claims {n} bytes")),
        Ok(None) => return Err("a record without its size".into()),
        Err(_) => return Err("a record's frame header does not read".into()),
    };
    let mut out = Vec::with_capacity(size);
    DCTX.with(|d| {
        let mut d = d.borrow_mut();
        match dict {
            Some(dict) => d.decompress_using_ddict(&mut out, frame, dict.decoder.as_ddict()),
            None => d.decompress(&mut out, frame),
        }
    })
    .map_err(|code| {
        format!(
            "a record does not decompress: {}",
            zstd::zstd_safe::get_error_name(code)
        )
    })?;
    if out.len() != size {
        return Err("a record decompresses to the wrong length".into());
    }
    Ok(out)
}

/// What a written pack holds, as the store lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PackInfo {
    /// Its number, which names its file.
    pub(crate) number: u64,
    /// How many records it holds.
    pub(crate) objects: u64,
    /// The file's size.
    pub(crate) bytes: u64,
}

/// A pack being written: records go to the file as they come, the index at [`PackWriter::finish`].
pub(crate) struct PackWriter<'d> {
    path: PathBuf,
    dir: PathBuf,
    file: BufWriter<File>,
    store: StoreId,
    number: u64,
    compressor: Option<zstd::bulk::Compressor<'d>>,
    /// Table, id, offset, stored length, in the order written.
    entries: Vec<(u8, Key, u64, u32)>,
    records: blake3::Hasher,
    at: u64,
}

impl<'d> PackWriter<'d> {
    /// Starts pack `number` of store `store` in `dir`, its records compressed with `dict`
    /// (none: zstd without one). A file of that name (a pack a crash left unlisted) is
    /// replaced.
    pub(crate) fn create(
        dir: &Path,
        store: &StoreId,
        number: u64,
        dict: Option<&'d Dictionary>,
    ) -> Result<Self> {
        let path = pack_path(dir, number);
        let io = |e| Error::io(&path, e);
        let file = File::create(&path).map_err(io)?;
        let mut compressor = match dict {
            Some(d) => zstd::bulk::Compressor::with_prepared_dictionary(d.encoder()),
            None => zstd::bulk::Compressor::new(LEVEL),
        }
        .map_err(io)?;
        // The dictionary is the pack's (its header names it): 4 bytes a record saved.
        compressor
            .set_parameter(zstd::zstd_safe::CParameter::DictIdFlag(false))
            .map_err(io)?;
        let mut header = [0u8; HEADER_LEN];
        header[..16].copy_from_slice(MAGIC);
        header[16..20].copy_from_slice(&PACK_FORMAT.to_le_bytes());
        header[20..24].copy_from_slice(&dict.map_or(0, Dictionary::id).to_le_bytes());
        header[24..40].copy_from_slice(store);
        header[40..48].copy_from_slice(&number.to_le_bytes());
        let c: [u8; 8] = check(&[&header[..56]]);
        header[56..].copy_from_slice(&c);
        let mut file = BufWriter::with_capacity(1 << 20, file);
        file.write_all(&header).map_err(io)?;
        Ok(PackWriter {
            dir: dir.to_path_buf(),
            path,
            file,
            store: *store,
            number,
            compressor: Some(compressor),
            entries: Vec::new(),
            records: blake3::Hasher::new(),
            at: HEADER_LEN as u64,
        })
    }

    /// Adds a record (as the codec made it; an LZ4 payload is stored expanded, to compress
    /// better). A later record of the same table and id replaces an earlier one.
    pub(crate) fn add(&mut self, table: ObjectTable, key: &Key, record: &[u8]) -> Result<()> {
        let plain = crate::storage::codec::expanded(record, table == ObjectTable::Blobs)?;
        let packed = match self.compressor.as_mut() {
            Some(c) => c.compress(&plain).map_err(|e| Error::io(&self.path, e))?,
            None => Vec::new(),
        };
        if !packed.is_empty() && packed.len() < plain.len() {
            self.put(table, key, &packed, false)
        } else {
            self.put(table, key, &plain, true)
        }
    }

    /// Adds a record as another pack stores it (`stored`, compressed with this pack's
    /// dictionary unless `plain`): a merge copies records without decompressing them.
    pub(crate) fn add_stored(
        &mut self,
        table: ObjectTable,
        key: &Key,
        stored: &[u8],
        plain: bool,
    ) -> Result<()> {
        self.put(table, key, stored, plain)
    }

    fn put(&mut self, table: ObjectTable, key: &Key, bytes: &[u8], plain: bool) -> Result<()> {
        let len = u32::try_from(bytes.len())
            .ok()
            .filter(|l| *l < STORED_PLAIN)
            .ok_or_else(|| Error::invalid_input("a record too large for a pack"))?;
        self.file
            .write_all(bytes)
            .map_err(|e| Error::io(&self.path, e))?;
        self.records.update(bytes);
        let len = if plain { len | STORED_PLAIN } else { len };
        self.entries.push((table_byte(table), *key, self.at, len));
        self.at += bytes.len() as u64;
        Ok(())
    }

    /// How many records were added.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Writes the index and the footer and makes the pack durable (its file and its name).
    pub(crate) fn finish(mut self) -> Result<PackInfo> {
        self.compressor = None;
        let io = |path: &Path, e| Error::io(path, e);
        // Sorted by table and id; of equal ones the last added stays.
        let mut entries = std::mem::take(&mut self.entries);
        entries.reverse();
        entries.sort_by_key(|e| (e.0, e.1));
        entries.dedup_by(|later, kept| (later.0, later.1) == (kept.0, kept.1));
        let mut fanout = [0u32; FANOUT];
        for e in &entries {
            fanout[usize::from(e.0) * 256 + usize::from(e.1[0])] += 1;
        }
        let mut index = Vec::with_capacity(FANOUT_LEN + entries.len() * ENTRY_LEN);
        let mut total = 0u32;
        for n in fanout {
            total += n;
            index.extend_from_slice(&total.to_le_bytes());
        }
        for (t, key, offset, len) in &entries {
            index.push(*t);
            index.extend_from_slice(key);
            index.extend_from_slice(&offset.to_le_bytes()[..6]);
            index.extend_from_slice(&len.to_le_bytes());
        }
        let mut footer = [0u8; FOOTER_LEN];
        footer[..8].copy_from_slice(&self.at.to_le_bytes());
        footer[8..16].copy_from_slice(&(entries.len() as u64).to_le_bytes());
        let records: [u8; 16] = {
            let mut out = [0u8; 16];
            self.records.finalize_xof().fill(&mut out);
            out
        };
        footer[16..32].copy_from_slice(&records);
        footer[32..48].copy_from_slice(&check::<16>(&[&index]));
        let c: [u8; 8] = check(&[&self.store, &self.number.to_le_bytes(), &footer[..56]]);
        footer[56..].copy_from_slice(&c);
        self.file
            .write_all(&index)
            .and_then(|()| self.file.write_all(&footer))
            .map_err(|e| io(&self.path, e))?;
        let file = self
            .file
            .into_inner()
            .map_err(|e| io(&self.path, e.into_error()))?;
        file.sync_data().map_err(|e| io(&self.path, e))?;
        crate::storage::journal::sync_dir(&self.dir)?;
        Ok(PackInfo {
            number: self.number,
            objects: entries.len() as u64,
            bytes: self.at + (index.len() + FOOTER_LEN) as u64,
        })
    }
}

/// An open pack: its file mapped, its header and footer checked.
pub(crate) struct Pack {
    path: PathBuf,
    number: u64,
    dict: Option<Arc<Dictionary>>,
    map: Mmap,
    /// Where the index (its fanout table) starts.
    index: usize,
    count: usize,
}

impl std::fmt::Debug for Pack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pack")
            .field("path", &self.path)
            .field("count", &self.count)
            .finish()
    }
}

/// One index entry, read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The record's table.
    pub(crate) table: ObjectTable,
    /// Its id.
    pub(crate) key: Key,
    offset: u64,
    len: u32,
}

impl Entry {
    /// The record is stored as it is, not compressed.
    pub(crate) fn plain(&self) -> bool {
        self.len & STORED_PLAIN != 0
    }

    fn stored_len(&self) -> u64 {
        u64::from(self.len & !STORED_PLAIN)
    }
}

impl Pack {
    /// Opens pack `number` of store `store` in `dir`; `dictionary` gives the dictionary of the
    /// id its header names (0: none). A missing file is an I/O error of kind `NotFound` (a
    /// newer fold or merge may have removed it: the caller reads the list again).
    pub(crate) fn open(
        dir: &Path,
        store: &StoreId,
        number: u64,
        dictionary: impl FnOnce(u32) -> Result<Option<Arc<Dictionary>>>,
    ) -> Result<Pack> {
        let path = pack_path(dir, number);
        let file = File::open(&path).map_err(|e| Error::io(&path, e))?;
        // Safety: a pack is never written after it is listed, and never truncated (a merge
        // writes a new one and removes the file); a file changed by hand under a running
        // process is outside what any store survives.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::io(&path, e))?;
        let bad = |reason: &str| corrupt(&path, reason);
        if map.len() < HEADER_LEN + FANOUT_LEN + FOOTER_LEN {
            return Err(bad("shorter than a pack's header, index and footer"));
        }
        let header = &map[..HEADER_LEN];
        if &header[..16] != MAGIC {
            return Err(bad("not a tract pack"));
        }
        if check::<8>(&[&header[..56]]) != header[56..] {
            return Err(bad("the header does not check"));
        }
        let format = u32::from_le_bytes([header[16], header[17], header[18], header[19]]);
        if format != PACK_FORMAT {
            return Err(bad(&format!(
                "pack format {format}, this build reads {PACK_FORMAT}"
            )));
        }
        if header[24..40] != store[..] {
            return Err(bad("a pack of another store"));
        }
        if header[40..48] != number.to_le_bytes() {
            return Err(bad("the pack's number is not its name's"));
        }
        let named = u32::from_le_bytes([header[20], header[21], header[22], header[23]]);
        let dict = dictionary(named)?;
        if named != dict.as_ref().map_or(0, |d| d.id()) {
            return Err(bad(&format!(
                "compressed with dictionary {named}, not given"
            )));
        }
        let footer = &map[map.len() - FOOTER_LEN..];
        if check::<8>(&[store, &number.to_le_bytes(), &footer[..56]]) != footer[56..] {
            return Err(bad("the footer does not check"));
        }
        let word = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&footer[at..at + 8]);
            u64::from_le_bytes(b)
        };
        let (index, count) = (word(0), word(8));
        let fits = usize::try_from(count)
            .ok()
            .and_then(|c| c.checked_mul(ENTRY_LEN))
            .and_then(|e| e.checked_add(FANOUT_LEN + FOOTER_LEN))
            .and_then(|e| usize::try_from(index).ok()?.checked_add(e));
        if index < HEADER_LEN as u64 || fits != Some(map.len()) {
            return Err(bad("the footer does not match the file's size"));
        }
        let (index, count) = (index as usize, count as usize);
        let mut last = 0u32;
        for i in 0..FANOUT {
            let at = index + i * 4;
            let n = u32::from_le_bytes([map[at], map[at + 1], map[at + 2], map[at + 3]]);
            if n < last {
                return Err(bad("the index's fanout goes down"));
            }
            last = n;
        }
        if last as usize != count {
            return Err(bad("the index's fanout does not count its entries"));
        }
        Ok(Pack {
            path,
            number,
            dict,
            map,
            index,
            count,
        })
    }

    /// Its number.
    pub(crate) fn number(&self) -> u64 {
        self.number
    }

    /// Its file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The dictionary its records are compressed with.
    pub(crate) fn dictionary(&self) -> Option<&Arc<Dictionary>> {
        self.dict.as_ref()
    }

    /// How many records it holds.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// The file's size.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> u64 {
        self.map.len() as u64
    }

    fn fanout(&self, i: usize) -> usize {
        let at = self.index + i * 4;
        let m = &self.map;
        u32::from_le_bytes([m[at], m[at + 1], m[at + 2], m[at + 3]]) as usize
    }

    fn entry_bytes(&self, i: usize) -> &[u8] {
        let at = self.index + FANOUT_LEN + i * ENTRY_LEN;
        &self.map[at..at + ENTRY_LEN]
    }

    /// The `i`-th entry of the index (`i < len()`); `None` for a table byte no pack writes.
    pub(crate) fn entry(&self, i: usize) -> Option<Entry> {
        let e = self.entry_bytes(i);
        let mut key = [0u8; 32];
        key.copy_from_slice(&e[1..33]);
        let mut offset = [0u8; 8];
        offset[..6].copy_from_slice(&e[33..39]);
        Some(Entry {
            table: table_of(e[0])?,
            key,
            offset: u64::from_le_bytes(offset),
            len: u32::from_le_bytes([e[39], e[40], e[41], e[42]]),
        })
    }

    /// The entries of `table` whose ids are from `low` to `high` (inclusive), as index
    /// positions.
    pub(crate) fn range(
        &self,
        table: ObjectTable,
        low: &Key,
        high: &Key,
    ) -> std::ops::Range<usize> {
        let t = usize::from(table_byte(table)) * 256;
        let lo_bucket = t + usize::from(low[0]);
        let start = if lo_bucket == 0 {
            0
        } else {
            self.fanout(lo_bucket - 1)
        };
        let end = self.fanout(t + usize::from(high[0]).max(usize::from(low[0])));
        let tb = table_byte(table);
        let first = self.partition(start, end, |e| (e[0], &e[1..33]) < (tb, &low[..]));
        let last = self.partition(first, end, |e| (e[0], &e[1..33]) <= (tb, &high[..]));
        first..last
    }

    /// The first position in `lo..hi` whose entry is not `before`.
    fn partition(&self, mut lo: usize, mut hi: usize, before: impl Fn(&[u8]) -> bool) -> usize {
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if before(self.entry_bytes(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Where the record of `table` and `key` is in the index. Ids are uniform hashes, so an
    /// entry is about where its bytes after the first say within its fanout bucket: the search
    /// starts there and gallops out, reading a page or two of the index rather than one per
    /// step of a binary search over the bucket (a lookup's pages are all it maps).
    pub(crate) fn find(&self, table: ObjectTable, key: &Key) -> Option<usize> {
        let bucket = usize::from(table_byte(table)) * 256 + usize::from(key[0]);
        let start = if bucket == 0 {
            0
        } else {
            self.fanout(bucket - 1)
        };
        let end = self.fanout(bucket);
        if start >= end {
            return None;
        }
        let tb = table_byte(table);
        let before = |e: &[u8]| (e[0], &e[1..33]) < (tb, &key[..]);
        let mut next = [0u8; 8];
        next.copy_from_slice(&key[1..9]);
        let span = (end - start) as u128;
        let guess = start + ((u128::from(u64::from_be_bytes(next)) * span) >> 64) as usize;
        let (mut lo, mut hi) = (start, end);
        let mut step = 1;
        if before(self.entry_bytes(guess)) {
            lo = guess + 1;
            while lo < end {
                let probe = (guess + step).min(end - 1);
                if !before(self.entry_bytes(probe)) {
                    hi = probe;
                    break;
                }
                lo = probe + 1;
                step *= 2;
            }
        } else {
            hi = guess;
            while hi > start {
                let probe = guess.saturating_sub(step).max(start);
                if before(self.entry_bytes(probe)) {
                    lo = probe + 1;
                    break;
                }
                hi = probe;
                step *= 2;
            }
        }
        let at = self.partition(lo, hi, before);
        (at < end && self.entry_bytes(at)[0] == tb && self.entry_bytes(at)[1..33] == key[..])
            .then_some(at)
    }

    /// The record of entry `i` as stored: its bytes, compressed with the pack's dictionary
    /// unless the entry is plain.
    pub(crate) fn stored(&self, e: &Entry) -> Result<&[u8]> {
        let end = e.offset.checked_add(e.stored_len());
        let records_end = (self.index) as u64;
        match end {
            Some(end) if e.offset >= HEADER_LEN as u64 && end <= records_end => {
                Ok(&self.map[e.offset as usize..end as usize])
            }
            _ => Err(corrupt(
                &self.path,
                "an index entry points outside the records",
            )),
        }
    }

    /// The record of an entry, as the codec reads it.
    pub(crate) fn read(&self, e: &Entry) -> Result<Vec<u8>> {
        let stored = self.stored(e)?;
        if e.plain() {
            return Ok(stored.to_vec());
        }
        decompress(stored, self.dict.as_deref()).map_err(|reason| corrupt(&self.path, reason))
    }

    /// The record of `table` and `key`, if this pack has it.
    #[cfg(test)]
    pub(crate) fn get(&self, table: ObjectTable, key: &Key) -> Result<Option<Vec<u8>>> {
        match self.find(table, key).and_then(|i| self.entry(i)) {
            Some(e) => self.read(&e).map(Some),
            None => Ok(None),
        }
    }

    /// Every byte checked (fsck): the records and the index against the footer's checks, the
    /// index sorted with every entry inside the records, and every record decompressing.
    pub(crate) fn check(&self) -> Result<()> {
        let bad = |reason: &str| corrupt(&self.path, reason);
        let footer = &self.map[self.map.len() - FOOTER_LEN..];
        let records = &self.map[HEADER_LEN..self.index];
        if check::<16>(&[records]) != footer[16..32] {
            return Err(bad("the records do not match the footer's check"));
        }
        let index = &self.map[self.index..self.map.len() - FOOTER_LEN];
        if check::<16>(&[index]) != footer[32..48] {
            return Err(bad("the index does not match the footer's check"));
        }
        let mut previous: Option<(u8, &[u8])> = None;
        for i in 0..self.count {
            let raw = self.entry_bytes(i);
            let here = (raw[0], &raw[1..33]);
            if previous.is_some_and(|p| p >= here) {
                return Err(bad("the index is not sorted"));
            }
            previous = Some(here);
            let e = self
                .entry(i)
                .ok_or_else(|| bad("an index entry names no table"))?;
            let bucket = usize::from(raw[0]) * 256 + usize::from(raw[1]);
            let start = if bucket == 0 {
                0
            } else {
                self.fanout(bucket - 1)
            };
            if i < start || i >= self.fanout(bucket) {
                return Err(bad("the index's fanout does not match its entries"));
            }
            self.read(&e)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STORE: StoreId = [3; 16];

    fn key(i: u32) -> Key {
        *blake3::hash(&i.to_le_bytes()).as_bytes()
    }

    fn record(i: u32) -> Vec<u8> {
        let text =
            format!("{{\"role\":\"tool\",\"content\":\"line {i} of the output\"}}").repeat(4);
        crate::storage::codec::encode(text.as_bytes(), Some(i)).record
    }

    fn write(dir: &Path, number: u64, dict: Option<&Dictionary>, n: u32) -> PackInfo {
        let mut w = PackWriter::create(dir, &STORE, number, dict).unwrap();
        for i in 0..n {
            w.add(ObjectTable::Blobs, &key(i), &record(i)).unwrap();
            w.add(ObjectTable::Commits, &key(i), b"commit").unwrap();
        }
        w.finish().unwrap()
    }

    fn decoded(r: &[u8]) -> Vec<u8> {
        crate::storage::codec::decode(r, true, |_| unreachable!()).unwrap()
    }

    #[test]
    fn records_read_back_by_table_and_id_with_and_without_a_dictionary() {
        let dir = tempfile::tempdir().unwrap();
        let samples: Vec<Vec<u8>> = (0..1000).map(record).collect();
        let expanded: Vec<Vec<u8>> = samples
            .iter()
            .map(|r| {
                crate::storage::codec::expanded(r, true)
                    .unwrap()
                    .into_owned()
            })
            .collect();
        let refs: Vec<&[u8]> = expanded.iter().map(Vec::as_slice).collect();
        let bytes = Dictionary::train(&refs, 4096).expect("enough samples");
        let dict = Arc::new(Dictionary::new(1, &bytes).unwrap());
        for (number, d) in [(1, None), (2, Some(dict))] {
            let info = write(dir.path(), number, d.as_deref(), 500);
            assert_eq!(info.objects, 1000);
            let pack = Pack::open(dir.path(), &STORE, number, |_| Ok(d.clone())).unwrap();
            assert_eq!(pack.bytes(), info.bytes);
            pack.check().unwrap();
            for i in 0..500 {
                let r = pack.get(ObjectTable::Blobs, &key(i)).unwrap().unwrap();
                assert_eq!(decoded(&r), decoded(&record(i)));
                assert_eq!(
                    pack.get(ObjectTable::Commits, &key(i)).unwrap().as_deref(),
                    Some(&b"commit"[..])
                );
            }
            assert_eq!(pack.get(ObjectTable::Chunks, &key(1)).unwrap(), None);
            assert_eq!(pack.get(ObjectTable::Blobs, &key(9999)).unwrap(), None);
            // The whole range of a table, in id order.
            let all = pack.range(ObjectTable::Blobs, &[0; 32], &[0xff; 32]);
            assert_eq!(all.len(), 500);
            let keys: Vec<Key> = all.map(|i| pack.entry(i).unwrap().key).collect();
            assert!(keys.windows(2).all(|w| w[0] < w[1]));
        }
        let plain = std::fs::metadata(pack_path(dir.path(), 1)).unwrap().len();
        let with = std::fs::metadata(pack_path(dir.path(), 2)).unwrap().len();
        assert!(with < plain, "{with} < {plain}");
    }

    #[test]
    fn the_last_record_added_under_an_id_is_the_one_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = PackWriter::create(dir.path(), &STORE, 7, None).unwrap();
        w.add(ObjectTable::Blobs, &key(1), b"\x00\x01\x00\x00\x00old")
            .unwrap();
        w.add(ObjectTable::Blobs, &key(1), b"\x00\x01\x00\x00\x00new")
            .unwrap();
        assert_eq!(w.finish().unwrap().objects, 1);
        let pack = Pack::open(dir.path(), &STORE, 7, |_| Ok(None)).unwrap();
        let r = pack.get(ObjectTable::Blobs, &key(1)).unwrap().unwrap();
        assert_eq!(&r[5..], b"new");
    }

    #[test]
    fn ranges_find_ids_by_prefix() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), 1, None, 300);
        let pack = Pack::open(dir.path(), &STORE, 1, |_| Ok(None)).unwrap();
        for i in 0..300 {
            let k = key(i);
            let mut low = [0u8; 32];
            let mut high = [0xffu8; 32];
            low[..2].copy_from_slice(&k[..2]);
            high[..2].copy_from_slice(&k[..2]);
            let found: Vec<Key> = pack
                .range(ObjectTable::Commits, &low, &high)
                .map(|j| pack.entry(j).unwrap().key)
                .collect();
            assert!(found.contains(&k));
            assert!(found.iter().all(|f| f[..2] == k[..2]));
        }
    }

    #[test]
    fn find_locates_every_id_hashed_or_skewed_and_no_other() {
        let dir = tempfile::tempdir().unwrap();
        // Hashed ids, and ids that are not uniform at all (all in one bucket, counting up at
        // their end), so a wrong guess of where an entry is must still find it.
        let skewed = |i: u32| {
            let mut k = [7u8; 32];
            k[28..].copy_from_slice(&(i * 2).to_be_bytes());
            k
        };
        let mut w = PackWriter::create(dir.path(), &STORE, 1, None).unwrap();
        for i in 0..2000 {
            w.add(ObjectTable::Blobs, &key(i), b"hashed").unwrap();
            w.add(ObjectTable::Chunks, &skewed(i), b"skewed").unwrap();
        }
        w.finish().unwrap();
        let pack = Pack::open(dir.path(), &STORE, 1, |_| Ok(None)).unwrap();
        for i in 0..2000 {
            for (table, k) in [
                (ObjectTable::Blobs, key(i)),
                (ObjectTable::Chunks, skewed(i)),
            ] {
                let at = pack.find(table, &k).unwrap();
                assert_eq!(pack.entry(at).unwrap().key, k);
                assert_eq!(pack.entry(at).unwrap().table, table);
            }
            // Absent: another table, an id between two stored ones, one past the last.
            assert_eq!(pack.find(ObjectTable::Commits, &key(i)), None);
            let mut between = skewed(i);
            between[31] |= 1;
            assert_eq!(pack.find(ObjectTable::Chunks, &between), None);
            assert_eq!(pack.find(ObjectTable::Blobs, &key(i + 2000)), None);
        }
        assert_eq!(pack.find(ObjectTable::Chunks, &[0; 32]), None);
        assert_eq!(pack.find(ObjectTable::Chunks, &[0xff; 32]), None);
    }

    #[test]
    fn damage_is_an_error_naming_the_file_and_a_missing_pack_is_not_found() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), 1, None, 50);
        let path = pack_path(dir.path(), 1);
        let good = std::fs::read(&path).unwrap();
        let opens = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            Pack::open(dir.path(), &STORE, 1, |_| Ok(None)).and_then(|p| p.check())
        };
        let n = good.len();
        // Every byte of the header, the fanout and the footer, and records and entries.
        let mut offsets: Vec<usize> = (0..HEADER_LEN).collect();
        offsets.extend(n - FOOTER_LEN..n);
        offsets.extend((HEADER_LEN..n - FOOTER_LEN).step_by(7));
        for at in offsets {
            let mut bad = good.clone();
            bad[at] ^= 0x20;
            match opens(&bad) {
                Err(Error::CorruptJournal { path: p, .. }) => assert_eq!(p, path),
                other => panic!("byte {at}: {other:?}"),
            }
        }
        for len in [0, 10, HEADER_LEN, n / 2, n - 1] {
            assert!(
                matches!(opens(&good[..len]), Err(Error::CorruptJournal { .. })),
                "{len}"
            );
        }
        std::fs::write(&path, &good).unwrap();
        assert!(matches!(
            Pack::open(dir.path(), &[4; 16], 1, |_| Ok(None)),
            Err(Error::CorruptJournal { reason, .. }) if reason.contains("another store")
        ));
        assert!(matches!(
            Pack::open(dir.path(), &STORE, 2, |_| Ok(None)),
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound
        ));
        assert_eq!(pack_numbers(dir.path()).unwrap(), vec![1]);
    }
}
