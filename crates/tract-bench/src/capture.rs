//! Capture: `tract-bench --capture [--sessions 20] [--seconds 20] [--rate 10]` has `sessions`
//! writer threads append session lines to their own files, `rate` lines a second each, in turn
//! Claude Code session lines (the seeded workload, one line per content block) in a projects
//! folder, Codex rollout lines in a Codex sessions folder and Gemini CLI records in a Gemini
//! folder, while a capture following all three polls them every 100 ms (`tract capture`'s
//! default) into a store file. For
//! every line it measures the delay from its write to the end of the pass that committed it
//! (the pass says how far it read each file). Median, p99 and the largest, in milliseconds.

use crate::transcripts::{claude_code_lines, codex_lines, gemini_lines};
use crate::{SEED, ms, percentile};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tract_core::capture::Capture;
use tract_core::{Bind, Tract};

/// When each line of each file was written: the file's length after the line, and the time.
type Written = Arc<Mutex<HashMap<PathBuf, Vec<(u64, Instant)>>>>;

/// The figures.
pub fn measure(sessions: usize, seconds: u64, rate: u64) -> Result<Value, String> {
    let err = |e: tract_core::Error| e.to_string();
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let projects = dir.path().join("projects");
    let folder = projects.join("-home-dev-app");
    std::fs::create_dir_all(&folder).map_err(|e| e.to_string())?;
    let t = Tract::open_with(
        dir.path().join("store.redb"),
        &tract_core::OpenOptions {
            bind: Bind::StoreHead,
            ..Default::default()
        },
    )
    .map_err(err)?;
    let codex_day = dir.path().join("codex-home/sessions/2026/11/20");
    std::fs::create_dir_all(&codex_day).map_err(|e| e.to_string())?;
    let gemini_tmp = dir.path().join("gemini-home/.gemini/tmp");
    let gemini_chats = gemini_tmp.join("bench-app/chats");
    std::fs::create_dir_all(&gemini_chats).map_err(|e| e.to_string())?;
    let mut capture = Capture::new(t.store().clone(), &projects).map_err(err)?;
    capture
        .follow_codex(dir.path().join("codex-home/sessions"))
        .map_err(err)?;
    capture.follow_gemini(&gemini_tmp).map_err(err)?;
    let lines_each = (seconds * rate) as usize;
    let written: Written = Arc::default();
    let stop = Instant::now() + Duration::from_secs(seconds) + Duration::from_secs(2);
    let mut writers = Vec::new();
    for s in 0..sessions {
        // About as many messages as lines are needed: a message is one to a few lines.
        let (lines, file) = match s % 3 {
            0 => {
                let session = format!("{:08x}-0000-4000-8000-{:012x}", 0xbe_u32, s);
                let lines = claude_code_lines(lines_each, SEED + s as u64, &session);
                (lines, folder.join(format!("{session}.jsonl")))
            }
            1 => {
                let thread = format!("019e0000-0000-7000-8000-{s:012x}");
                let lines = codex_lines(lines_each, SEED + s as u64, &thread);
                let name = format!("rollout-2026-11-20T00-00-00-{thread}.jsonl");
                (lines, codex_day.join(name))
            }
            _ => {
                let session = format!("gemini-bench-{s:04}");
                let lines = gemini_lines(lines_each, SEED + s as u64, &session);
                (
                    lines,
                    gemini_chats.join(format!("session-2026-11-20T00-00-{s:04}.jsonl")),
                )
            }
        };
        let written = Arc::clone(&written);
        let gap = Duration::from_micros(1_000_000 / rate.max(1));
        writers.push(std::thread::spawn(move || -> Result<usize, String> {
            let mut f = std::fs::File::create(&file).map_err(|e| e.to_string())?;
            let mut len = 0u64;
            let start = Instant::now();
            for (k, line) in lines.iter().take(lines_each).enumerate() {
                // Paced from the start, so a slow write does not slow the rate down.
                let due = start + gap * k as u32;
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
                f.write_all(line.as_bytes()).map_err(|e| e.to_string())?;
                f.flush().map_err(|e| e.to_string())?;
                len += line.len() as u64;
                let at = Instant::now();
                if let Ok(mut w) = written.lock() {
                    w.entry(file.clone()).or_default().push((len, at));
                }
            }
            Ok(lines.len().min(lines_each))
        }));
    }
    let mut delays = Vec::new();
    let mut committed: HashMap<PathBuf, usize> = HashMap::new();
    let mut passes = 0usize;
    let mut pass_times = Vec::new();
    while Instant::now() < stop {
        let begin = Instant::now();
        let pass = capture.pass().map_err(err)?;
        let end = Instant::now();
        passes += 1;
        pass_times.push(end - begin);
        if let Some((file, e)) = pass.failed.first() {
            return Err(format!("{}: {e}", file.display()));
        }
        let w = written
            .lock()
            .map_err(|_| "a writer panicked".to_string())?;
        for i in &pass.imported {
            let Some(lines) = w.get(&i.file) else {
                continue;
            };
            let done = committed.entry(i.file.clone()).or_default();
            while *done < lines.len() && lines[*done].0 <= i.read {
                delays.push(end - lines[*done].1);
                *done += 1;
            }
        }
        drop(w);
        std::thread::sleep(Duration::from_millis(100).saturating_sub(end - begin));
    }
    let mut total = 0;
    for h in writers {
        total += h.join().map_err(|_| "a writer panicked".to_string())??;
    }
    if delays.len() != total {
        return Err(format!(
            "{} lines written, {} seen committed",
            total,
            delays.len()
        ));
    }
    let status = capture.status().clone();
    Ok(json!({
        "sessions": sessions,
        "claude_code_sessions": sessions.div_ceil(3),
        "codex_sessions": (sessions + 1) / 3,
        "gemini_sessions": sessions / 3,
        "lines": total,
        "lines_per_s": sessions as u64 * rate,
        "messages_imported": status.messages,
        "passes": passes,
        "pass_ms_median": ms(percentile(pass_times.clone(), 0.5)),
        "pass_ms_p99": ms(percentile(pass_times, 0.99)),
        "delay_ms_median": ms(percentile(delays.clone(), 0.5)),
        "delay_ms_p99": ms(percentile(delays.clone(), 0.99)),
        "delay_ms_max": ms(percentile(delays, 1.0)),
    }))
}
