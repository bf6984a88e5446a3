//! `tract index`.

use crate::context::Context;
use crate::error::CommandError;
use crate::output;
use crate::ui::Ui;
use crate::vocabulary::IndexReport;
use std::fmt::Write;

/// Bring the search index up to date: add what is new, take out what redactions and gc
/// removed; or build it anew from every branch.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Build it anew from every branch, dropping what it holds (it is derived data: after a
    /// damaged index, or an `index` problem fsck found).
    #[arg(long)]
    rebuild: bool,
    /// The report as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs `tract index`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let t = ctx.open()?;
    let r = tract_core::update_index(t.store(), a.rebuild)?;
    if a.json {
        output::print(ui, &IndexReport::from(&r), false);
        return Ok(());
    }
    let plural = |n: u64, one: &str| match n {
        1 => format!("1 {one}"),
        _ => format!("{n} {one}s"),
    };
    let done = match r.rebuilt {
        true => "rebuilt from every branch",
        false => "up to date",
    };
    let _ = writeln!(
        ui,
        "search index {done}: {} added, {} removed",
        plural(r.added, "commit"),
        plural(r.removed, "document"),
    );
    let _ = match &r.path {
        Some(p) => writeln!(
            ui,
            "{} ({} bytes) in {}",
            plural(r.documents, "document"),
            r.bytes,
            p.display()
        ),
        // A database's store: each process that searches it indexes it in its own memory.
        None => writeln!(
            ui,
            "{} in memory (a store in a database is indexed by each process that searches it; \
             nothing is kept)",
            plural(r.documents, "document"),
        ),
    };
    Ok(())
}
