//! `tract show`.

use crate::arguments::rev;
use crate::context::Context;
use crate::error::CommandError;
use crate::output;
use crate::render;
use crate::ui::Ui;
use crate::vocabulary::{Commit, Detail};
use std::fmt::Write;

/// Show one commit and its full message.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The commit (default: HEAD).
    rev: Option<String>,
    /// As JSON.
    #[arg(long)]
    json: bool,
    /// Every version of the message: the original, then each edit.
    #[arg(long)]
    history: bool,
}

/// Runs `tract show`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let t = ctx.open_to_read()?;
    let target = rev(a.rev.as_deref().unwrap_or("HEAD"))?;
    let infos = if a.history {
        t.edit_history(target)?
    } else {
        vec![t.get_commit(target)?]
    };
    // The link from a compressed message to the summary that replaced it.
    let into = match infos.as_slice() {
        [one] if !a.history && one.message.is_some() => t.compressed_into(one.id)?,
        _ => None,
    };
    if a.json {
        match infos.as_slice() {
            [one] if !a.history => {
                // As `tract mcp` and `tract serve` show it: with the version in view.
                let json = Commit::from(one)
                    .compressed_into(into.as_ref())
                    .in_view(&crate::versions::of(&t, one.id.into())?, Detail::Full);
                output::print(ui, &json, false);
            }
            all => {
                let list: Vec<_> = all.iter().map(Commit::from).collect();
                output::print(ui, &list, false);
            }
        }
    } else {
        for (i, info) in infos.iter().enumerate() {
            if i > 0 {
                let _ = writeln!(ui);
            }
            if let Some(t) = t.tombstone(info.id)? {
                let when = tract_core::clock::rfc3339_micros(t.redacted_at_us);
                let _ = writeln!(ui, "redacted {when}: {}", t.reason);
            }
            render::show(ui, info);
        }
        if let Some(into) = into {
            let _ = writeln!(ui, "\ncompressed into {}", into.id.short());
        }
    }
    Ok(())
}
