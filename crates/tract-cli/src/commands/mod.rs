//! The subcommands: one file each, holding its clap arguments (`Args`) and its handler (`run`).
//! To add a command: a new file here, a variant below, a line in [`Command::run`].

mod add;
mod branch;
mod cache;
mod capture;
mod checkout;
mod clear;
mod clone;
mod compile;
mod compress;
mod config;
mod demo;
mod diff;
mod edit;
mod export;
mod fold;
mod fsck;
mod gc;
mod import;
mod index;
mod init;
mod log;
mod mcp;
mod merge;
mod pull;
mod push;
mod redact;
mod reflog;
mod repair;
mod replay;
mod reset;
mod search;
mod secrets;
mod serve;
mod show;
mod status;
mod switch;
mod tools;
mod upgrade;
mod usage;

use crate::context::Context;
use crate::error::CommandError;
use crate::ui::Ui;
use clap::Subcommand;

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a store: DIR/.tract/store.redb, or the one --store names (a file or a
    /// postgresql:// URL).
    Init(init::Args),
    /// Append messages: `--role R TEXT`, or `--json` message objects (one, a list, or JSONL).
    Add(add::Args),
    /// Replace the content of a message in the view; the original stays in history.
    Edit(edit::Args),
    /// Tool calls, results and turns in the current view.
    Tools(tools::Args),
    /// Commit a marked error result for every tool call left without one (after a crash).
    Repair(repair::Args),
    /// Search message text, tool calls and tool results: ranked by relevance, or scanned with
    /// a regular expression.
    Search(search::Args),
    /// Find what looks like a credential in what the store holds (and scrub it there with
    /// --redact), or in a file before it is imported; list the rules.
    Secrets(secrets::Args),
    /// Bring the search index up to date (--rebuild: build it anew from every branch).
    Index(index::Args),
    /// Replace old tool results with a placeholder naming the original (kept in history).
    Clear(clear::Args),
    /// Replace runs of messages with summaries; the originals stay in history.
    Compress(compress::Args),
    /// Settings stored in the store, which every process and command applies.
    Config(config::Args),
    /// Show history, newest first.
    Log(log::Args),
    /// Show one commit and its full message.
    Show(show::Args),
    /// Compare two contexts as the model saw them (where they part, what only one holds, what
    /// was edited), or show what one commit did to its view (what a compaction dropped).
    Diff(diff::Args),
    /// Print the view as a provider request body.
    Compile(compile::Args),
    /// List branches, or create NAME at REV (default HEAD), or delete NAME with -d.
    Branch(branch::Args),
    /// Make NAME the current branch.
    Switch(switch::Args),
    /// Bring another branch back with a merge commit: its messages appended, or its answer
    /// as the result of a pending tool call.
    Merge(merge::Args),
    /// Switch to a branch, or detach HEAD at a commit (time travel).
    Checkout(checkout::Args),
    /// Move the current branch to REV; the old head stays in the reflog.
    Reset(reset::Args),
    /// Show the moves of a ref, newest first (default: the current branch and HEAD, merged).
    Reflog(reflog::Args),
    /// Check the whole store: re-hash every object and chunk, check every link, ref and
    /// reflog entry and the kept counts; list what nothing reaches. Exit 1 on any problem.
    Fsck(fsck::Args),
    /// Remove a message's content for good (a secret in a tool result); ids stay valid.
    Redact(redact::Args),
    /// Remove objects nothing reaches any more (after a grace period).
    Gc(gc::Args),
    /// Bring a store an older tract wrote to this build's format (opening it does the same;
    /// this says what changed).
    Upgrade(upgrade::Args),
    /// Fold the journal into the store file, so the file alone holds every commit.
    Fold(fold::Args),
    /// The old name of `fold`.
    #[command(hide = true)]
    Checkpoint(fold::Args),
    /// Send branches and their history to another store (a file or a postgresql:// URL):
    /// only what it lacks; its branches move only by fast-forward.
    Push(push::Args),
    /// Receive branches and their history from another store; branches move only by
    /// fast-forward.
    Pull(pull::Args),
    /// Copy a store into a new one (files or postgresql:// URLs): every branch, the settings,
    /// HEAD; every id stays the same.
    Clone(clone::Args),
    /// Import transcripts (Claude Code, OpenAI Chat or Responses, Anthropic, tract JSONL),
    /// each onto its own branch; what a branch already holds is not added again.
    Import(import::Args),
    /// Follow Claude Code's projects folder: import every session, with its sub-agents, onto
    /// its own branch as Claude Code writes it (--once: what is new, then exit).
    Capture(capture::Args),
    /// Rerun a recorded session on another model, its tool calls answered from the recorded
    /// results, onto a new branch (a call with none is a divergence).
    Replay(replay::Args),
    /// Write the branch out: openai, anthropic, jsonl (with --history: every commit) or
    /// markdown.
    Export(export::Args),
    /// Serve the store's history to an agent as MCP tools over stdio (search_history, log,
    /// show, find_tool_results, find_tool_turns, sessions, status, usage, diff; edit and compress with
    /// --allow-writes).
    Mcp(mcp::Args),
    /// Serve a read-only web view of the store: sessions, each view with its tool calls as
    /// cards, history, search; and its JSON API under /api/ (127.0.0.1 unless --bind).
    Serve(serve::Args),
    /// Where HEAD is and what the model would see.
    Status(status::Args),
    /// What the model requests of a branch cost: tokens in, out, read from and written to the
    /// cache, per model or day (--all: every branch).
    Usage(usage::Args),
    /// What a provider's prompt cache could have served each request of the branch, and the
    /// commit that broke the cached prefix each time (edit, compress, clear, system, ...).
    Cache(cache::Args),
    /// Build a realistic agent transcript in a new store, then show log, status and compile.
    Demo(demo::Args),
}

impl Command {
    /// Why `--branch` means nothing to this command, if it does not: the command works on
    /// the whole store, makes one, names its branches another way or moves `HEAD` itself.
    /// `--branch` on such a command line is refused; `TRACT_BRANCH` is ignored (a session's
    /// variable must not break `tract init`).
    pub fn branch_refused(&self) -> Option<&'static str> {
        Some(match self {
            Command::Init(_) => "it makes a store; a branch is made by its first message",
            Command::Capture(_) => "each session goes onto its own branch",
            Command::Import(_)
            | Command::Add(_)
            | Command::Edit(_)
            | Command::Tools(_)
            | Command::Repair(_)
            | Command::Search(_)
            | Command::Secrets(_)
            | Command::Clear(_)
            | Command::Compress(_)
            | Command::Log(_)
            | Command::Show(_)
            | Command::Diff(_)
            | Command::Compile(_)
            | Command::Branch(_)
            | Command::Merge(_)
            | Command::Reset(_)
            | Command::Reflog(_)
            | Command::Redact(_)
            | Command::Export(_)
            | Command::Status(_)
            | Command::Usage(_)
            | Command::Cache(_)
            | Command::Replay(_) => return None,
            Command::Switch(_) | Command::Checkout(_) => {
                "it moves HEAD: name the branch as its argument"
            }
            Command::Push(_) | Command::Pull(_) => {
                "name the branches after the store (`tract push DEST BRANCH...`)"
            }
            Command::Clone(_) => "it copies every branch",
            Command::Index(_)
            | Command::Config(_)
            | Command::Fsck(_)
            | Command::Gc(_)
            | Command::Upgrade(_)
            | Command::Fold(_)
            | Command::Checkpoint(_) => "it works on the whole store",
            Command::Mcp(_) => "each of its tools takes the branch it reads",
            Command::Serve(_) => "the web view shows every branch",
            Command::Demo(_) => "it builds its own store",
        })
    }

    /// Carries out the command.
    pub fn run(&self, ctx: &Context, ui: &mut Ui<'_>) -> Result<(), CommandError> {
        match self {
            Command::Init(a) => init::run(ctx, ui, a),
            Command::Add(a) => add::run(ctx, ui, a),
            Command::Edit(a) => edit::run(ctx, ui, a),
            Command::Tools(a) => tools::run(ctx, ui, a),
            Command::Repair(a) => repair::run(ctx, ui, a),
            Command::Search(a) => search::run(ctx, ui, a),
            Command::Secrets(a) => secrets::run(ctx, ui, a),
            Command::Index(a) => index::run(ctx, ui, a),
            Command::Clear(a) => clear::run(ctx, ui, a),
            Command::Compress(a) => compress::run(ctx, ui, a),
            Command::Config(a) => config::run(ctx, ui, a),
            Command::Log(a) => log::run(ctx, ui, a),
            Command::Show(a) => show::run(ctx, ui, a),
            Command::Diff(a) => diff::run(ctx, ui, a),
            Command::Compile(a) => compile::run(ctx, ui, a),
            Command::Branch(a) => branch::run(ctx, ui, a),
            Command::Switch(a) => switch::run(ctx, ui, a),
            Command::Checkout(a) => checkout::run(ctx, ui, a),
            Command::Merge(a) => merge::run(ctx, ui, a),
            Command::Fsck(a) => fsck::run(ctx, ui, a),
            Command::Redact(a) => redact::run(ctx, ui, a),
            Command::Gc(a) => gc::run(ctx, ui, a),
            Command::Usage(a) => usage::run(ctx, ui, a),
            Command::Cache(a) => cache::run(ctx, ui, a),
            Command::Upgrade(a) => upgrade::run(ctx, ui, a),
            Command::Fold(a) => fold::run(ctx, ui, a),
            Command::Checkpoint(a) => fold::run_checkpoint(ctx, ui, a),
            Command::Reset(a) => reset::run(ctx, ui, a),
            Command::Reflog(a) => reflog::run(ctx, ui, a),
            Command::Push(a) => push::run(ctx, ui, a),
            Command::Pull(a) => pull::run(ctx, ui, a),
            Command::Clone(a) => clone::run(ctx, ui, a),
            Command::Import(a) => import::run(ctx, ui, a),
            Command::Capture(a) => capture::run(ctx, ui, a),
            Command::Replay(a) => replay::run(ctx, ui, a),
            Command::Export(a) => export::run(ctx, ui, a),
            Command::Mcp(a) => mcp::run(ctx, ui, a),
            Command::Serve(a) => serve::run(ctx, ui, a),
            Command::Status(a) => status::run(ctx, ui, a),
            Command::Demo(a) => demo::run(ctx, ui, a),
        }
    }
}
