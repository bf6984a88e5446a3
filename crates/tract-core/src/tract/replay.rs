//! Replaying a recorded session on another model: [`Tract::replay`].
//!
//! The replay's branch is forked from the original where the replay starts, and goes on one
//! model request at a time: the view is sent, the answer committed with its usage, each tool
//! call it makes answered from the results the original recorded (a call with none is a
//! divergence: the replay stops, or a hook answers it), and when the model answers without
//! calling a tool, the next user message the original was sent is. Every answer is committed as
//! it comes, so a replay that stopped goes on from its branch's tip (`resume`): what the tip is
//! says what comes next.

use crate::error::{Error, Result};
use crate::id::CommitId;
use crate::object::{Content, Message, Op, Role};
use crate::ops::history::LogQuery;
use crate::ops::replay::{Divergence, REPLAY_RECORD_KIND, Recording, ReplayOutcome, ToolDef};
use crate::summarize::compress::SUMMARY_KEY;
use crate::summarize::llm::{Api, DEFAULT_MAX_TOKENS, OpenAiCompatible};
use crate::usage::Usage;
use crate::view::info::CommitInfo;
use crate::view::revision::{BranchName, Rev};
use crate::write::record::RecordQuery;
use crate::write::txn::AppendOptions;
use serde_json::{Value, json};

use super::Tract;

/// Answers a call the recording has no result for: `Some(text)` is the call's result, `None`
/// stops the replay there.
pub type DivergenceHook<'a> = &'a dyn Fn(&Divergence) -> Result<Option<String>>;

/// What to replay, where, and on which model.
pub struct ReplayOptions<'a> {
    /// The branch replayed.
    pub original: BranchName,
    /// The replay's branch (default: [`Tract::next_replay_branch`]); with `resume`, the one
    /// to go on with (default: the newest replay of `original`).
    pub branch: Option<BranchName>,
    /// Where the replay starts: the replay's branch is forked here, on the original's
    /// first-parent history (default: its first user message).
    pub from: Option<Rev>,
    /// The model, its endpoint and key, the API spoken, timeouts and retries.
    pub client: OpenAiCompatible,
    /// Another system prompt, in place of the original's (which it must have).
    pub system: Option<String>,
    /// The tools offered (default: those of the replay being resumed, else inferred from the
    /// original's calls).
    pub tools: Option<Vec<ToolDef>>,
    /// Go on with an existing replay's branch from its tip.
    pub resume: bool,
    /// At most this many model requests in this run.
    pub max_requests: u64,
    /// Answers a divergence instead of stopping there.
    pub on_divergence: Option<DivergenceHook<'a>>,
}

impl<'a> ReplayOptions<'a> {
    /// A replay of `original` on `client`'s model, with the defaults: a new branch, from the
    /// first user message, the original's system prompt, tools inferred, at most 100 requests,
    /// stopping at a divergence.
    pub fn new(original: BranchName, client: OpenAiCompatible) -> Self {
        ReplayOptions {
            original,
            branch: None,
            from: None,
            client,
            system: None,
            tools: None,
            resume: false,
            max_requests: 100,
            on_divergence: None,
        }
    }
}

/// What a replay's branch starts with (its record), so that a resumed one goes on alike.
#[derive(serde::Serialize, serde::Deserialize)]
struct Started {
    original: String,
    from: String,
    /// User messages in view at the fork point: those after it were sent by the replay.
    users_at_fork: u64,
    /// Assistant messages in view at the fork point: those after it are the model's answers.
    answers_at_fork: u64,
    model: String,
    api: String,
    base_url: String,
    /// The tools offered, as OpenAI function tools.
    tools: Vec<Value>,
}

/// The user messages the original was sent, and the assistant messages, among `view`'s.
fn counted(view: &[crate::formats::compile::CompiledMessage]) -> (u64, u64) {
    let users = view.iter().filter(|m| sent_by_a_user(&m.message)).count();
    let answers = view
        .iter()
        .filter(|m| m.message.role == Role::Assistant && !m.synthetic)
        .count();
    (users as u64, answers as u64)
}

/// Whether `m` is a user message the original was sent (not a summary tract wrote).
fn sent_by_a_user(m: &Message) -> bool {
    m.role == Role::User && !m.metadata.contains_key(SUMMARY_KEY)
}

impl Tract {
    /// The name a new replay of `original` takes: `replay/<original>/<n>`, `n` one past the
    /// highest taken.
    pub fn next_replay_branch(&self, original: &BranchName) -> Result<BranchName> {
        replay_branch(original, self.newest_replay(original)? + 1)
    }

    /// The highest `n` of the branches `replay/<original>/<n>` (0 when there is none).
    fn newest_replay(&self, original: &BranchName) -> Result<u64> {
        let prefix = format!("replay/{}/", original.as_str());
        // Names only: listing branches with their counts could replay views to count them.
        Ok(self
            .repo
            .read()?
            .branches()?
            .iter()
            .filter_map(|(name, _)| name.strip_prefix(&prefix)?.parse::<u64>().ok())
            .max()
            .unwrap_or(0))
    }

    /// Replays `opts.original` on another model (see the module's documentation), committing
    /// every answer on the replay's branch as it comes. Returns what it did; an error (the
    /// model failing past its retries, an answer that is not one) leaves every answer received
    /// before committed, for a `resume`.
    pub fn replay(&self, opts: &ReplayOptions<'_>) -> Result<ReplayOutcome> {
        self.require_branch(&opts.original)?;
        let original = opts.original.as_str();
        let tip = self.resolve(&Rev::parse(original)?)?;
        let mut history = self.log(&LogQuery {
            start: Some(Rev::from(tip)),
            ..LogQuery::default()
        })?;
        history.reverse();
        let appended = |c: &&CommitInfo| {
            matches!(
                c.commit.op,
                Op::Append
                    | Op::Merge {
                        strategy: crate::object::MergeStrategy::ToolResult { .. },
                        ..
                    }
            )
        };
        let mut recording = Recording::of_history(
            history
                .iter()
                .filter(appended)
                .filter_map(|c| c.message.as_deref()),
        );
        let (r, started) = match opts.resume {
            true => self.resumed(&opts.original, opts.branch.as_ref())?,
            false => self.replay_started(opts, &history, &recording)?,
        };
        let from = CommitId::from_hex(&started.from)
            .ok_or_else(|| Error::corrupt("a replay's record names no commit it started at"))?;
        let at = history
            .iter()
            .position(|c| c.id == from)
            .ok_or_else(|| not_on(&Rev::from(from), original))?;
        let users: Vec<Message> = history[at + 1..]
            .iter()
            .filter(appended)
            .filter_map(|c| c.message.as_deref())
            .filter(|m| sent_by_a_user(m))
            .cloned()
            .collect();
        let tools = match &opts.tools {
            Some(t) => t.clone(),
            None => ToolDef::parse_all(&Value::Array(started.tools.clone()))?,
        };
        let mut out = ReplayOutcome {
            original: original.to_string(),
            branch: r.head()?.branch().unwrap_or_default().to_string(),
            from: Some(from),
            users_total: users.len() as u64,
            ..ReplayOutcome::default()
        };
        loop {
            let view = r.compile()?;
            let (users_in_view, answers) = counted(&view.messages()?);
            out.users_sent = users_in_view.saturating_sub(started.users_at_fork);
            let pending = r.pending_tool_calls()?;
            if !pending.is_empty() {
                for call in pending {
                    let result = match recording.take(&call.name, &call.arguments) {
                        Some(m) => {
                            out.matched += 1;
                            let mut m = m.clone();
                            m.tool_call_id = Some(call.call_id.clone());
                            m
                        }
                        None => {
                            let d = Divergence {
                                step: answers.saturating_sub(started.answers_at_fork),
                                tool: call.name.clone(),
                                arguments: call.arguments.clone(),
                                call_id: call.call_id.clone(),
                            };
                            let answer = match opts.on_divergence {
                                Some(hook) => hook(&d)?,
                                None => None,
                            };
                            let Some(text) = answer else {
                                out.divergence = Some(d);
                                return Ok(out);
                            };
                            out.answered_by_hook += 1;
                            let mut m = Message::text(Role::Tool, text);
                            m.tool_call_id = Some(call.call_id.clone());
                            m.name = Some(call.name.clone());
                            m
                        }
                    };
                    r.append(result)?;
                }
                continue;
            }
            let last = view.entries().last().map(|e| e.shape.role);
            if last == Some(Role::Assistant) {
                match users.get(out.users_sent as usize) {
                    Some(m) => {
                        r.append(m.clone())?;
                        continue;
                    }
                    None => {
                        out.finished = true;
                        return Ok(out);
                    }
                }
            }
            if out.requests >= opts.max_requests {
                out.stopped_at_limit = true;
                return Ok(out);
            }
            let body = request_body(&view, &opts.client, &tools)?;
            let reply = opts.client.answer(&body)?;
            out.requests += 1;
            let answer = an_answer(&reply, &opts.client)?;
            if let Some(u) = Usage::of(&answer)? {
                out.usage.add(&u);
            }
            r.append_response(&reply, &AppendOptions::default())?;
        }
    }

    /// A new replay's branch, forked where it starts, with its record (and the system prompt
    /// given, in place of the original's).
    fn replay_started(
        &self,
        opts: &ReplayOptions<'_>,
        history: &[CommitInfo],
        recording: &Recording,
    ) -> Result<(Tract, Started)> {
        let original = opts.original.as_str();
        let from = match &opts.from {
            Some(rev) => {
                let id = self.resolve(rev)?;
                if !history.iter().any(|c| c.id == id) {
                    return Err(not_on(rev, original));
                }
                id
            }
            None => history
                .iter()
                .find(|c| {
                    matches!(c.commit.op, Op::Append)
                        && c.message.as_deref().is_some_and(sent_by_a_user)
                })
                .map(|c| c.id)
                .ok_or_else(|| {
                    Error::invalid_input(format!(
                        "branch '{original}' has no user message to replay from"
                    ))
                })?,
        };
        let at_fork = self.compile_at(&Rev::from(from))?.messages()?;
        let system = match &opts.system {
            None => None,
            Some(text) => {
                let first = at_fork
                    .first()
                    .filter(|m| m.message.role == Role::System)
                    .and_then(|m| m.position)
                    .ok_or_else(|| {
                        Error::invalid_input(format!(
                            "branch '{original}' has no system prompt at {} to replace",
                            from.short()
                        ))
                    })?;
                Some((first, text.clone()))
            }
        };
        let tools = match &opts.tools {
            Some(t) => t.clone(),
            None => ToolDef::infer(&recording.calls),
        };
        let started = Started {
            original: original.to_string(),
            from: from.to_hex(),
            users_at_fork: counted(&at_fork).0,
            answers_at_fork: counted(&at_fork).1,
            model: opts.client.model.clone(),
            api: match opts.client.api {
                Api::ChatCompletions => "openai".into(),
                Api::Messages => "anthropic".into(),
            },
            base_url: opts.client.shown_base_url(),
            tools: tools
                .iter()
                .map(|t| t.to_api(Api::ChatCompletions))
                .collect(),
        };
        let name = match &opts.branch {
            Some(b) => b.clone(),
            None => self.next_replay_branch(&opts.original)?,
        };
        let data = serde_json::to_string(&started)
            .map_err(|e| Error::invalid_op(format!("a replay's record: {e}")))?;
        let r = self.fork(&name, &Rev::from(from))?;
        r.record(REPLAY_RECORD_KIND, data, Vec::new())?;
        if let Some((position, text)) = system {
            r.edit(position, Content::Text(text))?;
        }
        Ok((r, started))
    }

    /// The model a replay of `original` started with: that on `branch`, else on the newest
    /// replay of `original` (what `resume` goes on with).
    pub fn replay_model(
        &self,
        original: &BranchName,
        branch: Option<&BranchName>,
    ) -> Result<String> {
        Ok(self.resumed(original, branch)?.1.model)
    }

    /// A handle on the branch a resumed replay of `original` goes on with (`branch`, else the
    /// newest replay of it), and what it started as.
    fn resumed(
        &self,
        original: &BranchName,
        branch: Option<&BranchName>,
    ) -> Result<(Tract, Started)> {
        let name = match branch {
            Some(b) => b.clone(),
            None => match self.newest_replay(original)? {
                0 => {
                    return Err(Error::invalid_input(format!(
                        "branch '{}' has no replay to resume",
                        original.as_str()
                    )));
                }
                n => replay_branch(original, n)?,
            },
        };
        self.require_branch(&name)?;
        let r = Tract::from_store(
            self.repo.store.clone(),
            &crate::repo::Bind::Branch(name.clone()),
        )?;
        let record = r
            .records(&RecordQuery {
                kind: Some(REPLAY_RECORD_KIND.to_string()),
                limit: Some(1),
                before: None,
            })?
            .into_iter()
            .next()
            .ok_or_else(|| {
                Error::invalid_input(format!(
                    "branch '{}' is not a replay (it has no record of one)",
                    name.as_str()
                ))
            })?;
        let started: Started = serde_json::from_str(&record.data)
            .map_err(|e| Error::corrupt(format!("a replay's record does not read: {e}")))?;
        if started.original != original.as_str() {
            return Err(Error::invalid_input(format!(
                "branch '{}' replays '{}', not '{}'",
                name.as_str(),
                started.original,
                original.as_str()
            )));
        }
        Ok((r, started))
    }
}

/// The `n`-th replay's branch of `original`: `replay/<original>/<n>`.
fn replay_branch(original: &BranchName, n: u64) -> Result<BranchName> {
    BranchName::new(&format!("replay/{}/{n}", original.as_str()))
}

/// `rev` is not on the first-parent history of `branch`.
fn not_on(rev: &Rev, branch: &str) -> Error {
    Error::invalid_input(format!(
        "--from {rev} is not on the history of branch '{branch}'"
    ))
}

/// The request for the model's next answer: the view, and the tools offered.
fn request_body(
    view: &crate::formats::compile::Compiled,
    client: &OpenAiCompatible,
    tools: &[ToolDef],
) -> Result<Value> {
    let mut body = match client.api {
        Api::ChatCompletions => json!({"model": client.model, "messages": view.to_openai()?}),
        Api::Messages => {
            let mut b = view.to_anthropic()?;
            b["model"] = json!(client.model);
            b["max_tokens"] = json!(DEFAULT_MAX_TOKENS);
            b
        }
    };
    if !tools.is_empty() {
        body["tools"] = tools.iter().map(|t| t.to_api(client.api)).collect();
    }
    Ok(body)
}

/// The assistant message `reply` answers with, when it is one: with content or tool calls.
fn an_answer(reply: &Value, client: &OpenAiCompatible) -> Result<Message> {
    let wrong = |reason: String| Error::Model {
        endpoint: client.shown_base_url(),
        reason,
    };
    let messages = crate::formats::response_body::messages_of(reply)
        .map_err(|e| wrong(format!("the answer does not read: {e}")))?;
    messages
        .into_iter()
        .find(|m| m.role == Role::Assistant && (!m.tool_calls.is_empty() || says_something(m)))
        .ok_or_else(|| wrong("the answer has neither content nor tool calls".into()))
}

/// Whether a message's content holds anything.
fn says_something(m: &Message) -> bool {
    !m.content.text().trim().is_empty()
}
