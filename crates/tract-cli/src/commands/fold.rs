//! `tract fold` (once `tract checkpoint`, still taken: `checkpoint` now names the views' own
//! checkpoints).

use crate::context::Context;
use crate::error::CommandError;
use crate::ui::Ui;
use std::fmt::Write;

/// Fold the store file's journal into it, so the file alone holds every commit (before reading
/// it with another tool); a database store has no journal.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// For a journal damaged before its last frame (every command stops with an error naming
    /// the segment and the offset): fold every frame before the damage into the store file,
    /// copy the damaged segment and the later ones into a directory of the journal, and go on
    /// without them. Nothing changes when no frame is damaged.
    #[arg(long)]
    salvage: bool,
}

/// Runs `tract fold`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    if a.salvage {
        return salvage(ctx, ui);
    }
    let t = ctx.open()?;
    t.store().fold_journal()?;
    let _ = writeln!(ui, "the store file holds every commit");
    Ok(())
}

fn salvage(ctx: &Context, ui: &mut Ui<'_>) -> Result<(), CommandError> {
    match tract_core::Store::salvage_journal(ctx.store_path()?)? {
        None => {
            let _ = writeln!(ui, "no frame of the journal is damaged: nothing to salvage");
        }
        Some(s) => {
            let _ = writeln!(
                ui,
                "the frame at offset {} of {} is damaged ({})",
                s.damaged_offset,
                s.damaged_segment.display(),
                s.damage
            );
            let _ = writeln!(
                ui,
                "kept {} before it: the store is as it was when {} written",
                match s.kept_frames {
                    1 => "the frame".to_string(),
                    n => format!("the {n} frames"),
                },
                match s.kept_frames {
                    1 => "it was",
                    _ => "the last of them was",
                }
            );
            let _ = writeln!(
                ui,
                "left out {} segment{} from the damaged one on, copied to {}",
                s.segments_set_aside,
                if s.segments_set_aside == 1 { "" } else { "s" },
                s.set_aside.display()
            );
        }
    }
    Ok(())
}

/// Runs `tract checkpoint`, the old name of `tract fold`: the same, with a note.
pub fn run_checkpoint(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    ui.note("`tract checkpoint` is now `tract fold` (checkpoints are the views' own)");
    run(ctx, ui, a)
}
