//! `tract init`.

use crate::context::Context;
use crate::error::CommandError;
use crate::ui::Ui;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use tract_core::{OpenMode, Tract};

/// Create a store: DIR/.tract/store.redb, or the one --store names (a file or a
/// postgresql:// URL).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The project directory (default: the current one).
    dir: Option<PathBuf>,
}

/// Runs `tract init`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let path = match (ctx.store_flag(), &a.dir) {
        (Some(_), Some(_)) => {
            return Err(CommandError::invalid_input(
                "give either --store or a directory, not both",
            ));
        }
        (Some(p), None) => p.to_path_buf(),
        (None, d) => Tract::init_dir(d.as_deref().unwrap_or(Path::new(".")))?,
    };
    let existed = match path
        .to_str()
        .filter(|s| tract_core::storage::store::is_url(s))
    {
        // A database store exists when its schema holds one.
        Some(_) => match ctx.open_at(&path, OpenMode::Existing) {
            Ok(_) => true,
            Err(e) if e.is_not_a_store() => false,
            Err(e) => return Err(e),
        },
        None => path.exists(),
    };
    let t = ctx.open_at(&path, OpenMode::CreateIfMissing)?;
    let path = t.store().location().unwrap_or_default();
    let verb = if existed {
        "Reinitialized existing"
    } else {
        "Initialized empty"
    };
    let _ = writeln!(ui, "{verb} tract store in {path}");
    Ok(())
}
