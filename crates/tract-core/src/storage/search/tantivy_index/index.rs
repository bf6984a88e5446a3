//! A tantivy index on disk beside a store file (in its journal directory), or in memory: its
//! documents' fields, opening it (one of another layout is made anew), reading its newest
//! commit with the state that goes with it, its write lock, and committing a batch.
//!
//! Beside tantivy's files, a state file names each branch's tip as indexed, the lanes, and
//! the store's redaction and collection counts the index has applied; the index commit's
//! payload names the state file, so the two always go together.

use crate::error::{Error, Result};
use crate::storage::search::state::{State, broken, failed};
use crate::storage::search::tokenizer;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tantivy::directory::error::LockError;
use tantivy::schema::{
    BytesOptions, Field, IndexRecordOption, NumericOptions, STRING, Schema, TextFieldIndexing,
    TextOptions,
};
use tantivy::{IndexReader, IndexWriter, ReloadPolicy, Searcher, TantivyDocument, TantivyError};

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
pub(crate) struct Committed {
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

    /// The newest commit of the index: a searcher and the state that goes with it.
    pub(crate) fn read(&self) -> Result<Committed> {
        let Some(dir) = &self.dir else {
            self.reader.reload().map_err(|e| failed("reading it", e))?;
            let state = Arc::clone(&self.memory_state.lock().unwrap_or_else(|e| e.into_inner()));
            return Ok(Committed {
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
                return Ok(Committed {
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
                    Some(decoded) => decoded.map(Arc::new),
                },
            };
            let Some(state) = state else {
                return Ok(Committed {
                    searcher,
                    state: Arc::default(),
                    stale: true,
                });
            };
            *self.last_state.lock().unwrap_or_else(|e| e.into_inner()) =
                Some((name.clone(), Arc::clone(&state)));
            return Ok(Committed {
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
    pub(crate) fn commit(&self, w: &mut Writer, state: State) -> Result<Arc<State>> {
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
    let bytes = state.encode()?;
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
        Ok(bytes) => Ok(Some(State::decode(&bytes))),
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
