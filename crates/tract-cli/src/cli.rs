//! The command line as clap reads it: global options and the subcommand.

use crate::commands::Command;
use clap::Parser;
use std::path::PathBuf;

/// Version control for LLM context.
#[derive(Debug, Parser)]
#[command(name = "tract", version, about, max_term_width = 100)]
pub struct Cli {
    /// The store file (default: .tract/store.redb here or in a parent directory).
    #[arg(long, global = true, env = "TRACT_STORE", value_name = "PATH")]
    pub store: Option<PathBuf>,
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
