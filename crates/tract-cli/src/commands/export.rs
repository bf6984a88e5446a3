//! `tract export`.

use crate::context::Context;
use crate::error::CommandError;
use crate::ui::Ui;
use std::io::Write;
use std::path::{Path, PathBuf};
use tract_core::Error;
use tract_core::formats::claude_code_export::ClaudeCodeExport;
use tract_core::formats::exports::ExportFormat;

/// Write the branch out: a provider request body (openai, anthropic), tract JSONL, a Markdown
/// transcript, or a Claude Code session file (claude-code), to standard output.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// openai, anthropic, jsonl, markdown or claude-code.
    #[arg(long, default_value = "jsonl")]
    format: String,
    /// Every commit instead of the view (jsonl: read back by `tract import` to identical ids;
    /// markdown: each commit with its operation).
    #[arg(long)]
    history: bool,
    /// With claude-code: the session's id (a UUID; default: one derived from the view, the
    /// same for the same view).
    #[arg(long, value_name = "ID")]
    session_id: Option<String>,
    /// With claude-code: write the session into Claude Code's projects folder
    /// ($CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects) under the project's key, so
    /// that `claude --resume ID` continues it; prints the file written.
    #[arg(long)]
    install: bool,
    /// With claude-code: the project folder the session is of (default: the current one).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
}

/// Runs `tract export`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    if a.format == "claude-code" {
        return claude_code(ctx, ui, a);
    }
    if a.session_id.is_some() || a.install || a.project.is_some() {
        return Err(CommandError::invalid_input(
            "--session-id, --install and --project go with --format claude-code",
        ));
    }
    let format = ExportFormat::parse(&a.format)?;
    let t = ctx.open_to_read()?;
    ui.print(&t.export(format, a.history)?);
    Ok(())
}

/// `--format claude-code`: the session file on standard output, or installed.
fn claude_code(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    if a.history {
        return Err(CommandError::invalid_input(
            "a Claude Code session holds the view: --history goes to jsonl or markdown",
        ));
    }
    let project = match &a.project {
        Some(p) => std::path::absolute(p).map_err(|e| Error::io(p.clone(), e))?,
        None => std::env::current_dir().map_err(|e| Error::io(PathBuf::from("."), e))?,
    };
    let cwd = project.to_string_lossy().into_owned();
    // Where it goes, known before anything is read: a folder that is not there is named first.
    let target = match a.install {
        true => Some(
            ctx.env()
                .claude_projects_dir()
                .ok_or_else(|| {
                    CommandError::invalid_input(
                        "--install needs Claude Code's folder: set CLAUDE_CONFIG_DIR or HOME",
                    )
                })?
                .join(tract_core::formats::claude_code::project_key(&cwd)),
        ),
        false => None,
    };
    let t = ctx.open_to_read()?;
    let file = t.export_claude_code(&ClaudeCodeExport {
        session_id: a.session_id.clone(),
        cwd,
    })?;
    match target {
        None => ui.print(&file.text),
        Some(dir) => {
            let path = dir.join(format!("{}.jsonl", file.session_id));
            install(&dir, &path, &file.text)?;
            ui.print(&format!(
                "{}\nclaude --resume {}\n",
                path.display(),
                file.session_id
            ));
        }
    }
    // Said once what is written is written: a failed export says only why it failed.
    for w in &file.warnings {
        ui.warning(w);
    }
    Ok(())
}

/// Writes `text` to `path` in `dir` (made if missing), never over a file that is there: to a
/// temporary file beside it, then linked into place, so a reader never sees half of it.
fn install(dir: &Path, path: &Path, text: &str) -> Result<(), CommandError> {
    if path.exists() {
        return Err(CommandError::invalid_input(format!(
            "{} exists: Claude Code has a session of that id (give another --session-id)",
            path.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir.to_path_buf(), e))?;
    let mut tmp =
        tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::io(dir.to_path_buf(), e))?;
    tmp.write_all(text.as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| Error::io(tmp.path().to_path_buf(), e))?;
    tmp.persist_noclobber(path)
        .map_err(|e| Error::io(path.to_path_buf(), e.error))?;
    Ok(())
}
