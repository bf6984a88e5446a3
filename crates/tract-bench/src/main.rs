//! `tract-bench`: measures tract on a seeded agent workload and prints JSON.
//!
//! Each size runs in its own child process so peak RSS is that size's alone. Times are medians
//! of several runs; the machines this runs on are noisy.
//!
//! Usage: `tract-bench [--sizes 1000,10000,100000] [--steps 200]`, or
//! `tract-bench --backends POSTGRES_URL [--pgbouncer URL] [--messages 10000]` for a store file
//! beside PostgreSQL, with PostgreSQL's sessions and TLS figures (also through a PgBouncer),
//! or `tract-bench --transcripts [--messages 10000]` for importing and exporting transcripts,
//! or `tract-bench --serve [--sizes 10000,100000]` for the web view's API over HTTP,
//! or `tract-bench --capture [--sessions 20] [--seconds 20] [--rate 10]` for the delay of
//! `tract capture` from a line written to it committed,
//! or `tract-bench --history [--commits 100000,1000000] [--dir DIR] [--postgres URL]
//! [--postgres-commits 100000]` for a long-running agent's cold open: a seeded history of that
//! many commits (tool turns, large results summarized, compressed whenever the view passes
//! 1,000 messages), built in batches into DIR (default: `tract-bench-history` in the temporary
//! directory) and reused by later runs, measured against a store holding only its view.
//! `tract-bench --search [--messages 1000000] [--branches 1000] [--needles 20] [--dir DIR]
//! [--runs 200] [--index-runs 3] [--append-pairs 7] [--append-count 10752] [--postgres URL]`
//! measures ranked search: a seeded corpus of agent sessions over many branches, with planted
//! needles, built into DIR (default: `tract-bench-search` in the temporary directory) and
//! reused by later runs; the index's build, its size, its cost per append, query latencies and
//! the needles' ranks (see `search.rs`), and with `--postgres` the same on a clone of the
//! corpus in a schema of that database.
//! `tract-bench --secrets [--messages 2000] [--runs 5]` measures what scrubbing credentials as
//! they are written costs: appends, imports, a capture pass with scrubbing on against off, and
//! `secrets scan --history` beside the detector alone (see `secrets.rs`).
//! `tract-bench --diff [--messages 100000] [--differ 1000] [--runs 15] [--dir DIR]` measures
//! `tract diff`: two views that share all but `differ` messages each, and what a compress
//! commit did to its view (see `diff.rs`).
//!
//! `tract-bench --usage [--messages 1000000] [--branches 1000] [--runs 30] [--steps 400]
//! [--dir DIR]` measures the usage ledger: a branch's totals and every branch's with the
//! store's over a seeded store, and an agent step with usage against one without (see
//! `usage.rs`).
//! `--sessions-worker STORE PREFIX THREADS COUNT|timed [ITEMS.jsonl]` is one process of the
//! sessions figures (scripts/bench-appends.py runs it on the items it gives SQLiteSession);
//! `--history-worker` is one measurement of `--history`, `--search-worker` one of `--search`.

mod backends;
mod capture;
mod diff;
mod history;
mod search;
mod secrets;
mod serve;
mod transcripts;
mod usage;
mod workload;

use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use tract_core::{Message, RecordOptions, Rev, Role, Tract};
use workload::{Workload, text_bytes};

const SEED: u64 = 0x7472_6163;

fn main() -> std::process::ExitCode {
    match run() {
        Ok(v) => {
            println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run() -> Result<Value, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let steps: usize = flag("--steps")
        .map_or(Ok(200), |s| s.parse())
        .map_err(|e| format!("--steps: {e}"))?;
    if let Some(url) = flag("--backends") {
        let n: usize = flag("--messages")
            .map_or(Ok(10_000), |s| s.parse())
            .map_err(|e| format!("--messages: {e}"))?;
        return backends::compare(&url, flag("--pgbouncer").as_deref(), n);
    }
    if args.iter().any(|a| a == "--transcripts") {
        let n: usize = flag("--messages")
            .map_or(Ok(10_000), |s| s.parse())
            .map_err(|e| format!("--messages: {e}"))?;
        return transcripts::measure(n);
    }
    if args.iter().any(|a| a == "--secrets") {
        let number = |name: &str, default: usize| {
            flag(name)
                .map_or(Ok(default), |s| s.parse::<usize>())
                .map_err(|e| format!("{name}: {e}"))
        };
        return secrets::measure(number("--messages", 2_000)?, number("--runs", 5)?);
    }
    if args.iter().any(|a| a == "--capture") {
        let number = |name: &str, default: u64| {
            flag(name)
                .map_or(Ok(default), |s| s.parse::<u64>())
                .map_err(|e| format!("{name}: {e}"))
        };
        return capture::measure(
            number("--sessions", 20)? as usize,
            number("--seconds", 20)?,
            number("--rate", 10)?,
        );
    }
    if let Some(i) = args.iter().position(|a| a == "--history-worker") {
        return history::worker(args.get(i + 1..).unwrap_or_default());
    }
    if args.iter().any(|a| a == "--history") {
        let commits = flag("--commits")
            .unwrap_or_else(|| "100000,1000000".into())
            .split(',')
            .map(|s| {
                s.trim()
                    .parse::<u64>()
                    .map_err(|e| format!("--commits: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let dir = flag("--dir").map_or_else(
            || std::env::temp_dir().join("tract-bench-history"),
            std::path::PathBuf::from,
        );
        let cap: u64 = flag("--postgres-commits")
            .map_or(Ok(100_000), |s| s.parse())
            .map_err(|e| format!("--postgres-commits: {e}"))?;
        let url = flag("--postgres");
        return history::run(&commits, &dir, url.as_deref().map(|u| (u, cap)));
    }
    // A count flag (`1_000_000` reads), and the folder a benchmark keeps its store in.
    let number = |name: &str, default: usize| {
        flag(name)
            .map_or(Ok(default), |s| s.trim().replace('_', "").parse::<usize>())
            .map_err(|e| format!("{name}: {e}"))
    };
    let dir = |default: &str| {
        flag("--dir").map_or_else(
            || std::env::temp_dir().join(default),
            std::path::PathBuf::from,
        )
    };
    if let Some(i) = args.iter().position(|a| a == "--search-worker") {
        return search::worker(args.get(i + 1..).unwrap_or_default());
    }
    if args.iter().any(|a| a == "--search") {
        let params = search::Params {
            messages: number("--messages", 1_000_000)?,
            branches: number("--branches", 1_000)?,
            needles: number("--needles", 20)?,
        };
        let dir = dir("tract-bench-search");
        let counts = search::Counts {
            runs: number("--runs", 200)?,
            index_runs: number("--index-runs", 3)?,
            append_pairs: number("--append-pairs", 7)?,
            append_count: number("--append-count", 10 * 1024 + 512)?,
        };
        return search::run(params, &dir, counts, flag("--postgres").as_deref());
    }
    if args.iter().any(|a| a == "--diff") {
        let dir = dir("tract-bench-diff");
        return diff::run(
            &dir,
            number("--messages", 100_000)?,
            number("--differ", 1_000)?,
            number("--runs", 15)?,
        );
    }
    if args.iter().any(|a| a == "--usage") {
        let dir = dir("tract-bench-usage");
        return usage::run(
            &dir,
            number("--messages", 1_000_000)?,
            number("--branches", 1_000)?,
            number("--runs", 30)?,
            number("--steps", 400)?,
        );
    }
    if args.iter().any(|a| a == "--serve") {
        let sizes = flag("--sizes")
            .unwrap_or_else(|| "10000,100000".into())
            .split(',')
            .map(|s| {
                s.trim()
                    .parse::<usize>()
                    .map_err(|e| format!("--sizes: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        return serve::measure(&sizes);
    }
    if let Some(i) = args.iter().position(|a| a == "--sessions-worker") {
        let arg = |k: usize| {
            args.get(i + k)
                .cloned()
                .ok_or("--sessions-worker: missing argument")
        };
        let threads: usize = arg(3)?.parse().map_err(|e| format!("threads: {e}"))?;
        let span = backends::Span::parse(&arg(4)?)?;
        // An optional fifth argument: a JSON Lines file of each session's Responses items
        // (scripts/bench-appends.py, for the core beside SQLiteSession on the same items).
        let items = args.get(i + 5).filter(|a| !a.starts_with("--"));
        return backends::sessions_worker(
            &arg(1)?,
            &arg(2)?,
            threads,
            span,
            items.map(String::as_str),
        );
    }
    if let Some(n) = flag("--one") {
        let n: usize = n.parse().map_err(|e| format!("--one: {e}"))?;
        return measure(n, steps);
    }
    let sizes: Vec<usize> = flag("--sizes")
        .unwrap_or_else(|| "1000,10000,100000".into())
        .split(',')
        .map(|s| {
            s.trim()
                .parse::<usize>()
                .map_err(|e| format!("--sizes: {e}"))
        })
        .collect::<Result<_, _>>()?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut results = Vec::new();
    for n in sizes {
        let out = Command::new(&exe)
            .args(["--one", &n.to_string(), "--steps", &steps.to_string()])
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "size {n}: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        results.push(serde_json::from_slice::<Value>(&out.stdout).map_err(|e| e.to_string())?);
    }
    Ok(json!({
        "workload": {"seed": SEED, "shape": "system, then user -> assistant with 1-2 tool calls (grep, read_file, bash) -> results of 200 B-8 KB -> answer"},
        "machine": {"cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)},
        "results": results,
    }))
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e6).round() / 1e3
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs.get(xs.len() / 2).copied().unwrap_or_default()
}

fn percentile(mut xs: Vec<Duration>, p: f64) -> Duration {
    xs.sort();
    let i = ((xs.len() as f64 - 1.0) * p).round() as usize;
    xs.get(i).copied().unwrap_or_default()
}

fn peak_rss_kib() -> u64 {
    status_kib("VmHWM:")
}

/// A figure of `/proc/self/status` in KiB (`RssAnon:`, the process's own memory; `RssFile:`,
/// the pages of mapped files it reads, shared with the page cache), 0 where there is none.
fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

/// Sub-agents coming back on a warm handle at the tip of the big branch: a fork does 6
/// messages of work (two tool turns and an answer) and is merged, as the result of the `task`
/// call the main agent made before forking, or appended. Each merge is durable; compile runs
/// after each.
fn merge_cost(t: &Tract) -> Result<Value, tract_core::Error> {
    use tract_core::{MergeRequest, MergeStrategy, ToolCall};
    let mut tool_result = Vec::new();
    let mut append = Vec::new();
    let mut compile_after = Vec::new();
    for i in 0..10 {
        for strategy in ["tool_result", "append"] {
            let call_id = format!("task_{i}");
            if strategy == "tool_result" {
                let call = ToolCall {
                    id: call_id.clone(),
                    name: "task".into(),
                    arguments: format!(r#"{{"goal":"sub-task {i}"}}"#),
                };
                t.assistant("", vec![call])?;
            }
            let name = tract_core::BranchName::new(&format!("sub-{strategy}-{i}"))?;
            let sub = t.fork(&name, &tract_core::Rev::head())?;
            sub.user(format!(
                "sub-task {i}: find where the session token is checked"
            ))?;
            for k in 0..2 {
                let id = format!("g{i}.{k}");
                let grep = ToolCall {
                    id: id.clone(),
                    name: "grep".into(),
                    arguments: r#"{"pattern":"session_token"}"#.into(),
                };
                sub.assistant("", vec![grep])?;
                sub.tool_result(
                    &id,
                    "grep",
                    "auth.py:12: if session_token.expired():",
                    false,
                )?;
            }
            sub.assistant("It is checked in auth.py:12.", vec![])?;
            let req = MergeRequest {
                strategy: match strategy {
                    "append" => MergeStrategy::Append,
                    _ => MergeStrategy::ToolResult {
                        call_id: call_id.clone(),
                    },
                },
                ..MergeRequest::default()
            };
            let start = Instant::now();
            t.merge(&name, &req)?;
            let took = start.elapsed();
            match strategy {
                "append" => append.push(took),
                _ => tool_result.push(took),
            }
            let start = Instant::now();
            std::hint::black_box(t.compile()?.token_count());
            compile_after.push(start.elapsed());
        }
    }
    Ok(json!({
        "tool_result_ms": {"median": ms(median(tool_result.clone())), "p95": ms(percentile(tool_result, 0.95))},
        "append_6_messages_ms": {"median": ms(median(append.clone())), "p95": ms(percentile(append, 0.95))},
        "compile_after_merge_ms": ms(median(compile_after)),
    }))
}

fn measure(n: usize, steps: usize) -> Result<Value, String> {
    let err = |e: tract_core::Error| e.to_string();
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = dir.path().join("store.redb");
    let mut workload = Workload::new(SEED);
    let messages = workload.messages(n);
    let text = text_bytes(&messages);

    // Batched import: all N messages in one transaction.
    let t = Tract::open(&path).map_err(err)?;
    let start = Instant::now();
    t.append_batch(messages).map_err(err)?;
    let import = start.elapsed();
    drop(t);
    let store_bytes = files_bytes(&path)?;

    let cold = cold_compile(&path)?;
    let fsck = fsck_cost(&path, store_bytes)?;

    // Agent steps on a warm handle: one durable append, then compile.
    let t = Tract::open_existing(&path).map_err(err)?;
    t.compile().map_err(err)?;
    let more = Workload::new(SEED ^ 1).messages(steps + 1);
    let mut step_times = Vec::with_capacity(steps);
    for m in more.iter().skip(1).cloned() {
        let start = Instant::now();
        t.append(m).map_err(err)?;
        let c = t.compile().map_err(err)?;
        step_times.push(start.elapsed());
        std::hint::black_box(c.token_count());
    }

    // Durable single appends alone.
    let singles = steps.max(100);
    let start = Instant::now();
    for i in 0..singles {
        t.append(Message::text(
            Role::User,
            format!("follow-up question number {i}"),
        ))
        .map_err(err)?;
    }
    let append_rate = singles as f64 / start.elapsed().as_secs_f64();

    // Forks at the tip of the N-message branch: a ref, nothing copied (durable, like appends).
    let mut fork_times = Vec::new();
    for i in 0..20 {
        let name = tract_core::BranchName::new(&format!("fork-{i}")).map_err(err)?;
        let start = Instant::now();
        let fork = t.fork(&name, &tract_core::Rev::head()).map_err(err)?;
        fork_times.push(start.elapsed());
        std::hint::black_box(fork.head().map_err(err)?);
    }

    // Tool queries and search on the warm view (medians of 5).
    let time5 = |f: &dyn Fn() -> Result<usize, tract_core::Error>| -> Result<(f64, usize), String> {
        let mut times = Vec::new();
        let mut found = 0;
        for _ in 0..5 {
            let start = Instant::now();
            found = f().map_err(err)?;
            times.push(start.elapsed());
        }
        Ok((ms(median(times)), found))
    };
    let (results_ms, results_n) = time5(&|| {
        Ok(t.find_tool_results(&tract_core::ResultQuery {
            name: Some("grep".into()),
            ..Default::default()
        })?
        .len())
    })?;
    let (calls_ms, calls_n) = time5(&|| Ok(t.find_tool_calls(Some("bash"))?.len()))?;
    let (turns_ms, turns_n) = time5(&|| Ok(t.find_tool_turns(None)?.len()))?;
    let query = tract_core::SearchQuery {
        query: "session_token".into(),
        limit: Some(100),
        ..Default::default()
    };
    let (search_ms, search_n) = time5(&|| Ok(t.search(&query)?.len()))?;
    let rare = tract_core::SearchQuery {
        query: "no such text anywhere".into(),
        ..Default::default()
    };
    let (search_miss_ms, _) = time5(&|| Ok(t.search(&rare)?.len()))?;

    // 100 edits of grep results, then a compile.
    let targets: Vec<_> = t
        .find_tool_results(&tract_core::ResultQuery {
            name: Some("grep".into()),
            ..Default::default()
        })
        .map_err(err)?
        .into_iter()
        .rev()
        .take(100)
        .collect();
    let mut edit_times = Vec::new();
    for info in &targets {
        let m = info
            .message
            .as_deref()
            .ok_or("a result without a message")?;
        let call_id = m.tool_call_id.clone().unwrap_or_default();
        let start = Instant::now();
        t.edit_tool_result(
            info.id,
            &call_id,
            "grep",
            tract_core::Content::Text("trimmed to the matching files".into()),
        )
        .map_err(err)?;
        edit_times.push(start.elapsed());
    }
    let start = Instant::now();
    let compiled = t.compile().map_err(err)?;
    let compile_after_edits = start.elapsed();
    std::hint::black_box(compiled.token_count());

    // Compress half the tool turns (the older half). A sample of them one turn per compress,
    // as an agent compresses as it goes, with an instant summarizer (the store's own work),
    // the built-in extractive one and a local chat-completions server; the rest in three bulk
    // compresses of many runs each, one per summarizer.
    let turns: Vec<Rev> = t
        .find_tool_turns(None)
        .map_err(err)?
        .iter()
        .map(|turn| Rev::from(turn.call.id))
        .collect();
    let half = &turns[..turns.len() / 2];
    let step = (half.len() / 300).max(3);
    let instant = tract_core::FnSummarizer::new("instant", |_: &tract_core::SummaryRequest| {
        Ok("summary".to_string())
    });
    let stub = tract_stub_llm::serve_forever(tract_stub_llm::ok("stub summary"))
        .map_err(|e| e.to_string())?;
    let llm = tract_core::OpenAiCompatible::new(stub.url, "stub");
    let summarizers: [&dyn tract_core::Summarizer; 3] = [&instant, &tract_core::Extractive, &llm];
    let compile_before = {
        let start = Instant::now();
        std::hint::black_box(t.compile().map_err(err)?.token_count());
        start.elapsed()
    };
    let compress_with = |part: &[Rev], s: &dyn tract_core::Summarizer| {
        let start = Instant::now();
        let out = t
            .compress_tool_calls(
                &tract_core::ToolTurns {
                    commits: Some(part.to_vec()),
                    name: None,
                    preserve_answer: true,
                },
                tract_core::CompressRequest {
                    summarizer: Some(s),
                    ..Default::default()
                },
            )
            .map_err(err)?;
        Ok::<_, String>((start.elapsed(), out))
    };
    let mut per_turn: [Vec<Duration>; 3] = Default::default();
    let mut bulk: [Vec<Rev>; 3] = Default::default();
    let mut rest = 0;
    for (i, turn) in half.iter().enumerate() {
        if i % step == 0 {
            let k = (i / step) % 3;
            per_turn[k].push(compress_with(std::slice::from_ref(turn), summarizers[k])?.0);
        } else {
            bulk[rest % 3].push(turn.clone());
            rest += 1;
        }
    }
    let mut bulk_out = Vec::new();
    for (part, s) in bulk.iter().zip(summarizers) {
        bulk_out.push(compress_with(part, s)?);
    }
    let compile_after = {
        let start = Instant::now();
        std::hint::black_box(t.compile().map_err(err)?.token_count());
        start.elapsed()
    };
    let cold_after_compress = cold_compile(&path)?;
    let per_turn_json = |times: &[Duration]| json!({"median_ms": ms(median(times.to_vec())), "p95_ms": ms(percentile(times.to_vec(), 0.95)), "count": times.len()});
    let bulk_json = |(time, out): &(Duration, tract_core::CompressOutcome)| json!({"ms": ms(*time), "runs": out.commits.len(), "tokens_before": out.tokens_before, "tokens_after": out.tokens_after});

    // The tool-summarization policy: what it adds to recording a tool result, against plain
    // appends of the same 8 KB result interleaved with it (medians; durable writes throughout).
    let policy = policy_cost(&t, &mut workload).map_err(err)?;

    // Rendering the whole view as an OpenAI request (O(view), for reference).
    let mut render = Vec::new();
    for _ in 0..5 {
        let c = t.compile().map_err(err)?;
        let start = Instant::now();
        let body = c.to_openai().map_err(err)?.to_string();
        render.push(start.elapsed());
        std::hint::black_box(body.len());
    }
    // The same, step after step with a rendering kept across steps: one append, then the
    // whole request again as JSON text, only the new message rendered.
    let mut kept = tract_core::Rendering::new(tract_core::Provider::OpenAi);
    std::hint::black_box(kept.json(&t.compile().map_err(err)?).map_err(err)?.len());
    let mut render_kept = Vec::new();
    for i in 0..5 {
        t.user(format!("render step {i}")).map_err(err)?;
        let c = t.compile().map_err(err)?;
        let start = Instant::now();
        std::hint::black_box(kept.json(&c).map_err(err)?.len());
        render_kept.push(start.elapsed());
    }
    // Last on this handle: merges add messages every figure above would count.
    let merges = merge_cost(&t).map_err(err)?;
    drop(t);

    let sessions = concurrent_sessions(&path).map_err(err)?;
    let many = many_branches(&path).map_err(err)?;
    let gc = gc_cost(&path).map_err(err)?;
    let log = log_process_ms(&path)?;
    Ok(json!({
        "messages": n,
        "message_text_bytes": text,
        "durable_appends_per_s": append_rate.round(),
        "fork_ms": {"median": ms(median(fork_times.clone())), "p95": ms(percentile(fork_times, 0.95))},
        "merge": merges,
        "batch_import_messages_per_s": (n as f64 / import.as_secs_f64()).round(),
        "cold_open_compile_ms": ms(cold),
        "fsck": fsck,
        "append_compile_step_ms": {"median": ms(median(step_times.clone())), "p95": ms(percentile(step_times, 0.95))},
        "render_openai_ms": ms(median(render)),
        "render_openai_kept_ms": ms(median(render_kept)),
        "find_tool_results_grep": {"ms": results_ms, "matches": results_n},
        "find_tool_calls_bash": {"ms": calls_ms, "matches": calls_n},
        "find_tool_turns_all": {"ms": turns_ms, "matches": turns_n},
        "search_view_first_100_ms": {"ms": search_ms, "matches": search_n},
        "search_view_no_match_ms": search_miss_ms,
        "edit_tool_result_ms": {"median": ms(median(edit_times.clone())), "p95": ms(percentile(edit_times, 0.95)), "count": targets.len()},
        "compile_after_edits_ms": ms(compile_after_edits),
        "compress_turn_store_work": per_turn_json(&per_turn[0]),
        "compress_turn_extractive": per_turn_json(&per_turn[1]),
        "compress_turn_local_llm": per_turn_json(&per_turn[2]),
        "compress_bulk_store_work": bulk_json(&bulk_out[0]),
        "compress_bulk_extractive": bulk_json(&bulk_out[1]),
        "compress_bulk_local_llm": bulk_json(&bulk_out[2]),
        "compile_before_compress_ms": ms(compile_before),
        "compile_after_compress_ms": ms(compile_after),
        "cold_open_compile_after_compress_ms": ms(cold_after_compress),
        "tool_result_policy": policy,
        "concurrent_sessions": sessions,
        "many_branches": many,
        "gc": gc,
        "tract_log_n20_process_ms": log,
        "store_bytes": store_bytes,
        "store_bytes_per_text_byte": ((store_bytes as f64 / text as f64) * 1000.0).round() / 1000.0,
        "peak_rss_kib": peak_rss_kib(),
    }))
}

/// Durable appends from 1, 8 and 64 sessions at once in this process, each a thread with its
/// own handle on its own branch of the store: the aggregate rate and each append's latency.
/// Appends arriving together share a transaction and its fsync (group commit).
fn concurrent_sessions(path: &Path) -> Result<Value, tract_core::Error> {
    use tract_core::{Bind, BranchName, OpenOptions};
    let mut out = serde_json::Map::new();
    let mut single_rate = 0.0;
    for (sessions, each) in [(1usize, 400usize), (8, 100), (64, 40)] {
        let start = Instant::now();
        let latencies = std::thread::scope(|s| {
            let handles: Vec<_> = (0..sessions)
                .map(|k| {
                    s.spawn(move || -> Result<Vec<Duration>, tract_core::Error> {
                        let options = OpenOptions {
                            bind: Bind::Branch(BranchName::new(&format!("bench-{sessions}-{k}"))?),
                            ..OpenOptions::default()
                        };
                        let t = Tract::open_with(path, &options)?;
                        let mut times = Vec::with_capacity(each);
                        for i in 0..each {
                            let m = Message::text(Role::User, format!("session {k} message {i}"));
                            let start = Instant::now();
                            t.append(m)?;
                            times.push(start.elapsed());
                        }
                        Ok(times)
                    })
                })
                .collect();
            let mut all = Vec::new();
            for h in handles {
                let times = h.join().map_err(|_| tract_core::Error::InvalidOperation {
                    message: "a session thread panicked".into(),
                })??;
                all.extend(times);
            }
            Ok::<_, tract_core::Error>(all)
        })?;
        let rate = latencies.len() as f64 / start.elapsed().as_secs_f64();
        if sessions == 1 {
            single_rate = rate;
        }
        out.insert(
            sessions.to_string(),
            json!({
                "appends": latencies.len(),
                "appends_per_s": rate.round(),
                "vs_one_session": ((rate / single_rate) * 100.0).round() / 100.0,
                "latency_ms": {"median": ms(median(latencies.clone())), "p99": ms(percentile(latencies, 0.99))},
            }),
        );
    }
    Ok(Value::Object(out))
}

/// `gc` with nothing to remove, then after 100 sub-agent branches (20 messages each, forked
/// from the big branch) of which half were deleted: the store's whole object tables are read
/// in one write transaction each time.
fn gc_cost(path: &Path) -> Result<Value, tract_core::Error> {
    use tract_core::BranchName;
    let t = Tract::open_existing(path)?;
    let start = Instant::now();
    tract_core::gc(t.store(), std::time::Duration::ZERO)?;
    let nothing = start.elapsed();
    for b in 0..100 {
        let name = BranchName::new(&format!("gc-{b}"))?;
        let sub = t.fork(&name, &tract_core::Rev::head())?;
        let batch = (0..20)
            .map(|i| {
                Message::text(
                    Role::User,
                    format!("branch {b} message {i} with its own text"),
                )
            })
            .collect();
        sub.append_batch(batch)?;
    }
    for b in 0..50 {
        t.delete_branch(&BranchName::new(&format!("gc-{b}"))?)?;
    }
    let start = Instant::now();
    let out = tract_core::gc(t.store(), std::time::Duration::ZERO)?;
    let pruned = start.elapsed();
    Ok(json!({
        "nothing_to_remove_ms": ms(nothing),
        "half_of_100_branches_deleted_ms": ms(pruned),
        "removed_commits": out.commits,
        "removed_blobs": out.blobs,
    }))
}

/// A store with 10,000 branches: listing them with their counts, and opening a handle on one
/// of them, against opening one when the store had only the branches before.
fn many_branches(path: &Path) -> Result<Value, tract_core::Error> {
    use tract_core::{Bind, BranchName, OpenOptions};
    const BRANCHES: usize = 10_000;
    let open_on = |name: &str| -> Result<Duration, tract_core::Error> {
        let options = OpenOptions {
            bind: Bind::Branch(BranchName::new(name)?),
            ..OpenOptions::default()
        };
        let start = Instant::now();
        let t = Tract::open_with(path, &options)?;
        std::hint::black_box(t.head()?);
        Ok(start.elapsed())
    };
    let opens = |name: &str| -> Result<Duration, tract_core::Error> {
        Ok(median(
            (0..11).map(|_| open_on(name)).collect::<Result<_, _>>()?,
        ))
    };
    let before = opens("main")?;
    let t = Tract::open(path)?;
    let existing = t.branches()?.len();
    for i in existing..BRANCHES {
        t.create_branch(
            &BranchName::new(&format!("session-{i:05}"))?,
            &tract_core::Rev::head(),
        )?;
    }
    let mut listing = Vec::new();
    let mut listed = 0;
    for _ in 0..5 {
        let start = Instant::now();
        listed = t.branches()?.len();
        listing.push(start.elapsed());
    }
    // Opened as a new process would: no other handle holds the store open.
    drop(t);
    let after = opens(&format!("session-{:05}", BRANCHES / 2))?;
    Ok(json!({
        "branches": listed,
        "list_ms": ms(median(listing)),
        "open_handle_ms": ms(after),
        "open_handle_before_ms": ms(before),
    }))
}

/// Times recording an 8 KB bash result three ways, interleaved: a plain append, through a
/// policy that lets it pass, and summarized by the extractive summarizer under the policy.
fn policy_cost(t: &Tract, workload: &mut Workload) -> Result<Value, tract_core::Error> {
    use tract_core::{Extractive, ToolCall, ToolPolicy};
    let text = workload.output_of("bash", 8 * 1024);
    let passes = ToolPolicy {
        instructions: [("web_search".to_string(), "titles only".to_string())].into(),
        auto_threshold: Some(100_000),
        default_instructions: None,
    };
    let summarizes = ToolPolicy {
        instructions: [("bash".to_string(), "exit status and failures".to_string())].into(),
        ..ToolPolicy::default()
    };
    let mut call = 0;
    let mut next_call = || -> Result<String, tract_core::Error> {
        call += 1;
        let id = format!("policy_{call}");
        t.assistant(
            "",
            vec![ToolCall {
                id: id.clone(),
                name: "bash".into(),
                arguments: "{\"cmd\":\"cargo test\"}".into(),
            }],
        )?;
        Ok(id)
    };
    let (mut plain, mut through, mut summarized) = (Vec::new(), Vec::new(), Vec::new());
    let mut edits = 0;
    for _ in 0..60 {
        let id = next_call()?;
        let start = Instant::now();
        t.append(Message::tool_result(&id, "bash", text.as_str(), false))?;
        plain.push(start.elapsed());

        t.set_tool_policy(&passes)?;
        let id = next_call()?;
        let start = Instant::now();
        t.tool_result(&id, "bash", text.as_str(), false)?;
        through.push(start.elapsed());

        t.set_tool_policy(&summarizes)?;
        let id = next_call()?;
        let message = Message::tool_result(&id, "bash", text.as_str(), false);
        let start = Instant::now();
        let out = t.record_tool_result(
            message,
            &RecordOptions {
                summarizer: Some(&Extractive),
                ..RecordOptions::default()
            },
        )?;
        summarized.push(start.elapsed());
        edits += usize::from(out.replacement.is_some());
    }
    t.set_tool_policy(&ToolPolicy::default())?;
    let us = |d: Duration| (d.as_secs_f64() * 1e7).round() / 10.0;
    let (plain, through, summarized) = (median(plain), median(through), median(summarized));
    // Signed: on a noisy machine the difference of two medians can come out below zero.
    let over = |d: Duration| ((us(d) - us(plain)) * 10.0).round() / 10.0;
    Ok(json!({
        "result_bytes": text.len(),
        "plain_append_us": us(plain),
        "pass_through_us": us(through),
        "pass_through_overhead_us": over(through),
        "summarized_extractive_us": us(summarized),
        "summarized_overhead_us": over(summarized),
        "summarized_count": edits,
    }))
}

/// Median of 5 cold opens + compiles: a fresh handle builds the view from the store.
/// `fsck` of the freshly imported store, from a new handle (median of 3): its time and the
/// store bytes it gets through per second.
fn fsck_cost(path: &Path, store_bytes: u64) -> Result<Value, String> {
    let mut times = Vec::new();
    for _ in 0..3 {
        let start = Instant::now();
        let t = Tract::open_existing(path).map_err(|e| e.to_string())?;
        let report = tract_core::fsck(t.store()).map_err(|e| e.to_string())?;
        times.push(start.elapsed());
        if !report.is_clean() {
            return Err(format!("fsck found problems: {:?}", report.problems));
        }
    }
    let took = median(times);
    Ok(json!({
        "ms": ms(took),
        "store_mb_per_s": ((store_bytes as f64 / 1e6) / took.as_secs_f64()).round(),
    }))
}

/// The bytes of a store file and of its journal beside it.
fn files_bytes(path: &Path) -> Result<u64, String> {
    let mut total = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    let mut journal = path.as_os_str().to_os_string();
    journal.push("-journal");
    if let Ok(entries) = std::fs::read_dir(Path::new(&journal)) {
        for e in entries {
            total += e
                .and_then(|e| e.metadata())
                .map_err(|e| e.to_string())?
                .len();
        }
    }
    Ok(total)
}

fn cold_compile(path: &Path) -> Result<Duration, String> {
    let mut cold = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let t = Tract::open_existing(path).map_err(|e| e.to_string())?;
        let c = t.compile().map_err(|e| e.to_string())?;
        cold.push(start.elapsed());
        std::hint::black_box(c.token_count());
    }
    Ok(median(cold))
}

/// Median wall time of `tract log -n 20` as a whole process, if the binary is built beside
/// this one (`cargo build --release -p tract-cli`).
fn log_process_ms(store: &Path) -> Result<Value, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let tract = exe.with_file_name("tract");
    if !tract.is_file() {
        return Ok(Value::Null);
    }
    let mut times = Vec::new();
    for _ in 0..11 {
        let start = Instant::now();
        let out = Command::new(&tract)
            .args(["--store"])
            .arg(store)
            .args(["log", "-n", "20"])
            .output()
            .map_err(|e| e.to_string())?;
        times.push(start.elapsed());
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
    }
    Ok(json!(ms(median(times))))
}

/// Runs this benchmark again as `tract-bench FLAG ARGS` (one measurement in a process of its
/// own: `--history-worker`, `--search-worker`) and returns the JSON it printed.
pub(crate) fn worker(flag: &str, args: &[&str]) -> Result<Value, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = Command::new(exe)
        .arg(flag)
        .args(args)
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("{flag} {}: failed", args.join(" ")));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())
}
