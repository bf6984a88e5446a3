//! Transcripts through a handle: importing what other tools wrote onto its branch, and
//! exporting its branch.

use crate::error::Result;
use crate::formats::imports::ImportReport;
use std::path::Path;

use super::Tract;

impl Tract {
    /// Imports a transcript (see [`crate::formats::transcript::parse`]) onto this handle's branch, in
    /// one transaction: only what the branch does not hold yet (importing the same transcript
    /// twice adds nothing). Refused when the branch holds other messages at its place.
    pub fn import(
        &self,
        transcript: crate::formats::transcript::Transcript,
    ) -> Result<ImportReport> {
        crate::formats::imports::import(&self.repo, transcript)
    }

    /// Reads the transcript file at `path` (`format` `None`: detected; a Claude Code session
    /// with the sub-agent files beside it) and imports it; a bad line is
    /// [`Error::InvalidTranscript`] naming the file and line, and nothing is written.
    pub fn import_file(
        &self,
        path: impl AsRef<Path>,
        format: Option<crate::formats::transcript::Format>,
    ) -> Result<ImportReport> {
        let path = path.as_ref();
        let transcript = crate::formats::transcript::parse_file(path, format)?;
        self.import(transcript).map_err(|e| e.in_file(path))
    }

    /// This handle's branch written out: a provider request body of the view, tract's JSONL
    /// (the view's messages; with `history`, every commit, which [`Tract::import`] reads back
    /// to identical ids) or a Markdown transcript (the view; with `history`, every commit).
    pub fn export(
        &self,
        format: crate::formats::exports::ExportFormat,
        history: bool,
    ) -> Result<String> {
        crate::formats::exports::export(&self.repo, format, history)
    }

    /// This handle's view written as a Claude Code session file: one line per message as the
    /// Messages API is sent it, each line's `parentUuid` the one before, so Claude Code's reader
    /// reads back the view and `claude --resume` continues it. A system message cannot be
    /// written (Claude Code keeps its own system prompt): it is named in the warnings.
    pub fn export_claude_code(
        &self,
        o: &crate::formats::claude_code_export::ClaudeCodeExport,
    ) -> Result<crate::formats::claude_code_export::ClaudeCodeFile> {
        let snap = self.repo.read()?;
        let head = self.repo.head(&snap)?.commit;
        let compiled = self.repo.with_view(&snap, head, |v| {
            crate::formats::compile::Compiled::new(v, &self.repo.store, &self.repo.views)
        })?;
        crate::formats::claude_code_export::write(&compiled, o)
    }
}
