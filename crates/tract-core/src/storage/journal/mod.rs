//! The journal beside a store file: where a durable write lands first (docs/decisions.md, "The
//! write path"). A directory `<store file>-journal/` holds numbered segment files (`segment`),
//! each a run of frames carrying one write transaction's ops (`ops`); this process keeps the
//! effects of the frames not yet folded into redb in memory (`overlay`), one layer per segment.
//!
//! Segments are used in order and never reused: writers append to the newest; when it is full
//! the next is made, and the full one is folded into redb by whichever process gets to it
//! (`storage::journaled`), which records in redb the last generation folded. Segments at or
//! below that generation are then removed (wiped first when a store-wide write asked, so a
//! redacted payload leaves the disk).
//!
//! Three locks, all `flock`s that the OS drops with a process that dies: `lock` in the
//! directory serializes writers across processes, held from the start of a write transaction
//! to the positioned write of its frame; `syncing` is held shared by every writer from before
//! that write until its fdatasync has returned and it has published, so several processes'
//! frames are made durable at once (one fdatasync covers every frame written before it), and
//! a reader that finds both free knows no write is under way; the directory itself is held
//! shared by a process reading segments and exclusively while segments are wiped and removed,
//! so no reader sees a segment vanish half-read. Readers never wait for writers.

pub(crate) mod ops;
pub(crate) mod overlay;
pub(crate) mod segment;

use crate::error::{Error, LockReason, Result};
use crate::storage::journal::ops::Op;
use crate::storage::journal::overlay::Layer;
use crate::storage::journal::segment::{Segment, StoreId, Tail};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard};
use std::time::{Duration, Instant};

/// Frames go to the next segment once one holds this many bytes; a full segment is folded into
/// redb in one transaction. Every open by another process reads what is not folded, so this
/// bounds what that costs (docs/decisions.md, "The write path"). Tests set less, to fold often
/// (`faults::set_journal_segment_limit`).
static SEGMENT_LIMIT: AtomicU64 = AtomicU64::new(4 << 20);

fn segment_limit() -> u64 {
    SEGMENT_LIMIT.load(Ordering::Relaxed)
}

/// A transaction larger than this is written to redb directly (after folding what is before
/// it), not as a frame: a quarter of a segment.
pub(crate) fn frame_limit() -> usize {
    (segment_limit() / 4) as usize
}

/// Sets the size at which segments are full, for this process.
#[cfg(feature = "testing")]
pub(crate) fn set_segment_limit(bytes: u64) {
    SEGMENT_LIMIT.store(bytes, Ordering::Relaxed);
}

/// The journal directory whose next segment fdatasync fails, once (`faults`).
#[cfg(feature = "testing")]
static FAIL_SYNC: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Makes the next fdatasync of a segment under `dir` in this process fail with EIO, once.
#[cfg(feature = "testing")]
pub(crate) fn fail_next_sync(dir: &Path) {
    *FAIL_SYNC.lock().unwrap_or_else(|e| e.into_inner()) = Some(dir.to_path_buf());
}

/// Whether the fault armed for `file`'s journal fires now (disarming it).
#[cfg(feature = "testing")]
fn sync_fails(file: &Segment) -> bool {
    let mut armed = FAIL_SYNC.lock().unwrap_or_else(|e| e.into_inner());
    let fires = armed.as_ref().is_some_and(|d| file.path().starts_with(d));
    if fires {
        *armed = None;
    }
    fires
}

/// The file at `path` open to read and write, made empty if it is not there (the journal's
/// lock files and `published`).
fn open_or_make(path: &Path) -> Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| Error::io(path, e))
}

/// The journal directory of the store file at `store`.
pub(crate) fn dir_of(store: &Path) -> PathBuf {
    let mut name = store.file_name().unwrap_or_default().to_os_string();
    name.push("-journal");
    store.with_file_name(name)
}

/// The file of segment `generation` in the journal directory `dir`.
pub(crate) fn segment_path(dir: &Path, generation: u64) -> PathBuf {
    dir.join(format!("{generation:016}"))
}

/// One segment as this process knows it: the file (and how far it was read) and the effects of
/// its frames.
pub(crate) struct Seg {
    generation: u64,
    file: Mutex<Segment>,
    layer: RwLock<Layer>,
    /// A later segment exists, so this one takes no more frames.
    complete: AtomicBool,
}

impl Seg {
    fn new(file: Segment) -> Arc<Self> {
        Arc::new(Seg {
            generation: file.generation(),
            file: Mutex::new(file),
            layer: RwLock::new(Layer::default()),
            complete: AtomicBool::new(false),
        })
    }

    /// The segment's generation.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// The effects of its frames.
    pub(crate) fn layer(&self) -> RwLockReadGuard<'_, Layer> {
        self.layer.read().unwrap_or_else(|e| e.into_inner())
    }

    fn file(&self) -> MutexGuard<'_, Segment> {
        self.file.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Reads the frames written since this process last looked into the layer, up to `limit`
    /// when given. Bytes after the last frame that are not a frame are a write under way or a
    /// torn one (the end, for now) or damage (an error naming the offset); below `limit`,
    /// where every frame was made durable, they are damage. `true` when a frame may follow
    /// past `limit`.
    fn read_new(&self, file: &mut Segment, limit: Option<u64>) -> Result<bool> {
        let mut frames = Vec::new();
        let tail = file.read_new(limit, |seq, payload| {
            frames.push((seq, ops::decode(payload)?));
            Ok(())
        })?;
        if !frames.is_empty() {
            let mut layer = self.layer.write().unwrap_or_else(|e| e.into_inner());
            for (seq, ops) in frames {
                layer.apply(seq, ops);
            }
        }
        match (tail, limit) {
            (Tail::Clean, _) => Ok(false),
            (Tail::Unchecked, Some(l)) if file.end() >= l => Ok(true),
            (Tail::Unchecked, Some(_)) => Err(Error::CorruptJournal {
                path: file.path().to_path_buf(),
                reason: segment::ScanError::Damaged {
                    offset: file.end(),
                    reason: "it does not check, and it was made durable",
                }
                .to_string(),
            }),
            (Tail::Unchecked, None) => {
                file.check_tail()?;
                Ok(false)
            }
        }
    }
}

/// Why bytes after the frames of a segment with one after it are damage: such a segment ends
/// with whole frames ([`Journal::start_next`]), so they cannot be a torn write.
const FOLLOWED: &str = "it does not check, and a later segment follows it";

/// The error for bytes that do not check at `offset` of the segment at `path`, which a later
/// segment follows.
fn damaged_before_next(path: &Path, offset: u64) -> Error {
    Error::CorruptJournal {
        path: path.to_path_buf(),
        reason: segment::ScanError::Damaged {
            offset,
            reason: FOLLOWED,
        }
        .to_string(),
    }
}

impl Seg {
    /// Checks that a segment with one after it ends with its last whole frame.
    fn ends_whole(file: &Segment) -> Result<()> {
        match file.check_tail()? {
            0 => Ok(()),
            _ => Err(damaged_before_next(file.path(), file.end())),
        }
    }
}

/// The segments a reader sees, oldest first, each with the number of frames it had then.
pub(crate) struct View {
    /// `(segment, frames)`.
    pub(crate) layers: Vec<(Arc<Seg>, u64)>,
}

impl View {
    /// The complete segments (every frame read, none to come).
    pub(crate) fn complete(&self) -> impl Iterator<Item = &Arc<Seg>> {
        self.layers
            .iter()
            .map(|(s, _)| s)
            .filter(|s| s.complete.load(Ordering::Acquire))
    }

    /// About how many bytes of values the layers hold.
    pub(crate) fn bytes(&self) -> u64 {
        self.layers.iter().map(|(s, _)| s.layer().bytes()).sum()
    }
}

/// The writer lock, held until dropped.
pub(crate) struct WriterLock(#[allow(dead_code)] File);

/// The writer and syncing locks, held by a reader that reads past the published end.
struct Idle {
    _writer: File,
    _syncing: Option<File>,
}

/// A store's journal directory, as this process reads and writes it.
pub(crate) struct Journal {
    dir: PathBuf,
    store: StoreId,
    /// The segments this process has open, oldest first.
    segs: Mutex<Vec<Arc<Seg>>>,
    /// `published`, once this process has written it.
    published: Mutex<Option<File>>,
    /// An fdatasync of this journal failed: whether the frames it was to make durable are on
    /// the disk is unknown (the kernel may have dropped their pages, and reports the failure
    /// once), so this process writes no more frames on top of them.
    poisoned: AtomicBool,
}

/// Where the last durable frame ends, as a writer published it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Published {
    generation: u64,
    /// The offset after the frame.
    end: u64,
    /// The frame's sequence number.
    seq: u64,
}

impl Published {
    /// Read from the file (`Default`, nothing durable known, when it is not there or does not
    /// check: one of an older layout, or a write torn by a crash).
    fn read(file: &File) -> Published {
        use std::os::unix::fs::FileExt;
        let mut bytes = [0u8; PUBLISHED_LEN];
        let u = |b: &[u8]| b.try_into().map_or(0, u64::from_le_bytes);
        // A read that overlaps a writer's write of the file can see half of each: read again.
        for _ in 0..3 {
            match file.read_exact_at(&mut bytes, 0) {
                Ok(()) if bytes[24..] == published_check(&bytes[..24]) => {
                    return Published {
                        generation: u(&bytes[..8]),
                        end: u(&bytes[8..16]),
                        seq: u(&bytes[16..24]),
                    };
                }
                Ok(()) => continue,
                Err(_) => break,
            }
        }
        Published::default()
    }

    fn bytes(&self) -> [u8; PUBLISHED_LEN] {
        let mut bytes = [0u8; PUBLISHED_LEN];
        bytes[..8].copy_from_slice(&self.generation.to_le_bytes());
        bytes[8..16].copy_from_slice(&self.end.to_le_bytes());
        bytes[16..24].copy_from_slice(&self.seq.to_le_bytes());
        let check = published_check(&bytes[..24]);
        bytes[24..].copy_from_slice(&check);
        bytes
    }
}

/// The published file's size: generation, end, sequence number, check.
const PUBLISHED_LEN: usize = 32;

/// The check of a published end: BLAKE3 of its first 24 bytes, cut to 8.
fn published_check(bytes: &[u8]) -> [u8; 8] {
    let mut out = [0u8; 8];
    out.copy_from_slice(&blake3::hash(bytes).as_bytes()[..8]);
    out
}

impl Journal {
    /// Makes the journal of `store` at `dir`: the directory, its lock file and segment
    /// `generation`, made durable. A directory already there must hold no segment with frames
    /// (what a make that crashed half-way leaves).
    pub(crate) fn create(dir: &Path, store: &StoreId, generation: u64) -> Result<Journal> {
        let io = |e| Error::io(dir, e);
        match std::fs::create_dir(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                // What an earlier make published is of segments that are no more.
                let published = dir.join("published");
                match std::fs::remove_file(&published) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(Error::io(&published, e));
                    }
                    _ => {}
                }
                // Segments without a frame (of this store or of the one it was before an
                // upgrade gave it its id) are what a make that stopped half-way leaves.
                for g in generations(dir)? {
                    let path = segment_path(dir, g);
                    let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
                    if !segment::scan(&bytes, None).is_ok_and(|s| s.frames.is_empty()) {
                        return Err(Error::CorruptJournal {
                            path: path.clone(),
                            reason: "a journal with frames is already beside a store that has \
                                     none; move it away"
                                .into(),
                        });
                    }
                    std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
                }
            }
            Err(e) => return Err(io(e)),
        }
        File::create(dir.join("lock")).map_err(io)?;
        let seg = Segment::create(&segment_path(dir, generation), store, generation)?;
        sync_dir(dir)?;
        if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
            sync_dir(parent)?;
        }
        Ok(Journal {
            dir: dir.to_path_buf(),
            store: *store,
            segs: Mutex::new(vec![Seg::new(seg)]),
            published: Mutex::new(None),
            poisoned: AtomicBool::new(false),
        })
    }

    /// The journal of `store` at `dir`, as it is; [`Journal::view`] reads it.
    pub(crate) fn open(dir: &Path, store: &StoreId) -> Journal {
        Journal {
            dir: dir.to_path_buf(),
            store: *store,
            segs: Mutex::new(Vec::new()),
            published: Mutex::new(None),
            poisoned: AtomicBool::new(false),
        }
    }

    fn segs(&self) -> MutexGuard<'_, Vec<Arc<Seg>>> {
        self.segs.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The segments after generation `folded` (what redb does not hold), with every frame made
    /// durable so far (every frame there, for the `writer`, who holds the writer lock). `None`
    /// when segment `folded + 1` is not there: removed after a fold this reader's redb snapshot
    /// is older than (read again), or missing.
    ///
    /// A reader takes the frames up to where the last writer published its durable end; frames
    /// past it are a write under way (not durable yet) unless no writer holds the lock, when
    /// they are what a writer that died left, whole, and taken too.
    pub(crate) fn view(&self, folded: u64, writer: bool) -> Result<Option<View>> {
        let _reading = self.lock_dir(false)?;
        let (published_generation, published_end) = match writer {
            true => (u64::MAX, 0),
            false => {
                let p = self.published();
                (p.generation, p.end)
            }
        };
        // The writer and syncing locks, tried once, when frames past the published end are
        // found.
        let mut idle: Option<Option<Idle>> = None;
        let mut segs = self.segs();
        segs.retain(|s| s.generation > folded);
        let mut layers = Vec::new();
        let mut g = folded + 1;
        loop {
            let (seg, cached) = match segs.iter().find(|s| s.generation == g) {
                Some(s) => (Arc::clone(s), true),
                None => match Segment::open(&segment_path(&self.dir, g), &self.store, g)? {
                    Some(file) => {
                        let seg = Seg::new(file);
                        segs.push(Arc::clone(&seg));
                        segs.sort_by_key(|s| s.generation);
                        (seg, false)
                    }
                    None if layers.is_empty() => return Ok(None),
                    None => break,
                },
            };
            // Whether the next segment exists is asked before this one is read: once it does,
            // this one takes no more frames (all of them durable), so what is read now is all
            // of it.
            let next = segs.iter().any(|s| s.generation == g + 1)
                || segment_path(&self.dir, g + 1).exists();
            if !seg.complete.load(Ordering::Acquire) {
                let limit = match g.cmp(&published_generation) {
                    _ if next => None,
                    std::cmp::Ordering::Less => None,
                    std::cmp::Ordering::Equal => Some(published_end),
                    std::cmp::Ordering::Greater => Some(segment::HEADER_LEN as u64),
                };
                let mut file = seg.file();
                if seg.read_new(&mut file, limit)?
                    && idle.get_or_insert_with(|| self.try_idle()).is_some()
                {
                    seg.read_new(&mut file, None)?;
                }
                if next {
                    Seg::ends_whole(&file)?;
                    seg.complete.store(true, Ordering::Release);
                }
            }
            let frames = seg.layer().frames();
            layers.push((seg, frames));
            if !next {
                // The newest segment this process had open may have been folded by another
                // process and removed (this process reads it through its open file), with the
                // segments after it, since the caller's redb snapshot was taken: its frames
                // would then end the view early. Nothing is removed while the directory is
                // held shared, so the file being there now means nothing came after it.
                if cached && !segment_path(&self.dir, g).exists() {
                    segs.retain(|s| s.generation > g);
                    return Ok(None);
                }
                break;
            }
            g += 1;
        }
        Ok(Some(View { layers }))
    }

    /// Where a writer last said the last durable frame ends: read through the file this
    /// process writes it with, once it has one (no open and close for each read).
    fn published(&self) -> Published {
        if let Some(f) = self
            .published
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            return Published::read(f);
        }
        File::open(self.dir.join("published")).map_or(Published::default(), |f| Published::read(&f))
    }

    /// `published`, open for this writer to read and write.
    fn published_file(&self) -> Result<MutexGuard<'_, Option<File>>> {
        let mut file = self.published.lock().unwrap_or_else(|e| e.into_inner());
        if file.is_none() {
            *file = Some(open_or_make(&self.dir.join("published"))?);
        }
        Ok(file)
    }

    /// How many frames of segment `generation` before frame `seq` are not known durable: those
    /// after the last one published (all of them when the last published is of an older
    /// segment).
    fn in_flight(&self, generation: u64, seq: u64) -> Result<u64> {
        let file = self.published_file()?;
        let durable = match file.as_ref().map(Published::read) {
            Some(p) if p.generation == generation => p.seq,
            _ => 0,
        };
        Ok((seq - 1).saturating_sub(durable))
    }

    /// Says where the last durable frame ends (after its fdatasync), for readers, unless a
    /// writer that made a later frame durable first said more: what readers are told only
    /// moves forward. Not synced itself: after a crash, the next writer (or a reader finding
    /// none) takes what is there.
    fn publish(&self, now: Published) -> Result<()> {
        use std::os::unix::fs::FileExt;
        let path = self.dir.join("published");
        let io = |e| Error::io(&path, e);
        let file = self.published_file()?;
        let Some(f) = file.as_ref() else {
            return Ok(());
        };
        // Held while read and written: another process's writer publishing at once must not
        // write an older end over this one.
        f.lock().map_err(io)?;
        let before = Published::read(f);
        let written = match (before.generation, before.end) < (now.generation, now.end) {
            true => f.write_all_at(&now.bytes(), 0),
            false => Ok(()),
        };
        let unlocked = f.unlock();
        written.and(unlocked).map_err(io)
    }

    /// Both the writer lock and the syncing lock, if no writer holds either now: no frame is
    /// being written or made durable.
    fn try_idle(&self) -> Option<Idle> {
        let writer = File::open(self.dir.join("lock")).ok()?;
        writer.try_lock().ok()?;
        let syncing = match File::open(self.dir.join("syncing")) {
            Ok(f) => {
                f.try_lock().ok()?;
                Some(f)
            }
            // Made by the first writer that makes a frame durable.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(_) => return None,
        };
        Some(Idle {
            _writer: writer,
            _syncing: syncing,
        })
    }

    /// The syncing lock, held shared (by every writer making its frame durable). Opened for
    /// each write: an `flock` belongs to the open file, so writers sharing one would let go
    /// of each other's hold.
    fn hold_syncing(&self) -> Result<File> {
        let path = self.dir.join("syncing");
        let file = open_or_make(&path)?;
        file.lock_shared().map_err(|e| Error::io(&path, e))?;
        Ok(file)
    }

    /// The error for a write after an fdatasync of this journal failed.
    fn poisoned(&self) -> Result<()> {
        match self.poisoned.load(Ordering::Acquire) {
            false => Ok(()),
            true => Err(Error::io(
                &self.dir,
                std::io::Error::other(
                    "an earlier fdatasync of this journal failed, so whether the frames it was to \
                     make durable are on the disk is unknown; this process writes no more (close \
                     the store, check the disk, and run `tract fsck`)",
                ),
            )),
        }
    }

    /// Runs an fdatasync: a failure poisons the journal for this process.
    fn sync(&self, file: &Segment) -> Result<()> {
        #[cfg(feature = "testing")]
        let synced = match sync_fails(file) {
            true => Err(Error::io(
                file.path(),
                std::io::Error::from_raw_os_error(libc::EIO),
            )),
            false => file.sync(),
        };
        #[cfg(not(feature = "testing"))]
        let synced = file.sync();
        synced.inspect_err(|_| self.poisoned.store(true, Ordering::Release))
    }

    /// Takes the writer lock, waiting up to `timeout` for another process's writer.
    pub(crate) fn lock_writer(&self, timeout: Duration) -> Result<WriterLock> {
        let path = self.dir.join("lock");
        let file = open_or_make(&path)?;
        let deadline = Instant::now() + timeout;
        let mut pause = Duration::from_micros(20);
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(WriterLock(file)),
                Err(std::fs::TryLockError::WouldBlock) => {
                    if Instant::now() >= deadline {
                        return Err(Error::StoreLocked {
                            path,
                            reason: LockReason::Busy { waited: timeout },
                        });
                    }
                    std::thread::sleep(pause);
                    // A writer holds the lock for a write and an fdatasync, a fraction of a
                    // millisecond: waiting longer between tries would leave it free (`flock`
                    // has no queue of waiting processes, and no timeout of its own).
                    pause = (pause * 2).min(Duration::from_micros(200));
                }
                Err(std::fs::TryLockError::Error(e)) => return Err(Error::io(&path, e)),
            }
        }
    }

    /// The directory held shared (reading segments) or exclusively (removing them).
    fn lock_dir(&self, exclusive: bool) -> Result<File> {
        let io = |e| Error::io(&self.dir, e);
        let dir = File::open(&self.dir).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => self.missing(),
            _ => io(e),
        })?;
        if exclusive {
            dir.lock().map_err(io)?;
        } else {
            dir.lock_shared().map_err(io)?;
        }
        Ok(dir)
    }

    /// The error for a journal that is not there.
    pub(crate) fn missing(&self) -> Error {
        Error::CorruptJournal {
            path: self.dir.clone(),
            reason: "the journal is missing or incomplete: a store file was copied or restored \
                     without its journal directory (copy both, with no writer running; see \
                     docs/backends.md, \"Backups\")"
                .into(),
        }
    }

    /// Appends a frame of `ops` (encoded as `payload`) to the newest segment of `view`, which
    /// the caller read holding the writer `lock`, and makes it durable: the lock is let go
    /// once the frame is written, before its fdatasync, so the next writer (another process)
    /// writes its frame while this one's is made durable. A segment that is full is closed
    /// and the next one made: `true` then, and the full one is ready to fold.
    pub(crate) fn append(
        &self,
        view: &View,
        ops: Vec<Op>,
        payload: &[u8],
        lock: WriterLock,
    ) -> Result<bool> {
        self.poisoned()?;
        let Some((seg, _)) = view.layers.last() else {
            return Err(self.missing());
        };
        // Taken before the frame is written, so a reader never finds both locks free while a
        // frame is not yet durable.
        let syncing = self.hold_syncing()?;
        let mut file = seg.file();
        // A write torn by a writer that died is zeroed before this one takes its place.
        file.repair_tail()?;
        let in_flight = self.in_flight(seg.generation, file.next_seq())?;
        if let Some(seq) = file.append(payload, segment_limit(), in_flight)? {
            drop(lock);
            self.made_durable(seg, file, seq, ops)?;
            drop(syncing);
            return Ok(false);
        }
        drop(file);
        let next = self.start_next(seg)?;
        let mut file = next.file();
        let seq = file
            .append(payload, segment_limit(), 0)?
            .ok_or_else(|| Error::invalid_input("a journal frame larger than a segment"))?;
        drop(lock);
        self.made_durable(&next, file, seq, ops)?;
        drop(syncing);
        Ok(true)
    }

    /// Makes frame `seq` of `seg`, just written, durable (with every frame written before it),
    /// then lets this process's readers see its `ops` and says where it ends for the others'.
    fn made_durable(
        &self,
        seg: &Seg,
        file: MutexGuard<'_, Segment>,
        seq: u64,
        ops: Vec<Op>,
    ) -> Result<()> {
        self.sync(&file)?;
        seg.layer
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .apply(seq, ops);
        self.publish(Published {
            generation: seg.generation,
            end: file.end(),
            seq,
        })
    }

    /// Makes the segment after `seg` (the newest, under the writer lock) and closes `seg`,
    /// whose tail is made clean first (a write a writer that died tore is zeroed): a segment
    /// with one after it ends with whole frames, so bytes after them that do not check are
    /// damage, never a torn write.
    pub(crate) fn start_next(&self, seg: &Arc<Seg>) -> Result<Arc<Seg>> {
        {
            let mut file = seg.file();
            file.repair_tail()?;
            // Frames other processes wrote into it may still be in flight: a segment with
            // one after it is read whole, so they are made durable first.
            self.sync(&file)?;
        }
        let g = seg.generation + 1;
        let file = Segment::create(&segment_path(&self.dir, g), &self.store, g)?;
        sync_dir(&self.dir)?;
        seg.complete.store(true, Ordering::Release);
        let mut segs = self.segs();
        // A reader of this process may have found it already: one handle on each segment.
        if let Some(found) = segs.iter().find(|s| s.generation == g) {
            return Ok(Arc::clone(found));
        }
        let next = Seg::new(file);
        segs.push(Arc::clone(&next));
        segs.sort_by_key(|s| s.generation);
        Ok(next)
    }

    /// Removes the segments up to generation `folded` (redb holds their effects), wiping them
    /// first with `wipe`.
    pub(crate) fn remove_folded(&self, folded: u64, wipe: bool) -> Result<()> {
        let _removing = self.lock_dir(true)?;
        self.segs().retain(|s| s.generation > folded);
        for g in generations(&self.dir)?.into_iter().filter(|&g| g <= folded) {
            let path = segment_path(&self.dir, g);
            if wipe && let Some(seg) = Segment::open(&path, &self.store, g)? {
                seg.wipe()?;
            }
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(&path, e)),
            }
        }
        sync_dir(&self.dir)
    }

    /// Every segment file, checked whole (fsck): how many frames the segments after generation
    /// `folded` hold. Only the newest segment may end with a torn write
    /// ([`Journal::start_next`]): bytes that do not check after the frames of an earlier one
    /// after `folded` are damage.
    pub(crate) fn check(&self, folded: u64) -> Result<u64> {
        let _reading = self.lock_dir(false)?;
        let mut segments = Vec::new();
        for g in generations(&self.dir)? {
            let path = segment_path(&self.dir, g);
            let Some(seg) = Segment::open(&path, &self.store, g)? else {
                continue;
            };
            let (frames, torn) = seg.check()?;
            for (i, f) in frames.iter().enumerate() {
                ops::decode(f).map_err(|e| Error::CorruptJournal {
                    path: path.clone(),
                    reason: format!("frame {} does not decode: {e}", i + 1),
                })?;
            }
            if g > folded {
                segments.push((path, frames.len() as u64, torn));
            }
        }
        let earlier = segments.len().saturating_sub(1);
        if let Some((path, _, Some(offset))) = segments[..earlier].iter().find(|s| s.2.is_some()) {
            return Err(damaged_before_next(path, *offset));
        }
        Ok(segments.iter().map(|(_, frames, _)| frames).sum())
    }
}

/// The frames after a fold that a salvage keeps: every segment's frames, in order, up to the
/// first that does not check or does not decode, and where that one is.
pub(crate) struct Salvageable {
    /// The ops of each frame kept, in the order they were written.
    pub(crate) frames: Vec<Vec<Op>>,
    /// The segment with the damage, the damaged frame's offset and what is wrong with it;
    /// `None` when every frame checks.
    pub(crate) damage: Option<(u64, u64, String)>,
    /// The newest segment's generation.
    pub(crate) newest: u64,
}

impl Journal {
    /// Reads the segments after generation `folded` for a salvage (the writer lock held): the
    /// frames before the first damaged one. The segments must all be there and of this store:
    /// a journal missing or another store's is not damage a salvage mends.
    pub(crate) fn salvageable(&self, folded: u64) -> Result<Salvageable> {
        let _reading = self.lock_dir(false)?;
        let found: Vec<u64> = generations(&self.dir)?
            .into_iter()
            .filter(|&g| g > folded)
            .collect();
        if found.first() != Some(&(folded + 1)) || found.windows(2).any(|w| w[1] != w[0] + 1) {
            return Err(self.missing());
        }
        let mut out = Salvageable {
            frames: Vec::new(),
            damage: None,
            newest: found.last().copied().unwrap_or(folded),
        };
        for g in found {
            let path = segment_path(&self.dir, g);
            let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
            let newest = g == out.newest;
            let (frames, damage) = match segment::scan(&bytes, Some(&self.store)) {
                // Only the newest segment can end with a torn write (`Journal::start_next`).
                Ok(scan) => match scan.torn {
                    Some(offset) if !newest => (scan.frames, Some((offset, FOLLOWED.into()))),
                    _ => (scan.frames, None),
                },
                Err(segment::ScanError::Damaged { offset, reason }) => {
                    // What comes before the damaged frame reads as a segment that ends there.
                    let cut = usize::try_from(offset)
                        .unwrap_or(bytes.len())
                        .min(bytes.len());
                    let before = segment::scan(&bytes[..cut], Some(&self.store))
                        .map(|s| s.frames)
                        .unwrap_or_default();
                    (before, Some((offset, reason.to_string())))
                }
                Err(e @ segment::ScanError::NotASegment(_)) => {
                    (Vec::new(), Some((0, e.to_string())))
                }
                Err(e) => {
                    return Err(Error::CorruptJournal {
                        path,
                        reason: e.to_string(),
                    });
                }
            };
            let mut damage = damage;
            for f in frames {
                match ops::decode(f.payload) {
                    Ok(ops) => out.frames.push(ops),
                    Err(e) => {
                        damage = Some((f.offset, format!("its ops do not decode: {e}")));
                        break;
                    }
                }
            }
            if let Some((offset, reason)) = damage {
                out.damage = Some((g, offset, reason));
                break;
            }
        }
        Ok(out)
    }

    /// Copies segments `from..=to` into a new directory of the journal, `set-aside-<seconds>`
    /// (made durable), and makes segment `to + 1`, empty: what a salvage does before redb
    /// records `to` as folded. Returns the directory.
    pub(crate) fn set_aside(&self, from: u64, to: u64) -> Result<PathBuf> {
        let seconds = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut aside = self.dir.join(format!("set-aside-{seconds}"));
        let mut n = 1;
        while aside.exists() {
            n += 1;
            aside = self.dir.join(format!("set-aside-{seconds}-{n}"));
        }
        std::fs::create_dir(&aside).map_err(|e| Error::io(&aside, e))?;
        for g in from..=to {
            let (src, dest) = (segment_path(&self.dir, g), segment_path(&aside, g));
            std::fs::copy(&src, &dest).map_err(|e| Error::io(&src, e))?;
            File::open(&dest)
                .and_then(|f| f.sync_all())
                .map_err(|e| Error::io(&dest, e))?;
        }
        sync_dir(&aside)?;
        Segment::create(&segment_path(&self.dir, to + 1), &self.store, to + 1)?;
        sync_dir(&self.dir)?;
        Ok(aside)
    }
}

/// The generations of the segment files in `dir`, in order.
fn generations(dir: &Path) -> Result<Vec<u64>> {
    numbered_files(dir, "")
}

/// The numbers of the files in `dir` named `prefix` and 16 decimal digits (segments, packs),
/// in order.
pub(crate) fn numbered_files(dir: &Path, prefix: &str) -> Result<Vec<u64>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let name = entry.file_name();
        if let Some(g) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .filter(|n| n.len() == 16 && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse().ok())
        {
            out.push(g);
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// Makes a directory's entries durable (a file made or removed in it).
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| Error::io(dir, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STORE: StoreId = [7; 16];

    /// The ops of frame `n`: a setting named after it.
    fn ops_of(n: u64) -> Vec<Op> {
        vec![Op::Meta(
            format!("frame {n}"),
            Some(n.to_le_bytes().to_vec()),
        )]
    }

    /// A journal of segments 1 to 3 with two frames each (frames 1 to 6, in order).
    fn three_segments(dir: &Path) -> Journal {
        let journal = Journal::create(dir, &STORE, 1).unwrap();
        for g in 1..=3u64 {
            let path = segment_path(dir, g);
            let mut seg = match g {
                1 => Segment::open(&path, &STORE, g).unwrap().unwrap(),
                _ => Segment::create(&path, &STORE, g).unwrap(),
            };
            for n in [2 * g - 1, 2 * g] {
                let payload = ops::encode(&ops_of(n)).unwrap();
                seg.append(&payload, 1 << 20, 0).unwrap().unwrap();
            }
        }
        journal
    }

    #[test]
    fn a_salvage_keeps_the_frames_before_the_damage_and_copies_the_rest_aside() {
        let dir = tempfile::tempdir().unwrap();
        let journal = three_segments(dir.path());
        let whole = journal.salvageable(0).unwrap();
        assert_eq!(whole.frames, (1..=6).map(ops_of).collect::<Vec<_>>());
        assert_eq!((whole.damage, whole.newest), (None, 3));

        // The second frame of segment 2 (frame 4), changed in its payload.
        let path = segment_path(dir.path(), 2);
        let mut bytes = std::fs::read(&path).unwrap();
        let second = segment::scan(&bytes, Some(&STORE)).unwrap().frames[1].offset as usize;
        bytes[second + segment::FRAME_HEAD + 2] ^= 0x41;
        std::fs::write(&path, &bytes).unwrap();
        let found = journal.salvageable(0).unwrap();
        assert_eq!(found.frames, (1..=3).map(ops_of).collect::<Vec<_>>());
        let (generation, offset, _) = found.damage.clone().unwrap();
        assert_eq!((generation, offset, found.newest), (2, second as u64, 3));

        // Segments 2 and 3 are copied whole, segment 4 is made empty, the originals stay for
        // the caller to remove once redb records the fold.
        let aside = journal.set_aside(2, 3).unwrap();
        assert_eq!(std::fs::read(segment_path(&aside, 2)).unwrap(), bytes);
        assert_eq!(
            std::fs::read(segment_path(&aside, 3)).unwrap(),
            std::fs::read(segment_path(dir.path(), 3)).unwrap()
        );
        let next = std::fs::read(segment_path(dir.path(), 4)).unwrap();
        assert!(
            segment::scan(&next, Some(&STORE))
                .unwrap()
                .frames
                .is_empty()
        );
        assert_eq!(generations(&aside).unwrap(), [2, 3]);
        // A salvage again after a crash before redb recorded the first (segment 4 is there, the
        // newest now) copies to a directory of its own, in the same second too.
        let again = journal.set_aside(2, 4).unwrap();
        assert_ne!(again, aside);
        assert_eq!(generations(&again).unwrap(), [2, 3, 4]);
    }

    /// Segment `g`'s bytes with `f` applied to them.
    fn change(dir: &Path, g: u64, f: impl FnOnce(&mut Vec<u8>, &[u64])) {
        let path = segment_path(dir, g);
        let mut bytes = std::fs::read(&path).unwrap();
        let offsets: Vec<u64> = segment::scan(&bytes, Some(&STORE))
            .unwrap()
            .frames
            .iter()
            .map(|f| f.offset)
            .collect();
        f(&mut bytes, &offsets);
        std::fs::write(&path, &bytes).unwrap();
    }

    #[test]
    fn the_last_frame_of_a_segment_with_one_after_it_damaged_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let journal = three_segments(dir.path());
        // A torn write at the end of the newest segment is not damage: it is dropped.
        change(dir.path(), 3, |bytes, offsets| {
            let end = offsets[1] as usize + segment::FRAME_HEAD + 40;
            bytes[end..end + 9].copy_from_slice(b"\x30\0\0\0\x03torn");
        });
        let view = journal.view(0, true).unwrap().unwrap();
        assert_eq!(
            view.layers.iter().map(|(_, n)| *n).collect::<Vec<_>>(),
            [2, 2, 2]
        );
        // The same bytes where a segment follows: the last frame of segment 2 changed.
        let dir = tempfile::tempdir().unwrap();
        let journal = three_segments(dir.path());
        let mut at = 0;
        change(dir.path(), 2, |bytes, offsets| {
            at = offsets[1];
            bytes[at as usize + segment::FRAME_HEAD + 2] ^= 0x41;
        });
        for writer in [false, true] {
            match journal.view(0, writer).map(|_| ()) {
                Err(Error::CorruptJournal { path, reason }) => {
                    assert_eq!(path, segment_path(dir.path(), 2));
                    assert!(reason.contains(&format!("offset {at}")), "{reason}");
                    assert!(reason.contains(FOLLOWED), "{reason}");
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn fsck_takes_a_torn_tail_only_at_the_end_of_the_newest_segment() {
        let torn = |bytes: &mut Vec<u8>, offsets: &[u64]| {
            let end = offsets[1] as usize + segment::FRAME_HEAD + 40;
            bytes[end..end + 9].copy_from_slice(b"\x30\0\0\0\x03torn");
        };
        let dir = tempfile::tempdir().unwrap();
        let journal = three_segments(dir.path());
        change(dir.path(), 3, torn);
        assert_eq!(journal.check(0).unwrap(), 6);
        assert_eq!(journal.check(1).unwrap(), 4);

        let dir = tempfile::tempdir().unwrap();
        let journal = three_segments(dir.path());
        change(dir.path(), 2, torn);
        match journal.check(0) {
            Err(Error::CorruptJournal { path, reason }) => {
                assert_eq!(path, segment_path(dir.path(), 2));
                assert!(reason.contains(FOLLOWED), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        // Once folded, segment 2 is no longer the journal's to answer for.
        assert_eq!(journal.check(2).unwrap(), 2);
    }

    #[test]
    fn a_segment_is_closed_with_its_torn_tail_zeroed() {
        let dir = tempfile::tempdir().unwrap();
        let journal = three_segments(dir.path());
        let mut end = 0;
        change(dir.path(), 3, |bytes, offsets| {
            end = offsets[1] as usize + segment::FRAME_HEAD + 40;
            bytes[end..end + 9].copy_from_slice(b"\x30\0\0\0\x03torn");
        });
        let view = journal.view(0, true).unwrap().unwrap();
        let (newest, _) = view.layers.last().unwrap();
        journal.start_next(newest).unwrap();
        let bytes = std::fs::read(segment_path(dir.path(), 3)).unwrap();
        assert!(bytes[end..end + 9].iter().all(|&b| b == 0));
        // Segment 3, now followed by 4, reads whole.
        let view = journal.view(0, false).unwrap().unwrap();
        assert_eq!(view.layers.len(), 4);
    }

    #[test]
    fn a_salvage_needs_every_segment_after_the_fold() {
        let dir = tempfile::tempdir().unwrap();
        let journal = three_segments(dir.path());
        std::fs::remove_file(segment_path(dir.path(), 2)).unwrap();
        assert!(matches!(
            journal.salvageable(0),
            Err(Error::CorruptJournal { reason, .. }) if reason.contains("missing")
        ));
        // Segments an earlier fold holds are not asked for.
        assert_eq!(
            journal.salvageable(2).unwrap().frames,
            [ops_of(5), ops_of(6)]
        );
        // A segment whose header is damaged holds nothing that can be read: the damage is
        // at its start, and what comes before it is kept.
        let dir = tempfile::tempdir().unwrap();
        let journal = three_segments(dir.path());
        change(dir.path(), 3, |bytes, _| bytes[40] ^= 0x41);
        let found = journal.salvageable(0).unwrap();
        assert_eq!(found.frames, (1..=4).map(ops_of).collect::<Vec<_>>());
        assert_eq!(found.damage.map(|(g, offset, _)| (g, offset)), Some((3, 0)));
        // Another store's segment is not damage a salvage mends.
        let dir = tempfile::tempdir().unwrap();
        let journal = three_segments(dir.path());
        let theirs = segment::header(&[8; 16], 2);
        change(dir.path(), 2, |bytes, _| {
            bytes[..theirs.len()].copy_from_slice(&theirs)
        });
        assert!(matches!(
            journal.salvageable(0),
            Err(Error::CorruptJournal { reason, .. }) if reason.contains("another store")
        ));
    }

    /// Appends frame `n` through `journal` as a writer whose redb folded `folded`.
    fn append(journal: &Journal, folded: u64, n: u64) {
        let lock = journal.lock_writer(Duration::ZERO).unwrap();
        let view = journal.view(folded, true).unwrap().unwrap();
        let payload = ops::encode(&ops_of(n)).unwrap();
        journal.append(&view, ops_of(n), &payload, lock).unwrap();
    }

    fn generations_of(view: &View) -> Vec<u64> {
        view.layers.iter().map(|(s, _)| s.generation()).collect()
    }

    #[test]
    fn a_reader_whose_open_segment_was_folded_and_removed_reads_again() {
        let dir = tempfile::tempdir().unwrap();
        let writer = Journal::create(dir.path(), &STORE, 1).unwrap();
        // Another process: it reads segment 1 and keeps it open.
        let reader = Journal::open(dir.path(), &STORE);
        append(&writer, 0, 1);
        assert_eq!(
            generations_of(&reader.view(0, false).unwrap().unwrap()),
            [1]
        );

        // The writer goes on into segments 2 and 3, and a fold takes 1 and 2 into redb and
        // removes them, after the reader's redb snapshot (which says 0 folded) was taken.
        let newest = writer.view(0, true).unwrap().unwrap().layers[0].0.clone();
        let second = writer.start_next(&newest).unwrap();
        append(&writer, 0, 2);
        writer.start_next(&second).unwrap();
        append(&writer, 0, 3);
        writer.remove_folded(2, false).unwrap();

        // Segment 1, read through the reader's open file, is not all there is: the reader
        // takes a new snapshot, and the fold's generation finds segment 3 with frame 3.
        assert!(reader.view(0, false).unwrap().is_none());
        let view = reader.view(2, false).unwrap().unwrap();
        assert_eq!(generations_of(&view), [3]);
        assert_eq!(view.layers[0].1, 1);
    }
}
