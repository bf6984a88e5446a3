//! `tract mcp`: the store's history as Model Context Protocol tools, over stdio.
//!
//! An agent recalls its past through these tools: search, the log, one commit, tool results
//! and turns, a branch's status and what its requests cost. Every tool names its branch (default: the branch the store's
//! `HEAD` is on); a branch that does not exist is a tool error naming the closest branches.
//! Writes (`edit`, `compress`) are served only with `--allow-writes`. Each tool answers with
//! JSON text, in the types `--json` and the web API use ([`crate::vocabulary`]): commits
//! without their messages and, in lists, with their texts cut. A tool error is its
//! `error: ...` line, with the error's category and message as structured content
//! (`{"error": {"category", "message"}}`).

use crate::arguments::when_us;
use crate::commands::search::DEFAULT_HITS;
use crate::context::Context;
use crate::error::CommandError;
use crate::ui::Ui;
use crate::vocabulary::{
    Branch, Commit, CompressReport, Detail, HistoryDiffReport, SearchHit, Status, ToolTurn,
    UsageReport, Version, ViewDiffReport,
};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::{ErrorData, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tract_core::{
    Bind, BranchName, CompressRequest, Content, Manual, Rev, Role, SearchQuery, SearchScope, Tract,
};

/// Serve the store's history to an agent as MCP tools over stdio (search_history, log, show,
/// find_tool_results, find_tool_turns, sessions, status, usage, diff; edit and compress with
/// --allow-writes).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Also serve `edit` and `compress`, which change history (the originals stay in it).
    #[arg(long)]
    allow_writes: bool,
}

/// Runs `tract mcp` until the client closes standard input.
pub fn run(ctx: &Context, _ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    // Opened once: every branch's handle shares this store's backend.
    let head = ctx.open_head()?;
    let server = History::new(head, a.allow_writes);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CommandError::invalid_input(format!("cannot start the MCP server: {e}")))?;
    runtime.block_on(async move {
        let service = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| CommandError::invalid_input(format!("MCP: {e}")))?;
        service
            .waiting()
            .await
            .map_err(|e| CommandError::invalid_input(format!("MCP: {e}")))?;
        Ok(())
    })
}

/// The server: the store, a handle per branch asked for, and the tools served.
#[derive(Clone)]
struct History {
    head: Arc<Tract>,
    handles: Arc<Mutex<HashMap<String, Arc<Tract>>>>,
    tool_router: ToolRouter<History>,
}

/// A tool's answer. Its failure is a tool error ([`tool_error`]); `ErrorData`, a protocol
/// error, is left to rmcp for requests that do not parse.
type Answer = Result<CallToolResult, ErrorData>;

/// A failed tool call as the agent reads it: `error: MESSAGE` as its text, and the error's
/// category with the message as structured content, for clients that act on the kind.
fn tool_error(e: &tract_core::Error) -> CallToolResult {
    let message = e.to_string();
    let mut result = CallToolResult::error(vec![ContentBlock::text(format!("error: {message}"))]);
    result.structured_content = Some(json!({"error": {
        "category": e.category().as_str(),
        "message": message,
    }}));
    result
}

/// The branch parameter every tool takes.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct BranchOnly {
    /// The branch (default: the branch the store's HEAD is on).
    branch: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct DiffArgs {
    /// The context compared from: a branch, a commit id (or a prefix of one), HEAD~N, or
    /// NAME@{N} (where ref NAME was N moves ago); alone, the commit whose change is shown.
    a: String,
    /// The context compared to (omit it to see what commit `a` did to its view).
    b: Option<String>,
    /// Compare the histories instead (the commits only one holds, and where they meet).
    #[serde(default)]
    history: bool,
    /// The branch HEAD stands for in the revisions (default: the branch the store's HEAD is
    /// on).
    branch: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct SearchArgs {
    /// What to look for: words (every one must appear; best matches first), "a phrase" (in
    /// this order), -word (must not appear), a OR b (either). Identifiers and paths
    /// (getUserName, src/main.rs) match as phrases of their parts; case and punctuation are
    /// ignored. With regex=true: a regular expression.
    query: String,
    /// The branch (default: the branch the store's HEAD is on).
    branch: Option<String>,
    /// Search every branch (then leave out branch); each hit names the branches that hold it.
    all_branches: Option<bool>,
    /// Only messages of this role: system, user, assistant or tool.
    role: Option<String>,
    /// Only tool calls and results of this tool.
    tool: Option<String>,
    /// Search every version in history (edited originals, compressed runs), not only the view.
    history: Option<bool>,
    /// Only commits of this operation: append, edit, compress or merge.
    op: Option<String>,
    /// Only tool results marked as errors.
    errors: Option<bool>,
    /// Only commits made at or after this time: RFC 3339 (2026-01-31T09:00:00Z), or a
    /// duration ago (7d, 2h, 30min).
    since: Option<String>,
    /// Only commits made before this time: RFC 3339, or a duration ago.
    until: Option<String>,
    /// Skip this many hits: the next page (offset=20 after 20 hits).
    offset: Option<usize>,
    /// At most this many hits (default 20).
    limit: Option<usize>,
    /// Treat query as a regular expression: hits in conversation order, not ranked, on one
    /// branch.
    regex: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct LogArgs {
    /// The branch (default: the branch the store's HEAD is on).
    branch: Option<String>,
    /// At most this many commits, newest first (default 20).
    limit: Option<usize>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct ShowArgs {
    /// A commit id or unique prefix (4+ hex digits), a branch name, HEAD, REV~N.
    id: String,
    /// The branch HEAD means (default: the branch the store's HEAD is on).
    branch: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct ResultsArgs {
    /// Only results of this tool.
    name: Option<String>,
    /// Only results after this commit.
    after: Option<String>,
    /// Only results before this commit.
    before: Option<String>,
    /// The branch (default: the branch the store's HEAD is on).
    branch: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct TurnsArgs {
    /// Only turns that call this tool.
    name: Option<String>,
    /// The branch (default: the branch the store's HEAD is on).
    branch: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct EditArgs {
    /// The message to replace in the view (a commit id or prefix).
    id: String,
    /// Its new content.
    content: String,
    /// The branch (default: the branch the store's HEAD is on).
    branch: Option<String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct CompressArgs {
    /// The messages to summarize (commit ids or prefixes, consecutive in the view).
    commits: Vec<String>,
    /// The summary that replaces them.
    summary: String,
    /// The branch (default: the branch the store's HEAD is on).
    branch: Option<String>,
}

/// Up to this many characters of a message's content in lists (`show` gives all of it).
const PREVIEW: usize = 2_000;

/// How lists show their commits: the texts cut to [`PREVIEW`], without the messages, which
/// repeat them (an agent pays for every token it reads).
const LISTED: Detail = Detail::Texts {
    max_chars: Some(PREVIEW),
};

/// `show`'s answer: the commit in full, and every version of its position.
#[derive(Serialize)]
struct Shown {
    /// The commit, with the version in view.
    #[serde(flatten)]
    commit: Commit,
    /// The position's versions, oldest first (the original, then each edit; empty for a
    /// commit that is not a position of the view).
    versions: Vec<Version>,
}

#[tool_router(router = read_tools)]
impl History {
    /// Search what the agent saw, said and got back from tools.
    #[tool(
        description = "Search message text, tool calls and tool results of a branch's view (history=true: every version ever committed; all_branches=true: every branch). Best matches first: every word must appear, \"quoted phrases\" match in order, -word excludes, a OR b takes either; case and punctuation are ignored (regex=true scans with a regular expression instead). Returns the matching commits, each with a snippet, its score and the branches that hold it; offset pages on."
    )]
    fn search_history(&self, Parameters(a): Parameters<SearchArgs>) -> Answer {
        let all = a.all_branches.unwrap_or(false);
        // Every branch: the store's HEAD handle searches them all.
        let branch = a.branch.as_deref().filter(|_| !all);
        self.answer(branch, |t| {
            // Refused here in the tool's own words (the core's name the CLI's options).
            let refuse = |message: &str| {
                Err(tract_core::Error::InvalidInput {
                    message: message.into(),
                })
            };
            if all && a.branch.is_some() {
                return refuse(
                    "all_branches searches every branch and branch names one: give one of them",
                );
            }
            let regex = a.regex.unwrap_or(false);
            if all && regex {
                return refuse(
                    "a regular expression scans one branch: leave out all_branches, or search by \
                     words",
                );
            }
            let now_us = t.store().options().clock.now_us();
            let when =
                |name: &str, v: Option<&str>| v.map(|text| when_us(name, text, now_us)).transpose();
            let q = SearchQuery {
                query: a.query,
                regex,
                role: a.role.as_deref().map(Role::parse).transpose()?,
                tool: a.tool,
                history: a.history.unwrap_or(false),
                scope: match all {
                    true => SearchScope::All,
                    false => SearchScope::Here,
                },
                op: a.op,
                errors: a.errors.unwrap_or(false),
                since_us: when("since", a.since.as_deref())?,
                until_us: when("until", a.until.as_deref())?,
                offset: a.offset.unwrap_or(0),
                limit: Some(a.limit.unwrap_or(DEFAULT_HITS)),
            };
            let hits = t.search(&q)?;
            let agents = t.agents()?;
            // The snippet says what matched; `show` gives the rest.
            Ok(hits
                .iter()
                .map(|h| SearchHit::new(h, Detail::Brief).with_agents(&agents))
                .collect::<Vec<_>>())
        })
    }

    /// The branch's history, newest first.
    #[tool(
        description = "The history of a branch, newest first: each commit's id, operation, role, tool, tokens and content (long content truncated; show gives all of it)."
    )]
    fn log(&self, Parameters(a): Parameters<LogArgs>) -> Answer {
        self.answer(a.branch.as_deref(), |t| {
            let log = t.log(&tract_core::LogQuery {
                limit: Some(a.limit.unwrap_or(20)),
                ..Default::default()
            })?;
            Ok(log
                .iter()
                .map(|c| Commit::new(c, LISTED))
                .collect::<Vec<_>>())
        })
    }

    /// One commit in full.
    #[tool(
        description = "One commit in full: its operation, parents, message and full content, and every version of the message when it was edited."
    )]
    fn show(&self, Parameters(a): Parameters<ShowArgs>) -> Answer {
        self.answer(a.branch.as_deref(), |t| {
            let whole = Detail::Texts { max_chars: None };
            let info = t.get_commit(Rev::parse(&a.id)?)?;
            let into = match info.message {
                Some(_) => t.compressed_into(info.id)?,
                None => None,
            };
            let versions = crate::versions::of(t, info.id.into())?;
            Ok(Shown {
                commit: Commit::new(&info, whole)
                    .compressed_into(into.as_ref())
                    .in_view(&versions, whole),
                versions: Version::list(&versions, whole),
            })
        })
    }

    /// Tool results, oldest first.
    #[tool(
        description = "Tool results in a branch's view, oldest first (optionally of one tool, after or before a commit): which call each answers, whether it failed, and its content (long content truncated)."
    )]
    fn find_tool_results(&self, Parameters(a): Parameters<ResultsArgs>) -> Answer {
        self.answer(a.branch.as_deref(), |t| {
            let found = t.find_tool_results(&tract_core::ResultQuery {
                name: a.name.clone(),
                after: a.after.as_deref().map(Rev::parse).transpose()?,
                before: a.before.as_deref().map(Rev::parse).transpose()?,
            })?;
            Ok(found
                .iter()
                .map(|c| Commit::new(c, LISTED))
                .collect::<Vec<_>>())
        })
    }

    /// Tool turns: each call with its result.
    #[tool(
        description = "Tool turns in a branch's view: each assistant message that called tools, with every call's name, arguments, state (pending, ok, error) and result commit."
    )]
    fn find_tool_turns(&self, Parameters(a): Parameters<TurnsArgs>) -> Answer {
        self.answer(a.branch.as_deref(), |t| {
            let turns = t.find_tool_turns(a.name.as_deref())?;
            Ok(turns
                .iter()
                .map(|turn| ToolTurn::new(turn, LISTED))
                .collect::<Vec<_>>())
        })
    }

    /// Every branch, each with the agent whose session it holds.
    #[tool(
        description = "Every branch of the store: each one session or conversation, with the agent that wrote it and that agent's version (agent: claude-code, codex or gemini, where an agent's session was imported or captured; null otherwise), its head, the messages and tokens in its view, and when it last moved."
    )]
    fn sessions(&self) -> Answer {
        self.answer(None, |t| {
            Ok(t.branches()?.iter().map(Branch::from).collect::<Vec<_>>())
        })
    }

    /// Where a branch is and what its view holds.
    #[tool(
        description = "A branch's status: its head, the messages and tokens in its view, and tool calls still without a result."
    )]
    fn status(&self, Parameters(a): Parameters<BranchOnly>) -> Answer {
        self.answer(a.branch.as_deref(), |t| Ok(Status::from(&t.status()?)))
    }

    /// How two contexts differ, or what one commit did.
    #[tool(
        description = "Compare two contexts as the model saw them: where the views of revisions a and b part, the messages only one holds and those edited between them (with their text), and the tokens of each. With a alone: what that commit did to its view, for a compression or a clear the messages it took out of view and what replaced them. With history=true: the commits only one history holds."
    )]
    fn diff(&self, Parameters(a): Parameters<DiffArgs>) -> Answer {
        let from = Rev::parse(&a.a);
        let to = a.b.as_deref().map(Rev::parse).transpose();
        match (a.history, to) {
            (true, Ok(Some(to))) => self.answer(a.branch.as_deref(), |t| {
                Ok(HistoryDiffReport::from(&t.diff_history(&from?, &to)?))
            }),
            (true, Ok(None)) => self.answer(a.branch.as_deref(), |_| -> tract_core::Result<()> {
                Err(tract_core::Error::InvalidInput {
                    message: "history=true compares two revisions: give b".into(),
                })
            }),
            (false, Ok(to)) => self.answer(a.branch.as_deref(), |t| {
                let from = from?;
                Ok(ViewDiffReport::from(&match to {
                    Some(to) => t.diff(&from, &to)?,
                    None => t.diff_commit(&from)?,
                }))
            }),
            (_, Err(e)) => self.answer(a.branch.as_deref(), |_| -> tract_core::Result<()> {
                Err(e)
            }),
        }
    }

    /// What a branch's model requests cost.
    #[tool(
        description = "What a branch's model requests cost, summed along its history (what a compaction took out of view too): input, output, cache read and cache creation tokens, the cache hit rate, per model, and the cost at the store's price table if it has one."
    )]
    fn usage(&self, Parameters(a): Parameters<BranchOnly>) -> Answer {
        self.answer(a.branch.as_deref(), |t| {
            Ok(UsageReport::from(
                &t.usage(None, &tract_core::UsageOptions::default())?,
            ))
        })
    }
}

#[tool_router(router = write_tools)]
impl History {
    /// Replaces a message's content in the view.
    #[tool(
        description = "Replace the content of a message in a branch's view (for example a long tool result with what matters in it). The original stays in history."
    )]
    fn edit(&self, Parameters(a): Parameters<EditArgs>) -> Answer {
        self.answer(a.branch.as_deref(), |t| {
            let info = t.edit(Rev::parse(&a.id)?, Content::Text(a.content))?;
            Ok(Commit::new(&info, LISTED))
        })
    }

    /// Replaces consecutive messages with a summary.
    #[tool(
        description = "Replace consecutive messages of a branch's view with a summary you give. The originals stay in history."
    )]
    fn compress(&self, Parameters(a): Parameters<CompressArgs>) -> Answer {
        self.answer(a.branch.as_deref(), |t| {
            let commits = a
                .commits
                .iter()
                .map(|c| Rev::parse(c))
                .collect::<Result<Vec<_>, _>>()?;
            let manual = Manual(a.summary);
            let req = CompressRequest {
                commits: Some(commits),
                summarizer: Some(&manual),
                ..CompressRequest::default()
            };
            Ok(CompressReport::new(&t.compress(&req)?, LISTED))
        })
    }
}

#[tool_handler(router = self.tool_router, name = "tract", instructions = "The history of this agent's conversations, kept by tract: search what was said and what tools returned, read the log, show a commit in full. sessions lists the branches, each with the agent (and version) whose session it holds; every other tool takes a branch (default: the store's current branch).")]
impl ServerHandler for History {}

impl History {
    fn new(head: Tract, allow_writes: bool) -> Self {
        let tool_router = if allow_writes {
            Self::read_tools() + Self::write_tools()
        } else {
            Self::read_tools()
        };
        History {
            head: Arc::new(head),
            handles: Arc::new(Mutex::new(HashMap::new())),
            tool_router,
        }
    }

    /// Runs a tool on `branch`: its JSON as the answer, its failure as the tool's error text
    /// (the agent reads it; the server goes on).
    fn answer<T: Serialize>(
        &self,
        branch: Option<&str>,
        tool: impl FnOnce(&Tract) -> tract_core::Result<T>,
    ) -> Answer {
        let result = self.on(branch).and_then(|t| tool(&t));
        Ok(match result {
            Ok(v) => CallToolResult::success(vec![ContentBlock::text(
                serde_json::to_string_pretty(&v).unwrap_or_default(),
            )]),
            Err(e) => tool_error(&e),
        })
    }

    /// The handle on `branch` (default: the branch the store's `HEAD` is on); a branch that
    /// does not exist is an error naming the closest that do (as the CLI says it).
    fn on(&self, branch: Option<&str>) -> tract_core::Result<Arc<Tract>> {
        let Some(name) = branch else {
            return Ok(Arc::clone(&self.head));
        };
        let name = BranchName::new(name)?;
        self.head.require_branch(&name)?;
        let mut handles = self.handles.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = handles.get(name.as_str()) {
            return Ok(Arc::clone(t));
        }
        let t = Arc::new(Tract::from_store(
            self.head.store().clone(),
            &Bind::Branch(name.clone()),
        )?);
        handles.insert(name.to_string(), Arc::clone(&t));
        Ok(t)
    }
}
