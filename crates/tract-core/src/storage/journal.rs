//! The journal's segment files: where a durable write lands first, as one frame written in
//! place and made durable with one fdatasync (docs/decisions.md, "The write path").
//!
//! A segment is a file of fixed size, written once with zeros when it is made, so that an
//! append changes neither the file's size nor its extents. It starts with a header naming the
//! store it belongs to and its generation; frames follow, each with its length, its sequence
//! number (1, 2, ... within a generation) and a check: BLAKE3 over the store's id, the
//! generation, the sequence number, the length and the payload, cut to 8 bytes. A segment is
//! reused by giving it a new generation: the frames of the old one no longer check.
//!
//! Reading a segment ([`scan`]) takes frames in order while they check. The first that does
//! not is either a torn tail (a write cut short by a crash or still under way in another
//! process: no frame of the generation checks anywhere after it) and ends the segment, or
//! damage (a later frame checks): an error naming the offset, never a silently shorter
//! journal. Damage to the last frame cannot be told from a torn write and is dropped with it,
//! as a write-ahead log's last record is.

// The store's backend writes through the journal in a later step; until then only the tests
// and the fuzz target use it.
#![cfg_attr(not(test), allow(dead_code))]

use crate::error::{Error, Result};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// What a segment file starts with.
const MAGIC: &[u8; 16] = b"tract journal\0\0\0";
/// The layout of segments and frames this build writes and reads.
const JOURNAL_FORMAT: u32 = 1;
/// The header's size: magic, format, store id, generation, check, then zeros.
pub(crate) const HEADER_LEN: usize = 64;
/// A frame's fixed part: length, sequence number, check.
pub(crate) const FRAME_HEAD: usize = 4 + 8 + 8;

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
    /// A frame that does not check, with frames that do after it.
    #[error("the frame at offset {offset} is damaged ({reason}) and frames follow it")]
    Damaged {
        /// Where the frame starts.
        offset: u64,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// The check of a frame: BLAKE3 over everything that makes it this frame of this segment.
fn frame_check(store: &StoreId, generation: u64, seq: u64, payload: &[u8]) -> [u8; 8] {
    let mut h = blake3::Hasher::new();
    h.update(store);
    h.update(&generation.to_le_bytes());
    h.update(&seq.to_le_bytes());
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

/// Frame `seq` of generation `generation` carrying `payload`.
pub(crate) fn frame(store: &StoreId, generation: u64, seq: u64, payload: &[u8]) -> Result<Vec<u8>> {
    let len = u32::try_from(payload.len())
        .ok()
        .filter(|&l| l > 0)
        .ok_or_else(|| Error::invalid_input("a journal frame carries 1 byte to 4 GiB"))?;
    let mut out = Vec::with_capacity(FRAME_HEAD + payload.len());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&frame_check(store, generation, seq, payload));
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
    if u64_at(bytes, at + 4) != seq {
        return Err("out of sequence");
    }
    let start = at + FRAME_HEAD;
    let payload = bytes
        .get(start..start.saturating_add(len))
        .ok_or("cut short")?;
    if bytes[at + 12..at + 20] != frame_check(store, generation, seq, payload) {
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
                return if follows(bytes, at + 1, &id, generation, seq + 1) {
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

/// Whether frame `seq` of this generation checks anywhere from `from` up to the zeros that
/// end what was written: a damaged frame is followed by the next one, a torn write by nothing.
fn follows(bytes: &[u8], from: usize, store: &StoreId, generation: u64, seq: u64) -> bool {
    let wanted = seq.to_le_bytes();
    (from..garbage_end(bytes, from))
        .filter(|&at| bytes.len() - at >= FRAME_HEAD && bytes[at + 4..at + 12] == wanted)
        .any(|at| frame_at(bytes, at, store, generation, seq).is_ok())
}

/// A segment file, open for appending frames at its end.
pub(crate) struct Segment {
    file: File,
    path: PathBuf,
    store: StoreId,
    generation: u64,
    /// Where the next frame goes.
    end: u64,
    /// The next frame's sequence number.
    next_seq: u64,
    /// The file's size: frames go no further.
    capacity: u64,
}

impl Segment {
    /// Makes a segment of `capacity` bytes at `path` for `store`, written with zeros and made
    /// durable before its header, so a crash leaves no segment or a whole one.
    pub(crate) fn create(
        path: &Path,
        store: &StoreId,
        generation: u64,
        capacity: u64,
    ) -> Result<Self> {
        let io = |e| Error::io(path, e);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(io)?;
        let zeros = vec![0u8; 1 << 20];
        let mut at = 0;
        while at < capacity {
            let n = (capacity - at).min(zeros.len() as u64) as usize;
            file.write_all_at(&zeros[..n], at).map_err(io)?;
            at += n as u64;
        }
        file.sync_all().map_err(io)?;
        file.write_all_at(&header(store, generation), 0)
            .map_err(io)?;
        file.sync_data().map_err(io)?;
        Ok(Segment {
            file,
            path: path.to_path_buf(),
            store: *store,
            generation,
            end: HEADER_LEN as u64,
            next_seq: 1,
            capacity,
        })
    }

    /// Opens the segment at `path`, which must belong to `store`, and reads its frames; `f`
    /// gets each frame's sequence number and payload, in order. A torn tail is overwritten
    /// with zeros, so the next frame goes where it started.
    pub(crate) fn open(
        path: &Path,
        store: &StoreId,
        mut f: impl FnMut(u64, &[u8]) -> Result<()>,
    ) -> Result<Self> {
        let io = |e| Error::io(path, e);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(io)?;
        let bytes = std::fs::read(path).map_err(io)?;
        let scan = scan(&bytes, Some(store)).map_err(|e| Error::CorruptJournal {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        for frame in &scan.frames {
            f(frame.seq, frame.payload)?;
        }
        if let Some(torn) = scan.torn {
            let garbage = garbage_end(&bytes, torn as usize);
            file.write_all_at(&vec![0u8; garbage - torn as usize], torn)
                .map_err(io)?;
            file.sync_data().map_err(io)?;
        }
        Ok(Segment {
            file,
            path: path.to_path_buf(),
            store: *store,
            generation: scan.generation,
            end: scan.end,
            next_seq: scan.frames.len() as u64 + 1,
            capacity: bytes.len() as u64,
        })
    }

    /// The segment's generation.
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// How many frames it holds.
    pub(crate) fn frames(&self) -> u64 {
        self.next_seq - 1
    }

    /// Writes `payload` as the next frame and makes it durable: one positioned write and one
    /// fdatasync. `None` when the segment has no room for it (nothing is written).
    pub(crate) fn append(&mut self, payload: &[u8]) -> Result<Option<u64>> {
        let mut frame = frame(&self.store, self.generation, self.next_seq, payload)?;
        let end = self.end + frame.len() as u64;
        // Zeros after the frame end what was written, whatever an older generation left there.
        frame.extend_from_slice(&[0u8; FRAME_HEAD]);
        if self.end + frame.len() as u64 > self.capacity {
            return Ok(None);
        }
        let io = |e| Error::io(&self.path, e);
        self.file.write_all_at(&frame, self.end).map_err(io)?;
        self.file.sync_data().map_err(io)?;
        let seq = self.next_seq;
        self.end = end;
        self.next_seq += 1;
        Ok(Some(seq))
    }

    /// Starts generation `generation`: a new header, made durable; the frames written before
    /// no longer check. With `wipe`, the space they used is overwritten with zeros first (so
    /// a redacted payload leaves the file).
    pub(crate) fn reset(&mut self, generation: u64, wipe: bool) -> Result<()> {
        let io = |e| Error::io(&self.path, e);
        if wipe {
            let used = (self.end - HEADER_LEN as u64) as usize;
            self.file
                .write_all_at(&vec![0u8; used], HEADER_LEN as u64)
                .map_err(io)?;
        } else {
            // The first frame's place is zeroed, so a scan of the new generation ends there
            // without reading the old frames as a torn one.
            self.file
                .write_all_at(&[0u8; FRAME_HEAD], HEADER_LEN as u64)
                .map_err(io)?;
        }
        self.file.sync_data().map_err(io)?;
        self.file
            .write_all_at(&header(&self.store, generation), 0)
            .map_err(io)?;
        self.file.sync_data().map_err(io)?;
        self.generation = generation;
        self.end = HEADER_LEN as u64;
        self.next_seq = 1;
        Ok(())
    }
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
            out.extend(frame(&STORE, 3, i as u64 + 1, p).unwrap());
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

    #[test]
    fn a_segment_file_appends_reopens_recovers_a_torn_tail_and_resets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal-0");
        let mut s = Segment::create(&path, &STORE, 1, 4096).unwrap();
        assert_eq!(s.append(b"one").unwrap(), Some(1));
        assert_eq!(s.append(b"two").unwrap(), Some(2));
        assert_eq!(
            s.append(&[1u8; 5000]).unwrap(),
            None,
            "no room: nothing written"
        );
        // A third frame cut short, as kill -9 in the middle of the write would leave it.
        let torn = frame(&STORE, 1, 3, b"three").unwrap();
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.write_all_at(&torn[..torn.len() - 2], s.end).unwrap();
        drop(s);
        let mut seen = Vec::new();
        let mut s = Segment::open(&path, &STORE, |seq, p| {
            seen.push((seq, p.to_vec()));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, [(1, b"one".to_vec()), (2, b"two".to_vec())]);
        assert_eq!(
            s.append(b"three").unwrap(),
            Some(3),
            "where the torn frame was"
        );
        assert_eq!((s.generation(), s.frames()), (1, 3));
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 4096, "the file never grows");
        assert_eq!(scan(&bytes, Some(&STORE)).unwrap().frames.len(), 3);
        // A new generation: the old frames are gone from the scan; wiped, from the file.
        s.reset(2, true).unwrap();
        assert_eq!((s.generation(), s.frames()), (2, 0));
        let bytes = std::fs::read(&path).unwrap();
        let scan = scan(&bytes, Some(&STORE)).unwrap();
        assert_eq!(
            (scan.generation, scan.frames.len(), scan.torn),
            (2, 0, None)
        );
        assert!(!bytes.windows(3).any(|w| w == b"two"));
        assert!(matches!(
            Segment::open(&path, &[9; 16], |_, _| Ok(())),
            Err(Error::CorruptJournal { .. })
        ));
    }
}
