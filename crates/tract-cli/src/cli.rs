//! The command line as clap reads it: global options and the subcommand.

use crate::commands::Command;
use clap::Parser;
use std::path::PathBuf;

/// Version control for LLM context.
#[derive(Debug, Parser)]
#[command(name = "tract", version, about, max_term_width = 100)]
pub struct Cli {
    /// The store: a file, or a postgresql://user:password@host:port/db[?schema=NAME] URL.
    /// Without it (and TRACT_STORE): .tract/store.redb here or in the nearest parent
    /// directory, else the per-user store $XDG_DATA_HOME/tract/store.redb
    /// (~/.local/share/tract/store.redb) when it exists.
    #[arg(long, global = true, env = "TRACT_STORE", value_name = "PATH|URL")]
    pub store: Option<PathBuf>,
    /// Work on this branch instead of the current one (HEAD), which stays where it is; the
    /// branch is created by its first message (said on standard error). Refused by the
    /// commands that work on no branch (init, capture, push, ...), which ignore TRACT_BRANCH.
    #[arg(long, global = true, env = "TRACT_BRANCH", value_name = "NAME")]
    pub branch: Option<String>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
