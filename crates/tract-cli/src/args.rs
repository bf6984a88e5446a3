//! The command line, as clap reads it.

use clap::{Parser, Subcommand, ValueEnum};
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

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a store: DIR/.tract/store.redb, or the file named by --store.
    Init {
        /// The project directory (default: the current one).
        dir: Option<PathBuf>,
    },
    /// Append messages: `--role R TEXT`, or `--json` message objects (one, a list, or JSONL).
    Add(AddArgs),
    /// Replace the content of a message in the view; the original stays in history.
    Edit(EditArgs),
    /// Tool calls, results and turns in the current view.
    Tools(ToolsArgs),
    /// Commit a marked error result for every tool call left without one (after a crash).
    Repair,
    /// Search message text, tool calls and tool results.
    Search(SearchArgs),
    /// Replace old tool results with a placeholder naming the original (kept in history).
    Clear(ClearArgs),
    /// Replace runs of messages with summaries; the originals stay in history.
    Compress(CompressArgs),
    /// Settings stored in the store, which every process and command applies.
    Config(ConfigArgs),
    /// Show history, newest first.
    Log {
        /// Where to start (default: HEAD).
        rev: Option<String>,
        /// At most this many commits.
        #[arg(short = 'n', long = "max-count", value_name = "N")]
        limit: Option<usize>,
        /// One JSON object per commit, as a list.
        #[arg(long, conflicts_with = "oneline")]
        json: bool,
        /// Short id and first line only.
        #[arg(long)]
        oneline: bool,
        /// Only commits of this role.
        #[arg(long, value_name = "ROLE")]
        role: Option<String>,
        /// Only results of this tool and messages that call it.
        #[arg(long, value_name = "NAME")]
        tool: Option<String>,
    },
    /// Show one commit and its full message.
    Show {
        /// The commit (default: HEAD).
        rev: Option<String>,
        /// As JSON.
        #[arg(long)]
        json: bool,
        /// Every version of the message: the original, then each edit.
        #[arg(long)]
        history: bool,
    },
    /// Print the view as a provider request body.
    Compile {
        /// The provider format.
        #[arg(long, value_enum, default_value_t = Format::Openai)]
        format: Format,
        /// Compile the view at this commit instead of HEAD.
        #[arg(long, value_name = "REV")]
        at: Option<String>,
        /// One line of JSON instead of indented.
        #[arg(long)]
        compact: bool,
    },
    /// List branches, or create NAME at REV (default HEAD).
    Branch {
        /// The branch to create.
        name: Option<String>,
        /// Where it starts.
        rev: Option<String>,
    },
    /// Make NAME the current branch.
    Switch {
        /// The branch.
        name: String,
        /// Create it at HEAD first.
        #[arg(short = 'c', long)]
        create: bool,
    },
    /// Switch to a branch, or detach HEAD at a commit (time travel).
    Checkout {
        /// A branch or a commit.
        rev: String,
    },
    /// Move the current branch to REV; the old head stays in the reflog.
    Reset {
        /// Where to move it.
        rev: String,
    },
    /// Show the moves of a ref (default HEAD), newest first.
    Reflog {
        /// A branch name or HEAD.
        #[arg(default_value = "HEAD")]
        name: String,
        /// At most this many entries.
        #[arg(short = 'n', long = "max-count", value_name = "N")]
        limit: Option<usize>,
    },
    /// Where HEAD is and what the model would see.
    Status {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Build a realistic agent transcript in a new store, then show log, status and compile.
    Demo {
        /// Where to create the demo project (default: a new temporary directory).
        dir: Option<PathBuf>,
    },
}

/// `tract add`.
#[derive(Debug, clap::Args)]
pub struct AddArgs {
    /// The message text, or `-` for standard input.
    #[arg(required_unless_present = "json")]
    pub text: Option<String>,
    /// The role: system, user, assistant or tool.
    #[arg(short, long, default_value = "user", conflicts_with = "json")]
    pub role: String,
    /// A tool result's tool name (or a participant name).
    #[arg(long, conflicts_with = "json")]
    pub name: Option<String>,
    /// The call a tool result answers.
    #[arg(long, conflicts_with = "json")]
    pub tool_call_id: Option<String>,
    /// Mark a tool result as an error.
    #[arg(long, conflicts_with = "json")]
    pub error: bool,
    /// An assistant message's tool calls, as a JSON list.
    #[arg(long, value_name = "JSON", conflicts_with = "json")]
    pub tool_calls: Option<String>,
    /// Message JSON: an object, a list, or JSONL; `-` reads standard input. All or nothing.
    #[arg(long, value_name = "JSON", conflicts_with = "text")]
    pub json: Option<String>,
}

/// `tract edit`.
#[derive(Debug, clap::Args)]
pub struct EditArgs {
    /// The commit to edit (an id prefix, a branch, HEAD~N).
    pub target: String,
    /// The new content; `-` reads standard input.
    #[arg(conflicts_with_all = ["content", "file"])]
    pub text: Option<String>,
    /// The new content.
    #[arg(long, value_name = "TEXT", conflicts_with = "file")]
    pub content: Option<String>,
    /// Read the new content from this file.
    #[arg(long, value_name = "PATH")]
    pub file: Option<std::path::PathBuf>,
}

/// `tract config`.
#[derive(Debug, clap::Args)]
pub struct ConfigArgs {
    /// What to show or change.
    #[command(subcommand)]
    pub what: ConfigWhat,
}

/// The `tract config` subcommands.
#[derive(Debug, Subcommand)]
pub enum ConfigWhat {
    /// Show the stored settings.
    Show {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Change the tool-summarization policy that `tract add` and every process apply to tool
    /// results: per-tool instructions, and a token threshold over which any result is
    /// summarized. Options not given keep their stored value.
    #[command(name = "tool-summarization")]
    ToolSummarization(ToolSummarizationArgs),
}

/// `tract config tool-summarization`.
#[derive(Debug, clap::Args)]
pub struct ToolSummarizationArgs {
    /// Summarize results of tool NAME with these instructions (repeatable).
    #[arg(long = "tool", value_name = "NAME=INSTRUCTIONS")]
    pub tools: Vec<String>,
    /// Stop summarizing results of tool NAME by its instructions (repeatable).
    #[arg(long = "remove-tool", value_name = "NAME")]
    pub remove_tools: Vec<String>,
    /// Summarize any result over this many tokens.
    #[arg(
        long,
        value_name = "TOKENS",
        allow_negative_numbers = true,
        conflicts_with = "no_auto_threshold"
    )]
    pub auto_threshold: Option<i64>,
    /// Remove the threshold.
    #[arg(long)]
    pub no_auto_threshold: bool,
    /// Instructions for results summarized because of the threshold.
    #[arg(long, value_name = "TEXT", conflicts_with = "no_default_instructions")]
    pub default_instructions: Option<String>,
    /// Remove the default instructions (the tool prompt alone is used).
    #[arg(long)]
    pub no_default_instructions: bool,
    /// Start from an empty policy instead of the stored one.
    #[arg(long)]
    pub reset: bool,
}

/// `tract tools`.
#[derive(Debug, clap::Args)]
pub struct ToolsArgs {
    /// What to list.
    #[arg(value_enum)]
    pub what: ToolsWhat,
    /// Only this tool.
    #[arg(long)]
    pub name: Option<String>,
    /// Only results after this commit (results only).
    #[arg(long, value_name = "REV")]
    pub after: Option<String>,
    /// Only results before this commit (results only).
    #[arg(long, value_name = "REV")]
    pub before: Option<String>,
    /// As JSON.
    #[arg(long)]
    pub json: bool,
}

/// What `tract tools` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ToolsWhat {
    /// Assistant commits that call tools.
    Calls,
    /// Tool result commits.
    Results,
    /// Calls with their results, state, duration and sizes.
    Turns,
}

/// `tract clear`.
#[derive(Debug, clap::Args)]
pub struct ClearArgs {
    /// The most recent tool turns to leave untouched.
    #[arg(long, default_value_t = 3)]
    pub keep: usize,
    /// A tool whose results are never cleared (repeatable).
    #[arg(long = "exclude-tool", value_name = "NAME")]
    pub exclude_tools: Vec<String>,
    /// Clear nothing unless at least this many tokens are freed.
    #[arg(long, default_value_t = 0, value_name = "TOKENS")]
    pub clear_at_least: u64,
    /// The placeholder; {tool}, {commit}, {tokens} and {bytes} are filled in.
    #[arg(long, value_name = "TEXT")]
    pub placeholder: Option<String>,
    /// Show what would be cleared and the saving; commit nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// `tract compress`.
#[derive(Debug, clap::Args)]
pub struct CompressArgs {
    /// Compress whole tool turns (every turn, or those of --name) with the tool prompt.
    #[arg(long, conflicts_with_all = ["commits", "range"])]
    pub tool_turns: bool,
    /// With --tool-turns or --strategy clear: only this tool.
    #[arg(long)]
    pub name: Option<String>,
    /// The positions to compress.
    #[arg(long, num_args = 1.., value_name = "ID", conflicts_with = "range")]
    pub commits: Vec<String>,
    /// The positions from A to B, both included.
    #[arg(long, value_name = "A..B")]
    pub range: Option<String>,
    /// Positions to keep (they split the selection into runs).
    #[arg(long, num_args = 1.., value_name = "ID")]
    pub preserve: Vec<String>,
    /// The length to aim for per summary, in tokens.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub target_tokens: Option<u32>,
    /// Extra instructions for the summarizer.
    #[arg(long, value_name = "TEXT")]
    pub instructions: Option<String>,
    /// The summarizer's system prompt, or @FILE to read it from a file.
    #[arg(long, value_name = "TEXT|@FILE")]
    pub system_prompt: Option<String>,
    /// Use this text as the summary.
    #[arg(long, value_name = "TEXT", conflicts_with = "strategy")]
    pub content: Option<String>,
    /// How to summarize.
    #[arg(long, value_enum, default_value_t = Strategy::Extractive)]
    pub strategy: Strategy,
    /// With --strategy llm: the server's base URL (e.g. http://127.0.0.1:8000/v1).
    #[arg(long, value_name = "URL")]
    pub llm_base_url: Option<String>,
    /// With --strategy llm: the model.
    #[arg(long, value_name = "NAME")]
    pub llm_model: Option<String>,
    /// With --strategy clear: the most recent tool turns to leave untouched.
    #[arg(long, default_value_t = 3)]
    pub keep: usize,
    /// Show what would be compressed and the tokens it holds; commit nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// How `tract compress` summarizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Strategy {
    /// An OpenAI-compatible chat-completions server (--llm-base-url, --llm-model, or the
    /// TRACT_LLM_* / OPENAI_* environment).
    Llm,
    /// The built-in extractive summarizer (no network).
    Extractive,
    /// Replace old tool results with a placeholder (like `tract clear`).
    Clear,
}

/// `tract search`.
#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    /// What to look for (case-insensitive substring).
    pub query: String,
    /// Treat QUERY as a regular expression.
    #[arg(long)]
    pub regex: bool,
    /// Only messages of this role.
    #[arg(long, value_name = "ROLE")]
    pub role: Option<String>,
    /// Only results of this tool and messages that call it.
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    /// Search every version in history, originals of edited messages included.
    #[arg(long)]
    pub history: bool,
    /// At most this many hits.
    #[arg(short = 'n', long = "max-count", value_name = "N")]
    pub limit: Option<usize>,
    /// As JSON.
    #[arg(long)]
    pub json: bool,
}

/// Provider formats for `compile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// OpenAI chat completions `messages`.
    Openai,
    /// Anthropic Messages `{"system", "messages"}`.
    Anthropic,
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
