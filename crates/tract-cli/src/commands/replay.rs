//! `tract replay`.

use crate::arguments::rev;
use crate::context::Context;
use crate::error::CommandError;
use crate::output;
use crate::render::count;
use crate::ui::Ui;
use crate::vocabulary::ReplayReport;
use std::fmt::Write;
use std::time::Duration;
use tract_core::{Api, BranchName, Error, ReplayOptions, ToolDef};

/// How long every try of one model request may take in all, retries and their waits included.
const DEADLINE: Duration = Duration::from_secs(115);

/// Rerun a recorded session on another model: the branch is forked where the replay starts
/// (--branch names the new branch; default replay/BRANCH/N), each model answer is committed
/// with its usage, each tool call it makes is answered from the results the session recorded
/// (matched by tool and canonical arguments), and the user messages the session was sent
/// follow in order. A call the recording has no result for is a divergence: the replay stops
/// there. An interrupted replay goes on with --resume.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The branch to replay. (Not named `branch`: that is the global `--branch`, here the
    /// replay's new branch.)
    #[arg(value_name = "BRANCH")]
    original: String,
    /// The model to ask (with --resume: default, the one the replay started with).
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
    /// The API's base URL (default: TRACT_LLM_BASE_URL, OPENAI_BASE_URL, else OpenAI's).
    #[arg(long, value_name = "URL")]
    base_url: Option<String>,
    /// The API spoken: OpenAI chat completions, or Anthropic's Messages API.
    #[arg(long, value_enum, default_value_t = ProviderArg::Openai)]
    provider: ProviderArg,
    /// Where to start: the new branch is forked at this commit of BRANCH's history (default:
    /// its first user message).
    #[arg(long, value_name = "REV")]
    from: Option<String>,
    /// Another system prompt in place of the session's, or @FILE to read it from a file.
    #[arg(long, value_name = "TEXT|@FILE")]
    system: Option<String>,
    /// The tools offered: a JSON file of OpenAI or Anthropic tool definitions (default:
    /// inferred from the session's calls).
    #[arg(long, value_name = "FILE")]
    tools: Option<std::path::PathBuf>,
    /// Go on with the replay's branch (--branch, else the newest replay of BRANCH) from its
    /// tip.
    #[arg(long)]
    resume: bool,
    /// At most this many model requests.
    #[arg(long, value_name = "N", default_value_t = 100)]
    max_requests: u64,
    /// How long one try of a request may take, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    timeout: u64,
    /// Tries after the first, on 429, 5xx, timeouts and dropped connections (all within
    /// 2 minutes a request).
    #[arg(long, value_name = "N", default_value_t = 3)]
    retries: u32,
    /// What the replay did as JSON.
    #[arg(long)]
    json: bool,
}

/// The API `tract replay` speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ProviderArg {
    /// OpenAI chat completions (`POST {base-url}/chat/completions`).
    Openai,
    /// Anthropic's Messages API (`POST {base-url}/messages`).
    Anthropic,
}

/// Runs `tract replay`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let original = BranchName::new(&a.original)?;
    let t = ctx.open_on(&original)?;
    t.require_branch(&original)?;
    let branch = match ctx.branch_on_command_line() {
        true => ctx.branch_flag().map(BranchName::new).transpose()?,
        false => None,
    };
    let model = match (&a.model, a.resume) {
        (Some(m), _) => Some(m.clone()),
        (None, true) => None,
        (None, false) => {
            return Err(CommandError::invalid_input(
                "tract replay needs --model NAME (the model to replay the session on)",
            ));
        }
    };
    let system = crate::arguments::text_or_file(a.system.as_deref())?;
    let tools = match &a.tools {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| Error::io(path.clone(), e))?;
            let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                CommandError::invalid_input(format!("--tools {}: not JSON ({e})", path.display()))
            })?;
            Some(ToolDef::parse_all(&value)?)
        }
        None => None,
    };
    // A resumed replay is asked of the model it started with unless another is named.
    let model = match model {
        Some(m) => m,
        None => t.replay_model(&original, branch.as_ref())?,
    };
    let mut client = ctx.env().llm(a.base_url.clone(), Some(model), None)?;
    client.api = match a.provider {
        ProviderArg::Openai => Api::ChatCompletions,
        ProviderArg::Anthropic => Api::Messages,
    };
    client.timeout = Duration::from_secs(a.timeout.max(1));
    client.retries = a.retries;
    client.deadline = Some(DEADLINE);
    let branch = match (branch, a.resume) {
        (Some(b), _) => Some(b),
        (None, false) => Some(t.next_replay_branch(&original)?),
        (None, true) => None,
    };
    let mut opts = ReplayOptions::new(original, client);
    opts.branch = branch;
    opts.from = a.from.as_deref().map(rev).transpose()?;
    opts.system = system;
    opts.tools = tools;
    opts.resume = a.resume;
    opts.max_requests = a.max_requests;
    let o = t.replay(&opts)?;
    if a.json {
        output::print(ui, &ReplayReport::from(&o), false);
        return Ok(());
    }
    let mut out = String::new();
    let from = o.from.map(|c| c.short()).unwrap_or_default();
    let _ = writeln!(
        out,
        "replay of {} on {} (forked at {from})",
        o.original, o.branch
    );
    let _ = writeln!(
        out,
        "  {}; {} answered from the recording{}; {} of {} sent",
        count(o.requests, "request", "requests"),
        count(o.matched, "tool call", "tool calls"),
        match o.answered_by_hook {
            0 => String::new(),
            n => format!(", {} by the divergence hook", count(n, "call", "calls")),
        },
        count(o.users_sent, "user message", "user messages"),
        o.users_total,
    );
    let _ = writeln!(
        out,
        "  tokens: {} in, {} out, {} read from the cache",
        o.usage.input_tokens, o.usage.output_tokens, o.usage.cache_read_input_tokens
    );
    match (&o.divergence, o.finished, o.stopped_at_limit) {
        (Some(d), _, _) => {
            let _ = writeln!(
                out,
                "  divergence at step {}: {} {} has no recorded result; the replay stopped there",
                d.step, d.tool, d.arguments
            );
        }
        (None, true, _) => {
            let _ = writeln!(out, "  finished: every user message sent and answered");
        }
        (None, false, true) => {
            let _ = writeln!(
                out,
                "  stopped after --max-requests {}; go on with --resume",
                a.max_requests
            );
        }
        (None, false, false) => {}
    }
    let _ = writeln!(out, "compare: tract diff {} {}", o.original, o.branch);
    ui.print(&out);
    Ok(())
}
