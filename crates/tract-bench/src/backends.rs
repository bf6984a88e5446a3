//! The storage backends side by side: `tract-bench --backends POSTGRES_URL [--pgbouncer URL]
//! [--messages N]` measures the same figures on a store file and on a fresh schema of the
//! PostgreSQL server the URL names (`scripts/postgres.sh start DIR` starts one), then how
//! PostgreSQL's durable appends scale from 1 to 64 sessions (directly and, with `--pgbouncer`,
//! through a PgBouncer in front of the same server), what TLS costs, and a cold open through TLS.

use crate::workload::Workload;
use crate::{SEED, median, ms, percentile};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::sync::{Barrier, OnceLock};
use std::time::{Duration, Instant};
use tract_core::{AppendOptions, Bind, BranchName, Message, OpenOptions, Role, SyncOptions, Tract};

/// Microseconds since the Unix epoch: comparable between processes.
fn epoch_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// How many times each configuration of the sessions and TLS figures runs (the median is
/// reported; the machine is noisy).
const RUNS: usize = 3;
/// How long the sessions of a timed run append, all at once.
const WINDOW: Duration = Duration::from_millis(2500);
/// The sessions configurations: processes × threads, each thread a session on its own branch.
const SESSIONS: [(usize, usize); 3] = [(1, 1), (4, 2), (4, 16)];

/// Every figure, for a file and for PostgreSQL; then PostgreSQL's sessions, TLS and cold-open
/// figures, directly and through `pgbouncer` when given.
pub fn compare(url: &str, pgbouncer: Option<&str>, n: usize) -> Result<Value, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = dir.path().join("bench.redb");
    let redb = measure(
        &file.display().to_string(),
        &dir.path().join("push.redb").display().to_string(),
        n,
    )?;
    let postgres = measure(&fresh(url, "store"), &fresh(url, "push"), n)?;
    let mut sessions = serde_json::Map::new();
    sessions.insert("direct".into(), sessions_scaling(url, "direct")?);
    if let Some(bouncer) = pgbouncer {
        sessions.insert("pgbouncer".into(), sessions_scaling(bouncer, "bouncer")?);
    }
    Ok(json!({
        "messages": n,
        "redb": redb,
        "postgres": postgres,
        "postgres_sessions": sessions,
        "postgres_tls": tls_cost(url, pgbouncer)?,
        "postgres_cold_open_compile_tls_ms": cold_open_tls(url, pgbouncer, n)?,
    }))
}

/// `url` split at `?`, and its parameters but those named in `keys`.
fn params_without<'a>(url: &'a str, keys: &[&str]) -> (&'a str, Vec<&'a str>) {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let pairs = query
        .split('&')
        .filter(|p| !p.is_empty() && !p.split('=').next().is_some_and(|k| keys.contains(&k)))
        .collect();
    (base, pairs)
}

/// `url` with its parameter `key` set to `value`: an earlier `key=` is replaced (the client
/// reads the first of two), a new one is added after `?` or `&`.
pub(crate) fn with_param(url: &str, key: &str, value: &str) -> String {
    let (base, mut pairs) = params_without(url, &[key]);
    let pair = format!("{key}={value}");
    pairs.push(&pair);
    format!("{base}?{}", pairs.join("&"))
}

/// `url` without its parameters named in `keys`.
pub(crate) fn without_params(url: &str, keys: &[&str]) -> String {
    match params_without(url, keys) {
        (base, pairs) if pairs.is_empty() => base.to_string(),
        (base, pairs) => format!("{base}?{}", pairs.join("&")),
    }
}

/// `url` naming a schema of its own for `name` in this run of the bench.
pub(crate) fn fresh(url: &str, name: &str) -> String {
    with_param(
        url,
        "schema",
        &format!("bench_{name}_{}", std::process::id()),
    )
}

/// Durable appends from 1, 8 and 64 sessions ([`SESSIONS`]), each run [`RUNS`] times
/// (interleaved, each on a fresh schema) for [`WINDOW`]: the median aggregate rate of the runs
/// (and every run's), the medians of the runs' latency medians and p99s, and the ratios of 8
/// and 64 sessions to one.
fn sessions_scaling(url: &str, label: &str) -> Result<Value, String> {
    let mut runs: Vec<Vec<(f64, Vec<Duration>)>> = vec![Vec::new(); SESSIONS.len()];
    for r in 0..RUNS {
        for (i, &(processes, threads)) in SESSIONS.iter().enumerate() {
            let store = fresh(url, &format!("{label}_s{}_r{r}", processes * threads));
            Tract::open(&store).map_err(|e| e.to_string())?;
            runs[i].push(sessions_from_processes(
                &store,
                processes,
                threads,
                Span::Timed,
            )?);
        }
    }
    let rates: Vec<f64> = runs
        .iter()
        .map(|r| median_f64(r.iter().map(|x| x.0)))
        .collect();
    let mut out = serde_json::Map::new();
    for ((processes, threads), (runs, rate)) in SESSIONS.iter().zip(runs.iter().zip(&rates)) {
        out.insert(
            format!("{}_sessions", processes * threads),
            json!({
                "processes": processes,
                "threads_each": threads,
                "appends_per_s": rate.round(),
                "runs_appends_per_s": runs.iter().map(|x| x.0.round()).collect::<Vec<_>>(),
                "appends_per_run": median_f64(runs.iter().map(|x| x.1.len() as f64)),
                "latency_ms": latency_medians(runs),
            }),
        );
    }
    let ratio = |k: usize| (rates[k] / rates[0] * 100.0).round() / 100.0;
    out.insert("8_vs_1".into(), json!(ratio(1)));
    out.insert("64_vs_1".into(), json!(ratio(2)));
    Ok(Value::Object(out))
}

/// The median of some numbers (0 for none).
fn median_f64(xs: impl Iterator<Item = f64>) -> f64 {
    let mut xs: Vec<f64> = xs.collect();
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(0.0)
}

/// The median over runs of each run's latency median and p99.
fn latency_medians(runs: &[(f64, Vec<Duration>)]) -> Value {
    let of = |p: f64| median(runs.iter().map(|(_, l)| percentile(l.clone(), p)).collect());
    json!({"median": ms(of(0.5)), "p99": ms(of(0.99))})
}

/// What TLS costs, all on the server `url` names: one session's durable appends with
/// `sslmode=disable` and `require` ([`RUNS`] timed runs each, interleaved, medians), and a cold
/// handle's first read (connect, TLS handshake, login, the schema check and one read; median
/// of 21, interleaved) directly without and with TLS and through `pgbouncer` with TLS.
fn tls_cost(url: &str, pgbouncer: Option<&str>) -> Result<Value, String> {
    let plain = with_param(&fresh(url, "tls_plain"), "sslmode", "disable");
    let tls = with_param(&fresh(url, "tls"), "sslmode", "require");
    let (mut plain_rates, mut tls_rates) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        for (store, rates) in [(&plain, &mut plain_rates), (&tls, &mut tls_rates)] {
            Tract::open(store).map_err(|e| e.to_string())?;
            rates.push(sessions_from_processes(store, 1, 1, Span::Timed)?.0);
        }
    }
    let (plain_rate, tls_rate) = (
        median_f64(plain_rates.into_iter()),
        median_f64(tls_rates.into_iter()),
    );

    // The same small store, reached three ways.
    let mut ways = vec![
        ("direct_disable", plain.clone()),
        ("direct_require", with_param(&plain, "sslmode", "require")),
    ];
    if let Some(bouncer) = pgbouncer {
        let through = with_param(&fresh(bouncer, "tls_plain"), "sslmode", "require");
        ways.push(("pgbouncer_require", through));
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); ways.len()];
    for _ in 0..21 {
        for ((_, store), times) in ways.iter().zip(&mut times) {
            times.push(first_read(store)?);
        }
    }
    let mut connect = serde_json::Map::new();
    for ((name, _), times) in ways.iter().zip(times) {
        connect.insert((*name).into(), json!(ms(median(times))));
    }
    Ok(json!({
        "one_session_appends_per_s": {
            "disable": plain_rate.round(),
            "require": tls_rate.round(),
            "tls_us_per_append": ((1e6 / tls_rate - 1e6 / plain_rate) * 10.0).round() / 10.0,
        },
        "cold_handle_first_read_ms": connect,
    }))
}

/// A new handle on `store` (a new connection: every store's pool closes with its last handle)
/// and its first read.
fn first_read(store: &str) -> Result<Duration, String> {
    let start = Instant::now();
    let t = Tract::open_existing(store).map_err(|e| e.to_string())?;
    std::hint::black_box(t.head().map_err(|e| e.to_string())?);
    Ok(start.elapsed())
}

/// `n` messages imported into a fresh schema through `url`, then a cold open + compile of
/// them through TLS (`sslmode=require`), directly and through `pgbouncer` (median of 5 each,
/// interleaved).
fn cold_open_tls(url: &str, pgbouncer: Option<&str>, n: usize) -> Result<Value, String> {
    let err = |e: tract_core::Error| e.to_string();
    let store = fresh(url, "cold_tls");
    let t = Tract::open(&store).map_err(err)?;
    t.append_batch(Workload::new(SEED).messages(n))
        .map_err(err)?;
    drop(t);
    let mut ways = vec![("direct_require", with_param(&store, "sslmode", "require"))];
    if let Some(bouncer) = pgbouncer {
        let through = with_param(&fresh(bouncer, "cold_tls"), "sslmode", "require");
        ways.push(("pgbouncer_require", through));
    }
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); ways.len()];
    for _ in 0..5 {
        for ((_, store), times) in ways.iter().zip(&mut times) {
            let start = Instant::now();
            let t = Tract::open_existing(store).map_err(err)?;
            std::hint::black_box(t.compile().map_err(err)?.token_count());
            times.push(start.elapsed());
        }
    }
    let mut out = serde_json::Map::new();
    for ((name, _), times) in ways.iter().zip(times) {
        out.insert((*name).into(), json!(ms(median(times))));
    }
    Ok(Value::Object(out))
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
    let (rate64, latencies) = sessions_from_processes(store, 4, 16, Span::Count(40))?;

    // Push the whole store into an empty one, then again with nothing new.
    Tract::open(push_to).map_err(err)?;
    let start = Instant::now();
    let report = tract_core::push(t.store(), push_to, &SyncOptions::default()).map_err(err)?;
    let push_s = start.elapsed().as_secs_f64();
    let mut noop = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let r = tract_core::push(t.store(), push_to, &SyncOptions::default()).map_err(err)?;
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

/// How long each session of a worker appends.
#[derive(Clone, Copy)]
pub enum Span {
    /// This many appends, once every session of its process has opened its handle.
    Count(usize),
    /// As many as fit in [`WINDOW`], which opens for every session of every process at once
    /// when all have opened their handles.
    Timed,
}

impl Span {
    /// The worker's argument: the count, or `timed`.
    fn arg(self) -> String {
        match self {
            Span::Count(n) => n.to_string(),
            Span::Timed => "timed".into(),
        }
    }

    /// Reads [`Span::arg`].
    pub fn parse(arg: &str) -> Result<Self, String> {
        match arg {
            "timed" => Ok(Span::Timed),
            n => n
                .parse()
                .map(Span::Count)
                .map_err(|e| format!("appends per session: {e}")),
        }
    }
}

/// A worker process of [`sessions_from_processes`] and its stdout.
type Worker = (Child, BufReader<ChildStdout>);

/// Runs `processes` copies of this binary, each appending from `threads` threads (one branch
/// each) at once for `span`; returns appends per second from the first append to the last,
/// and every append's latency.
fn sessions_from_processes(
    store: &str,
    processes: usize,
    threads: usize,
    span: Span,
) -> Result<(f64, Vec<Duration>), String> {
    // All started before any is waited for: they append at the same time.
    let mut workers: Vec<Worker> = (0..processes)
        .map(|p| spawn_worker(store, &format!("p{p}"), threads, span))
        .collect::<Result<_, _>>()?;
    if let Span::Timed = span {
        open_window(&mut workers)?;
    }
    let mut latencies = Vec::new();
    let (mut first, mut last) = (u64::MAX, 0u64);
    for (child, mut stdout) in workers {
        let mut report = Vec::new();
        stdout.read_to_end(&mut report).map_err(|e| e.to_string())?;
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        let report: Value = serde_json::from_slice(&report).map_err(|e| e.to_string())?;
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

/// Starts one `--sessions-worker` process of this binary.
fn spawn_worker(store: &str, prefix: &str, threads: usize, span: Span) -> Result<Worker, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut child = Command::new(exe)
        .args(["--sessions-worker", store, prefix])
        .args([threads.to_string(), span.arg()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let stdout = child.stdout.take().ok_or("a worker without stdout")?;
    Ok((child, BufReader::new(stdout)))
}

/// Waits until every timed worker says `ready` (its sessions have opened their handles), then
/// tells them all the same window: from 50 ms from now, for [`WINDOW`] (microseconds since the
/// epoch). A worker that ends instead leaves its error on stderr.
fn open_window(workers: &mut [Worker]) -> Result<(), String> {
    for (child, stdout) in workers.iter_mut() {
        let mut line = String::new();
        stdout.read_line(&mut line).map_err(|e| e.to_string())?;
        if line.trim_end() != "ready" {
            let mut stderr = String::new();
            if let Some(e) = child.stderr.as_mut() {
                e.read_to_string(&mut stderr).map_err(|e| e.to_string())?;
            }
            return Err(format!("a sessions worker did not start: {stderr}"));
        }
    }
    let start = epoch_us() + 50_000;
    let end = start + u64::try_from(WINDOW.as_micros()).unwrap_or(u64::MAX);
    for (child, _) in workers.iter_mut() {
        let stdin = child.stdin.as_mut().ok_or("a worker without stdin")?;
        writeln!(stdin, "{start} {end}").map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The window of a timed worker: `ready` on stdout, then `START END` read from stdin.
fn ask_window() -> Result<(u64, u64), String> {
    println!("ready");
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    let mut line = String::new();
    BufReader::new(std::io::stdin())
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    let mut parts = line.split_whitespace().map(str::parse::<u64>);
    match (parts.next(), parts.next()) {
        (Some(Ok(start)), Some(Ok(end))) => Ok((start, end)),
        _ => Err(format!("no window from the bench: {line:?}")),
    }
}

/// Sleeps until `at` (microseconds since the epoch).
fn sleep_until(at: u64) {
    std::thread::sleep(Duration::from_micros(at.saturating_sub(epoch_us())));
}

/// One session of a worker: `t` appends for `span` (in `window` if timed); returns when each
/// append started (microseconds since the epoch) and how long it took.
fn session_appends(
    t: &Tract,
    name: &str,
    span: Span,
    window: Option<(u64, u64)>,
    items: Option<&[Value]>,
) -> Result<Vec<(u64, u64)>, tract_core::Error> {
    let (count, end) = match (span, window) {
        (Span::Count(n), _) => (n, u64::MAX),
        (Span::Timed, Some((start, end))) => {
            sleep_until(start);
            (usize::MAX, end)
        }
        (Span::Timed, None) => (0, 0),
    };
    let mut times = Vec::new();
    for i in 0..count {
        let at = epoch_us();
        if at >= end {
            break;
        }
        let start = Instant::now();
        match items {
            Some(items) if !items.is_empty() => append_item(t, &items[i % items.len()])?,
            _ => drop(t.append(Message::text(Role::User, format!("{name} message {i}")))?),
        }
        let took = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
        times.push((at, took));
    }
    Ok(times)
}

/// Appends one OpenAI Responses item as `TractSession.add_items([item])` does.
fn append_item(t: &Tract, item: &Value) -> Result<(), tract_core::Error> {
    t.append_items(std::slice::from_ref(item), &AppendOptions::default())
        .map(drop)
}

/// The items of each of `threads` sessions: line K of the JSON Lines file `path` is the list of
/// session K's items, appended one at a time in turn (and again from the first if the window
/// outlasts them).
fn session_items(path: &str, threads: usize) -> Result<Vec<Vec<Value>>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let lists = text
        .lines()
        .map(|line| match serde_json::from_str(line) {
            Ok(Value::Array(items)) => Ok(items),
            Ok(_) => Err(format!("{path}: a line that is not a list of items")),
            Err(e) => Err(format!("{path}: {e}")),
        })
        .collect::<Result<Vec<_>, _>>()?;
    if lists.len() < threads {
        return Err(format!(
            "{path}: {} lists of items for {threads} sessions",
            lists.len()
        ));
    }
    Ok(lists)
}

/// One process of [`sessions_from_processes`]: `threads` handles on branches
/// `sessions/PREFIX-K`, each appending for `span` once all are open; reports every latency in
/// microseconds and when its first append started and its last ended (microseconds since the
/// epoch). The tokenizer is loaded first (about 140 ms once per process, not a cost of any
/// append).
pub fn sessions_worker(
    store: &str,
    prefix: &str,
    threads: usize,
    span: Span,
    items: Option<&str>,
) -> Result<Value, String> {
    let store = Path::new(store);
    let items = match items {
        Some(path) => session_items(path, threads)?,
        None => Vec::new(),
    };
    std::hint::black_box(tract_core::tokens::count_text("warm up the tokenizer"));
    // Every session opens its handle, then all wait for the window (timed) or go at once.
    let opened = Barrier::new(threads + 1);
    let window = OnceLock::new();
    let all = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|k| {
                let (opened, window) = (&opened, &window);
                let items = items.get(k).map(Vec::as_slice);
                s.spawn(move || -> Result<Vec<(u64, u64)>, tract_core::Error> {
                    let name = format!("{prefix}-{k}");
                    let t = BranchName::new(&format!("sessions/{name}")).and_then(|b| {
                        let options = OpenOptions {
                            bind: Bind::Branch(b),
                            ..OpenOptions::default()
                        };
                        Tract::open_with(store, &options)
                    });
                    opened.wait();
                    opened.wait();
                    session_appends(&t?, &name, span, window.get().copied(), items)
                })
            })
            .collect();
        opened.wait();
        let asked = match span {
            Span::Timed => ask_window().map(|w| {
                window.get_or_init(|| w);
            }),
            Span::Count(_) => Ok(()),
        };
        opened.wait();
        asked?;
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
        // When each append started (microseconds since the epoch), in the order of
        // `latencies_us`: where in the window the slow ones were.
        "starts_us": all.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
        "first_start_us": all.iter().map(|(s, _)| *s).min().unwrap_or(0),
        "last_end_us": all.iter().map(|(s, l)| s + l).max().unwrap_or(0),
    }))
}
