//! The journal's segment files: where a durable write lands first, as one frame written in
//! place and made durable with one fdatasync (docs/decisions.md, "The write path").
//!
//! A segment is one file per generation, never reused: its space is allocated ahead of the
//! frames (`fallocate`, 256 KiB at a time), so most appends change neither the file's size
//! nor its extents. It starts with a header naming the store it belongs to and its generation;
//! frames follow, each with its length, a word holding its sequence number (1, 2, ... within a
//! generation) and how many frames right before it were written but not yet known durable when
//! it was (its writer's fdatasync runs after the writer lock is let go, so other processes'
//! frames can be in flight beside it), and a check: BLAKE3 over the store's id, the
//! generation, the word, the length and the payload, cut to 8 bytes, so a frame copied from
//! another segment or store never checks.
//!
//! Reading a segment ([`scan`]) takes frames in order while they check. The first that does
//! not is either a torn tail and ends the segment, or damage: an error naming the offset, never
//! a silently shorter journal. It is damage when a later frame checks whose writer knew it
//! durable (fewer frames were in flight before that one than lie between them); a write cut
//! short by a crash, still under way in another process, or, after a power cut, one of several
//! frames in flight whose pages did not all reach the disk, has no such frame after it. Damage
//! to a frame no later one vouches for cannot be told from a torn write and is dropped with it,
//! as a write-ahead log's last record is.

use crate::error::{Error, Result};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// What a segment file starts with.
const MAGIC: &[u8; 16] = b"tract journal\0\0\0";
/// The layout of segments and frames this build writes. It reads formats 1 and 2 too: the same
/// layout; 1 written while the lock was held through the fdatasync, so no frame of it says
/// another was in flight; 3 marks the segments after a store's objects moved to packs (store
/// format 5), so that a process of an older build, which would fold objects into the store
/// file where this one no longer looks, stops at the first of them.
const JOURNAL_FORMAT: u32 = 3;
/// The header's size: magic, format, store id, generation, check, then zeros.
pub(crate) const HEADER_LEN: usize = 64;
/// A frame's fixed part: length, word, check.
pub(crate) const FRAME_HEAD: usize = 4 + 8 + 8;
/// The low bits of a frame's word: its sequence number.
const SEQ_BITS: u32 = 40;
const SEQ_MASK: u64 = (1 << SEQ_BITS) - 1;
/// The most frames in flight a word says (more are said as this many: a frame then vouches
/// for more than its writer knew, which can only turn a torn tail into an error).
const IN_FLIGHT_MAX: u64 = (1 << (64 - SEQ_BITS)) - 1;
/// How far after a frame that does not check a frame vouching for it is looked for.
const VOUCHERS: u64 = 1024;

/// A store's id, as `meta` keeps it.
pub(crate) type StoreId = [u8; 16];

/// A frame read from a segment: its sequence number, where it starts and its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Frame<'a> {
    /// 1 for the generation's first frame, then one more for each.
    pub(crate) seq: u64,
    /// The frame's offset in the segment.
    pub(crate) offset: u64,
    /// What the frame carries.
    pub(crate) payload: &'a [u8],
}

/// What a segment holds: its generation, its frames in order, and where the next frame goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Scan<'a> {
    /// The segment's generation.
    pub(crate) generation: u64,
    /// Every frame that checks, in order.
    pub(crate) frames: Vec<Frame<'a>>,
    /// The offset after the last frame.
    pub(crate) end: u64,
    /// Where a torn frame starts, when the segment ends with one.
    pub(crate) torn: Option<u64>,
}

/// Why a segment cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ScanError {
    /// Not a segment of any store.
    #[error("not a tract journal segment: {0}")]
    NotASegment(&'static str),
    /// A segment of another store.
    #[error("the segment belongs to another store")]
    OtherStore,
    /// A later layout than this build reads.
    #[error("journal format {0} is newer than this tract reads ({JOURNAL_FORMAT})")]
    NewerFormat(u32),
    /// A frame that does not check, with a frame after it whose writer knew it durable.
    #[error("the frame at offset {offset} is damaged ({reason}) and frames follow it")]
    Damaged {
        /// Where the frame starts.
        offset: u64,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// The check of a frame: BLAKE3 over everything that makes it this frame of this segment.
fn frame_check(store: &StoreId, generation: u64, word: u64, payload: &[u8]) -> [u8; 8] {
    let mut h = blake3::Hasher::new();
    h.update(store);
    h.update(&generation.to_le_bytes());
    h.update(&word.to_le_bytes());
    h.update(&(payload.len() as u64).to_le_bytes());
    h.update(payload);
    let mut out = [0u8; 8];
    out.copy_from_slice(&h.finalize().as_bytes()[..8]);
    out
}

/// The header of a segment of `store` at `generation`.
pub(crate) fn header(store: &StoreId, generation: u64) -> [u8; HEADER_LEN] {
    let mut out = [0u8; HEADER_LEN];
    out[..16].copy_from_slice(MAGIC);
    out[16..20].copy_from_slice(&JOURNAL_FORMAT.to_le_bytes());
    out[20..36].copy_from_slice(store);
    out[36..44].copy_from_slice(&generation.to_le_bytes());
    let check = blake3::hash(&out[..44]);
    out[44..52].copy_from_slice(&check.as_bytes()[..8]);
    out
}

/// Frame `seq` of generation `generation` carrying `payload`, written while the `in_flight`
/// frames right before it were not known durable.
pub(crate) fn frame(
    store: &StoreId,
    generation: u64,
    seq: u64,
    in_flight: u64,
    payload: &[u8],
) -> Result<Vec<u8>> {
    let len = u32::try_from(payload.len())
        .ok()
        .filter(|&l| l > 0)
        .ok_or_else(|| Error::invalid_input("a journal frame carries 1 byte to 4 GiB"))?;
    if seq > SEQ_MASK {
        return Err(Error::invalid_input("a journal segment of 2^40 frames"));
    }
    let word = seq | in_flight.min(IN_FLIGHT_MAX) << SEQ_BITS;
    let mut out = Vec::with_capacity(FRAME_HEAD + payload.len());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&word.to_le_bytes());
    out.extend_from_slice(&frame_check(store, generation, word, payload));
    out.extend_from_slice(payload);
    Ok(out)
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(b)
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(b)
}

/// The frame at `at` when it is frame `seq` of this generation, checked; why not otherwise.
fn frame_at<'a>(
    bytes: &'a [u8],
    at: usize,
    store: &StoreId,
    generation: u64,
    seq: u64,
) -> std::result::Result<Frame<'a>, &'static str> {
    if bytes.len() - at < FRAME_HEAD {
        return Err("cut short");
    }
    let len = u32_at(bytes, at) as usize;
    if len == 0 {
        return Err("no length");
    }
    let word = u64_at(bytes, at + 4);
    if word & SEQ_MASK != seq {
        return Err("out of sequence");
    }
    let start = at + FRAME_HEAD;
    let payload = bytes
        .get(start..start.saturating_add(len))
        .ok_or("cut short")?;
    if bytes[at + 12..at + 20] != frame_check(store, generation, word, payload) {
        return Err("its check does not match");
    }
    Ok(Frame {
        seq,
        offset: at as u64,
        payload,
    })
}

/// Reads a segment's bytes: the header (of the store `store`, when given), then the frames
/// while they check (see the module's description for the end of a segment).
pub(crate) fn scan<'a>(
    bytes: &'a [u8],
    store: Option<&StoreId>,
) -> std::result::Result<Scan<'a>, ScanError> {
    let head = bytes
        .get(..HEADER_LEN)
        .ok_or(ScanError::NotASegment("shorter than its header"))?;
    if &head[..16] != MAGIC {
        return Err(ScanError::NotASegment("no journal header"));
    }
    if head[44..52] != blake3::hash(&head[..44]).as_bytes()[..8]
        || head[52..].iter().any(|&b| b != 0)
    {
        return Err(ScanError::NotASegment("its header is damaged"));
    }
    let format = u32_at(head, 16);
    if format > JOURNAL_FORMAT {
        return Err(ScanError::NewerFormat(format));
    }
    let mut id = StoreId::default();
    id.copy_from_slice(&head[20..36]);
    if store.is_some_and(|s| *s != id) {
        return Err(ScanError::OtherStore);
    }
    let generation = u64_at(head, 36);
    let mut frames = Vec::new();
    let mut at = HEADER_LEN;
    loop {
        let seq = frames.len() as u64 + 1;
        // The unused space is zeros: a zero length where a frame would start ends the segment.
        if bytes.len() - at < FRAME_HEAD || bytes[at..at + FRAME_HEAD].iter().all(|&b| b == 0) {
            return Ok(Scan {
                generation,
                frames,
                end: at as u64,
                torn: None,
            });
        }
        match frame_at(bytes, at, &id, generation, seq) {
            Ok(f) => {
                at += FRAME_HEAD + f.payload.len();
                frames.push(f);
            }
            Err(reason) => {
                return if vouched_for(bytes, at + 1, &id, generation, seq) {
                    Err(ScanError::Damaged {
                        offset: at as u64,
                        reason,
                    })
                } else {
                    Ok(Scan {
                        generation,
                        frames,
                        end: at as u64,
                        torn: Some(at as u64),
                    })
                };
            }
        }
    }
}

/// Whether a later frame of this generation, anywhere from `from` up to the zeros that end
/// what was written, says frame `seq` was durable when it was written: frame `seq + j` that
/// checks with fewer than `j` frames in flight before it. A damaged frame has one after it; a
/// torn write has none (nothing after it, or only frames written while it was in flight).
fn vouched_for(bytes: &[u8], from: usize, store: &StoreId, generation: u64, seq: u64) -> bool {
    (from..garbage_end(bytes, from))
        .filter(|&at| bytes.len() - at >= FRAME_HEAD)
        .any(|at| {
            let word = u64_at(bytes, at + 4);
            let later = word & SEQ_MASK;
            later > seq
                && later - seq <= VOUCHERS
                && word >> SEQ_BITS < later - seq
                && frame_at(bytes, at, store, generation, later).is_ok()
        })
}

/// How much space a segment allocates at a time.
const GROW: u64 = 256 << 10;

/// A segment file: its generation, and how far this process has read it (where the next frame
/// goes once every frame before it is read).
pub(crate) struct Segment {
    file: File,
    path: PathBuf,
    store: StoreId,
    generation: u64,
    /// Where the next frame starts.
    end: u64,
    /// The next frame's sequence number.
    next_seq: u64,
    /// The file's size (allocated space included).
    len: u64,
}

/// How reading a segment's new frames ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tail {
    /// At zeros: nothing more was written.
    Clean,
    /// At bytes that are not a frame that checks: a write under way in another process, or a
    /// torn or damaged one (which only a writer, holding the lock, can tell apart).
    Unchecked,
}

impl Segment {
    /// Makes the segment of `generation` at `path` for `store`: its header, made durable under
    /// a temporary name, then renamed into place, so a segment that exists is whole (the
    /// directory's entry is the caller's to sync). Its first frame allocates its first 256 KiB:
    /// a segment made when a closing process folds the journal stays this small, and it is
    /// what a closed store keeps beside its packs.
    pub(crate) fn create(path: &Path, store: &StoreId, generation: u64) -> Result<Self> {
        let io = |e| Error::io(path, e);
        let mut temporary = path.as_os_str().to_os_string();
        temporary.push(".new");
        let temporary = PathBuf::from(temporary);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&temporary)
            .map_err(|e| Error::io(&temporary, e))?;
        file.write_all_at(&header(store, generation), 0)
            .map_err(io)?;
        file.sync_all().map_err(io)?;
        if path.exists() {
            let _ = std::fs::remove_file(&temporary);
            return Err(Error::io(
                path,
                std::io::Error::new(std::io::ErrorKind::AlreadyExists, "the segment exists"),
            ));
        }
        std::fs::rename(&temporary, path).map_err(io)?;
        Ok(Segment::at_start(
            file,
            path,
            store,
            generation,
            HEADER_LEN as u64,
        ))
    }

    /// A segment file positioned before its first frame.
    fn at_start(file: File, path: &Path, store: &StoreId, generation: u64, len: u64) -> Self {
        Segment {
            file,
            path: path.to_path_buf(),
            store: *store,
            generation,
            end: HEADER_LEN as u64,
            next_seq: 1,
            len,
        }
    }

    /// Opens the segment at `path`, which must be one of `store`'s of `generation`, positioned
    /// before its first frame. `Ok(None)` when there is no such file.
    pub(crate) fn open(path: &Path, store: &StoreId, generation: u64) -> Result<Option<Self>> {
        let corrupt = |reason: String| Error::CorruptJournal {
            path: path.to_path_buf(),
            reason,
        };
        let open = |write| {
            std::fs::OpenOptions::new()
                .read(true)
                .write(write)
                .open(path)
        };
        // A segment this process may not write (a store open to read only) is read all the
        // same; a write to it is refused before it gets here.
        let file = match open(true).or_else(|e| match e.kind() {
            std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem => {
                open(false)
            }
            _ => Err(e),
        }) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(path, e)),
        };
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        let mut head = [0u8; HEADER_LEN];
        let n = read_at_most(&file, &mut head, 0).map_err(|e| Error::io(path, e))?;
        let scanned = scan(&head[..n], Some(store)).map_err(|e| corrupt(e.to_string()))?;
        if scanned.generation != generation {
            return Err(corrupt(format!(
                "its header names generation {}, its name {generation}",
                scanned.generation
            )));
        }
        Ok(Some(Segment::at_start(file, path, store, generation, len)))
    }

    /// The segment's generation.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// Its file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Where the frames read or written so far end.
    pub(crate) fn end(&self) -> u64 {
        self.end
    }

    /// The sequence number the next frame gets.
    pub(crate) fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Reads the frames written since the last call (by any process), giving `f` each one's
    /// sequence number and payload, in order; with `limit`, only frames that end there or
    /// before (a frame past it is [`Tail::Unchecked`]).
    pub(crate) fn read_new(
        &mut self,
        limit: Option<u64>,
        mut f: impl FnMut(u64, &[u8]) -> Result<()>,
    ) -> Result<Tail> {
        let io = |e| Error::io(&self.path, e);
        // Small at first (most calls find nothing new), larger while frames keep coming.
        let mut buf = vec![0u8; 4 << 10];
        loop {
            let n = read_at_most(&self.file, &mut buf, self.end).map_err(io)?;
            let bytes = &buf[..n];
            if n < FRAME_HEAD || bytes[..FRAME_HEAD].iter().all(|&b| b == 0) {
                return Ok(Tail::Clean);
            }
            let len = u32_at(bytes, 0) as usize;
            if FRAME_HEAD + len > buf.len() {
                // A frame longer than the buffer: read it whole (it may not be there yet).
                if self.end + (FRAME_HEAD + len) as u64 > self.len.max(self.file_len()?) {
                    return Ok(Tail::Unchecked);
                }
                buf = vec![0u8; FRAME_HEAD + len];
                continue;
            }
            let mut at = 0;
            let mut more = false;
            while at < n {
                let rest = &bytes[at..];
                if rest.len() < FRAME_HEAD || rest[..FRAME_HEAD].iter().all(|&b| b == 0) {
                    break;
                }
                match frame_at(bytes, at, &self.store, self.generation, self.next_seq) {
                    Ok(frame)
                        if limit.is_some_and(|l| {
                            self.end + (FRAME_HEAD + frame.payload.len()) as u64 > l
                        }) =>
                    {
                        return Ok(Tail::Unchecked);
                    }
                    Ok(frame) => {
                        f(frame.seq, frame.payload)?;
                        at += FRAME_HEAD + frame.payload.len();
                        self.end += (FRAME_HEAD + frame.payload.len()) as u64;
                        self.next_seq += 1;
                    }
                    // Cut by the buffer's end: read on from it.
                    Err("cut short") if at > 0 => {
                        more = true;
                        break;
                    }
                    Err(_) => return Ok(Tail::Unchecked),
                }
            }
            // Frames keep coming: read more at a time.
            if (more || at == n) && buf.len() < GROW as usize {
                buf = vec![0u8; buf.len() * 4];
            }
        }
    }

    fn file_len(&self) -> Result<u64> {
        Ok(self
            .file
            .metadata()
            .map_err(|e| Error::io(&self.path, e))?
            .len())
    }

    /// What follows the last frame read, when it is not zeros: a torn write (its length in
    /// bytes, up to the zeros after it) or, when a later frame checks, damage (an error naming
    /// the offset). A write under way in another process reads as a torn one.
    pub(crate) fn check_tail(&self) -> Result<usize> {
        let io = |e| Error::io(&self.path, e);
        let mut head = [0u8; FRAME_HEAD];
        let n = read_at_most(&self.file, &mut head, self.end).map_err(io)?;
        if n < FRAME_HEAD || head.iter().all(|&b| b == 0) {
            return Ok(0);
        }
        let len = self.file_len()?;
        let mut rest = vec![0u8; (len - self.end.min(len)) as usize];
        let n = read_at_most(&self.file, &mut rest, self.end).map_err(io)?;
        rest.truncate(n);
        if vouched_for(&rest, 1, &self.store, self.generation, self.next_seq) {
            let reason = match frame_at(&rest, 0, &self.store, self.generation, self.next_seq) {
                Err(reason) => reason,
                Ok(_) => "it checks but was not read",
            };
            return Err(Error::CorruptJournal {
                path: self.path.clone(),
                reason: ScanError::Damaged {
                    offset: self.end,
                    reason,
                }
                .to_string(),
            });
        }
        Ok(garbage_end(&rest, 0))
    }

    /// For a writer holding the lock (so no write is under way): a torn write after the last
    /// frame is overwritten with zeros, so the next frame goes where it started; damage is an
    /// error naming its offset.
    pub(crate) fn repair_tail(&mut self) -> Result<()> {
        let garbage = self.check_tail()?;
        if garbage > 0 {
            let io = |e| Error::io(&self.path, e);
            self.file
                .write_all_at(&vec![0u8; garbage], self.end)
                .map_err(io)?;
            self.file.sync_data().map_err(io)?;
        }
        Ok(())
    }

    /// Writes `payload` as the next frame, written while the `in_flight` frames before it are
    /// not known durable: one positioned write (and, once in 256 KiB, the allocation of more),
    /// which [`Segment::sync`] then makes durable. `None`, with nothing written, when the frame
    /// would take the segment past `limit` bytes.
    pub(crate) fn append(
        &mut self,
        payload: &[u8],
        limit: u64,
        in_flight: u64,
    ) -> Result<Option<u64>> {
        let mut frame = frame(
            &self.store,
            self.generation,
            self.next_seq,
            in_flight,
            payload,
        )?;
        let end = self.end + frame.len() as u64;
        // Zeros after the frame end what was written.
        frame.extend_from_slice(&[0u8; FRAME_HEAD]);
        let needed = self.end + frame.len() as u64;
        if needed > limit && self.next_seq > 1 {
            return Ok(None);
        }
        let io = |e| Error::io(&self.path, e);
        if needed > self.len {
            let to = needed.div_ceil(GROW) * GROW;
            allocate(&self.file, self.len, to - self.len).map_err(io)?;
            self.len = to;
        }
        self.file.write_all_at(&frame, self.end).map_err(io)?;
        let seq = self.next_seq;
        self.end = end;
        self.next_seq += 1;
        Ok(Some(seq))
    }

    /// Makes every frame written to the file so far durable, whichever process wrote it: one
    /// fdatasync.
    pub(crate) fn sync(&self) -> Result<()> {
        self.file.sync_data().map_err(|e| Error::io(&self.path, e))
    }

    /// Overwrites the frames with zeros and makes that durable, so what they carried (a
    /// redacted payload) leaves the file before it is removed.
    pub(crate) fn wipe(&self) -> Result<()> {
        let io = |e| Error::io(&self.path, e);
        let used = self.file_len()?.saturating_sub(HEADER_LEN as u64);
        write_zeros(&self.file, HEADER_LEN as u64, used).map_err(io)?;
        self.file.sync_data().map_err(io)
    }

    /// The whole file, checked as [`scan`] checks it (for fsck): its frames' payloads, and
    /// where a torn tail starts.
    pub(crate) fn check(&self) -> Result<(Vec<Vec<u8>>, Option<u64>)> {
        let bytes = std::fs::read(&self.path).map_err(|e| Error::io(&self.path, e))?;
        let s = scan(&bytes, Some(&self.store)).map_err(|e| Error::CorruptJournal {
            path: self.path.clone(),
            reason: e.to_string(),
        })?;
        if s.generation != self.generation {
            return Err(Error::CorruptJournal {
                path: self.path.clone(),
                reason: format!("its header names generation {}", s.generation),
            });
        }
        Ok((
            s.frames.iter().map(|f| f.payload.to_vec()).collect(),
            s.torn,
        ))
    }
}

/// Reads into `buf` from `at` until it is full or the file ends; how many bytes were read.
fn read_at_most(file: &File, buf: &mut [u8], at: u64) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(&mut buf[n..], at + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Allocates `len` bytes of `file` from `offset` (they read as zeros), so the frames written
/// into them later change neither the file's size nor its extent map; a file system without
/// `fallocate` gets zeros written instead.
fn allocate(file: &File, offset: u64, len: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let (Ok(off), Ok(l)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) else {
        return Err(std::io::Error::other(
            "a segment offset past what the OS takes",
        ));
    };
    // SAFETY: fallocate reads no memory of ours; the descriptor is open for the call.
    let r = unsafe { libc::fallocate(file.as_raw_fd(), 0, off, l) };
    if r == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS) => write_zeros(file, offset, len),
        _ => Err(e),
    }
}

/// Writes `len` zeros into `file` from `offset`, a step at a time.
fn write_zeros(file: &File, offset: u64, len: u64) -> std::io::Result<()> {
    let zeros = vec![0u8; GROW.min(len) as usize];
    let mut at = 0;
    while at < len {
        let n = (len - at).min(GROW) as usize;
        file.write_all_at(&zeros[..n], offset + at)?;
        at += n as u64;
    }
    Ok(())
}

/// Where what was written from `from` on ends: the first run of zeros a frame head long
/// (every frame is written with one after it), or the end of the file.
fn garbage_end(bytes: &[u8], from: usize) -> usize {
    (from..bytes.len())
        .find(|&at| {
            bytes.len() - at < FRAME_HEAD || bytes[at..at + FRAME_HEAD].iter().all(|&b| b == 0)
        })
        .unwrap_or(bytes.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    const STORE: StoreId = [7; 16];

    /// A segment's bytes: the header of generation 3, frames carrying `payloads`, and `spare`
    /// zeros.
    fn segment(payloads: &[&[u8]], spare: usize) -> Vec<u8> {
        let mut out = header(&STORE, 3).to_vec();
        for (i, p) in payloads.iter().enumerate() {
            out.extend(frame(&STORE, 3, i as u64 + 1, 0, p).unwrap());
        }
        out.extend(vec![0u8; spare]);
        out
    }

    fn payloads(scan: &Scan<'_>) -> Vec<Vec<u8>> {
        scan.frames.iter().map(|f| f.payload.to_vec()).collect()
    }

    const THREE: [&[u8]; 3] = [b"first frame", b"second", b"the third and last frame"];

    fn first_two() -> Vec<Vec<u8>> {
        THREE[..2].iter().map(|p| p.to_vec()).collect()
    }

    #[test]
    fn frames_read_back_in_order() {
        let bytes = segment(&THREE, 100);
        let s = scan(&bytes, Some(&STORE)).unwrap();
        assert_eq!(s.generation, 3);
        assert_eq!(payloads(&s), THREE.map(<[u8]>::to_vec));
        assert_eq!(s.torn, None);
        assert_eq!(s.end as usize, bytes.len() - 100);
    }

    #[test]
    fn a_cut_anywhere_in_the_last_frame_drops_it_alone() {
        let whole = segment(&THREE, 0);
        let last = segment(&THREE[..2], 0).len();
        for cut in last + 1..whole.len() {
            // Cut short (a file that ends there), and cut with zeros after (preallocated space).
            for bytes in [
                whole[..cut].to_vec(),
                [&whole[..cut], &[0u8; 64][..]].concat(),
            ] {
                let s = scan(&bytes, Some(&STORE)).unwrap();
                assert_eq!(payloads(&s), first_two(), "cut at {cut}");
                assert_eq!(s.end as usize, last, "cut at {cut}");
            }
        }
    }

    #[test]
    fn a_changed_byte_in_the_last_frame_drops_it_and_in_an_earlier_one_is_an_error() {
        let bytes = segment(&THREE, 64);
        let second = segment(&THREE[..1], 0).len();
        let third = segment(&THREE[..2], 0).len();
        for at in HEADER_LEN..segment(&THREE, 0).len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x5a;
            match scan(&damaged, Some(&STORE)) {
                Ok(s) if at >= third => {
                    assert_eq!(payloads(&s), first_two(), "byte {at}");
                    assert_eq!(s.torn, Some(third as u64));
                }
                Err(ScanError::Damaged { offset, .. }) if at < third => {
                    let frame = if at < second { HEADER_LEN } else { second };
                    assert_eq!(offset as usize, frame, "byte {at}");
                }
                other => panic!("byte {at}: {other:?}"),
            }
        }
    }

    /// A segment of generation 3 whose frames carry `payload` with the frames in flight given.
    fn pipelined(frames: &[(&[u8], u64)]) -> Vec<u8> {
        let mut out = header(&STORE, 3).to_vec();
        for (i, (p, in_flight)) in frames.iter().enumerate() {
            out.extend(frame(&STORE, 3, i as u64 + 1, *in_flight, p).unwrap());
        }
        out.extend(vec![0u8; 64]);
        out
    }

    #[test]
    fn a_frame_that_does_not_check_is_damage_only_when_a_later_writer_knew_it_durable() {
        // Frames 3 and 4 were in flight together (4 written before 3's fdatasync returned),
        // then 5 was written once both were durable.
        let all: [(&[u8], u64); 5] = [
            (b"one", 0),
            (b"two", 0),
            (b"three", 0),
            (b"four", 1),
            (b"five", 0),
        ];
        let offset = |k: usize| pipelined(&all[..k]).len() as u64 - 64;
        let garble = |bytes: &mut Vec<u8>, k: usize| bytes[offset(k) as usize + 22] ^= 0x41;
        // A power cut before 3 was durable can leave 4 whole and 3 not: a torn tail at 3, and
        // 4 goes with it (its fdatasync, which would have made 3 durable too, never returned).
        let mut cut = pipelined(&all[..4]);
        garble(&mut cut, 2);
        let s = scan(&cut, Some(&STORE)).unwrap();
        assert_eq!(s.frames.len(), 2);
        assert_eq!(s.torn, Some(offset(2)));
        // Frame 5 was written once 3 was durable: 3 damaged is an error, wherever it is.
        let mut damaged = pipelined(&all);
        garble(&mut damaged, 2);
        assert_eq!(
            scan(&damaged, Some(&STORE)).unwrap_err(),
            ScanError::Damaged {
                offset: offset(2),
                reason: "its check does not match"
            }
        );
        // Frame 2 was durable before 3 was written, which says so.
        let mut damaged = pipelined(&all[..4]);
        garble(&mut damaged, 1);
        assert!(matches!(
            scan(&damaged, Some(&STORE)),
            Err(ScanError::Damaged { .. })
        ));
        // A writer that reads it tells the same apart: zeros the torn tail and writes there.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("3");
        std::fs::write(&path, &cut).unwrap();
        let mut seg = Segment::open(&path, &STORE, 3).unwrap().unwrap();
        assert_eq!(read_all(&mut seg).0.len(), 2);
        seg.repair_tail().unwrap();
        assert_eq!(seg.append(b"three again", 1 << 30, 0).unwrap(), Some(3));
        let (frames, torn) = seg.check().unwrap();
        assert_eq!((frames.len(), torn), (3, None));
        std::fs::write(&path, &damaged).unwrap();
        let mut seg = Segment::open(&path, &STORE, 3).unwrap().unwrap();
        read_all(&mut seg);
        assert!(seg.repair_tail().is_err());
    }

    #[test]
    fn a_segment_of_another_store_or_a_damaged_header_is_refused() {
        let bytes = segment(&THREE, 0);
        assert_eq!(scan(&bytes, Some(&[8; 16])), Err(ScanError::OtherStore));
        for at in 0..HEADER_LEN {
            let mut damaged = bytes.clone();
            damaged[at] ^= 1;
            assert!(
                matches!(scan(&damaged, Some(&STORE)), Err(ScanError::NotASegment(_))),
                "byte {at}"
            );
        }
        assert!(matches!(
            scan(&bytes[..10], None),
            Err(ScanError::NotASegment(_))
        ));
    }

    #[test]
    fn frames_of_an_older_generation_do_not_check() {
        let mut bytes = segment(&THREE, 0);
        bytes[..HEADER_LEN].copy_from_slice(&header(&STORE, 4));
        let s = scan(&bytes, Some(&STORE)).unwrap();
        assert!(s.frames.is_empty());
        assert_eq!(s.torn, Some(HEADER_LEN as u64));
    }

    fn read_all(s: &mut Segment) -> (Vec<(u64, Vec<u8>)>, Tail) {
        let mut seen = Vec::new();
        let tail = s
            .read_new(None, |seq, p| {
                seen.push((seq, p.to_vec()));
                Ok(())
            })
            .unwrap();
        (seen, tail)
    }

    #[test]
    fn a_segment_file_appends_grows_recovers_a_torn_tail_and_wipes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1");
        let mut s = Segment::create(&path, &STORE, 1).unwrap();
        assert_eq!(s.append(b"one", 1 << 30, 0).unwrap(), Some(1));
        assert_eq!(s.append(b"two", 1 << 30, 0).unwrap(), Some(2));
        assert_eq!(
            s.append(&[1u8; 100], 200, 0).unwrap(),
            None,
            "past the limit: nothing written"
        );
        // Another handle (another process) reads what was written, then more as it comes.
        let mut other = Segment::open(&path, &STORE, 1).unwrap().unwrap();
        let (seen, tail) = read_all(&mut other);
        assert_eq!(seen, [(1, b"one".to_vec()), (2, b"two".to_vec())]);
        assert_eq!(tail, Tail::Clean);
        // A frame larger than the space allocated so far: the file grows by whole steps.
        let big = vec![7u8; 1 << 20];
        assert_eq!(s.append(&big, 1 << 30, 0).unwrap(), Some(3));
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 5 * GROW);
        assert_eq!(read_all(&mut other).0, [(3, big.clone())]);
        // A fourth frame cut short, as kill -9 in the middle of the write would leave it.
        let torn = frame(&STORE, 1, 4, 0, b"four").unwrap();
        let end = s.end;
        s.file.write_all_at(&torn[..torn.len() - 2], end).unwrap();
        assert_eq!(read_all(&mut other), (vec![], Tail::Unchecked));
        other.repair_tail().unwrap();
        assert_eq!(
            other.append(b"four", 1 << 30, 0).unwrap(),
            Some(4),
            "where the torn one was"
        );
        assert_eq!(read_all(&mut s).0, [(4, b"four".to_vec())]);
        let (frames, torn) = s.check().unwrap();
        assert_eq!((frames.len(), torn), (4, None));
        // Damage with a frame after it is an error naming the offset, for a reader and fsck.
        let mut fresh = Segment::open(&path, &STORE, 1).unwrap().unwrap();
        s.file.write_all_at(&[0xff], HEADER_LEN as u64 + 5).unwrap();
        assert_eq!(read_all(&mut fresh), (vec![], Tail::Unchecked));
        let damaged = fresh.repair_tail().unwrap_err().to_string();
        assert!(damaged.contains("offset 64"), "{damaged}");
        assert!(matches!(s.check(), Err(Error::CorruptJournal { .. })));
        // Wiped: no payload is left in the file.
        s.wipe().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert!(!bytes.windows(3).any(|w| w == b"two"));
        assert!(bytes[HEADER_LEN..].iter().all(|&b| b == 0));
        // Of another store, of another generation, or not there.
        assert!(matches!(
            Segment::open(&path, &[9; 16], 1),
            Err(Error::CorruptJournal { .. })
        ));
        assert!(matches!(
            Segment::open(&path, &STORE, 2),
            Err(Error::CorruptJournal { .. })
        ));
        assert!(
            Segment::open(&dir.path().join("2"), &STORE, 2)
                .unwrap()
                .is_none()
        );
    }
}
