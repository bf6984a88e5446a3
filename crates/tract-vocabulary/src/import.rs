//! [`ImportReport`]: what importing one transcript did, Python's `Tract.import_file()` as
//! JSON with the file and the branch.

use serde::Serialize;

/// What an import of one file did (`tract import --json`, a line of `tract capture --json`).
#[derive(Debug, Clone, Serialize)]
pub struct ImportReport {
    /// The file read.
    file: String,
    /// The branch it went onto.
    branch: String,
    /// The format read, as `--format` names it (`jsonl` for tract's commit export too).
    format: &'static str,
    /// Commits written.
    added: usize,
    /// Steps of the transcript the branch held already.
    already: usize,
    /// Lines without a message (snapshots, progress, metadata), skipped.
    skipped: usize,
    /// Lines on the file's other conversation paths (abandoned retries), kept as records.
    off_path: usize,
    /// Lines kept as records (left out of the view) by this import.
    recorded: usize,
    /// Messages edited because their API response grew (Claude Code).
    edited: usize,
    /// Whether the branch moved back to follow the conversation onto another path.
    rewound: bool,
    /// Whether the branch is kept by the Claude Agent SDK session store (nothing imported,
    /// so the session is not there twice).
    session_store: bool,
    /// Sub-agents still running (no result names them yet).
    waiting_agents: Vec<String>,
    /// Lines read with something to say (not JSON, kept as a record).
    warnings: Vec<Warning>,
    /// The branch's tip afterwards.
    tip: Option<String>,
}

/// A line of the transcript and what it says about it.
#[derive(Debug, Clone, Serialize)]
struct Warning {
    /// The line, from 1.
    line: usize,
    /// What about it.
    warning: String,
}

impl ImportReport {
    /// What importing `file` onto `branch` did.
    pub fn new(file: &std::path::Path, branch: &str, r: &tract_core::ImportReport) -> Self {
        ImportReport {
            file: file.display().to_string(),
            branch: branch.to_string(),
            format: r.format_name(),
            added: r.added,
            already: r.already,
            skipped: r.skipped,
            off_path: r.off_path,
            recorded: r.recorded,
            edited: r.edited,
            rewound: r.rewound,
            session_store: r.session_store,
            waiting_agents: r.waiting_agents.clone(),
            warnings: r
                .warnings
                .iter()
                .map(|(line, w)| Warning {
                    line: *line,
                    warning: w.clone(),
                })
                .collect(),
            tip: r.tip.map(|t| t.to_hex()),
        }
    }
}
