//! Following Claude Code's projects folder (`~/.claude/projects`): every session file, with
//! its sub-agents' files, imported onto its own branch ([`crate::formats::transcript::claude_code_branch`])
//! as Claude Code writes it, so that the history outlives the files Claude Code deletes; and,
//! beside it, Codex CLI's rollouts ([`Capture::follow_codex`]) and Gemini CLI's sessions
//! ([`Capture::follow_gemini`]), each read as its agent reads it. A fork found in the same pass
//! as its parent is imported after it (the fork starts from the parent's branch), and a Gemini
//! session in the older single-object format, which Gemini CLI rewrites whole, is read whole
//! once it reads (caught mid-rewrite, it waits).
//!
//! A pass looks at every session file and imports those that changed since the last pass, up to
//! their last complete line (a line being written waits for its end). A file that ends on a
//! meta line (a local command's caveat, a command or skill expanded), where the reader passes
//! over the newest message lines for an older leaf until the line that continues from it is
//! written, waits for that line too ([`Transcript::Steps`]'s `unsettled`): imported then, those
//! lines would be kept as off-path records, and imported again as messages once the next line
//! puts them back on the conversation. A file that stays so for [`SETTLE`] is imported as it
//! is, as `tract import` would. Importing is keyed by
//! line ([`crate::formats::imports`]), so a pass that repeats one, a capture restarted after `kill -9`,
//! or `tract import` of the same file never imports a line twice, and what the store holds is
//! where a new capture resumes. A file that shrinks (rewritten, or pruned) moves nothing back;
//! a file that disappears leaves its branch as it is; a branch deleted in tract is not brought
//! back, and one the Claude Agent SDK session store writes is left to it (the session is never
//! kept twice).
//!
//! Changes are found by polling file sizes and times: it works on every file system and costs a
//! few `stat` calls a pass.

use crate::environment::Environment;
use crate::error::{Error, Result};
use crate::formats::imports::ImportReport;
use crate::formats::transcript::{self, Format, Transcript};
use crate::repo::Bind;
use crate::storage::store::Store;
use crate::tract::Tract;
use crate::view::revision::BranchName;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

/// How long a session file whose reading is not settled (see the module's doc) waits for the
/// line that settles it before it is imported as it is. After the caveat of a local command
/// Claude Code writes the command's lines at once, but after a command or skill it expands (a
/// meta line too) the next line is the model's reply, which may take a while; a file left so
/// longer ended there.
pub const SETTLE: Duration = Duration::from_secs(600);

/// The folder Claude Code keeps its sessions in, by this process's environment:
/// `$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`. It reads the environment again at
/// each call; a surface reads it once ([`Environment::from_process`]) and asks that.
#[deprecated(
    note = "read the environment once with `Environment::from_process()` and call its `claude_projects_dir()`"
)]
pub fn default_projects_dir() -> Option<PathBuf> {
    Environment::from_process().claude_projects_dir()
}

/// What a pass found in one session file.
#[derive(Debug)]
pub struct Imported {
    /// The session file.
    pub file: PathBuf,
    /// Its branch.
    pub branch: String,
    /// What the import did.
    pub report: ImportReport,
    /// How far the file was read: its bytes up to its last complete line.
    pub read: u64,
}

/// What one pass did.
#[derive(Debug, Default)]
pub struct Pass {
    /// The sessions that had something new, with what was imported.
    pub imported: Vec<Imported>,
    /// Files that could not be read or imported this pass, with why: tried again the next
    /// pass, or (a file whose import was refused, [`refused`]) once it changes.
    pub failed: Vec<(PathBuf, Error)>,
    /// Session files whose branch was deleted in tract: left alone.
    pub deleted: Vec<(PathBuf, String)>,
    /// Session files whose branch the Claude Agent SDK session store keeps: left to it.
    pub session_store: Vec<(PathBuf, String)>,
}

/// The totals a status line shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Status {
    /// Session files followed.
    pub sessions: usize,
    /// Messages imported since the capture started.
    pub messages: usize,
    /// Lines kept as records since the capture started.
    pub records: usize,
    /// When the last import committed, and onto which branch.
    pub last_import: Option<(SystemTime, String)>,
}

/// The size and time of a file, and of the sub-agent files beside it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Signature {
    files: Vec<(PathBuf, u64, Option<SystemTime>)>,
}

/// What capture knows of one session file.
#[derive(Debug, Default)]
struct Seen {
    /// The signature at the last import (or the last look, for a file that shrank).
    signature: Signature,
    /// Its size then.
    len: u64,
    /// Left alone: its branch was deleted in tract, or the session store keeps it.
    left: bool,
    /// The signature at which its reading was found not settled: not read again until it
    /// changes, or until it has been quiet for [`SETTLE`].
    unsettled: Option<Signature>,
}

/// How far a capture pass got ([`Capture::pass_with`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassProgress {
    /// Session files read to their last complete line: `done` of `of`.
    Read {
        /// Files read so far.
        done: usize,
        /// Files in the folder.
        of: usize,
    },
    /// Changed sessions imported: `done` of `of`.
    Imported {
        /// Sessions imported so far.
        done: usize,
        /// Sessions to import in this pass.
        of: usize,
    },
}

/// A capture of one projects folder into one store.
pub struct Capture {
    store: Store,
    projects: PathBuf,
    /// Codex's sessions folder, when it is followed too.
    codex: Option<PathBuf>,
    /// Gemini CLI's folder of projects (`.gemini/tmp`), when it is followed too.
    gemini: Option<PathBuf>,
    seen: HashMap<PathBuf, Seen>,
    handles: HashMap<String, Tract>,
    status: Status,
}

/// Fails unless `projects` is a folder this process can read: what [`Capture::new`] checks
/// first, for a caller to check before it creates a store to capture into (a capture that
/// cannot start leaves nothing behind).
pub fn check_projects(projects: &Path) -> Result<()> {
    check_folder(
        projects,
        "Claude Code's projects folder (~/.claude/projects)",
    )
}

/// Fails unless `folder` is a folder this process can read; `what` names the one expected.
fn check_folder(folder: &Path, what: &str) -> Result<()> {
    let meta = std::fs::metadata(folder).map_err(|e| Error::io(folder, e))?;
    if !meta.is_dir() {
        return Err(Error::invalid_input(format!(
            "{} is not a folder: name {what}",
            folder.display()
        )));
    }
    std::fs::read_dir(folder).map_err(|e| Error::io(folder, e))?;
    Ok(())
}

impl Capture {
    /// A capture of `projects` (Claude Code's projects folder) into `store`. A folder that does
    /// not exist or cannot be read is an error.
    pub fn new(store: Store, projects: impl Into<PathBuf>) -> Result<Capture> {
        let projects = projects.into();
        check_projects(&projects)?;
        Ok(Capture {
            store,
            projects,
            codex: None,
            gemini: None,
            seen: HashMap::new(),
            handles: HashMap::new(),
            status: Status::default(),
        })
    }

    /// The folder followed.
    pub fn projects(&self) -> &Path {
        &self.projects
    }

    /// Follows Codex CLI's sessions folder too (`$CODEX_HOME/sessions`: its rollouts under
    /// `YYYY/MM/DD/`), each rollout onto its own branch (`codex/<project key>/<thread id>`). A
    /// folder that cannot be read is an error.
    pub fn follow_codex(&mut self, sessions: impl Into<PathBuf>) -> Result<()> {
        let sessions = sessions.into();
        check_folder(&sessions, "Codex's sessions folder (~/.codex/sessions)")?;
        self.codex = Some(sessions);
        Ok(())
    }

    /// Follows Gemini CLI's sessions too (`.gemini/tmp/<project>/chats/session-*`, JSON lines
    /// and the older single-object `.json`), each onto its own branch
    /// (`gemini/<project>/<session id>`). A folder that cannot be read is an error.
    pub fn follow_gemini(&mut self, tmp: impl Into<PathBuf>) -> Result<()> {
        let tmp = tmp.into();
        check_folder(&tmp, "Gemini CLI's folder of sessions (~/.gemini/tmp)")?;
        self.gemini = Some(tmp);
        Ok(())
    }

    /// Whether `file` is a Gemini CLI session of the followed folder.
    fn is_gemini(&self, file: &Path) -> bool {
        self.gemini.as_deref().is_some_and(|g| file.starts_with(g))
    }

    /// The Codex sessions folder followed, if any.
    pub fn codex(&self) -> Option<&Path> {
        self.codex.as_deref()
    }

    /// Whether `file` is a Codex rollout of the followed folder.
    fn is_codex(&self, file: &Path) -> bool {
        self.codex.as_deref().is_some_and(|c| file.starts_with(c))
    }

    /// The totals so far.
    pub fn status(&self) -> &Status {
        &self.status
    }

    /// The session files of the folder: `<project>/<session>.jsonl`, sorted.
    fn session_files(&self) -> Result<Vec<PathBuf>> {
        let read = |dir: &Path| -> Result<Vec<PathBuf>> {
            let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir.to_path_buf(), e))?;
            Ok(entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
        };
        let mut files = Vec::new();
        for project in read(&self.projects)? {
            if !project.is_dir() {
                continue;
            }
            // A project folder removed between the two reads has no sessions.
            let Ok(entries) = read(&project) else {
                continue;
            };
            files.extend(entries.into_iter().filter(|p| {
                p.extension().is_some_and(|x| x == "jsonl")
                    && p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| !n.starts_with("agent-"))
                    && p.is_file()
            }));
        }
        if let Some(codex) = &self.codex {
            files.extend(codex_rollouts(codex));
        }
        if let Some(gemini) = &self.gemini {
            files.extend(gemini_sessions(gemini));
        }
        files.sort();
        Ok(files)
    }

    /// Imports what is new in every session file. The sessions that changed are read one
    /// after another and imported side by side, so their commits share fsyncs (group commit).
    pub fn pass(&mut self) -> Result<Pass> {
        self.pass_with(&|_| {})
    }

    /// [`Capture::pass`], telling `progress` how far it got (a first pass over a folder of
    /// many sessions takes a while): the files read, then the sessions imported.
    pub fn pass_with(&mut self, progress: &(dyn Fn(PassProgress) + Sync)) -> Result<Pass> {
        let mut pass = Pass::default();
        let files = self.session_files()?;
        self.status.sessions = files.len();
        let mut ready = Vec::new();
        let of = files.len();
        for (done, file) in files.into_iter().enumerate() {
            progress(PassProgress::Read { done, of });
            match self.read(&file) {
                Ok(Some(Read::Session(r))) => ready.push(*r),
                Ok(Some(Read::Deleted(branch))) => pass.deleted.push((file, branch)),
                Ok(None) => {}
                Err(e) => pass.failed.push((file, e)),
            }
        }
        // A fork starts from its parent's branch: forks are imported once the others are.
        let (forks, firsts): (Vec<Ready>, Vec<Ready>) = ready.into_iter().partition(|r| {
            matches!(
                &r.transcript,
                Some(Transcript::Steps {
                    parent: Some(_),
                    ..
                })
            )
        });
        let mut done = self.import_all(firsts, progress);
        done.extend(self.import_all(forks, progress));
        for (r, result) in done {
            // A file imported, or refused (another session under a branch's id, a branch
            // holding other messages: the same until the file changes), is read again only
            // once it changes.
            if result.as_ref().is_ok() || result.as_ref().is_err_and(refused) {
                let seen = self.seen.entry(r.file.clone()).or_default();
                seen.signature = r.signature;
                seen.len = r.len;
            }
            let report = match result {
                Ok(report) => report,
                Err(e) => {
                    pass.failed.push((r.file, e));
                    continue;
                }
            };
            if report.session_store {
                self.seen.entry(r.file.clone()).or_default().left = true;
                pass.session_store.push((r.file, r.branch));
                continue;
            }
            self.status.records += report.recorded;
            if report.added == 0 && report.edited == 0 && report.recorded == 0 && !report.rewound {
                continue;
            }
            self.status.messages += report.added;
            self.status.last_import = Some((SystemTime::now(), r.branch.clone()));
            pass.imported.push(Imported {
                file: r.file,
                branch: r.branch,
                report,
                read: r.read,
            });
        }
        Ok(pass)
    }

    /// Imports the sessions `ready`, side by side, so their commits share fsyncs.
    fn import_all(
        &self,
        ready: Vec<Ready>,
        progress: &(dyn Fn(PassProgress) + Sync),
    ) -> Vec<(Ready, Result<ImportReport>)> {
        // A few threads are enough to share fsyncs; more only compete for the cores.
        let threads = ready.len().clamp(1, 8);
        let mut chunks: Vec<Vec<Ready>> = (0..threads).map(|_| Vec::new()).collect();
        // The files of one branch (a Gemini CLI session's legacy `.json` and the `.jsonl` that
        // continues it) go to one thread, in the order read: side by side, one would find the
        // branch moved by the other and wait for the next pass.
        let mut thread_of: HashMap<String, usize> = HashMap::new();
        for r in ready {
            let next = thread_of.len() % threads;
            let k = *thread_of.entry(r.branch.clone()).or_insert(next);
            chunks[k].push(r);
        }
        let handles = &self.handles;
        let of = chunks.iter().map(Vec::len).sum();
        let imported = AtomicUsize::new(0);
        let imported = &imported;
        progress(PassProgress::Imported { done: 0, of });
        std::thread::scope(|scope| {
            let workers: Vec<_> = chunks
                .into_iter()
                .map(|chunk| {
                    scope.spawn(move || {
                        chunk
                            .into_iter()
                            .map(|mut r| {
                                let result = match (handles.get(&r.branch), r.transcript.take()) {
                                    (Some(h), Some(t)) => {
                                        h.import(t).map_err(|e| e.in_file(&r.file))
                                    }
                                    _ => {
                                        Err(Error::invalid_op("no handle for the session's branch"))
                                    }
                                };
                                let done = imported.fetch_add(1, Ordering::Relaxed) + 1;
                                progress(PassProgress::Imported { done, of });
                                (r, result)
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            workers
                .into_iter()
                .flat_map(|w| w.join().unwrap_or_default())
                .collect()
        })
    }

    /// Reads what is new in one session file, ready to import (and its branch's handle
    /// opened).
    fn read(&mut self, file: &Path) -> Result<Option<Read>> {
        let signature = signature_of(file);
        let codex = self.is_codex(file);
        let gemini = self.is_gemini(file);
        let seen = self.seen.entry(file.to_path_buf()).or_default();
        if seen.left || seen.signature == signature {
            return Ok(None);
        }
        let quiet = signature.quiet_for(SETTLE);
        if seen.unsettled.as_ref() == Some(&signature) && !quiet {
            return Ok(None);
        }
        let compressed = file.extension().is_some_and(|x| x == "zst");
        let text = match std::fs::read(file) {
            // A compressed rollout is a whole file (Codex compresses those it is done with).
            Ok(bytes) if compressed => {
                let mut text = transcript::text_of_file(file, bytes)?.into_bytes();
                if !text.ends_with(b"\n") {
                    text.push(b'\n');
                }
                text
            }
            Ok(bytes) => bytes,
            // Gone since it was listed: its branch stays as it is.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(file.to_path_buf(), e)),
        };
        let len = text.len() as u64;
        // A single-object Gemini session is rewritten whole: caught mid-rewrite it does not
        // read yet, and what the store holds stays until it does.
        let whole_file = gemini && file.extension().is_some_and(|x| x == "json");
        if whole_file {
            let text = String::from_utf8_lossy(&text);
            return match transcript::parse_session(file, &text, Some(Format::Gemini)) {
                Ok(t) => self.ready(file, t, signature, len, len),
                Err(Error::InvalidTranscript { .. }) => Ok(None),
                Err(e) => Err(e),
            };
        }
        if len < seen.len {
            // Rewritten or pruned: tract keeps what it has; later lines are read again.
            seen.signature = signature;
            seen.len = len;
            return Ok(None);
        }
        // Up to the last complete line: a line being written waits for its end.
        let complete = text
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(&text[..0], |end| &text[..=end]);
        let read = complete.len() as u64;
        let complete = String::from_utf8_lossy(complete);
        if complete.trim().is_empty() {
            return Ok(None);
        }
        let format = if codex {
            Format::Codex
        } else if gemini {
            Format::Gemini
        } else {
            Format::ClaudeCode
        };
        let transcript = match transcript::parse_session(file, &complete, Some(format)) {
            Ok(t) => t,
            // No conversation line yet (a new file holding a snapshot): wait for one.
            Err(Error::InvalidTranscript { reason, .. })
                if reason.starts_with(transcript::NO_CLAUDE_CODE_LINE) =>
            {
                return Ok(None);
            }
            Err(e) => return Err(e),
        };
        // Caught between two lines Claude Code writes together: wait for the second.
        if let Transcript::Steps {
            unsettled: Some(_), ..
        } = &transcript
            && !quiet
        {
            seen.unsettled = Some(signature);
            return Ok(None);
        }
        seen.unsettled = None;
        self.ready(file, transcript, signature, len, read)
    }

    /// A session read, its branch's handle opened: ready to import (unless its branch was
    /// deleted in tract).
    fn ready(
        &mut self,
        file: &Path,
        transcript: Transcript,
        signature: Signature,
        len: u64,
        read: u64,
    ) -> Result<Option<Read>> {
        let branch = transcript::default_branch(&transcript, file);
        let name = BranchName::new(&branch)?;
        // A session whose branch was deleted (by the user, or by a retention rule; before this
        // capture started or while it runs) stays deleted: its reflog remembers it.
        let snap = self.store.read()?;
        if snap.branch(&branch)?.is_none() && !snap.reflog(&branch, Some(1))?.is_empty() {
            self.seen.entry(file.to_path_buf()).or_default().left = true;
            self.handles.remove(&branch);
            return Ok(Some(Read::Deleted(branch)));
        }
        drop(snap);
        if !self.handles.contains_key(&branch) {
            let t = Tract::from_store(self.store.clone(), &Bind::Branch(name))?;
            self.handles.insert(branch.clone(), t);
        }
        Ok(Some(Read::Session(Box::new(Ready {
            file: file.to_path_buf(),
            branch,
            transcript: Some(transcript),
            signature,
            len,
            read,
        }))))
    }
}

/// A session file read, waiting for its import.
struct Ready {
    file: PathBuf,
    branch: String,
    transcript: Option<crate::formats::transcript::Transcript>,
    signature: Signature,
    len: u64,
    read: u64,
}

enum Read {
    Session(Box<Ready>),
    Deleted(String),
}

impl Signature {
    /// Whether none of its files has been written for `time` (a file whose time is unknown,
    /// or later than now, counts as quiet: its time cannot tell).
    fn quiet_for(&self, time: Duration) -> bool {
        let now = SystemTime::now();
        self.files.iter().all(|(_, _, modified)| {
            modified.is_none_or(|m| now.duration_since(m).map_or(true, |age| age >= time))
        })
    }
}

/// The rollouts of a Codex sessions folder: `YYYY/MM/DD/rollout-*.jsonl`, and a compressed
/// `.jsonl.zst` whose plain file is not beside it (Codex reads the plain one then).
fn codex_rollouts(sessions: &Path) -> Vec<PathBuf> {
    let numbered = |dir: &Path| -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.is_dir()
                    && p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
            })
            .collect()
    };
    let mut out = Vec::new();
    for year in numbered(sessions) {
        for month in numbered(&year) {
            for day in numbered(&month) {
                let Ok(entries) = std::fs::read_dir(&day) else {
                    continue;
                };
                for p in entries.filter_map(|e| e.ok().map(|e| e.path())) {
                    let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
                        continue;
                    };
                    let plain = name.starts_with("rollout-") && name.ends_with(".jsonl");
                    let compressed = name.starts_with("rollout-")
                        && name.ends_with(".jsonl.zst")
                        && !p.with_extension("").exists();
                    if (plain || compressed) && p.is_file() {
                        out.push(p);
                    }
                }
            }
        }
    }
    out
}

/// The sessions of Gemini CLI's folder of projects: `<project>/chats/session-*.jsonl` and
/// `.json`.
fn gemini_sessions(tmp: &Path) -> Vec<PathBuf> {
    let Ok(projects) = std::fs::read_dir(tmp) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for project in projects.filter_map(|e| e.ok().map(|e| e.path())) {
        let Ok(chats) = std::fs::read_dir(project.join("chats")) else {
            continue;
        };
        out.extend(chats.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            name.starts_with("session-")
                && (name.ends_with(".jsonl") || name.ends_with(".json"))
                && p.is_file()
        }));
    }
    out
}

/// The size and time of `file` and of its sub-agent files.
fn signature_of(file: &Path) -> Signature {
    let one = |p: &Path| {
        std::fs::metadata(p)
            .ok()
            .map(|m| (p.to_path_buf(), m.len(), m.modified().ok()))
    };
    let mut files: Vec<_> = one(file).into_iter().collect();
    files.extend(
        transcript::agent_files_of(file)
            .iter()
            .filter_map(|p| one(p)),
    );
    Signature { files }
}

/// Whether a capture's import failed with a refusal, which the same file meets again until it
/// changes (so it is read again only then), rather than with something that may pass.
pub fn refused(e: &Error) -> bool {
    matches!(e, Error::InvalidOperation { .. })
}
