//! The storage backends side by side: `tract-bench --backends POSTGRES_URL [--messages N]`
//! measures the same figures on a store file and on a fresh schema of the PostgreSQL server
//! the URL names (`scripts/postgres.sh start DIR` starts one).

use crate::workload::Workload;
use crate::{SEED, median, ms, percentile};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tract_core::{Bind, BranchName, Message, OpenOptions, Role, SyncOptions, Tract};

/// Microseconds since the Unix epoch: comparable between processes.
fn epoch_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// Every figure, for a file and for PostgreSQL.
pub fn compare(url: &str, n: usize) -> Result<Value, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = dir.path().join("bench.redb");
    let schema = |name: &str| {
        let sep = if url.contains('?') { '&' } else { '?' };
        format!("{url}{sep}schema=bench_{name}_{}", std::process::id())
    };
    let redb = measure(
        &file.display().to_string(),
        &dir.path().join("push.redb").display().to_string(),
        n,
    )?;
    let postgres = measure(&schema("store"), &schema("push"), n)?;
    Ok(json!({
        "messages": n,
        "redb": redb,
        "postgres": postgres,
    }))
}

fn measure(store: &str, push_to: &str, n: usize) -> Result<Value, String> {
    let err = |e: tract_core::Error| e.to_string();
    let t = Tract::open(store).map_err(err)?;
    let messages = Workload::new(SEED).messages(n);
    let start = Instant::now();
    t.append_batch(messages).map_err(err)?;
    let import_s = start.elapsed().as_secs_f64();
    drop(t);

    // A cold open + compile (median of 5).
    let mut cold = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let t = Tract::open_existing(store).map_err(err)?;
        std::hint::black_box(t.compile().map_err(err)?.token_count());
        cold.push(start.elapsed());
    }

    // The agent step on a warm handle: a durable append, then compile.
    let t = Tract::open_existing(store).map_err(err)?;
    t.compile().map_err(err)?;
    let mut steps = Vec::new();
    for m in Workload::new(SEED ^ 1).messages(101).into_iter().skip(1) {
        let start = Instant::now();
        t.append(m).map_err(err)?;
        std::hint::black_box(t.compile().map_err(err)?.token_count());
        steps.push(start.elapsed());
    }

    // One session appending alone.
    let singles = 300;
    let start = Instant::now();
    for i in 0..singles {
        t.append(Message::text(Role::User, format!("single {i}")))
            .map_err(err)?;
    }
    let single_rate = f64::from(singles) / start.elapsed().as_secs_f64();

    // 64 sessions: 4 processes of 16 threads, each thread on its own branch.
    let (rate64, latencies) = sessions_from_processes(store, 4, 16, 40)?;

    // Push the whole store into an empty one, then again with nothing new.
    Tract::open(push_to).map_err(err)?;
    let start = Instant::now();
    let report = t.push(push_to, &SyncOptions::default()).map_err(err)?;
    let push_s = start.elapsed().as_secs_f64();
    let mut noop = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let r = t.push(push_to, &SyncOptions::default()).map_err(err)?;
        noop.push(start.elapsed());
        if r.commits != 0 {
            return Err("a push with nothing new sent commits".into());
        }
    }
    Ok(json!({
        "import_messages_per_s": (n as f64 / import_s).round(),
        "cold_open_compile_ms": ms(median(cold)),
        "append_compile_step_ms": {"median": ms(median(steps.clone())), "p95": ms(percentile(steps, 0.95))},
        "durable_appends_per_s": {
            "one_session": single_rate.round(),
            "64_sessions_4_processes": rate64.round(),
            "64_sessions_vs_one": ((rate64 / single_rate) * 100.0).round() / 100.0,
            "64_sessions_latency_ms": {"median": ms(median(latencies.clone())), "p99": ms(percentile(latencies, 0.99))},
        },
        "push_into_empty": {
            "commits": report.commits,
            "blobs": report.blobs,
            "seconds": (push_s * 1000.0).round() / 1000.0,
            "objects_per_s": ((report.commits + report.blobs) as f64 / push_s).round(),
        },
        "push_nothing_new_ms": ms(median(noop)),
    }))
}

/// Runs `processes` copies of this binary, each appending `each` messages from `threads`
/// threads (one branch each) at once; returns appends per second from the first append to the
/// last, and every append's latency.
fn sessions_from_processes(
    store: &str,
    processes: usize,
    threads: usize,
    each: usize,
) -> Result<(f64, Vec<Duration>), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    // All started before any is waited for: they append at the same time.
    let children: Vec<_> = (0..processes)
        .map(|p| {
            Command::new(&exe)
                .args([
                    "--sessions-worker",
                    store,
                    &format!("p{p}"),
                    &threads.to_string(),
                    &each.to_string(),
                ])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
        })
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let outputs: Vec<_> = children
        .into_iter()
        .map(|c| c.wait_with_output())
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let mut latencies = Vec::new();
    let (mut first, mut last) = (u64::MAX, 0u64);
    for out in outputs {
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        let report: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
        let number = |k: &str| report[k].as_u64().ok_or(format!("worker report: no {k}"));
        first = first.min(number("first_start_us")?);
        last = last.max(number("last_end_us")?);
        let micros = report["latencies_us"]
            .as_array()
            .ok_or("worker report: no latencies")?;
        latencies.extend(
            micros
                .iter()
                .filter_map(Value::as_u64)
                .map(Duration::from_micros),
        );
    }
    // From the first append of any process to the last one's end: process start-up is not an
    // append's cost.
    let wall = Duration::from_micros(last.saturating_sub(first));
    Ok((latencies.len() as f64 / wall.as_secs_f64(), latencies))
}

/// One process of [`sessions_from_processes`]: `threads` handles on branches
/// `sessions/PREFIX-K`, each appending `each` messages; reports every latency in microseconds
/// and when its first append started and its last ended (microseconds since the epoch). The
/// tokenizer is loaded first (about 140 ms once per process, not a cost of any append).
pub fn sessions_worker(
    store: &str,
    prefix: &str,
    threads: usize,
    each: usize,
) -> Result<Value, String> {
    let store = Path::new(store);
    std::hint::black_box(tract_core::tokens::count_text("warm up the tokenizer"));
    let all = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|k| {
                s.spawn(move || -> Result<Vec<(u64, u64)>, tract_core::Error> {
                    let options = OpenOptions {
                        bind: Bind::Branch(BranchName::new(&format!("sessions/{prefix}-{k}"))?),
                        ..OpenOptions::default()
                    };
                    let t = Tract::open_with(store, &options)?;
                    let mut times = Vec::with_capacity(each);
                    for i in 0..each {
                        let m = Message::text(Role::User, format!("{prefix}-{k} message {i}"));
                        let at = epoch_us();
                        let start = Instant::now();
                        t.append(m)?;
                        let took = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
                        times.push((at, took));
                    }
                    Ok(times)
                })
            })
            .collect();
        let mut all = Vec::new();
        for h in handles {
            let times = h
                .join()
                .map_err(|_| "a session thread panicked".to_string())?
                .map_err(|e| e.to_string())?;
            all.extend(times);
        }
        Ok::<_, String>(all)
    })?;
    Ok(json!({
        "latencies_us": all.iter().map(|(_, l)| *l).collect::<Vec<_>>(),
        "first_start_us": all.iter().map(|(s, _)| *s).min().unwrap_or(0),
        "last_end_us": all.iter().map(|(s, l)| s + l).max().unwrap_or(0),
    }))
}
