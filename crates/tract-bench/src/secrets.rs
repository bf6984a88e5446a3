//! Secrets scrubbing: `tract-bench --secrets [--messages N] [--runs R]` measures what scrubbing
//! credentials as they are written costs, each figure with scrubbing on against the same work
//! with it off (`SecretsPolicy { enabled: false, .. }`), measured in the same run:
//!
//! 1. durable appends, one by one, of the same messages (the first N, at most [`APPENDS`]: each
//!    waits for its fsync) into two new stores, on and off in alternating rounds of [`ROUND`]
//!    so that the machine's noise hits both, after a round into a store of each kind (the
//!    process's first tokenizer load and rule compilations are not an append's): µs per
//!    append; beside them the detector's own cost per message, with the CPU's caches warm and
//!    emptied before each message (as a write's other work leaves them);
//! 2. `import` of the N messages as tract JSONL, and of the real Claude Code sessions of
//!    `tests/fixtures/claude-code-real` ([`REAL_REPEATS`] times each, into fresh branches):
//!    messages and MB per second;
//! 3. one `capture` pass over a projects folder of those real sessions (copied) and of
//!    generated sessions of N messages in all: messages and MB per second;
//! 4. `scan_secrets` with history over every branch of a store of the N messages (stored with
//!    scrubbing off, so the planted credentials are there to find): MB of message text per
//!    second, beside the detector alone on the same texts (`Detector::find`, `find_in_json`,
//!    and `secrets::findings`, the per-message work a scan and a scrub both do).
//!
//! The messages are the bench's seeded workload with what scrubbing meets besides code: one
//! tool result in three is a log or an environment dump (UUIDs, SHAs, URLs, keys that are not
//! secrets), and one message in [`PLANT_EVERY`] holds a fake credential (in a user's text, an
//! environment dump or a tool call's JSON arguments) so that the scrubbing path runs for real.
//! Each figure is the median of R runs; ratios are on/off, each run's pair and their median.

use crate::workload::{Workload, text_bytes};
use crate::{SEED, median};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tract_core::formats::exports::ExportFormat;
use tract_core::{
    Bind, BranchName, Content, Detector, Message, OpenOptions, Role, ScanOptions, SecretsPolicy,
    Tract,
};

/// Target: an append with scrubbing on costs at most this much more than with it off, percent.
const TARGET_APPEND_COST_PERCENT: f64 = 10.0;
/// Target: import and capture throughput with scrubbing on, at least this share of off.
const TARGET_THROUGHPUT_RATIO: f64 = 0.9;
/// Target: `secrets scan --history`, MB of message text per second.
const TARGET_SCAN_MB_PER_S: f64 = 50.0;

/// Appends per store and run, at most: a durable append takes milliseconds on a slow disk.
const APPENDS: usize = 500;
/// Appends in a round before the other store's turn.
const ROUND: usize = 50;
/// One message in this many holds a planted credential.
const PLANT_EVERY: usize = 50;
/// Times each real Claude Code session is imported per run, each into a fresh branch.
const REAL_REPEATS: usize = 3;
/// Generated sessions in the captured projects folder, sharing the N messages.
const CAPTURE_SESSIONS: usize = 8;

/// The real Claude Code sessions, from the repository's fixtures.
fn real_sessions_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/claude-code-real")
}

/// The figures.
pub fn measure(n: usize, runs: usize) -> Result<Value, String> {
    let runs = runs.max(1);
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let (messages, planted) = messages(n, SEED);
    let text = text_bytes(&messages);
    let detector = Detector::builtin();
    // Planted credentials the detector misses would leave the scrubbing path unexercised.
    let missed: Vec<String> = planted
        .iter()
        .filter(|(i, _)| tract_core::secrets::findings(&detector, &messages[*i]).is_empty())
        .map(|(i, secret)| format!("message {i}: {secret}"))
        .collect();
    if !missed.is_empty() {
        return Err(format!(
            "planted credentials not found: {}",
            missed.join(", ")
        ));
    }
    let planted = planted.len();
    eprintln!("secrets: appends");
    let append = appends(dir.path(), &messages[..n.min(APPENDS)], runs)?;
    eprintln!("secrets: import");
    let import = imports(dir.path(), &messages, runs)?;
    eprintln!("secrets: capture");
    let capture = captures(dir.path(), n, runs)?;
    eprintln!("secrets: scan");
    let scan = scans(dir.path(), &messages, text, runs)?;

    let ratio_at = |v: &Value, k: &str| v[k]["median_pair_ratio"].as_f64().unwrap_or(0.0);
    let append_cost = append["cost_percent"].as_f64().unwrap_or(f64::MAX);
    let scan_rate = scan["scan_history_all"]["mb_per_s"].as_f64().unwrap_or(0.0);
    let imports_met = ratio_at(&import, "tract_jsonl") >= TARGET_THROUGHPUT_RATIO
        && ratio_at(&import, "claude_code_real") >= TARGET_THROUGHPUT_RATIO;
    let capture_met =
        capture["median_pair_ratio"].as_f64().unwrap_or(0.0) >= TARGET_THROUGHPUT_RATIO;
    Ok(json!({
        "messages": n,
        "message_text_bytes": text,
        "planted_credentials": planted,
        "runs": runs,
        "machine": {"cpus": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)},
        "append": append,
        "import": import,
        "capture": capture,
        "scan": scan,
        "targets": {
            "append_cost_percent": {"target_max": TARGET_APPEND_COST_PERCENT, "measured": append_cost, "met": append_cost <= TARGET_APPEND_COST_PERCENT},
            "import_ratio": {"target_min": TARGET_THROUGHPUT_RATIO, "tract_jsonl": ratio_at(&import, "tract_jsonl"), "claude_code_real": ratio_at(&import, "claude_code_real"), "met": imports_met},
            "capture_ratio": {"target_min": TARGET_THROUGHPUT_RATIO, "measured": capture["median_pair_ratio"], "met": capture_met},
            "scan_history_mb_per_s": {"target_min": TARGET_SCAN_MB_PER_S, "measured": scan_rate, "met": scan_rate >= TARGET_SCAN_MB_PER_S},
        },
    }))
}

/// The seeded workload's first `n` messages with logs, environment dumps and planted fake
/// credentials (see the module's doc), and which messages hold one (index, credential).
pub fn messages(n: usize, seed: u64) -> (Vec<Message>, Vec<(usize, String)>) {
    let mut messages = Workload::new(seed).messages(n);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x05ec_2e75);
    let mut planted = Vec::new();
    for (i, m) in messages.iter_mut().enumerate() {
        if m.role == Role::Tool && i % 3 == 0 {
            let len = m.content.text().len();
            m.content = Content::Text(if i % 2 == 0 {
                log_lines(&mut rng, len)
            } else {
                env_dump(&mut rng, len)
            });
        }
        if i % PLANT_EVERY != PLANT_EVERY / 2 || m.role == Role::System {
            continue;
        }
        let secret = credential(&mut rng, planted.len());
        planted.push((i, secret.clone()));
        if let Some(call) = m.tool_calls.first_mut() {
            call.arguments = json!({
                "command": format!("curl -sS -H 'Authorization: token {secret}' https://api.github.com/user")
            })
            .to_string();
        } else {
            let text = m.content.text().into_owned();
            m.content = Content::Text(match m.role {
                Role::Tool => format!("{text}\nDEPLOY_TOKEN={secret}\n"),
                _ => {
                    format!("{text}\nIt still fails with the key {secret} so is it the wrong one?")
                }
            });
        }
    }
    (messages, planted)
}

/// `k` alphanumerics of `rng`.
fn alnum(rng: &mut ChaCha8Rng, k: usize) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    (0..k)
        .map(|_| A[rng.random_range(0..A.len())] as char)
        .collect()
}

/// `k` hex digits of `rng`.
fn hex(rng: &mut ChaCha8Rng, k: usize) -> String {
    (0..k)
        .map(|_| char::from_digit(rng.random_range(0..16u32), 16).unwrap_or('0'))
        .collect()
}

/// A fake credential of one of a few common kinds (random, so it passes the rules' entropy
/// checks), the `k`th planted.
fn credential(rng: &mut ChaCha8Rng, k: usize) -> String {
    match k % 4 {
        0 => format!("ghp_{}", alnum(rng, 36)),
        1 => format!("sk_live_{}", alnum(rng, 24)),
        2 => {
            const B32: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
            let tail: String = (0..16)
                .map(|_| B32[rng.random_range(0..B32.len())] as char)
                .collect();
            format!("AKIA{tail}")
        }
        _ => format!(
            "xoxb-{}-{}-{}",
            rng.random_range(1_000_000_000u64..9_999_999_999),
            rng.random_range(1_000_000_000u64..9_999_999_999),
            alnum(rng, 24)
        ),
    }
}

/// A service's log of about `len` bytes: timestamps, request ids (UUIDs), commit SHAs, URLs.
fn log_lines(rng: &mut ChaCha8Rng, len: usize) -> String {
    let mut out = String::with_capacity(len + 200);
    let mut ms = rng.random_range(0..86_400_000u64);
    while out.len() < len {
        ms += rng.random_range(1..2_000);
        let level = ["INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"][rng.random_range(0..6)];
        out.push_str(&format!(
            "2026-11-20T{:02}:{:02}:{:02}.{:03}Z {level} api::handler{{req_id={}-{}-4{}-8{}-{}}}: GET /v1/sessions/{}?page={} status={} latency_ms={} build={}\n",
            ms / 3_600_000 % 24,
            ms / 60_000 % 60,
            ms / 1000 % 60,
            ms % 1000,
            hex(rng, 8),
            hex(rng, 4),
            hex(rng, 3),
            hex(rng, 3),
            hex(rng, 12),
            rng.random_range(1..100_000u32),
            rng.random_range(1..20u32),
            [200, 200, 201, 404, 500][rng.random_range(0..5)],
            rng.random_range(1..900u32),
            hex(rng, 40),
        ));
    }
    out.truncate(len);
    out
}

/// `env` as a developer's shell prints it, about `len` bytes: paths, settings, URLs without
/// passwords, a git SHA; nothing that is a secret.
fn env_dump(rng: &mut ChaCha8Rng, len: usize) -> String {
    let mut out = String::with_capacity(len + 200);
    let mut k = 0;
    while out.len() < len {
        let line = match k % 12 {
            0 => {
                "PATH=/home/dev/.cargo/bin:/usr/local/bin:/usr/bin:/bin:/home/dev/.local/bin".into()
            }
            1 => "HOME=/home/dev".into(),
            2 => format!(
                "RUST_LOG=info,api={}",
                ["debug", "trace", "warn"][rng.random_range(0..3)]
            ),
            3 => format!(
                "DATABASE_URL=postgres://app@localhost:{}/app_dev",
                rng.random_range(5432..5440u32)
            ),
            4 => format!("GIT_COMMIT={}", hex(rng, 40)),
            5 => format!(
                "SESSION_ID={}-{}-4{}-a{}-{}",
                hex(rng, 8),
                hex(rng, 4),
                hex(rng, 3),
                hex(rng, 3),
                hex(rng, 12)
            ),
            6 => "LANG=en_US.UTF-8".into(),
            7 => format!("MAX_CONNECTIONS={}", rng.random_range(4..256u32)),
            8 => "EDITOR=nvim".into(),
            9 => format!("IMAGE_DIGEST=sha256:{}", hex(rng, 64)),
            10 => format!("CARGO_TARGET_DIR=/tmp/target-{}", hex(rng, 6)),
            _ => format!("TERM=xterm-256color SHLVL={}", rng.random_range(1..4u32)),
        };
        out.push_str(&line);
        out.push('\n');
        k += 1;
    }
    out.truncate(len);
    out
}

/// A new store at `path` bound to `branch` (`None`: the store's head), scrubbing as `on` says.
fn store(path: &Path, branch: Option<&str>, on: bool) -> Result<Tract, String> {
    let err = |e: tract_core::Error| e.to_string();
    let bind = match branch {
        Some(b) => Bind::Branch(BranchName::new(b).map_err(err)?),
        None => Bind::StoreHead,
    };
    let t = Tract::open_with(
        path,
        &OpenOptions {
            bind,
            ..OpenOptions::default()
        },
    )
    .map_err(err)?;
    if !on {
        t.set_secrets_policy(&SecretsPolicy {
            enabled: false,
            ..SecretsPolicy::default()
        })
        .map_err(err)?;
    }
    // A new store scrubs: the figures would compare nothing if that changed.
    let enabled = t.secrets_policy().map_err(err)?.is_some_and(|p| p.enabled);
    if enabled != on {
        return Err(format!("a new store's scrubbing is {enabled}, wanted {on}"));
    }
    Ok(t)
}

/// Microseconds, to a tenth.
fn us(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e7).round() / 10.0
}

/// To a hundredth.
fn r2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// The median of `xs`.
fn mid(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(0.0)
}

/// On and off figures of several runs where higher is better (a rate): their medians, each
/// run's on/off ratio and the median of those (each pair shares its moment's noise).
fn paired(on: &[f64], off: &[f64]) -> Value {
    let ratios: Vec<f64> = on.iter().zip(off).map(|(a, b)| a / b).collect();
    json!({
        "on": mid(on.to_vec()).round(),
        "off": mid(off.to_vec()).round(),
        "pair_ratios": ratios.iter().map(|x| r2(*x)).collect::<Vec<_>>(),
        "median_pair_ratio": r2(mid(ratios)),
    })
}

/// Bytes written between two messages to empty the CPU's caches (larger than any cache here).
const SWEEP_BYTES: usize = 8 << 20;

/// Durable appends of `messages`, one by one, into a new store with scrubbing on and one with
/// it off, in alternating rounds; per run the mean µs per append of each.
fn appends(dir: &Path, messages: &[Message], runs: usize) -> Result<Value, String> {
    let err = |e: tract_core::Error| e.to_string();
    // A running writer has its tokenizer loaded and its detector's automata built: a round
    // into a store of each kind first, so that neither side's figures carry what the process
    // does once (about 0.1 s, in the first append it makes).
    for (k, on) in [true, false].into_iter().enumerate() {
        let warm = store(&dir.join(format!("append-warm-{k}.redb")), None, on)?;
        for m in messages.iter().take(ROUND) {
            warm.append(m.clone()).map_err(err)?;
        }
    }
    let (mut on_us, mut off_us) = (Vec::new(), Vec::new());
    for run in 0..runs {
        let stores = [
            store(&dir.join(format!("append-on-{run}.redb")), None, true)?,
            store(&dir.join(format!("append-off-{run}.redb")), None, false)?,
        ];
        let mut took = [Duration::ZERO; 2];
        for (r, chunk) in messages.chunks(ROUND).enumerate() {
            let order = if (r + run) % 2 == 0 { [0, 1] } else { [1, 0] };
            for s in order {
                let chunk = chunk.to_vec();
                let start = Instant::now();
                for m in chunk {
                    stores[s].append(m).map_err(err)?;
                }
                took[s] += start.elapsed();
            }
        }
        let per = |d: Duration| us(d / messages.len().max(1) as u32);
        on_us.push(per(took[0]));
        off_us.push(per(took[1]));
    }
    // Lower is better here: the ratio is on/off of the costs, the cost what on adds.
    let ratios: Vec<f64> = on_us.iter().zip(&off_us).map(|(a, b)| a / b).collect();
    let ratio = mid(ratios.clone());
    // The detector's share: the per-message work of a scrub, alone, on the same messages.
    let detector = Detector::builtin();
    let mut detect = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        for m in messages {
            std::hint::black_box(tract_core::secrets::findings(&detector, m).len());
        }
        detect.push(start.elapsed() / messages.len().max(1) as u32);
    }
    // The same with the CPU's caches emptied before each message, as a write's other work
    // (the tokenizer's tables, compression, the store) leaves them: what a scrub costs an
    // append is this, not the figure above.
    let mut sweep = vec![0u8; SWEEP_BYTES];
    let mut cold = Vec::new();
    for _ in 0..runs {
        let mut took = Duration::ZERO;
        for (k, m) in messages.iter().enumerate() {
            for b in sweep.iter_mut().step_by(64) {
                *b = b.wrapping_add(k as u8);
            }
            let start = Instant::now();
            std::hint::black_box(tract_core::secrets::findings(&detector, m).len());
            took += start.elapsed();
        }
        cold.push(took / messages.len().max(1) as u32);
    }
    std::hint::black_box(&sweep);
    Ok(json!({
        "appends_per_run": messages.len(),
        "round": ROUND,
        "on_us": mid(on_us.clone()),
        "off_us": mid(off_us.clone()),
        "runs_on_us": on_us,
        "runs_off_us": off_us,
        "pair_ratios": ratios.iter().map(|x| r2(*x)).collect::<Vec<_>>(),
        "median_pair_ratio": r2(ratio),
        "cost_percent": r2((ratio - 1.0) * 100.0),
        "target_percent": TARGET_APPEND_COST_PERCENT,
        "meets_target": (ratio - 1.0) * 100.0 <= TARGET_APPEND_COST_PERCENT,
        "detector_findings_us_per_message": us(median(detect)),
        "detector_findings_us_per_message_caches_cold": us(median(cold)),
    }))
}

/// The files of the real Claude Code sessions (the session files, not their sub-agents') and
/// the bytes of every file an import of them reads.
fn real_sessions() -> Result<(Vec<PathBuf>, u64), String> {
    let dir = real_sessions_dir();
    let mut files = Vec::new();
    let mut bytes = 0;
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))? {
            let path = e.map_err(|e| e.to_string())?.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|x| x == "jsonl") {
                bytes += std::fs::metadata(&path).map_err(|e| e.to_string())?.len();
                if path.parent() == Some(dir.as_path()) {
                    files.push(path);
                }
            }
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(format!("no sessions in {}", dir.display()));
    }
    Ok((files, bytes))
}

/// Imports into a store with scrubbing on and one with it off: the N messages as tract JSONL
/// into a new store each run, and the real Claude Code sessions into fresh branches.
fn imports(dir: &Path, messages: &[Message], runs: usize) -> Result<Value, String> {
    let err = |e: tract_core::Error| e.to_string();
    // The file: the messages exported by a store that keeps them as they are.
    let source = store(&dir.join("import-source.redb"), Some("main"), false)?;
    source.append_batch(messages.to_vec()).map_err(err)?;
    let jsonl = source.export(ExportFormat::Jsonl, false).map_err(err)?;
    drop(source);
    let file = dir.join("messages.jsonl");
    std::fs::write(&file, &jsonl).map_err(|e| e.to_string())?;
    let (real, real_bytes) = real_sessions()?;

    let (mut jsonl_rate, mut real_rate) = ([Vec::new(), Vec::new()], [Vec::new(), Vec::new()]);
    let (mut jsonl_messages, mut real_messages) = (0, 0);
    for run in 0..runs {
        let order = if run % 2 == 0 { [0, 1] } else { [1, 0] };
        for s in order {
            let on = s == 0;
            let path = dir.join(format!("import-{s}-{run}.redb"));
            let t = store(&path, Some("import"), on)?;
            let start = Instant::now();
            let report = t.import_file(&file, None).map_err(err)?;
            jsonl_rate[s].push(report.added as f64 / start.elapsed().as_secs_f64());
            jsonl_messages = report.added;
            drop(t);
            let mut took = Duration::ZERO;
            let mut added = 0;
            for k in 0..REAL_REPEATS {
                for (i, f) in real.iter().enumerate() {
                    let options = OpenOptions {
                        bind: Bind::Branch(BranchName::new(&format!("real-{k}-{i}")).map_err(err)?),
                        ..OpenOptions::default()
                    };
                    let t = Tract::open_with(&path, &options).map_err(err)?;
                    let start = Instant::now();
                    let report = t.import_file(f, None).map_err(err)?;
                    took += start.elapsed();
                    if report.added == 0 {
                        return Err(format!("{}: nothing imported", f.display()));
                    }
                    added += report.added;
                }
            }
            real_rate[s].push(added as f64 / took.as_secs_f64());
            real_messages = added;
        }
    }
    let with_mb = |rates: &[Vec<f64>; 2], messages: usize, bytes: u64| {
        let mut v = paired(&rates[0], &rates[1]);
        let mb = |r: f64| r2(r * bytes as f64 / messages.max(1) as f64 / 1e6);
        v["on_mb_per_s"] = json!(mb(mid(rates[0].clone())));
        v["off_mb_per_s"] = json!(mb(mid(rates[1].clone())));
        v
    };
    let mut tract_jsonl = with_mb(&jsonl_rate, jsonl_messages, jsonl.len() as u64);
    tract_jsonl["messages"] = json!(jsonl_messages);
    tract_jsonl["file_bytes"] = json!(jsonl.len());
    let mut claude_code_real = with_mb(&real_rate, real_messages, real_bytes * REAL_REPEATS as u64);
    claude_code_real["messages"] = json!(real_messages);
    claude_code_real["sessions"] = json!(real.len() * REAL_REPEATS);
    claude_code_real["file_bytes"] = json!(real_bytes * REAL_REPEATS as u64);
    Ok(json!({
        "unit": "messages per second (on, off: medians of the runs)",
        "tract_jsonl": tract_jsonl,
        "claude_code_real": claude_code_real,
    }))
}

/// Copies the folder `from` into `to`, recursively.
fn copy_dir(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| e.to_string())?;
    for e in std::fs::read_dir(from).map_err(|e| e.to_string())? {
        let e = e.map_err(|e| e.to_string())?;
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &target)?;
        } else if e.path().extension().is_some_and(|x| x == "jsonl") {
            std::fs::copy(e.path(), &target).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// One capture pass over a projects folder (the real sessions, copied, and generated sessions
/// of `n` messages in all) into a new store with scrubbing on and one with it off.
fn captures(dir: &Path, n: usize, runs: usize) -> Result<Value, String> {
    let err = |e: tract_core::Error| e.to_string();
    let projects = dir.join("projects");
    // Copied once: capture names a session's branch by the project and session its lines
    // name, so a second copy would be the same sessions again.
    copy_dir(&real_sessions_dir(), &projects.join("-home-dev-real"))?;
    let generated = projects.join("-home-dev-app");
    std::fs::create_dir_all(&generated).map_err(|e| e.to_string())?;
    let mut bytes: u64 = real_sessions()?.1;
    for s in 0..CAPTURE_SESSIONS {
        let session = format!("{:08x}-0000-4000-8000-{:012x}", 0x5ec_u32, s);
        let each = n.div_ceil(CAPTURE_SESSIONS);
        let lines = crate::transcripts::claude_code_lines(each, SEED + s as u64, &session);
        let text = lines.concat();
        bytes += text.len() as u64;
        std::fs::write(generated.join(format!("{session}.jsonl")), text)
            .map_err(|e| e.to_string())?;
    }
    let mut rates = [Vec::new(), Vec::new()];
    let mut imported = 0;
    for run in 0..runs {
        let order = if run % 2 == 0 { [0, 1] } else { [1, 0] };
        for s in order {
            let t = store(&dir.join(format!("capture-{s}-{run}.redb")), None, s == 0)?;
            let mut capture =
                tract_core::capture::Capture::new(t.store().clone(), &projects).map_err(err)?;
            let start = Instant::now();
            let pass = capture.pass().map_err(err)?;
            let took = start.elapsed();
            if let Some((file, e)) = pass.failed.first() {
                return Err(format!("{}: {e}", file.display()));
            }
            imported = capture.status().messages;
            rates[s].push(imported as f64 / took.as_secs_f64());
        }
    }
    let mut v = paired(&rates[0], &rates[1]);
    let mb = |r: f64| r2(r * bytes as f64 / imported.max(1) as f64 / 1e6);
    v["on_mb_per_s"] = json!(mb(mid(rates[0].clone())));
    v["off_mb_per_s"] = json!(mb(mid(rates[1].clone())));
    v["unit"] = json!("messages per second of one pass (on, off: medians of the runs)");
    v["sessions"] = json!(CAPTURE_SESSIONS + real_sessions()?.0.len());
    v["messages"] = json!(imported);
    v["folder_bytes"] = json!(bytes);
    Ok(v)
}

/// `scan_secrets` with history over every branch of a store of `messages` (kept with
/// scrubbing off), and the detector alone on the same texts.
fn scans(dir: &Path, messages: &[Message], text: u64, runs: usize) -> Result<Value, String> {
    let err = |e: tract_core::Error| e.to_string();
    let t = store(&dir.join("scan.redb"), Some("main"), false)?;
    t.append_batch(messages.to_vec()).map_err(err)?;
    let options = ScanOptions {
        history: true,
        all: true,
    };
    let detector = Detector::builtin();
    // Every message as the JSON object tract's JSONL holds it: the same texts, as JSON.
    let as_json: Vec<String> = t
        .export(ExportFormat::Jsonl, false)
        .map_err(err)?
        .lines()
        .map(str::to_string)
        .collect();
    let json_bytes: usize = as_json.iter().map(String::len).sum();
    // Call arguments: the JSON a scan and a scrub run `find_in_json` on.
    let arguments: Vec<&str> = messages
        .iter()
        .flat_map(|m| m.tool_calls.iter().map(|c| c.arguments.as_str()))
        .collect();
    let argument_bytes: usize = arguments.iter().map(|a| a.len()).sum();
    let contents: Vec<String> = messages
        .iter()
        .map(|m| m.content.text().into_owned())
        .collect();
    let content_bytes: usize = contents.iter().map(String::len).sum();

    let (mut scan, mut findings, mut find, mut in_args, mut in_json) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut found = 0;
    for _ in 0..runs {
        let start = Instant::now();
        found = t.scan_secrets(&options).map_err(err)?.len();
        scan.push(start.elapsed());
        let start = Instant::now();
        for m in messages {
            std::hint::black_box(tract_core::secrets::findings(&detector, m).len());
        }
        findings.push(start.elapsed());
        let start = Instant::now();
        for c in &contents {
            std::hint::black_box(detector.find(c).len());
        }
        find.push(start.elapsed());
        let start = Instant::now();
        for a in &arguments {
            std::hint::black_box(detector.find_in_json(a).len());
        }
        in_args.push(start.elapsed());
        let start = Instant::now();
        for j in &as_json {
            std::hint::black_box(detector.find_in_json(j).len());
        }
        in_json.push(start.elapsed());
    }
    let rate = |bytes: u64, d: Duration| json!({"bytes": bytes, "ms": crate::ms(d), "mb_per_s": r2(bytes as f64 / 1e6 / d.as_secs_f64())});
    let (scan, findings) = (median(scan), median(findings));
    Ok(json!({
        "findings": found,
        "scan_history_all": rate(text, scan),
        "detector_findings_per_message": rate(text, findings),
        "find_contents": rate(content_bytes as u64, median(find)),
        "find_in_json_arguments": rate(argument_bytes as u64, median(in_args)),
        "find_in_json_messages_as_jsonl": rate(json_bytes as u64, median(in_json)),
        "scan_outside_detector_ms": crate::ms(scan.saturating_sub(findings)),
    }))
}
