//! The search index: derived data that ranks what agents said and saw (BM25, tantivy).
//!
//! One document per commit: its message's text (content, then each tool call's name and
//! arguments), cut by [`tokenizer`]; its role, tool names, operation, error flag and time as
//! filters; its place in the [`lanes`], from which a search tells every branch holding it.
//!
//! A store file's index is a directory in its journal directory (`index/`), written by the
//! processes that write the store, in batches ([`keeper`]); a store in memory has one in this
//! process's memory; a store in PostgreSQL uses the database's own full-text search instead
//! ([`postgres`], kept the same way). What is not indexed yet is found by walking back from
//! the branches' tips to what is ([`catch_up`]), so a search always sees every commit.
//!
//! Beside tantivy's files, a state file names each branch's tip as indexed, the lanes, and
//! the store's redaction and collection counts the index has applied; the index commit's
//! payload names the state file, so the two always go together.

pub(crate) mod catch_up;
pub(crate) mod keeper;
pub(crate) mod lanes;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
pub(crate) mod query;
pub(crate) mod tokenizer;

use crate::error::{Error, Result};
use crate::id::CommitId;
use lanes::Lanes;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tantivy::directory::error::LockError;
use tantivy::schema::{
    BytesOptions, Field, IndexRecordOption, NumericOptions, STRING, Schema, TextFieldIndexing,
    TextOptions,
};
use tantivy::{IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument, TantivyError};

/// The layout of the documents and the state file; an index of another is rebuilt.
const LAYOUT: u32 = 2;

/// The writer's memory for documents not yet written as a segment.
const WRITER_MEMORY: usize = 32 << 20;

/// The index directory in a store's journal directory.
pub(crate) const DIR: &str = "index";

/// The fields of a document.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fields {
    /// The commit's id (32 bytes), for finding and deleting a commit's document.
    pub(crate) id: Field,
    /// Its blob's id, for the documents a redaction reaches.
    pub(crate) blob: Field,
    /// The searchable text.
    pub(crate) text: Field,
    /// `system`, `user`, `assistant`, `tool`.
    pub(crate) role: Field,
    /// A result's tool, and the tools an assistant message calls.
    pub(crate) tool: Field,
    /// `append`, `edit`, `compress`, `merge`, `record`.
    pub(crate) op: Field,
    /// A tool result marked as an error.
    pub(crate) error: Field,
    /// Microseconds since the epoch.
    pub(crate) time: Field,
    /// The commit's place in the lanes ([`lanes::pack`]).
    pub(crate) place: Field,
    /// The id's bytes as four numbers (fast), to read a hit's id back.
    pub(crate) key: [Field; 4],
}

/// Field names, as the fast-field collectors name them.
pub(crate) const PLACE: &str = "place";
/// The first 8 bytes of the id, as a number.
pub(crate) const KEY0: &str = "k0";

/// The fields of the index's documents (the same in every index).
pub(crate) fn fields() -> Fields {
    schema().1
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let id = b.add_bytes_field("id", BytesOptions::default().set_indexed());
    let blob = b.add_bytes_field("blob", BytesOptions::default().set_indexed());
    let text = b.add_text_field(
        "text",
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(tokenizer::NAME)
                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
        ),
    );
    let role = b.add_text_field("role", STRING);
    let tool = b.add_text_field("tool", STRING);
    let op = b.add_text_field("op", STRING);
    let error = b.add_bool_field("error", NumericOptions::default().set_indexed());
    let time = b.add_u64_field("time", NumericOptions::default().set_indexed().set_fast());
    let place = b.add_u64_field(PLACE, NumericOptions::default().set_fast());
    let key =
        [KEY0, "k1", "k2", "k3"].map(|n| b.add_u64_field(n, NumericOptions::default().set_fast()));
    let fields = Fields {
        id,
        blob,
        text,
        role,
        tool,
        op,
        error,
        time,
        place,
        key,
    };
    (b.build(), fields)
}

/// What the index has applied, saved beside its segments.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct State {
    layout: u32,
    /// The lanes of every indexed commit.
    pub(crate) lanes: Lanes,
    /// Each branch's tip when it was indexed, and its place.
    pub(crate) tips: BTreeMap<String, ([u8; 32], lanes::Place)>,
    /// The store's redaction count the index has applied.
    pub(crate) redactions: u64,
    /// The store's collection count the index has applied.
    pub(crate) collections: u64,
    /// The newest commit time the index holds: nothing newer can be in it.
    pub(crate) newest_us: u64,
}

#[cfg(feature = "postgres")]
impl State {
    /// The state as the database keeps it (see [`postgres`]).
    pub(crate) fn encode(&self) -> Result<Vec<u8>> {
        let mut state = self.clone();
        state.layout = LAYOUT;
        postcard::to_allocvec(&state).map_err(|e| broken("encoding its state", e.to_string()))
    }

    /// A state [`State::encode`] made; `None` for one of another layout or damaged (the
    /// index is then built anew: it is derived data).
    pub(crate) fn decode(bytes: &[u8]) -> Option<State> {
        postcard::from_bytes::<State>(bytes)
            .ok()
            .filter(|s| s.layout == LAYOUT)
    }
}

/// An index error, with what was being done.
pub(crate) fn failed(doing: &str, e: impl Into<TantivyError>) -> Error {
    Error::SearchIndex {
        doing: doing.to_string(),
        source: Arc::new(e.into()),
    }
}

/// An index error that is not the engine's.
fn broken(doing: &str, reason: String) -> Error {
    failed(doing, TantivyError::InternalError(reason))
}

/// An open index: on disk beside a store file, or in memory.
pub(crate) struct Index {
    tantivy: tantivy::Index,
    pub(crate) fields: Fields,
    reader: IndexReader,
    /// The directory (`None`: in memory).
    dir: Option<PathBuf>,
    /// In memory: the state of the last commit (on disk it is a file the payload names).
    memory_state: Mutex<Arc<State>>,
    /// On disk: the state file read last, by name (a search reads the same one again until a
    /// batch writes the next).
    last_state: Mutex<Option<(String, Arc<State>)>>,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index").field("dir", &self.dir).finish()
    }
}

/// A searcher and the state it was committed with.
pub(crate) struct Reading {
    pub(crate) searcher: Searcher,
    pub(crate) state: Arc<State>,
    /// Written by a build of another layout (or its state does not decode): what it holds is
    /// not to be read, and the next catch-up builds it anew.
    pub(crate) stale: bool,
}

/// The index's write lock and what it writes.
pub(crate) struct Writer {
    pub(crate) tantivy: IndexWriter<TantivyDocument>,
}

impl Writer {
    /// Lets the write lock go once the merges its commits started are done: a writer dropped
    /// without this abandons them, and an index written in many small batches would keep
    /// every batch as a segment of its own.
    pub(crate) fn finish(self) -> Result<()> {
        self.tantivy
            .wait_merging_threads()
            .map_err(|e| failed("merging segments", e))
    }
}

impl Index {
    /// The index in `dir`, made there if missing; one of another layout, or that does not
    /// open, is made anew (it is derived data).
    pub(crate) fn open_dir(dir: &Path) -> Result<Index> {
        let (schema, fields) = schema();
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let mut last = None;
        // Another process may be making it at this moment: its first commit is what an open
        // reads, so an open that fails is tried again before anything else.
        for _ in 0..20 {
            let opened = tantivy::directory::MmapDirectory::open(dir)
                .map_err(TantivyError::from)
                .and_then(|d| tantivy::Index::open_or_create(d, schema.clone()));
            match opened {
                Ok(i) => return Self::with(i, fields, Some(dir.to_path_buf())),
                // Another layout (an older build's): made anew, it is derived data.
                Err(TantivyError::SchemaError(_)) => {
                    remove_contents(dir)?;
                }
                Err(e) => last = Some(e),
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        Err(failed(
            "opening it",
            last.unwrap_or_else(|| TantivyError::InternalError("it does not open".into())),
        ))
    }

    /// An index in memory.
    pub(crate) fn in_memory() -> Result<Index> {
        let (schema, fields) = schema();
        Self::with(tantivy::Index::create_in_ram(schema), fields, None)
    }

    fn with(tantivy: tantivy::Index, fields: Fields, dir: Option<PathBuf>) -> Result<Index> {
        tantivy
            .tokenizers()
            .register(tokenizer::NAME, tokenizer::CodeTokenizer);
        let reader = tantivy
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e| failed("reading it", e))?;
        Ok(Index {
            tantivy,
            fields,
            reader,
            dir,
            memory_state: Mutex::default(),
            last_state: Mutex::default(),
        })
    }

    /// Where it is (`None`: in memory).
    pub(crate) fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The newest commit of the index: a searcher and the state that goes with it.
    pub(crate) fn read(&self) -> Result<Reading> {
        let Some(dir) = &self.dir else {
            self.reader.reload().map_err(|e| failed("reading it", e))?;
            let state = Arc::clone(&self.memory_state.lock().unwrap_or_else(|e| e.into_inner()));
            return Ok(Reading {
                searcher: self.reader.searcher(),
                state,
                stale: false,
            });
        };
        // Another process may commit between the reload and reading the payload: read until
        // the searcher's segments are the ones the payload was committed with.
        for _ in 0..16 {
            // A segment another process's commit removed after we listed it: read again.
            if self.reader.reload().is_err() {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            let searcher = self.reader.searcher();
            let metas = self
                .tantivy
                .load_metas()
                .map_err(|e| failed("reading its list of segments", e))?;
            let mut have: Vec<_> = searcher
                .segment_readers()
                .iter()
                .map(|r| r.segment_id())
                .collect();
            let mut want: Vec<_> = metas.segments.iter().map(|s| s.id()).collect();
            have.sort();
            want.sort();
            if have != want {
                continue;
            }
            let Some(name) = &metas.payload else {
                // Never committed by this build: empty, or another layout's with documents.
                return Ok(Reading {
                    stale: searcher.num_docs() > 0,
                    searcher,
                    state: Arc::default(),
                });
            };
            let cached = self
                .last_state
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .as_ref()
                .filter(|(n, _)| n == name)
                .map(|(_, s)| Arc::clone(s));
            let state = match cached {
                Some(s) => Some(s),
                None => match read_state(dir, name)? {
                    // Removed by a later commit since: read again.
                    None => continue,
                    Some(decoded) => decoded.filter(|s| s.layout == LAYOUT).map(Arc::new),
                },
            };
            let Some(state) = state else {
                return Ok(Reading {
                    searcher,
                    state: Arc::default(),
                    stale: true,
                });
            };
            *self.last_state.lock().unwrap_or_else(|e| e.into_inner()) =
                Some((name.clone(), Arc::clone(&state)));
            return Ok(Reading {
                searcher,
                state,
                stale: false,
            });
        }
        Err(broken(
            "reading it",
            "other processes committed while it was read, sixteen times".into(),
        ))
    }

    /// The write lock, waiting up to `wait` for another process's (`None` when it is still
    /// held then).
    pub(crate) fn writer(&self, wait: Duration) -> Result<Option<Writer>> {
        let until = Instant::now() + wait;
        loop {
            match self.tantivy.writer_with_num_threads(1, WRITER_MEMORY) {
                Ok(w) => return Ok(Some(Writer { tantivy: w })),
                Err(TantivyError::LockFailure(LockError::LockBusy, _)) => {
                    if Instant::now() >= until {
                        return Ok(None);
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(failed("taking its write lock", e)),
            }
        }
    }

    /// Commits what `w` wrote with `state`, which is saved first: a reader finds both or
    /// neither.
    pub(crate) fn commit(&self, w: &mut Writer, mut state: State) -> Result<Arc<State>> {
        state.layout = LAYOUT;
        let name = match &self.dir {
            Some(dir) => Some(write_state(dir, &state)?),
            None => None,
        };
        let mut prepared = w
            .tantivy
            .prepare_commit()
            .map_err(|e| failed("writing a batch", e))?;
        if let Some(name) = &name {
            prepared.set_payload(name);
        }
        prepared
            .commit()
            .map_err(|e| failed("committing a batch", e))?;
        let state = Arc::new(state);
        match (&self.dir, &name) {
            (Some(dir), Some(name)) => remove_other_states(dir, name),
            _ => *self.memory_state.lock().unwrap_or_else(|e| e.into_inner()) = Arc::clone(&state),
        }
        Ok(state)
    }

    /// Rewrites the segments holding deleted documents without them, so deleted text leaves
    /// the files for good (a redaction, a collection), then removes the files no commit uses.
    pub(crate) fn purge(&self, w: &mut Writer) -> Result<()> {
        self.reader.reload().map_err(|e| failed("reading it", e))?;
        let searcher = self.reader.searcher();
        let dirty: Vec<_> = searcher
            .segment_readers()
            .iter()
            .filter(|r| r.num_deleted_docs() > 0)
            .map(|r| r.segment_id())
            .collect();
        if !dirty.is_empty() {
            w.tantivy
                .merge(&dirty)
                .wait()
                .map_err(|e| failed("rewriting segments without deleted documents", e))?;
        }
        w.tantivy
            .garbage_collect_files()
            .wait()
            .map_err(|e| failed("removing unused files", e))?;
        Ok(())
    }

    /// Bytes of the index's files (0 in memory).
    pub(crate) fn bytes(&self) -> u64 {
        let Some(dir) = &self.dir else { return 0 };
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok()?.metadata().ok())
                    .filter(|m| m.is_file())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0)
    }
}

/// Removes what a directory holds (an index that does not open is derived data, made anew).
fn remove_contents(dir: &Path) -> Result<()> {
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let path = entry.map_err(|e| Error::io(dir, e))?.path();
        let removed = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        removed.map_err(|e| Error::io(&path, e))?;
    }
    Ok(())
}

const STATE_PREFIX: &str = "state-";

/// Saves `state` under a new name, durably; returns the name.
fn write_state(dir: &Path, state: &State) -> Result<String> {
    let bytes =
        postcard::to_allocvec(state).map_err(|e| broken("encoding its state", e.to_string()))?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let name = format!("{STATE_PREFIX}{stamp}-{}", std::process::id());
    let path = dir.join(&name);
    let tmp = dir.join(format!("{name}.tmp"));
    let write = || -> std::io::Result<()> {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)?;
        std::fs::File::open(dir)?.sync_all()
    };
    write().map_err(|e| Error::io(&path, e))?;
    Ok(name)
}

/// The state saved as `name`; `None` if it is gone (a later commit removed it), `Some(None)`
/// if it does not decode (another layout's, or damaged: the index is built anew).
fn read_state(dir: &Path, name: &str) -> Result<Option<Option<State>>> {
    if !name.starts_with(STATE_PREFIX) || name.contains('/') {
        return Ok(Some(None));
    }
    let path = dir.join(name);
    match std::fs::read(&path) {
        Ok(bytes) => Ok(Some(postcard::from_bytes(&bytes).ok())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(&path, e)),
    }
}

/// Removes the state files but `keep` (a reader that loses one reads again).
fn remove_other_states(dir: &Path, keep: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(STATE_PREFIX) && name != keep {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// A commit id from the four numbers of its key.
pub(crate) fn id_of(key: [u64; 4]) -> CommitId {
    let mut b = [0u8; 32];
    for (i, k) in key.iter().enumerate() {
        b[i * 8..i * 8 + 8].copy_from_slice(&k.to_be_bytes());
    }
    CommitId::from_bytes(b)
}

/// The four numbers of a commit id's key.
pub(crate) fn key_of(id: &CommitId) -> [u64; 4] {
    let b = id.as_bytes();
    std::array::from_fn(|i| {
        let mut k = [0u8; 8];
        k.copy_from_slice(&b[i * 8..i * 8 + 8]);
        u64::from_be_bytes(k)
    })
}
