//! `tract pull`.

use crate::commands::push::{Direction, Peer, SyncArgs, TransferProgress, finish, peer_error};
use crate::context::Context;
use crate::error::CommandError;
use crate::ui::Ui;
use std::path::PathBuf;

/// Receive branches and their history from another store (a file or a postgresql:// URL): only
/// what this one lacks. Each branch moves only by fast-forward: one that has diverged is
/// refused (the others move, and the command exits non-zero naming it); `tract pull SRC
/// main:theirs/main` brings it in under another name, for `tract merge theirs/main`.
#[derive(Debug, clap::Args)]
// The options are push's; their help is said from this side.
#[command(
    mut_arg("branches", |a| a.help(
        "The branches to receive (default: every branch); SRC:DST takes the sending store's \
         branch SRC as this store's DST (`main:theirs/main`, to merge it here)"
    )),
    mut_arg("force", |a| a.help(
        "Move a branch of this store that has diverged; its old tip stays in the reflog"
    )),
    mut_arg("settings", |a| a.help(
        "Take the sending store's settings (the tool-summarization, retention and secrets policies) in \
         place of this store's"
    )),
)]
pub struct Args {
    /// The sending store: a file or a postgresql:// URL.
    src: PathBuf,
    #[command(flatten)]
    sync: SyncArgs,
}

/// Runs `tract pull`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let t = ctx.open().map_err(|e| no_store_here(e, ctx, &a.src))?;
    let bar = TransferProgress::new(a.sync.json);
    let pulled = tract_core::pull(t.store(), &a.src, &a.sync.options(&|p| bar.show(p))?);
    drop(bar);
    let report = pulled.map_err(|e| peer_error(e, &a.src, Peer::Source))?;
    finish(ui, ctx, &t, &report, a.sync.json, Direction::Pull)
}

/// With no store to pull into, the hint is the `tract clone` that makes one from the source.
fn no_store_here(e: CommandError, ctx: &Context, src: &std::path::Path) -> CommandError {
    if !e.is_no_store() || ctx.store_flag().is_some() {
        return e;
    }
    let src = crate::commands::push::shown_store(Some(src.display().to_string()));
    e.with_hint(format!(
        "`tract clone {src} .tract/store.redb` copies it here (or `tract init`, then pull)"
    ))
}
