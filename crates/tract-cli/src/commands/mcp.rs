//! `tract mcp`: the store's history as Model Context Protocol tools, over stdio.
//!
//! An agent recalls its past through these tools: search, the log, one commit, tool results
//! and turns, a branch's status. Every tool names its branch (default: the branch the store's
//! `HEAD` is on); a branch that does not exist is a tool error naming the closest branches.
//! Writes (`edit`, `compress`) are served only with `--allow-writes`. Each tool answers with
//! JSON text; a tool error is its `error: ...` line, with the error's category and message as
//! structured content (`{"error": {"category", "message"}}`).

use crate::context::Context;
use crate::error::CommandError;
use crate::ui::Ui;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::{ErrorData, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tract_core::{
    Bind, BranchName, CommitInfo, CompressRequest, Content, Manual, Rev, Role, SearchQuery, Tract,
};

/// Serve the store's history to an agent as MCP tools over stdio (search_history, log, show,
/// find_tool_results, find_tool_turns, status; edit and compress with --allow-writes).
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
struct SearchArgs {
    /// Text to look for (case-insensitive) in message text, tool calls and results.
    query: String,
    /// The branch (default: the branch the store's HEAD is on).
    branch: Option<String>,
    /// Only messages of this role: system, user, assistant or tool.
    role: Option<String>,
    /// Only tool calls and results of this tool.
    tool: Option<String>,
    /// Search every version in history (edited originals, compressed runs), not only the view.
    history: Option<bool>,
    /// At most this many hits (default 20).
    limit: Option<usize>,
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

fn preview(text: &str) -> Value {
    if text.chars().count() <= PREVIEW {
        return text.into();
    }
    let cut: String = text.chars().take(PREVIEW).collect();
    format!("{cut}… [truncated; show gives all of it]").into()
}

fn info_json(c: &CommitInfo, full: bool) -> Value {
    let m = c.message.as_deref();
    let content = m.map(|m| m.content.text().into_owned());
    let mut o = json!({
        "commit": c.id.to_hex(),
        "op": c.op(),
        "time": humantime::format_rfc3339_seconds(
            std::time::UNIX_EPOCH + std::time::Duration::from_micros(c.commit.timestamp_us)
        ).to_string(),
        "tokens": c.token_count,
    });
    if let Some(m) = m {
        o["role"] = m.role.as_str().into();
        if let Some(n) = &m.name {
            o["name"] = n.clone().into();
        }
        if let Some(id) = &m.tool_call_id {
            o["tool_call_id"] = id.clone().into();
        }
        if m.is_error {
            o["is_error"] = true.into();
        }
        if !m.tool_calls.is_empty() {
            o["tool_calls"] = m
                .tool_calls
                .iter()
                .map(|t| json!({"id": t.id, "name": t.name, "arguments": t.arguments}))
                .collect();
        }
    }
    if let Some(text) = content {
        o["content"] = if full { text.into() } else { preview(&text) };
    }
    if let Some(cur) = &c.current {
        o["current_commit"] = cur.commit.to_hex().into();
        let text = cur.message.content.text().into_owned();
        o["current_content"] = if full { text.into() } else { preview(&text) };
    }
    if let Some(note) = &c.commit.message {
        o["note"] = note.clone().into();
    }
    o
}

#[tool_router(router = read_tools)]
impl History {
    /// Search what the agent saw, said and got back from tools.
    #[tool(
        description = "Search message text, tool calls and tool results of a branch (its view, or with history=true every version ever committed). Returns the matching commits with a snippet."
    )]
    fn search_history(&self, Parameters(a): Parameters<SearchArgs>) -> Answer {
        self.answer(a.branch.as_deref(), |t| {
            let q = SearchQuery {
                query: a.query,
                role: a.role.as_deref().map(Role::parse).transpose()?,
                tool: a.tool,
                history: a.history.unwrap_or(false),
                limit: Some(a.limit.unwrap_or(20)),
                ..SearchQuery::default()
            };
            let hits = t.search(&q)?;
            Ok(hits
                .iter()
                .map(|h| {
                    let mut o = info_json(&h.info, false);
                    o["snippet"] = h.snippet.clone().into();
                    if let Some(map) = o.as_object_mut() {
                        map.remove("content");
                    }
                    o
                })
                .collect())
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
            Ok(log.iter().map(|c| info_json(c, false)).collect())
        })
    }

    /// One commit in full.
    #[tool(
        description = "One commit in full: its operation, parents, message and full content, and every version of the message when it was edited."
    )]
    fn show(&self, Parameters(a): Parameters<ShowArgs>) -> Answer {
        self.answer(a.branch.as_deref(), |t| {
            let rev = Rev::parse(&a.id)?;
            let info = t.get_commit(rev.clone())?;
            let mut o = info_json(&info, true);
            o["parents"] = info.commit.parents.iter().map(|p| p.to_hex()).collect();
            if let Ok(versions) = t.edit_history(rev)
                && let [_, .., last] = versions.as_slice()
            {
                if let Some(m) = last.message.as_deref() {
                    o["current_commit"] = last.id.to_hex().into();
                    o["current_content"] = m.content.text().into_owned().into();
                }
                o["versions"] = versions.iter().map(|v| info_json(v, true)).collect();
            }
            Ok(o)
        })
    }

    /// Tool results, oldest first.
    #[tool(
        description = "Tool results in a branch's view, oldest first (optionally of one tool, after or before a commit): which call each answers, whether it failed, and its content (long content truncated)."
    )]
    fn find_tool_results(&self, Parameters(a): Parameters<ResultsArgs>) -> Answer {
        self.answer(a.branch.as_deref(), |t| {
            let after = a.after.as_deref().map(Rev::parse).transpose()?;
            let before = a.before.as_deref().map(Rev::parse).transpose()?;
            let found = t.find_tool_results(a.name.as_deref(), after.as_ref(), before.as_ref())?;
            Ok(found.iter().map(|c| info_json(c, false)).collect())
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
                .map(|turn| {
                    json!({
                        "call": turn.call.id.to_hex(),
                        "calls": turn.calls.iter().map(|c| json!({
                            "id": c.call_id,
                            "name": c.name,
                            "arguments": c.arguments,
                            "state": c.state.as_str(),
                            "result": c.result_commit.map(|r| r.to_hex()),
                        })).collect::<Vec<_>>(),
                    })
                })
                .collect())
        })
    }

    /// Where a branch is and what its view holds.
    #[tool(
        description = "A branch's status: its head, the messages and tokens in its view, and tool calls still without a result."
    )]
    fn status(&self, Parameters(a): Parameters<BranchOnly>) -> Answer {
        self.answer(a.branch.as_deref(), |t| {
            let s = t.status()?;
            Ok(json!({
                "branch": s.head.branch(),
                "head": s.head.commit.map(|c| c.to_hex()),
                "messages": s.messages,
                "tokens": s.token_count,
                "unanswered_calls": s.unanswered_calls,
            }))
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
            Ok(info_json(&info, false))
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
            let out = t.compress(&req)?;
            Ok(json!({
                "commits": out.commits.iter().map(|c| c.id.to_hex()).collect::<Vec<_>>(),
                "tokens_before": out.tokens_before,
                "tokens_after": out.tokens_after,
            }))
        })
    }
}

#[tool_handler(router = self.tool_router, name = "tract", instructions = "The history of this agent's conversations, kept by tract: search what was said and what tools returned, read the log, show a commit in full. Every tool takes a branch (default: the store's current branch).")]
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
    fn answer(
        &self,
        branch: Option<&str>,
        tool: impl FnOnce(&Tract) -> tract_core::Result<Value>,
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
