//! `tract index`.

use crate::context::Context;
use crate::error::CommandError;
use crate::output;
use crate::progress::Progress;
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
    let bar = Progress::new("indexing for search: {pos} commits");
    let r = tract_core::update_index_with(
        t.store(),
        a.rebuild,
        Some(&|commits| bar.step(commits, None, "")),
    );
    drop(bar);
    let r = r?;
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
        None if r.in_database => writeln!(
            ui,
            "{} ({} bytes) in the database, beside the store's tables",
            plural(r.documents, "document"),
            r.bytes,
        ),
        // A store in memory: its process's searches index it, and nothing is kept.
        None => writeln!(
            ui,
            "{} in memory (nothing is kept)",
            plural(r.documents, "document"),
        ),
    };
    Ok(())
}
