//! `tract branch`.

use super::rev;
use crate::context::Context;
use crate::error::CommandError;
use crate::ui::Ui;
use std::fmt::Write;
use tract_core::BranchName;

/// List branches, or create NAME at REV (default HEAD).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The branch to create.
    name: Option<String>,
    /// Where it starts.
    rev: Option<String>,
}

/// Runs `tract branch`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let t = ctx.open()?;
    match &a.name {
        Some(name) => {
            let at = a.rev.as_deref().map(rev).transpose()?;
            let at = t.create_branch(&BranchName::new(name)?, at.as_ref())?;
            let _ = writeln!(ui, "created branch {name} at {}", at.short());
        }
        None => {
            for b in t.branches()? {
                let mark = if b.current { '*' } else { ' ' };
                let _ = writeln!(ui, "{mark} {} {}", b.name, b.head.short());
            }
        }
    }
    Ok(())
}
