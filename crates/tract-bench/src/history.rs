//! A long-running agent's cold open: `tract-bench --history [--commits 100000,1000000]
//! [--dir DIR] [--postgres URL] [--postgres-commits 100000]`.
//!
//! A seeded agent works in tool turns (user, assistant calling tools, results, answer), its
//! store's policy summarizing results over [`POLICY_TOKENS`] tokens as they are recorded, and
//! compresses all but its newest messages whenever its view passes [`VIEW_LIMIT`] messages.
//! Its history is built in batches (one transaction each) up to each `--commits` count, every
//! commit of the branch's first-parent line counted (appends, the edits the policy makes,
//! compressions), into `DIR/history-<count>.redb`; a marker beside it
//! (`<store>.built.json`: format, seed, what was built) lets a later run with the same `DIR`
//! reuse it. A larger count starts from a copy of the smaller one's store, once that one is
//! measured, so every size stays for later runs.
//!
//! Each figure is taken in child processes (`--history-worker`), so a peak RSS is that
//! measurement's alone: the cold open + compile of the history, of a store holding only its
//! view's messages (the baseline) and of a store whose view holds [`VIEW_MESSAGES`] messages;
//! the agent step on a warm handle (on a copy of the store, which stays as built); on
//! PostgreSQL (a clone of the file store into a fresh schema, up to `--postgres-commits`) the
//! cold open again.

use crate::workload::{Workload, system_prompt, text_bytes};
use crate::{SEED, files_bytes, median, ms, peak_rss_kib, percentile, status_kib};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tract_core::{
    CompressRequest, Extractive, FnSummarizer, Provider, RecordOptions, Rendering, Rev, Role,
    StoreOptions, SummaryRequest, ToolPolicy, Tract,
};

/// The marker's format: a marker of another format (or seed) is not reused (3: view
/// checkpoints of layout 2, and the 100k-message view written by a handle with a view).
const FORMAT: u64 = 3;
/// The view is compressed when it passes this many messages.
const VIEW_LIMIT: usize = 1_000;
/// The newest messages a compression leaves (the agent's working set), give or take a turn.
const KEEP: usize = 200;
/// Tool results over this many tokens are summarized as they are recorded (about 4 KB: half
/// the workload's results of 200 B–8 KB).
const POLICY_TOKENS: u32 = 1_000;
/// About how long a compression's summary is.
const SUMMARY_BYTES: usize = 1_500;
/// The messages in view of the store without compressions.
const VIEW_MESSAGES: usize = 100_000;
/// Child processes per cold-open figure (the median is reported).
const RUNS: usize = 5;
/// Agent steps per step figure.
const STEPS: usize = 50;
/// Messages per batch of the uncompressed store.
const VIEW_BATCH: usize = 5_000;

/// Target (printed beside the figure): the history's cold open + compile on a store file.
const TARGET_OPEN_MS: f64 = 20.0;
/// Target: the history's cold open + compile on PostgreSQL.
const TARGET_POSTGRES_OPEN_MS: f64 = 50.0;
/// Target: the peak RSS of a process that opens the history and compiles it.
const TARGET_RSS_KIB: u64 = 100 * 1024;
/// Target: the cold open + compile of a view of [`VIEW_MESSAGES`] messages.
const TARGET_VIEW_OPEN_MS: f64 = 300.0;
/// Target: the peak RSS of a process that opens and compiles that view.
const TARGET_VIEW_RSS_KIB: u64 = 250 * 1024;
/// Target, from Python: open + compile + `to_openai()` of the history over the same of a
/// store holding only its view.
const TARGET_PYTHON_RATIO: f64 = 1.5;

/// This mode's results: errors are reported as text, as the other modes do.
type Res<T> = Result<T, String>;

/// A store error as text.
fn err(e: tract_core::Error) -> String {
    e.to_string()
}

/// What a store holds and how it was built, as its marker records it.
#[derive(Debug, Clone, Default)]
struct Built {
    /// Commits on the branch's first-parent line.
    commits: u64,
    /// Messages appended.
    messages: u64,
    /// Bytes of the appended messages' text.
    text_bytes: u64,
    /// Tool calls generated (the next part's call ids follow them).
    calls: u64,
    /// Batches appended (each one transaction; a batch's workload is seeded by its number).
    batches: u64,
    /// Compressions committed.
    compresses: u64,
    /// Tool results the policy summarized (each an edit commit).
    summarized: u64,
    /// Seconds spent building, every part together.
    build_s: f64,
    /// The store file and its journal directory, in bytes, when building ended.
    store_bytes: u64,
}

impl Built {
    /// The marker's JSON.
    fn to_json(&self) -> Value {
        json!({
            "format": FORMAT,
            "seed": SEED,
            "commits": self.commits,
            "messages": self.messages,
            "text_bytes": self.text_bytes,
            "calls": self.calls,
            "batches": self.batches,
            "compresses": self.compresses,
            "summarized_results": self.summarized,
            "build_s": self.build_s,
            "store_bytes": self.store_bytes,
        })
    }

    /// The marker read back: `None` for another format or seed, or a missing field.
    fn from_json(v: &Value) -> Option<Built> {
        let n = |k: &str| v.get(k).and_then(Value::as_u64);
        if n("format") != Some(FORMAT) || n("seed") != Some(SEED) {
            return None;
        }
        Some(Built {
            commits: n("commits")?,
            messages: n("messages")?,
            text_bytes: n("text_bytes")?,
            calls: n("calls")?,
            batches: n("batches")?,
            compresses: n("compresses")?,
            summarized: n("summarized_results")?,
            build_s: v.get("build_s").and_then(Value::as_f64)?,
            store_bytes: n("store_bytes")?,
        })
    }
}

/// `path` with `suffix` appended to its file name.
pub(crate) fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut p = path.as_os_str().to_os_string();
    p.push(suffix);
    PathBuf::from(p)
}

/// The store's marker, if it was written by this format and seed with at least `commits`.
fn read_marker(store: &Path, commits: u64) -> Option<Built> {
    let text = std::fs::read_to_string(beside(store, ".built.json")).ok()?;
    let built = Built::from_json(&serde_json::from_str(&text).ok()?)?;
    (built.commits >= commits && store.is_file()).then_some(built)
}

/// Writes the store's marker.
fn write_marker(store: &Path, built: &Built) -> Res<()> {
    let text = serde_json::to_string_pretty(&built.to_json()).map_err(|e| e.to_string())?;
    std::fs::write(beside(store, ".built.json"), text).map_err(|e| e.to_string())
}

/// Removes a store file, its journal directory and its marker, whichever exist.
pub(crate) fn remove_store(store: &Path) -> Res<()> {
    let gone = |r: std::io::Result<()>| match r {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.to_string()),
        _ => Ok(()),
    };
    gone(std::fs::remove_file(beside(store, ".built.json")))?;
    gone(std::fs::remove_file(store))?;
    gone(std::fs::remove_dir_all(beside(store, "-journal")))
}

/// Copies a file and makes the copy durable: what is measured next (durable appends) then
/// does not wait for the copy's writeback.
pub(crate) fn copy_file(from: &Path, to: &Path) -> Res<()> {
    std::fs::copy(from, to).map_err(|e| format!("{}: {e}", from.display()))?;
    std::fs::File::open(to)
        .and_then(|f| f.sync_all())
        .map_err(|e| format!("{}: {e}", to.display()))
}

/// Copies a closed store: its file and its journal directory (segments and packs).
fn copy_store(from: &Path, to: &Path) -> Res<()> {
    copy_file(from, to)?;
    let (src, dst) = (beside(from, "-journal"), beside(to, "-journal"));
    let Ok(entries) = std::fs::read_dir(&src) else {
        return Ok(());
    };
    std::fs::create_dir_all(&dst).map_err(|e| e.to_string())?;
    for e in entries {
        let e = e.map_err(|e| e.to_string())?;
        if e.file_type().map_err(|e| e.to_string())?.is_file() {
            copy_file(&e.path(), &dst.join(e.file_name()))?;
        }
    }
    Ok(())
}

/// The summary a compression commits: the user's requests in the run, cut near
/// [`SUMMARY_BYTES`]. Made at once, so building measures the store's work, not a model's.
fn summarize(req: &SummaryRequest) -> tract_core::Result<String> {
    let mut out = format!(
        "Summary of {} earlier messages. The user asked:",
        req.messages.len()
    );
    for m in req.messages.iter().filter(|m| m.role == Role::User) {
        if out.len() >= SUMMARY_BYTES {
            break;
        }
        let text = m.content.text();
        let line = text.lines().next().unwrap_or_default();
        out.push_str("\n- ");
        out.extend(line.chars().take(160));
    }
    Ok(out)
}

/// Compresses the view's messages after the system prompt up to a turn that leaves about
/// [`KEEP`] newest ones. Returns the commits made and the view's length after.
fn compress_oldest(t: &Tract, summarizer: &dyn tract_core::Summarizer) -> Res<(u64, usize)> {
    let c = t.compile().map_err(err)?;
    let msgs = c.messages().map_err(err)?;
    let first = usize::from(msgs.first().is_some_and(|m| m.message.role == Role::System));
    // The run ends before a user message, so no turn is split between it and the rest.
    let cut = (first + 1..=msgs.len().saturating_sub(KEEP))
        .rev()
        .find(|&i| msgs.get(i).is_some_and(|m| m.message.role == Role::User));
    let Some(cut) = cut else {
        return Ok((0, msgs.len()));
    };
    let commits: Vec<Rev> = msgs
        .get(first..cut)
        .unwrap_or_default()
        .iter()
        .filter_map(|m| m.position)
        .map(Rev::from)
        .collect();
    let out = t
        .compress(&CompressRequest {
            commits: Some(commits),
            summarizer: Some(summarizer),
            ..CompressRequest::default()
        })
        .map_err(err)?;
    Ok((out.commits.len() as u64, t.status().map_err(err)?.messages))
}

/// Grows the history at `path` (holding what `built` says) until it has `target` commits.
fn grow(path: &Path, mut built: Built, target: u64) -> Res<Built> {
    let start = Instant::now();
    let t = Tract::open(path).map_err(err)?;
    if built.commits == 0 {
        t.set_tool_policy(&ToolPolicy {
            auto_threshold: Some(POLICY_TOKENS),
            ..ToolPolicy::default()
        })
        .map_err(err)?;
        let system = system_prompt();
        built.text_bytes += text_bytes(std::slice::from_ref(&system));
        t.append(system).map_err(err)?;
        built.commits += 1;
        built.messages += 1;
    }
    let summarizer = FnSummarizer::new("bench-history", summarize);
    let record = RecordOptions {
        summarizer: Some(&Extractive),
        ..RecordOptions::default()
    };
    let mut view = t.status().map_err(err)?.messages;
    let (from, mut said) = (built.commits, Instant::now());
    while built.commits < target {
        // Each batch takes the view just past the limit, then it is compressed.
        let room = (VIEW_LIMIT + 1).saturating_sub(view).max(1);
        let left = usize::try_from(target - built.commits).unwrap_or(usize::MAX);
        // Near the target, fewer messages than commits left: about one in five brings an edit.
        let want = if left > room {
            room
        } else {
            (left * 4 / 5).max(1)
        };
        let mut workload = Workload::resume(SEED.wrapping_add(built.batches), built.calls);
        let messages = workload.turns(want);
        built.calls = workload.calls();
        built.text_bytes += text_bytes(&messages);
        built.messages += messages.len() as u64;
        view += messages.len();
        let out = t.append_batch_with_policy(messages, &record).map_err(err)?;
        let edits = out.iter().filter(|o| o.replacement.is_some()).count() as u64;
        built.commits += out.len() as u64 + edits;
        built.summarized += edits;
        built.batches += 1;
        if view > VIEW_LIMIT {
            let (commits, after) = compress_oldest(&t, &summarizer)?;
            built.commits += commits;
            built.compresses += 1;
            view = after;
        }
        if said.elapsed() > Duration::from_secs(15) {
            said = Instant::now();
            let rate = (built.commits - from) as f64 / start.elapsed().as_secs_f64();
            eprintln!(
                "history: {} of {target} commits ({rate:.0} commits/s)",
                built.commits
            );
        }
    }
    // Closing folds what the journal holds: part of building.
    drop(t);
    built.build_s += start.elapsed().as_secs_f64();
    built.store_bytes = files_bytes(path)?;
    Ok(built)
}

/// The history of `target` commits in `dir`, built (from `smaller`, the store of the next
/// smaller size, when there is one) or reused. Returns it, and the seconds and commits this
/// run built (none when reused).
fn history(
    dir: &Path,
    target: u64,
    smaller: Option<(&Path, &Built)>,
) -> Res<(PathBuf, Built, Value)> {
    let path = dir.join(format!("history-{target}.redb"));
    if let Some(built) = read_marker(&path, target) {
        eprintln!(
            "history: reusing {} ({} commits)",
            path.display(),
            built.commits
        );
        return Ok((path, built, json!({"reused": true})));
    }
    remove_store(&path)?;
    let from = match smaller {
        Some((store, built)) => {
            copy_store(store, &path)?;
            built.clone()
        }
        None => Built::default(),
    };
    eprintln!(
        "history: building {} from {} to {target} commits",
        path.display(),
        from.commits
    );
    let built = grow(&path, from.clone(), target)?;
    write_marker(&path, &built)?;
    let (secs, commits) = (built.build_s - from.build_s, built.commits - from.commits);
    Ok((
        path,
        built,
        json!({
            "reused": false,
            "built_commits": commits,
            "built_s": (secs * 10.0).round() / 10.0,
            "commits_per_s": (commits as f64 / secs).round(),
        }),
    ))
}

/// A store whose view holds [`VIEW_MESSAGES`] messages of the workload, appended in batches
/// by an agent's handle (one with its view, which checkpoints it as it goes), never compressed
/// (built once, then reused).
fn view_store(dir: &Path) -> Res<PathBuf> {
    let path = dir.join(format!("view-{VIEW_MESSAGES}.redb"));
    if read_marker(&path, VIEW_MESSAGES as u64).is_some() {
        return Ok(path);
    }
    remove_store(&path)?;
    eprintln!("history: building {}", path.display());
    let start = Instant::now();
    let messages = Workload::new(SEED).messages(VIEW_MESSAGES);
    let mut built = Built {
        commits: messages.len() as u64,
        messages: messages.len() as u64,
        text_bytes: text_bytes(&messages),
        ..Built::default()
    };
    let t = Tract::open(&path).map_err(err)?;
    t.compile().map_err(err)?;
    let mut rest = messages.into_iter().peekable();
    while rest.peek().is_some() {
        t.append_batch(rest.by_ref().take(VIEW_BATCH).collect())
            .map_err(err)?;
        built.batches += 1;
    }
    drop(t);
    built.build_s = start.elapsed().as_secs_f64();
    built.store_bytes = files_bytes(&path)?;
    write_marker(&path, &built)?;
    Ok(path)
}

/// A fresh store at `dest` holding the messages of the view of `history`, appended in one
/// batch: what the same conversation costs without its history.
fn only_view(history: &Path, dest: &Path) -> Res<()> {
    remove_store(dest)?;
    let messages: Vec<_> = {
        let t = Tract::open_existing(history).map_err(err)?;
        let c = t.compile().map_err(err)?;
        c.messages()
            .map_err(err)?
            .into_iter()
            .filter(|m| !m.synthetic)
            .map(|m| std::sync::Arc::unwrap_or_clone(m.message))
            .collect()
    };
    let t = Tract::open(dest).map_err(err)?;
    t.append_batch(messages).map_err(err)?;
    Ok(())
}

/// Runs `tract-bench --history-worker ARGS` and returns what it printed.
fn child(args: &[&str]) -> Res<Value> {
    crate::worker("--history-worker", args)
}

/// [`RUNS`] children that each open `store` cold and compile (and render, with `render`):
/// the median time, the largest peak RSS, and what the view holds.
fn cold(store: &str, render: bool) -> Res<Value> {
    let kind = if render { "render" } else { "open" };
    let runs = (0..RUNS)
        .map(|_| child(&[kind, store]))
        .collect::<Res<Vec<_>>>()?;
    let f = |k: &str| -> Vec<f64> { runs.iter().filter_map(|r| r.get(k)?.as_f64()).collect() };
    let mut times = f("ms");
    times.sort_by(f64::total_cmp);
    let largest = |k: &str| {
        runs.iter()
            .filter_map(|r| r.get(k)?.as_u64())
            .max()
            .unwrap_or(0)
    };
    let first = runs.first().cloned().unwrap_or_default();
    Ok(json!({
        "ms": times.get(times.len() / 2).copied().unwrap_or(0.0),
        "runs_ms": times,
        "peak_rss_kib": largest("peak_rss_kib"),
        "rss_anon_kib": largest("rss_anon_kib"),
        "rss_file_kib": largest("rss_file_kib"),
        "view_messages": first.get("messages"),
        "view_tokens": first.get("tokens"),
    }))
}

/// The `ms` of a [`cold`] figure.
fn ms_of(v: &Value) -> f64 {
    v.get("ms").and_then(Value::as_f64).unwrap_or(0.0)
}

/// `a / b`, to two decimals.
fn ratio(a: f64, b: f64) -> f64 {
    (a / b * 100.0).round() / 100.0
}

/// Every figure of the history at `path`.
fn measure(
    path: &Path,
    target: u64,
    built: &Built,
    build: Value,
    postgres: Option<(&str, u64)>,
) -> Res<Value> {
    let store = path.display().to_string();
    let size = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("history")
        .to_string();
    eprintln!("history: measuring {store}");
    let open = cold(&store, false)?;
    let render = cold(&store, true)?;
    let baseline = path.with_file_name(format!("only-view-{size}.redb"));
    only_view(path, &baseline)?;
    let baseline = baseline.display().to_string();
    let only_open = cold(&baseline, false)?;
    let only_render = cold(&baseline, true)?;
    // The steps write: they run on a copy, so the history stays as it was built.
    let scratch = path.with_file_name(format!("steps-{size}.redb"));
    remove_store(&scratch)?;
    copy_store(path, &scratch)?;
    let steps = child(&[
        "step",
        &scratch.display().to_string(),
        &built.calls.to_string(),
    ]);
    remove_store(&scratch)?;
    let steps = steps?;
    let postgres = match postgres {
        Some((url, cap)) if target <= cap => on_postgres(url, path, &size)?,
        Some((_, cap)) => json!({"skipped": format!("over --postgres-commits {cap}")}),
        None => Value::Null,
    };
    Ok(json!({
        "requested_commits": target,
        "commits": built.commits,
        "build": build,
        "history": built.to_json(),
        "view_messages": open.get("view_messages"),
        "view_tokens": open.get("view_tokens"),
        "cold_open_compile_ms": ms_of(&open),
        "cold_open_compile_target_ms": TARGET_OPEN_MS,
        "cold_open_compile_runs_ms": open.get("runs_ms"),
        "peak_rss_kib": open.get("peak_rss_kib"),
        "peak_rss_target_kib": TARGET_RSS_KIB,
        "rss_anon_kib": open.get("rss_anon_kib"),
        "rss_file_kib": open.get("rss_file_kib"),
        "only_view_cold_open_compile_ms": ms_of(&only_open),
        "vs_only_view": ratio(ms_of(&open), ms_of(&only_open)),
        "only_view_peak_rss_kib": only_open.get("peak_rss_kib"),
        "cold_open_compile_render_ms": ms_of(&render),
        "only_view_cold_open_compile_render_ms": ms_of(&only_render),
        "render_vs_only_view": ratio(ms_of(&render), ms_of(&only_render)),
        "render_vs_only_view_target_from_python": TARGET_PYTHON_RATIO,
        "agent_step_ms": steps,
        "store_bytes": built.store_bytes,
        "message_text_bytes": built.text_bytes,
        "store_bytes_per_text_byte": (built.store_bytes as f64 / built.text_bytes as f64 * 1000.0).round() / 1000.0,
        "postgres": postgres,
    }))
}

/// The history at `path` cloned into a fresh schema of the PostgreSQL server `url` names
/// (same commits, same ids), and its cold open + compile there.
fn on_postgres(url: &str, path: &Path, size: &str) -> Res<Value> {
    let dest = crate::backends::fresh(url, &size.replace('-', "_"));
    eprintln!("history: cloning {} into PostgreSQL", path.display());
    let start = Instant::now();
    let (cloned, _) = Tract::clone_store(path, &dest, StoreOptions::default()).map_err(err)?;
    let clone_s = start.elapsed().as_secs_f64();
    // A clone carries no view checkpoints: it checkpoints its branches, as `tract upgrade`
    // does after a clone.
    let start = Instant::now();
    let checkpointed = cloned.checkpoint_views().map_err(err)?;
    let checkpoint_s = start.elapsed().as_secs_f64();
    drop(cloned);
    let open = cold(&dest, false)?;
    Ok(json!({
        "clone_s": (clone_s * 10.0).round() / 10.0,
        "views_checkpointed": checkpointed,
        "checkpoint_views_s": (checkpoint_s * 10.0).round() / 10.0,
        "cold_open_compile_ms": ms_of(&open),
        "cold_open_compile_target_ms": TARGET_POSTGRES_OPEN_MS,
        "cold_open_compile_runs_ms": open.get("runs_ms"),
        "peak_rss_kib": open.get("peak_rss_kib"),
    }))
}

/// `tract-bench --history`: builds (or reuses) the history at each of `commits` in `dir`, the
/// smaller first, and measures each before growing it further; then the store whose view
/// holds [`VIEW_MESSAGES`] messages.
pub fn run(commits: &[u64], dir: &Path, postgres: Option<(&str, u64)>) -> Res<Value> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut sizes = commits.to_vec();
    sizes.sort_unstable();
    sizes.dedup();
    if sizes.first().is_none_or(|&n| n == 0) {
        return Err("--commits: give counts over 0".into());
    }
    let mut results = Vec::new();
    let mut smaller: Option<(PathBuf, Built)> = None;
    for target in sizes {
        let from = smaller.as_ref().map(|(p, b)| (p.as_path(), b));
        let (path, built, build) = history(dir, target, from)?;
        results.push(measure(&path, target, &built, build, postgres)?);
        smaller = Some((path, built));
    }
    let view = view_store(dir)?;
    let view_open = cold(&view.display().to_string(), false)?;
    Ok(json!({
        "workload": {
            "seed": SEED,
            "shape": "system, then tool turns: user -> assistant with 1-2 tool calls (grep, read_file, bash) -> results of 200 B-8 KB -> answer",
            "tool_policy": format!("results over {POLICY_TOKENS} tokens summarized as recorded (extractive summarizer): an append and an edit"),
            "compress": format!("whenever the view passes {VIEW_LIMIT} messages, everything after the system prompt but the newest ~{KEEP} (whole turns) into one summary of ~{SUMMARY_BYTES} B, made at once"),
            "batches": "one transaction per batch, each taking the view just past the limit",
            "commits": "every commit on the branch's first-parent line (appends, the policy's edits, compressions)",
        },
        "store_dir": dir.display().to_string(),
        "machine": {"cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)},
        "postgres_commits_cap": postgres.map(|(_, cap)| cap),
        "sizes": results,
        "view_100k": {
            "messages": view_open.get("view_messages"),
            "cold_open_compile_ms": ms_of(&view_open),
            "cold_open_compile_target_ms": TARGET_VIEW_OPEN_MS,
            "cold_open_compile_runs_ms": view_open.get("runs_ms"),
            "peak_rss_kib": view_open.get("peak_rss_kib"),
            "peak_rss_target_kib": TARGET_VIEW_RSS_KIB,
            "rss_anon_kib": view_open.get("rss_anon_kib"),
            "rss_file_kib": view_open.get("rss_file_kib"),
        },
    }))
}

/// One measurement in a child process: `open STORE` (open cold and compile), `render STORE`
/// (the same, then the whole view as OpenAI JSON) or `step STORE CALLS` (the agent step on a
/// warm handle, the new turns' call ids following the history's `CALLS`).
pub fn worker(args: &[String]) -> Res<Value> {
    let arg = |k: usize| {
        args.get(k)
            .map(String::as_str)
            .ok_or("--history-worker: missing argument")
    };
    match arg(0)? {
        "open" => open_once(arg(1)?, false),
        "render" => open_once(arg(1)?, true),
        "step" => steps(arg(1)?, arg(2)?.parse().map_err(|e| format!("calls: {e}"))?),
        other => Err(format!("--history-worker: unknown measurement {other}")),
    }
}

/// Opens `store` with a new handle and compiles (then renders, with `render`), once.
fn open_once(store: &str, render: bool) -> Res<Value> {
    let start = Instant::now();
    let t = Tract::open_existing(store).map_err(err)?;
    let c = t.compile().map_err(err)?;
    if render {
        std::hint::black_box(
            Rendering::new(Provider::OpenAi)
                .json(&c)
                .map_err(err)?
                .len(),
        );
    }
    let took = start.elapsed();
    Ok(json!({
        "ms": ms(took),
        "messages": c.len(),
        "tokens": c.token_count(),
        "peak_rss_kib": peak_rss_kib(),
        "rss_anon_kib": status_kib("RssAnon:"),
        "rss_file_kib": status_kib("RssFile:"),
        "token_encoding_loaded": tract_core::tokens::encoding_loaded(),
    }))
}

/// [`STEPS`] agent steps on a warm handle at the history's tip (one durable append, then
/// compile), then as many with a rendering kept across steps (append, compile, the request
/// as OpenAI JSON).
fn steps(store: &str, calls: u64) -> Res<Value> {
    let t = Tract::open_existing(store).map_err(err)?;
    std::hint::black_box(t.compile().map_err(err)?.token_count());
    let mut turns = Workload::resume(SEED ^ 0x5739, calls)
        .turns(2 * STEPS)
        .into_iter();
    let mut plain = Vec::with_capacity(STEPS);
    for m in turns.by_ref().take(STEPS) {
        let start = Instant::now();
        t.append(m).map_err(err)?;
        let c = t.compile().map_err(err)?;
        plain.push(start.elapsed());
        std::hint::black_box(c.token_count());
    }
    let mut rendering = Rendering::new(Provider::OpenAi);
    std::hint::black_box(
        rendering
            .json(&t.compile().map_err(err)?)
            .map_err(err)?
            .len(),
    );
    let mut rendered = Vec::with_capacity(STEPS);
    for m in turns.take(STEPS) {
        let start = Instant::now();
        t.append(m).map_err(err)?;
        let c = t.compile().map_err(err)?;
        std::hint::black_box(rendering.json(&c).map_err(err)?.len());
        rendered.push(start.elapsed());
    }
    let stat = |xs: Vec<Duration>| json!({"median": ms(median(xs.clone())), "p95": ms(percentile(xs, 0.95))});
    Ok(json!({
        "steps": STEPS,
        "append_compile": stat(plain),
        "append_compile_render_openai": stat(rendered),
    }))
}
