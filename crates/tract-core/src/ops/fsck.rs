//! `fsck`: checks everything a store holds against what it claims. Every object and chunk is
//! re-hashed; every link a commit makes (parents, blob, edit target, compress sources, merge
//! base) must point at an object of the right kind; every branch, `HEAD` and reflog entry at a
//! commit; the per-branch counts must equal a replay of the branch's view. Objects no branch,
//! `HEAD` or reflog entry reaches are listed (they are not a problem).

use crate::error::{Error, Result};
use crate::id::{BlobId, ChunkId, CommitId, IdHasher};
use crate::object::{Commit, Op};
use crate::refs::HeadRef;

use crate::storage::backend::ObjectTable;
use crate::storage::store::Store;
use crate::storage::store::snapshot::Snapshot;
use crate::storage::store::verify;
use crate::view::{View, checkpoint};
use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;

/// Maps and sets keyed by raw ids: they are uniformly random, so a cheap hash of their first
/// bytes does (SipHash over 32 bytes was a tenth of fsck's time).
type IdMap<V> = HashMap<[u8; 32], V, BuildHasherDefault<IdHasher>>;
type IdSet = HashSet<[u8; 32], BuildHasherDefault<IdHasher>>;

/// One thing found wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// `corrupt` (an object that does not verify), `missing` (a link to an object the store
    /// lacks), `ref` (a branch, `HEAD` or reflog entry), `bookkeeping` (per-branch counts, or
    /// a branch's usage as its ledger's rows tell it, that differ from a replay; a ledger row
    /// that does not read), `checkpoint` (a branch's view checkpoint that is missing,
    /// damaged or differs from a replay), `order` (a commit not newer than its parent) or
    /// `index` (the search index holds a commit the store does not, or twice, misses one a
    /// branch reached when it was last brought up to date, or has not applied a redaction).
    pub kind: &'static str,
    /// What it is about: `commit <id>`, `blob <id>`, `chunk <id>`, `branch <name>`, `HEAD`,
    /// `reflog <name>`, `pack <file>` (a store file's pack whose bytes do not check), or
    /// `index` (the search index as a whole).
    pub subject: String,
    /// What is wrong.
    pub detail: String,
}

/// What `fsck` checked and found.
#[derive(Debug, Clone, Default)]
pub struct FsckReport {
    /// Commits checked.
    pub commits: u64,
    /// Blobs checked.
    pub blobs: u64,
    /// Chunks checked.
    pub chunks: u64,
    /// Bytes of object records read and re-hashed.
    pub bytes: u64,
    /// Branches checked.
    pub branches: u64,
    /// Reflog entries checked.
    pub reflog_entries: u64,
    /// Branches whose kept counts were compared with a replay of their view.
    pub counts_replayed: u64,
    /// View checkpoints (the newest of each branch, which a new handle starts from) read and
    /// compared with a replay of the view they keep.
    pub checkpoints_checked: u64,
    /// Every branch, by name, with the commits a new handle reads along first parents past
    /// its view checkpoint to build its view: at most the store's checkpoint interval for a
    /// branch written since checkpoints came from every writer, its whole first-parent
    /// history when it has no checkpoint that reads back.
    pub past_checkpoint: Vec<(String, u64)>,
    /// Frames of the journal not yet folded into the store file, read whole and checked (a
    /// store in memory or in a database has no journal).
    pub journal_frames: u64,
    /// Documents of the search index read and checked against the store (a store file's
    /// index, or a store in PostgreSQL's rows; one in memory is this process's own).
    pub index_documents: u64,
    /// Everything found wrong; empty for a sound store.
    pub problems: Vec<Problem>,
    /// Blobs whose content was redacted, or replaced by a retention rule (a tombstone in their
    /// place; not a problem).
    pub redacted: Vec<BlobId>,
    /// Commits whose content was made from redacted content (a summary or compression of it,
    /// or of such a summary), oldest first: `tract redact --follow` removes them too. Content
    /// a retention rule replaced does not count: its summary is what was meant to stay.
    pub derived_from_redacted: Vec<CommitId>,
    /// Branches whose view has tool calls reusing an id an earlier call in it used, with how
    /// many (not damage: compile sends each under a new id, [`crate::ReusedCallId`]), by
    /// name. Only branches whose counts were replayed are looked at.
    pub reused_call_ids: Vec<(String, u64)>,
    /// Branches whose view holds messages in which the store's secrets rules find something
    /// (written before the store scrubbed, or with scrubbing off), with how many messages, by
    /// name: `tract secrets scan --redact` scrubs them. Only branches whose counts were
    /// replayed are looked at.
    pub secrets_in_view: Vec<(String, u64)>,
    /// Commits no branch, `HEAD` or reflog entry reaches.
    pub unreachable_commits: Vec<CommitId>,
    /// Blobs no reachable commit carries.
    pub unreachable_blobs: Vec<BlobId>,
    /// Chunks no reachable blob is made of.
    pub unreachable_chunks: Vec<ChunkId>,
}

impl FsckReport {
    /// Whether nothing is wrong.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }

    fn problem(&mut self, kind: &'static str, subject: String, detail: impl Into<String>) {
        self.problems.push(Problem {
            kind,
            subject,
            detail: detail.into(),
        });
    }
}

/// What fsck keeps of a blob that verified.
enum BlobRead {
    /// Its content's chunks (none for a small blob), whether the secrets rules find
    /// something in it, and the usage its message carries.
    Content(Vec<ChunkId>, bool, Option<Box<crate::usage::Usage>>),
    /// A tombstone; `by_retention`: a retention rule's, whose summary is meant to stay.
    Tombstone { by_retention: bool },
}

impl BlobRead {
    fn chunks(&self) -> &[ChunkId] {
        match self {
            BlobRead::Content(chunks, ..) => chunks,
            BlobRead::Tombstone { .. } => &[],
        }
    }
}

/// What one pass over an object table found.
#[derive(Default)]
struct Scanned<T> {
    /// The objects that verified, by id.
    good: IdMap<T>,
    /// The ids present whether they verified or not.
    present: IdSet,
    /// The ones that did not verify, with why.
    bad: Vec<([u8; 32], String)>,
    bytes: u64,
}

impl<T> Scanned<T> {
    fn merge(&mut self, other: Scanned<T>) {
        self.good.extend(other.good);
        self.present.extend(other.present);
        self.bad.extend(other.bad);
        self.bytes += other.bytes;
    }
}

/// Scans one object table on the machine's cores (split by the ids' first byte), keeping
/// what `check` makes of each record.
fn scan<T: Send>(
    snap: &Snapshot,
    table: ObjectTable,
    check: impl Fn([u8; 32], &[u8]) -> Result<T> + Sync,
) -> Result<Scanned<T>> {
    let threads = crate::parallel::cores().clamp(1, 8);
    let step = 256 / threads;
    let ranges: Vec<std::ops::RangeInclusive<u8>> = (0..threads)
        .map(|k| {
            let lo = (k * step) as u8;
            let hi = if k + 1 == threads {
                u8::MAX
            } else {
                ((k + 1) * step - 1) as u8
            };
            lo..=hi
        })
        .collect();
    let check = &check;
    let parts = std::thread::scope(|scope| {
        let handles: Vec<_> = ranges
            .into_iter()
            .map(|range| {
                scope.spawn(move || -> Result<Scanned<T>> {
                    let mut part = Scanned {
                        good: IdMap::default(),
                        present: IdSet::default(),
                        bad: Vec::new(),
                        bytes: 0,
                    };
                    snap.scan(table, range, |id, record| {
                        part.bytes += record.len() as u64;
                        part.present.insert(id);
                        match check(id, record) {
                            Ok(v) => {
                                part.good.insert(id, v);
                            }
                            // A record that does not verify is a finding, not a failure of fsck;
                            // the storage engine failing is.
                            Err(e @ (Error::Corrupt { .. } | Error::CorruptObject { .. })) => {
                                part.bad.push((id, reason(&e)));
                            }
                            Err(Error::NewerFormat { found, .. }) => {
                                part.bad
                                    .push((id, format!("written in object format {found}")));
                            }
                            Err(e) => return Err(e),
                        }
                        Ok(())
                    })?;
                    Ok(part)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| Error::corrupt("a record could not be checked"))?
            })
            .collect::<Result<Vec<_>>>()
    })?;
    let mut all = Scanned {
        good: IdMap::default(),
        present: IdSet::default(),
        bad: Vec::new(),
        bytes: 0,
    };
    for p in parts {
        all.merge(p);
    }
    Ok(all)
}

/// The reason of a corrupt-object error, without the "corrupt store:" lead.
fn reason(e: &Error) -> String {
    match e {
        Error::CorruptObject { reason, .. } => reason.clone(),
        Error::Corrupt { message } => message.clone(),
        other => other.to_string(),
    }
}

fn hex(id: &[u8; 32]) -> String {
    CommitId::from_bytes(*id).to_hex()
}

/// Checks the whole store (every branch): re-hashes every object and chunk, checks every link,
/// ref and reflog entry and the kept per-branch counts, and lists what nothing reaches. Reads
/// only.
pub fn fsck(store: &Store) -> Result<FsckReport> {
    let snap = store.read()?;
    // Every segment read whole: a damaged frame anywhere is an error naming its offset (a
    // torn tail, what a crash leaves, is not a problem: the next write overwrites it).
    let (journal_frames, damaged_packs) = store.check_journal()?;
    let mut report = FsckReport {
        journal_frames,
        ..FsckReport::default()
    };
    // A pack that does not check is a finding; its records are checked one by one below.
    for (path, reason) in damaged_packs {
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        report.problem("corrupt", format!("pack {name}"), reason);
    }

    // What the store's rules find is counted in each view (a warning, not damage).
    let detector = crate::scrubbing::scan_detector(&snap)?;
    let chunks = scan(&snap, ObjectTable::Chunks, |id, record| {
        codec_chunk(&ChunkId::from_bytes(id), record)
    })?;
    // A blob keeps the ids of its chunks, for reachability; a redacted one its tombstone's
    // mark (its content is gone, so there is nothing to hash).
    let blobs = scan(&snap, ObjectTable::Blobs, |id, record| {
        let id = BlobId::from_bytes(id);
        if let Some(t) = verify::tombstone_of(record) {
            let t = t.map_err(|e| verify::damaged("blob", id.to_hex(), reason(&e)))?;
            return Ok(BlobRead::Tombstone {
                by_retention: t
                    .reason
                    .starts_with(crate::retention_policy::RETENTION_REASON),
            });
        }
        let bytes = verify::verified_blob_bytes(&id, record, |c| snap.chunk_record(c))?;
        crate::object::check_header(&bytes, false)
            .map_err(|e| verify::damaged("blob", id.to_hex(), e.to_string()))?;
        let message = crate::object::Message::decode(&bytes).ok();
        let secret = message
            .as_ref()
            .is_some_and(|m| !crate::secrets::scrub::findings(&detector, m).is_empty());
        let usage = message
            .as_ref()
            .and_then(|m| crate::usage::Usage::of(m).ok().flatten())
            .map(Box::new);
        crate::storage::codec::chunk_ids(record, true)
            .map(|chunks| BlobRead::Content(chunks, secret, usage))
    })?;
    let secret_blobs: HashSet<BlobId> = blobs
        .good
        .iter()
        .filter(|(_, read)| matches!(read, BlobRead::Content(_, true, _)))
        .map(|(id, _)| BlobId::from_bytes(*id))
        .collect();
    let mut redacted: Vec<BlobId> = blobs
        .good
        .iter()
        .filter(|(_, read)| matches!(read, BlobRead::Tombstone { .. }))
        .map(|(id, _)| BlobId::from_bytes(*id))
        .collect();
    redacted.sort();
    report.redacted = redacted;
    let commits = scan(&snap, ObjectTable::Commits, |id, record| {
        verify::verified_commit(&CommitId::from_bytes(id), record)
    })?;
    // Content retention replaced is meant to live on in its summary; redacted content is not.
    let tainted: std::collections::HashSet<BlobId> = blobs
        .good
        .iter()
        .filter(|(_, read)| {
            matches!(
                read,
                BlobRead::Tombstone {
                    by_retention: false
                }
            )
        })
        .map(|(id, _)| BlobId::from_bytes(*id))
        .collect();
    if !tainted.is_empty() {
        let all: Vec<(CommitId, &Commit)> = commits
            .good
            .iter()
            .map(|(id, c)| (CommitId::from_bytes(*id), c))
            .collect();
        report.derived_from_redacted = crate::view::ancestry::made_from(&all, &tainted);
    }
    report.chunks = chunks.present.len() as u64;
    report.blobs = blobs.present.len() as u64;
    report.commits = commits.present.len() as u64;
    report.bytes = chunks.bytes + blobs.bytes + commits.bytes;
    for (kind, bad) in [
        ("chunk", &chunks.bad),
        ("blob", &blobs.bad),
        ("commit", &commits.bad),
    ] {
        let mut bad = bad.clone();
        bad.sort();
        for (id, why) in bad {
            report.problem("corrupt", format!("{kind} {}", hex(&id)), why);
        }
    }

    check_links(&mut report, &commits, &blobs, &chunks);
    let roots = check_refs(&mut report, &snap, &commits.present)?;
    unreachable(&mut report, &roots, &commits, &blobs, &chunks);
    // Replays read blobs without hashing them again, so only over objects that all verified
    // (with damage, the damage is the finding; counts are checked once it is repaired).
    if chunks.bad.is_empty() && blobs.bad.is_empty() && commits.bad.is_empty() {
        let src = Checked {
            snap: &snap,
            commits: &commits.good,
        };
        check_counts(&mut report, &snap, &src, &secret_blobs)?;
        check_checkpoints(&mut report, &snap, &src)?;
        check_ledgers(&mut report, &snap, &commits.good, &blobs.good)?;
    }
    let parents = |id: &CommitId| {
        commits
            .good
            .get(id.as_bytes())
            .map(|c| c.parents.as_slice())
    };
    if let Some(index) = crate::ops::index::check(store, &snap, parents)? {
        report.index_documents = index.documents;
        for (subject, detail) in index.problems {
            report.problem("index", subject, detail);
        }
    }
    Ok(report)
}

/// What replays read: the commits the scan decoded and verified (no second read of each),
/// the blobs from the snapshot.
struct Checked<'a> {
    snap: &'a Snapshot,
    commits: &'a IdMap<Commit>,
}

impl crate::view::Source for Checked<'_> {
    fn commit(&self, id: &CommitId) -> Result<Commit> {
        self.commits
            .get(id.as_bytes())
            .cloned()
            .ok_or(Error::MissingCommit { commit: *id })
    }

    fn blob(&self, id: &BlobId) -> Result<(crate::object::Message, u32)> {
        // The scan hashed every blob record of this snapshot; a damaged one is reported there.
        self.snap.blob_verified_already(id)
    }

    // fsck replays every view from the start: checkpoints are what it checks, not a source.
    fn meta(&self, _key: &str) -> Result<Option<Vec<u8>>> {
        Ok(None)
    }

    fn redactions(&self) -> Result<u64> {
        self.snap.redactions()
    }
}

fn codec_chunk(id: &ChunkId, record: &[u8]) -> Result<()> {
    crate::storage::codec::chunk_bytes(id, record)
        .map(|_| ())
        .map_err(|e| verify::damaged("chunk", id.to_hex(), reason(&e)))
}

/// Every link of every commit that verified points at an object of the right kind, and every
/// commit is newer than its parents (history walks rely on it).
fn check_links(
    report: &mut FsckReport,
    commits: &Scanned<Commit>,
    blobs: &Scanned<BlobRead>,
    chunks: &Scanned<()>,
) {
    let mut ids: Vec<&[u8; 32]> = commits.good.keys().collect();
    ids.sort();
    for id in ids {
        let c = &commits.good[id];
        let subject = || format!("commit {}", hex(id));
        let need_commit = |what: &str, target: &CommitId, report: &mut FsckReport| {
            if !commits.present.contains(target.as_bytes()) {
                report.problem(
                    "missing",
                    subject(),
                    format!("its {what} {} is not in the store", target.to_hex()),
                );
            }
        };
        for p in &c.parents {
            need_commit("parent", p, report);
            if let Some(parent) = commits.good.get(p.as_bytes())
                && parent.timestamp_us >= c.timestamp_us
            {
                report.problem(
                    "order",
                    subject(),
                    format!("it is not newer than its parent {}", p.to_hex()),
                );
            }
        }
        match &c.op {
            Op::Append => {}
            Op::Record { kind } => {
                if let Err(e) = crate::object::check_record_kind(kind) {
                    report.problem("corrupt", subject(), e.to_string());
                }
            }
            Op::Edit { target } => need_commit("edit target", target, report),
            Op::Compress { sources, .. } => {
                for s in sources {
                    need_commit("compress source", s, report);
                }
            }
            Op::Merge { base, .. } => {
                need_commit("merge base", base, report);
                if c.parents.len() != 2 {
                    report.problem("corrupt", subject(), "a merge without two parents");
                }
            }
        }
        let needs_blob = !matches!(
            c.op,
            Op::Merge {
                strategy: crate::object::MergeStrategy::Append,
                ..
            }
        );
        match &c.blob {
            Some(b) if !blobs.present.contains(b.as_bytes()) => report.problem(
                "missing",
                subject(),
                format!("its blob {} is not in the store", b.to_hex()),
            ),
            None if needs_blob => report.problem(
                "corrupt",
                subject(),
                format!("a {} without a blob", c.op.name()),
            ),
            _ => {}
        }
    }
    let mut ids: Vec<&[u8; 32]> = blobs.good.keys().collect();
    ids.sort();
    for id in ids {
        for chunk in blobs.good[id].chunks() {
            if !chunks.present.contains(chunk.as_bytes()) {
                report.problem(
                    "missing",
                    format!("blob {}", hex(id)),
                    format!("its chunk {} is not in the store", chunk.to_hex()),
                );
            }
        }
    }
}

/// Every branch tip, a detached `HEAD` and every reflog entry name a commit the store holds.
/// Returns those commits: what reachability starts from.
fn check_refs(report: &mut FsckReport, snap: &Snapshot, commits: &IdSet) -> Result<Vec<CommitId>> {
    let mut roots = Vec::new();
    let branches = snap.branches()?;
    report.branches = branches.len() as u64;
    for (name, tip) in branches {
        if !commits.contains(tip.as_bytes()) {
            report.problem(
                "ref",
                format!("branch {name}"),
                format!("its tip {} is not in the store", tip.to_hex()),
            );
        }
        roots.push(tip);
    }
    match snap.head_ref() {
        Ok(HeadRef::Detached(id)) => {
            if !commits.contains(id.as_bytes()) {
                report.problem(
                    "ref",
                    "HEAD".into(),
                    format!("it names {}, which is not in the store", id.to_hex()),
                );
            }
            roots.push(id);
        }
        Ok(HeadRef::Branch(_)) => {}
        Err(e) => report.problem("ref", "HEAD".into(), reason(&e)),
    }
    for (name, entry) in snap.reflog_all()? {
        report.reflog_entries += 1;
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                report.problem("ref", format!("reflog {name}"), reason(&e));
                continue;
            }
        };
        for id in entry.old.iter().chain(entry.new.iter()) {
            if !commits.contains(id.as_bytes()) {
                report.problem(
                    "ref",
                    format!("reflog {name}"),
                    format!(
                        "an entry ({}) names {}, which is not in the store",
                        entry.reason,
                        id.to_hex()
                    ),
                );
            }
            roots.push(*id);
        }
    }
    Ok(roots)
}

/// Lists the objects nothing reaches: commits through every link from the roots, their blobs,
/// those blobs' chunks.
fn unreachable(
    report: &mut FsckReport,
    roots: &[CommitId],
    commits: &Scanned<Commit>,
    blobs: &Scanned<BlobRead>,
    chunks: &Scanned<()>,
) {
    let mut seen = IdSet::default();
    let mut blobs_seen = IdSet::default();
    let mut stack: Vec<CommitId> = roots.to_vec();
    while let Some(id) = stack.pop() {
        if !seen.insert(*id.as_bytes()) {
            continue;
        }
        let Some(c) = commits.good.get(id.as_bytes()) else {
            continue;
        };
        stack.extend(c.links());
        if let Some(b) = c.blob {
            blobs_seen.insert(*b.as_bytes());
        }
    }
    let chunks_seen: IdSet = blobs_seen
        .iter()
        .filter_map(|b| blobs.good.get(b))
        .flat_map(BlobRead::chunks)
        .map(|c| *c.as_bytes())
        .collect();
    let sorted = |present: &IdSet, seen: &IdSet| {
        let mut out: Vec<[u8; 32]> = present.difference(seen).copied().collect();
        out.sort();
        out
    };
    report.unreachable_commits = sorted(&commits.present, &seen)
        .into_iter()
        .map(CommitId::from_bytes)
        .collect();
    report.unreachable_blobs = sorted(&blobs.present, &blobs_seen)
        .into_iter()
        .map(BlobId::from_bytes)
        .collect();
    report.unreachable_chunks = sorted(&chunks.present, &chunks_seen)
        .into_iter()
        .map(ChunkId::from_bytes)
        .collect();
}

/// The counts kept for each branch at its tip equal the counts of its view, replayed. A row
/// kept for an older tip is stale by design (counted again when listed) and not compared; a
/// row for a branch that does not exist is a problem.
fn check_counts(
    report: &mut FsckReport,
    snap: &Snapshot,
    src: &impl crate::view::Source,
    secret_blobs: &HashSet<BlobId>,
) -> Result<()> {
    let tips: HashMap<String, CommitId> = snap.branches()?.into_iter().collect();
    // Per tip replayed: its view's counts, how many calls reuse an id, how many messages hold
    // what looks like a secret.
    let mut replayed: HashMap<CommitId, (crate::stats::Tally, u64, u64)> = HashMap::new();
    for (name, row) in snap.all_branch_stats()? {
        let subject = format!("branch {name}");
        let stats = match row {
            Ok(s) => s,
            Err(e) => {
                report.problem(
                    "bookkeeping",
                    subject,
                    format!("its counts do not decode: {}", reason(&e)),
                );
                continue;
            }
        };
        let Some(tip) = tips.get(&name) else {
            report.problem(
                "bookkeeping",
                subject,
                "counts are kept for a branch that does not exist",
            );
            continue;
        };
        if stats.tip != *tip {
            continue;
        }
        let (tally, reused, secrets) = match replayed.get(tip) {
            Some(t) => t.clone(),
            None => match View::build(src, Some(*tip), None) {
                Ok(v) => {
                    let reused = crate::formats::compile::reused_call_ids(&v).len() as u64;
                    let secrets = v
                        .entries()
                        .iter()
                        .filter(|e| secret_blobs.contains(&e.blob))
                        .count() as u64;
                    let t = (v.tally(), reused, secrets);
                    replayed.insert(*tip, t.clone());
                    t
                }
                // Damaged objects on the way are reported by the object checks.
                Err(
                    Error::CorruptObject { .. }
                    | Error::Corrupt { .. }
                    | Error::MissingCommit { .. },
                ) => {
                    continue;
                }
                Err(e) => return Err(e),
            },
        };
        report.counts_replayed += 1;
        if reused > 0 {
            report.reused_call_ids.push((name.clone(), reused));
        }
        if secrets > 0 {
            report.secrets_in_view.push((name.clone(), secrets));
        }
        if tally != stats.tally {
            report.problem(
                "bookkeeping",
                subject,
                format!(
                    "its kept counts ({} messages, {} tokens) differ from its view ({} messages, {} tokens)",
                    stats.tally.messages,
                    stats.tally.token_count(),
                    tally.messages,
                    tally.token_count()
                ),
            );
        }
    }
    Ok(())
}

/// Each branch's usage, as its ledger's rows tell it (`tract usage`), is the sum of what its
/// first-parent history's answers carry: each tip's history replayed from the commits and blobs
/// the scan read (a blob's usage was read when it was hashed).
fn check_ledgers(
    report: &mut FsckReport,
    snap: &Snapshot,
    commits: &IdMap<Commit>,
    blobs: &IdMap<BlobRead>,
) -> Result<()> {
    let mut verdicts: HashMap<CommitId, Option<String>> = HashMap::new();
    for (name, tip) in snap.branches()? {
        let problem = match verdicts.get(&tip) {
            Some(p) => p.clone(),
            None => {
                let mut replayed = crate::usage::Ledger::default();
                let mut next = Some(tip);
                while let Some(c) = next.and_then(|id| commits.get(id.as_bytes())) {
                    if !matches!(c.op, Op::Edit { .. })
                        && let Some(BlobRead::Content(_, _, Some(u))) =
                            c.blob.and_then(|b| blobs.get(b.as_bytes()))
                    {
                        replayed.add(u);
                    }
                    next = c.parents.first().copied();
                }
                let p = match crate::view::ledger::at(snap, Some(tip)) {
                    Ok(place) if place.ledger == replayed => None,
                    Ok(place) => Some(format!(
                        "its usage ledger ({} requests, {} input and {} output tokens) differs \
                         from a replay of its history ({} requests, {} input and {} output tokens)",
                        place.ledger.totals.requests,
                        place.ledger.totals.input_tokens,
                        place.ledger.totals.output_tokens,
                        replayed.totals.requests,
                        replayed.totals.input_tokens,
                        replayed.totals.output_tokens,
                    )),
                    // Damaged commits on the way are reported by the object checks.
                    Err(Error::CorruptObject { .. } | Error::MissingCommit { .. }) => None,
                    Err(e) => Some(format!("its usage ledger cannot be read: {}", reason(&e))),
                };
                verdicts.insert(tip, p.clone());
                p
            }
        };
        if let Some(detail) = problem {
            report.problem("bookkeeping", format!("branch {name}"), detail);
        }
    }
    // A row that does not read is passed over (its history is read back to the row before),
    // so it is damage that costs time, not a wrong figure.
    for commit in crate::view::ledger::unreadable_rows(snap)? {
        report.problem(
            "bookkeeping",
            format!("commit {commit}"),
            "its usage ledger row does not read (`tract usage` reads the history back past it)",
        );
    }
    Ok(())
}

/// The checkpoint each branch's views start from reads back whole and keeps the view a replay
/// of the history gives at its commit. Forks share their source's checkpoint: each is read
/// and replayed once.
fn check_checkpoints(
    report: &mut FsckReport,
    snap: &Snapshot,
    src: &impl crate::view::Source,
) -> Result<()> {
    let mut verdicts: HashMap<CommitId, Option<String>> = HashMap::new();
    for (name, tip) in snap.branches()? {
        let past = |at: Option<CommitId>| -> Result<u64> {
            let walked = match snap.first_parents(tip, at) {
                Ok((chain, _)) => chain.len(),
                // Damaged commits on the way are reported by the object checks.
                Err(
                    Error::CorruptObject { .. }
                    | Error::Corrupt { .. }
                    | Error::MissingCommit { .. },
                ) => 0,
                Err(e) => return Err(e),
            };
            Ok(walked as u64)
        };
        let Some(at) = checkpoint::of_branch(snap, &name)? else {
            report.past_checkpoint.push((name, past(None)?));
            continue;
        };
        let problem = match verdicts.get(&at) {
            Some(p) => p.clone(),
            None => {
                let p = checkpoint_problem(snap, src, &at)?;
                verdicts.insert(at, p.clone());
                p
            }
        };
        report.checkpoints_checked += 1;
        let readable = problem.is_none();
        report
            .past_checkpoint
            .push((name.clone(), past(readable.then_some(at))?));
        if let Some(detail) = problem {
            report.problem(
                "checkpoint",
                format!("branch {name}"),
                format!("{detail} (new handles replay the history instead until the branch is checkpointed again)"),
            );
        }
    }
    Ok(())
}

/// What is wrong with the checkpoint of the view at `at`, if anything.
fn checkpoint_problem(
    snap: &Snapshot,
    src: &impl crate::view::Source,
    at: &CommitId,
) -> Result<Option<String>> {
    Ok(match checkpoint::load(snap, at) {
        Ok(None) => Some(format!("its checkpoint at {} is missing", at.short())),
        Err(e) => Some(format!(
            "its checkpoint at {} cannot be read: {}",
            at.short(),
            reason(&e)
        )),
        Ok(Some(kept)) => match View::build(src, Some(*at), None) {
            Ok(replayed) => (!checkpoint::same(&kept, &replayed)).then(|| {
                format!(
                    "its checkpoint at {} differs from a replay of the history",
                    at.short()
                )
            }),
            // Damaged objects on the way are reported by the object checks.
            Err(
                Error::CorruptObject { .. } | Error::Corrupt { .. } | Error::MissingCommit { .. },
            ) => None,
            Err(e) => return Err(e),
        },
    })
}
