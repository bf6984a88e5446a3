//! Transcripts through a handle: importing what other tools wrote onto its branch, and
//! exporting its branch.

use super::PyTract;
use crate::errors::IntoPyResult;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;

#[pymethods]
impl PyTract {
    /// Imports the transcript file at `path` onto this handle's branch (`format`: auto,
    /// claude-code, codex, gemini, openai, openai-responses, anthropic or jsonl), in one
    /// transaction; only what the branch does not hold yet (a Claude Code session is keyed by line: each line
    /// once, a response that grew edited, a rewound conversation followed). Returns a dict:
    /// `file` (`path` as given), `branch`, `format`, `added`, `already`, `skipped`, `off_path`,
    /// `recorded` (lines kept as records, out of the view), `edited`, `rewound`,
    /// `session_store` (the branch is the Claude Agent SDK session store's: nothing imported),
    /// `waiting_agents` (sub-agents still running), `warnings` (dicts with `line` and
    /// `warning`: lines that are not JSON, skipped as Claude Code skips them), `tip`: the
    /// report of `tract import --json`. A bad line raises InvalidInputError naming the file
    /// and line (`path`, `line`), and nothing is written.
    #[pyo3(signature = (path, format="auto"))]
    fn import_file<'py>(
        &self,
        py: Python<'py>,
        path: PathBuf,
        format: &str,
    ) -> PyResult<Bound<'py, PyDict>> {
        let format = tract_core::formats::transcript::Format::parse(format).py()?;
        let report = self.with(py, move |t| {
            let r = t.import_file(&path, format)?;
            // A detached handle imports at its commit; the core names that `HEAD`.
            let head = t.head()?;
            let branch = head.branch().unwrap_or("HEAD");
            Ok(tract_vocabulary::ImportReport::new(&path, branch, &r))
        })?;
        crate::vocabulary::dict(py, &report)
    }

    /// This handle's branch written out as text: `format` openai or anthropic (a request
    /// body of the view, JSON), jsonl (the view's messages; with `history`, every commit,
    /// which `import_file` reads back to identical ids) or markdown.
    #[pyo3(signature = (format="jsonl", *, history=false))]
    fn export(&self, py: Python<'_>, format: &str, history: bool) -> PyResult<String> {
        let format = tract_core::formats::exports::ExportFormat::parse(format).py()?;
        self.with(py, move |t| t.export(format, history))
    }
}
