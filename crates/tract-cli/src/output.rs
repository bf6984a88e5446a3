//! The JSON the CLI prints (`--json`): serde types owned by the CLI, so the shape of its
//! output is decided here and nowhere else.

use crate::ui::Ui;
use serde::Serialize;
use serde_json::Value;
use tract_core::json::message_to_json;
use tract_core::{
    BranchInfo, CommitId, CommitInfo, FsckReport, MergeStrategy, Op, SearchHit, Status,
    ToolCallInfo, ToolPolicy, ToolTurn,
};

fn hex_list(ids: &[CommitId]) -> Vec<String> {
    ids.iter().map(CommitId::to_hex).collect()
}

/// One commit (`tract log --json`, `show --json`, `tools calls|results --json`).
#[derive(Serialize)]
pub struct CommitJson {
    commit_hash: String,
    op: &'static str,
    parents: Vec<String>,
    edit_target: Option<String>,
    sources: Vec<String>,
    summarizer: Option<String>,
    created_at: String,
    timestamp_us: u64,
    note: Option<String>,
    blob: Option<String>,
    role: Option<&'static str>,
    content_type: Option<&'static str>,
    token_count: u32,
    message: Option<Value>,
    current: Option<CurrentJson>,
    /// A merge: the branch merged and how.
    #[serde(skip_serializing_if = "Option::is_none")]
    merge: Option<MergeJson>,
    /// A record: its kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    record_kind: Option<String>,
    /// `show --json` of a compressed message: the summary that replaced it.
    #[serde(skip_serializing_if = "Option::is_none")]
    compressed_into: Option<String>,
}

/// `tract push|pull|clone --json`.
#[derive(Serialize)]
pub struct SyncJson {
    branches: Vec<BranchSyncJson>,
    commits: u64,
    blobs: u64,
    settings: bool,
}

/// One branch of a sync.
#[derive(Serialize)]
struct BranchSyncJson {
    name: String,
    old: Option<String>,
    new: String,
    up_to_date: bool,
    forced: bool,
}

impl SyncJson {
    /// The JSON of a report.
    pub fn new(r: &tract_core::SyncReport) -> Self {
        SyncJson {
            branches: r
                .branches
                .iter()
                .map(|b| BranchSyncJson {
                    name: b.name.clone(),
                    old: b.old.map(|c| c.to_hex()),
                    new: b.new.to_hex(),
                    up_to_date: b.up_to_date(),
                    forced: b.forced,
                })
                .collect(),
            commits: r.commits,
            blobs: r.blobs,
            settings: r.settings,
        }
    }
}

/// `tract fsck --json`.
#[derive(Serialize)]
pub struct FsckJson {
    clean: bool,
    commits: u64,
    blobs: u64,
    chunks: u64,
    bytes: u64,
    branches: u64,
    reflog_entries: u64,
    counts_replayed: u64,
    problems: Vec<ProblemJson>,
    /// Blobs whose payload was redacted (their ids and commits stay valid).
    redacted: Vec<String>,
    unreachable: UnreachableJson,
}

/// One problem fsck found.
#[derive(Serialize)]
struct ProblemJson {
    kind: &'static str,
    subject: String,
    detail: String,
}

/// The objects nothing reaches.
#[derive(Serialize)]
struct UnreachableJson {
    commits: Vec<String>,
    blobs: Vec<String>,
    chunks: Vec<String>,
}

impl FsckJson {
    /// The JSON of a report.
    pub fn new(r: &FsckReport) -> Self {
        FsckJson {
            clean: r.is_clean(),
            commits: r.commits,
            blobs: r.blobs,
            chunks: r.chunks,
            bytes: r.bytes,
            branches: r.branches,
            reflog_entries: r.reflog_entries,
            counts_replayed: r.counts_replayed,
            problems: r
                .problems
                .iter()
                .map(|p| ProblemJson {
                    kind: p.kind,
                    subject: p.subject.clone(),
                    detail: p.detail.clone(),
                })
                .collect(),
            redacted: r.redacted.iter().map(|b| b.to_hex()).collect(),
            unreachable: UnreachableJson {
                commits: r.unreachable_commits.iter().map(|c| c.to_hex()).collect(),
                blobs: r.unreachable_blobs.iter().map(|c| c.to_hex()).collect(),
                chunks: r.unreachable_chunks.iter().map(|c| c.to_hex()).collect(),
            },
        }
    }
}

/// What a merge commit merged.
#[derive(Serialize)]
struct MergeJson {
    /// The branch's name when it was merged.
    branch: String,
    /// Its tip then (the second parent).
    tip: String,
    /// Where it forked.
    base: String,
    /// `append` or `tool_result`.
    strategy: &'static str,
    /// The call a `tool_result` merge answers.
    call_id: Option<String>,
}

/// The version of an edited position that is in view.
#[derive(Serialize)]
struct CurrentJson {
    commit_hash: String,
    token_count: u32,
    message: Value,
}

impl CommitJson {
    /// The JSON of `info`.
    pub fn new(info: &CommitInfo) -> Self {
        CommitJson {
            commit_hash: info.id.to_hex(),
            op: info.op(),
            parents: hex_list(&info.commit.parents),
            edit_target: info.edit_target().map(|t| t.to_hex()),
            sources: hex_list(info.sources()),
            summarizer: info.summarizer().map(str::to_string),
            created_at: info.created_at(),
            timestamp_us: info.commit.timestamp_us,
            note: info.commit.message.clone(),
            blob: info.commit.blob.map(|b| b.to_hex()),
            role: info.role().map(|r| r.as_str()),
            content_type: info.content_type(),
            token_count: info.token_count,
            message: info.message.as_deref().map(message_to_json),
            current: info.current.as_ref().map(|c| CurrentJson {
                commit_hash: c.commit.to_hex(),
                token_count: c.token_count,
                message: message_to_json(&c.message),
            }),
            merge: match (&info.commit.op, info.merged()) {
                (Op::Merge { base, .. }, Some((branch, tip, strategy))) => Some(MergeJson {
                    branch: branch.to_string(),
                    tip: tip.to_hex(),
                    base: base.to_hex(),
                    strategy: strategy.name(),
                    call_id: match strategy {
                        MergeStrategy::ToolResult { call_id } => Some(call_id.clone()),
                        MergeStrategy::Append => None,
                    },
                }),
                _ => None,
            },
            record_kind: info.record_kind().map(str::to_string),
            compressed_into: None,
        }
    }

    /// With the summary that replaced this message.
    pub fn compressed_into(mut self, into: Option<&CommitInfo>) -> Self {
        self.compressed_into = into.map(|i| i.id.to_hex());
        self
    }
}

/// One tool call's lifecycle (`tract tools turns --json`, per call).
#[derive(Serialize)]
struct ToolCallJson<'a> {
    call_id: &'a str,
    name: &'a str,
    arguments: &'a str,
    state: &'static str,
    call_commit: String,
    result_commit: Option<String>,
    duration_ms: Option<f64>,
    result_tokens: Option<u32>,
    result_bytes: Option<usize>,
}

impl<'a> ToolCallJson<'a> {
    fn new(c: &'a ToolCallInfo) -> Self {
        ToolCallJson {
            call_id: &c.call_id,
            name: &c.name,
            arguments: &c.arguments,
            state: c.state.as_str(),
            call_commit: c.call_commit.to_hex(),
            result_commit: c.result_commit.map(|r| r.to_hex()),
            duration_ms: c.duration_us.map(|d| d as f64 / 1000.0),
            result_tokens: c.result_tokens,
            result_bytes: c.result_bytes,
        }
    }
}

/// One tool turn (`tract tools turns --json`).
#[derive(Serialize)]
pub struct ToolTurnJson<'a> {
    call: CommitJson,
    results: Vec<CommitJson>,
    tool_names: Vec<String>,
    calls: Vec<ToolCallJson<'a>>,
}

impl<'a> ToolTurnJson<'a> {
    /// The JSON of `turn`.
    pub fn new(turn: &'a ToolTurn) -> Self {
        ToolTurnJson {
            call: CommitJson::new(&turn.call),
            results: turn.results.iter().map(CommitJson::new).collect(),
            tool_names: turn.tool_names(),
            calls: turn.calls.iter().map(ToolCallJson::new).collect(),
        }
    }
}

/// One search hit (`tract search --json`): the commit and its snippet.
#[derive(Serialize)]
pub struct SearchHitJson<'a> {
    #[serde(flatten)]
    commit: CommitJson,
    snippet: &'a str,
}

impl<'a> SearchHitJson<'a> {
    /// The JSON of `hit`.
    pub fn new(hit: &'a SearchHit) -> Self {
        SearchHitJson {
            commit: CommitJson::new(&hit.info),
            snippet: &hit.snippet,
        }
    }
}

/// One branch (`tract branch --json`).
#[derive(Serialize)]
pub struct BranchJson<'a> {
    name: &'a str,
    head: String,
    current: bool,
    messages: u64,
    token_count: u64,
    last_activity: String,
    last_activity_us: u64,
}

impl<'a> BranchJson<'a> {
    /// The JSON of `b`.
    pub fn new(b: &'a BranchInfo) -> Self {
        BranchJson {
            name: &b.name,
            head: b.head.to_hex(),
            current: b.current,
            messages: b.messages,
            token_count: b.token_count,
            last_activity: tract_core::clock::rfc3339_micros(b.last_activity_us),
            last_activity_us: b.last_activity_us,
        }
    }
}

/// `tract status --json`.
#[derive(Serialize)]
pub struct StatusJson {
    branch: Option<String>,
    head: Option<String>,
    detached: bool,
    messages: usize,
    token_count: u64,
    unanswered_tool_calls: u64,
    store: Option<String>,
}

impl StatusJson {
    /// The JSON of `s`.
    pub fn new(s: &Status) -> Self {
        StatusJson {
            branch: s.head.branch().map(str::to_string),
            head: s.head.commit.map(|c| c.to_hex()),
            detached: s.head.branch().is_none(),
            messages: s.messages,
            token_count: s.token_count,
            unanswered_tool_calls: s.unanswered_calls,
            store: s.store.clone(),
        }
    }
}

/// `tract config show --json`.
#[derive(Serialize)]
pub struct ConfigJson<'a> {
    tool_summarization: PolicyJson<'a>,
}

#[derive(Serialize)]
struct PolicyJson<'a> {
    instructions: &'a std::collections::BTreeMap<String, String>,
    auto_threshold: Option<u32>,
    default_instructions: Option<&'a str>,
}

impl<'a> ConfigJson<'a> {
    /// The JSON of the stored settings.
    pub fn new(policy: &'a ToolPolicy) -> Self {
        ConfigJson {
            tool_summarization: PolicyJson {
                instructions: &policy.instructions,
                auto_threshold: policy.auto_threshold,
                default_instructions: policy.default_instructions.as_deref(),
            },
        }
    }
}

/// Prints `value` as JSON: indented, or on one line with `compact`.
pub fn print<T: Serialize + ?Sized>(ui: &mut Ui<'_>, value: &T, compact: bool) {
    let text = if compact {
        serde_json::to_string(value)
    } else {
        serde_json::to_string_pretty(value)
    };
    // Serializing these types cannot fail (string keys, finite numbers); print nothing if it did.
    if let Ok(mut text) = text {
        text.push('\n');
        ui.print(&text);
    }
}
