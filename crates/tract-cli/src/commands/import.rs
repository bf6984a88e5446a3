//! `tract import`.

use crate::context::Context;
use crate::error::CommandError;
use crate::notes::NewBranch;
use crate::output;
use crate::progress::Progress;
use crate::render;
use crate::ui::Ui;
use crate::vocabulary::ImportReport;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use tract_core::BranchName;
use tract_core::formats::transcript::{self, Format, Transcript};

/// Import transcripts: Claude Code sessions, OpenAI Chat or Responses, Anthropic request
/// bodies, tract JSONL. Each file goes onto its own branch (a Claude Code session onto
/// `claude/<project>/<session>`, others onto `import/<file name>`, or --branch), in one
/// transaction; what the branch already holds is not added again.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The transcript files.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
    /// auto, claude-code, codex, gemini, openai, openai-responses, anthropic or jsonl.
    #[arg(long, default_value = "auto")]
    format: String,
    /// The report as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `tract import`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let format = Format::parse(&a.format)?;
    // Every file is read and checked before anything is written. Many files show how far
    // it got, on a terminal.
    let total = a.files.len() as u64;
    let bar = Progress::new("{msg} {bar:30} {pos}/{len} files");
    let step = |done: usize, what: &str| {
        if total > 1 {
            bar.step(done as u64, Some(total), what);
        }
    };
    let mut parsed = Vec::with_capacity(a.files.len());
    for (k, file) in a.files.iter().enumerate() {
        step(k, "reading");
        let t = transcript::parse_file(file, format)?;
        let branch = match ctx.branch_flag() {
            Some(b) => BranchName::new(b)?,
            None => default_branch(&t, file)?,
        };
        parsed.push((file, branch, t));
    }
    let mut reports = Vec::new();
    for (k, (file, branch, t)) in parsed.into_iter().enumerate() {
        step(k, "importing");
        let handle = ctx.open_on(&branch)?;
        if k == 0 {
            crate::notes::note_unscrubbed(ui, &handle)?;
        }
        // A branch --branch names may be a typo; the transcripts' own are new by design.
        let new_branch = match ctx.branch_flag() {
            Some(_) => NewBranch::check(&handle, &branch)?,
            None => None,
        };
        let r = handle.import(t).map_err(|e| e.in_file(file))?;
        if let Some(b) = new_branch {
            b.report(&handle, ui)?;
        }
        let format = r.format.map_or("tract commits", Format::name);
        if r.session_store {
            ui.note(&format!(
                "{}: branch {branch} is kept by the Claude Agent SDK session store, which holds \
                 this session: nothing imported (name another branch with --branch)",
                file.display()
            ));
        }
        for (line, w) in &r.warnings {
            match line {
                0 => ui.warning(&format!("{}: {w}", file.display())),
                _ => ui.warning(&format!("{}: line {line}: {w}", file.display())),
            }
        }
        if !a.json {
            let mut line = format!(
                "{}: {} onto {branch}: {} added",
                file.display(),
                format,
                r.added
            );
            if r.already > 0 {
                let _ = write!(line, ", {} already there", r.already);
            }
            if r.skipped > 0 {
                let _ = write!(
                    line,
                    ", {} without a message skipped",
                    render::count(r.skipped as u64, "line", "lines")
                );
            }
            if r.off_path > 0 {
                let _ = write!(
                    line,
                    ", {} off the conversation's path (kept as {})",
                    r.off_path,
                    if r.off_path == 1 {
                        "a record"
                    } else {
                        "records"
                    }
                );
            }
            if r.edited > 0 {
                let _ = write!(
                    line,
                    ", {} edited",
                    render::count(r.edited as u64, "grown response", "grown responses")
                );
            }
            if r.rewound {
                let _ = write!(
                    line,
                    " (the conversation moved to another path: the branch followed it)"
                );
            }
            if !r.waiting_agents.is_empty() {
                let _ = write!(
                    line,
                    ", sub-agents still running: {}",
                    r.waiting_agents.join(", ")
                );
            }
            let _ = writeln!(ui, "{line}");
        }
        reports.push(ImportReport::new(file, branch.as_str(), &r));
    }
    if a.json {
        output::print(ui, &reports, false);
    }
    Ok(())
}

/// The transcript's own branch ([`transcript::default_branch`]).
fn default_branch(t: &Transcript, file: &Path) -> Result<BranchName, CommandError> {
    BranchName::new(&transcript::default_branch(t, file)).map_err(|_| {
        CommandError::invalid_input(format!(
            "cannot make a branch name from {}; name one with --branch",
            file.display()
        ))
    })
}
