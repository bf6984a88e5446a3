//! Diffs: `tract-bench --diff [--messages 100000] [--differ 1000] [--runs 15] [--dir DIR]`.
//!
//! A store (built once into DIR, default `tract-bench-diff` in the temporary directory, and
//! reused) holds `main`, a conversation of `messages` messages; `side`, a fork of it
//! `differ` messages before its tip that goes on with as many of its own, so the two views
//! share all but `differ` messages each; and `compressed`, a fork of main's tip that appends
//! 10 messages, then compresses a run of its messages. Every branch is checkpointed, as a
//! store that has been written to is. Then, on a handle opened anew for each run, as
//! `tract diff` runs: the diff of main and side, and the diff of the compress commit; and, as
//! the baseline, a cold read of the compressed branch's whole view; medians in milliseconds,
//! the open counted apart.

use crate::{median, ms};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Instant;
use tract_core::{
    Bind, BranchName, CompressRequest, Manual, Message, OpenOptions, Rev, Role, Tract,
};

type Res<T> = Result<T, String>;

fn err(e: tract_core::Error) -> String {
    e.to_string()
}

/// Message `k` of a conversation: a question, or an answer of a few lines.
fn message(k: usize, who: &str) -> Message {
    match k % 2 {
        0 => Message::text(
            Role::User,
            format!("{who} question {k}: where is step {k}?"),
        ),
        _ => Message::text(
            Role::Assistant,
            format!(
                "{who} answer {k}:\nstep {k} is in src/step_{k}.rs,\nline {}.",
                k % 977
            ),
        ),
    }
}

/// A handle on `branch` of the store at `path`.
fn on(path: &Path, branch: &str) -> Res<Tract> {
    Tract::open_with(
        path,
        &OpenOptions {
            bind: Bind::Branch(BranchName::new(branch).map_err(err)?),
            ..Default::default()
        },
    )
    .map_err(err)
}

/// The store, built into `dir` unless it is there already.
fn store(dir: &Path, messages: usize, differ: usize) -> Res<(std::path::PathBuf, Value)> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let path = dir.join(format!("diff2-{messages}-{differ}.redb"));
    let done = dir.join(format!("diff2-{messages}-{differ}.done"));
    if done.exists() {
        return Ok((path, json!({"reused": true})));
    }
    let _ = std::fs::remove_file(&path);
    let start = Instant::now();
    let main = on(&path, "main")?;
    let all: Vec<Message> = (0..messages).map(|k| message(k, "main")).collect();
    let shared = messages.saturating_sub(differ);
    for chunk in all[..shared].chunks(4096) {
        main.append_batch(chunk.to_vec()).map_err(err)?;
    }
    main.create_branch(&BranchName::new("side").map_err(err)?, &Rev::head())
        .map_err(err)?;
    main.append_batch(all[shared..].to_vec()).map_err(err)?;
    let side = on(&path, "side")?;
    side.append_batch((shared..messages).map(|k| message(k, "side")).collect())
        .map_err(err)?;
    let compressed = main
        .fork(&BranchName::new("compressed").map_err(err)?, &Rev::head())
        .map_err(err)?;
    // The agent goes on for a few steps past main's last checkpoint, then a run of 40
    // messages well inside the view is summarized by hand: the compress commit's parent has
    // no checkpoint of its own.
    compressed
        .append_batch((0..10).map(|k| message(k, "compressed")).collect())
        .map_err(err)?;
    let view = compressed.compile().map_err(err)?.messages().map_err(err)?;
    let from = view
        .len()
        .checked_sub(200)
        .ok_or("--messages: too few to compress a run inside the view")?;
    let run: Vec<Rev> = view[from..from + 40]
        .iter()
        .filter_map(|m| m.position)
        .map(Rev::from)
        .collect();
    let manual = Manual("Steps summarized: each is in its own file under src/.".into());
    compressed
        .compress(&CompressRequest {
            commits: Some(run),
            summarizer: Some(&manual),
            ..CompressRequest::default()
        })
        .map_err(err)?;
    main.checkpoint_views().map_err(err)?;
    std::fs::write(&done, b"").map_err(|e| e.to_string())?;
    Ok((
        path,
        json!({"reused": false, "build_s": start.elapsed().as_secs_f64()}),
    ))
}

/// `f` on a handle opened anew each run: medians in milliseconds, with the open and without,
/// and what the last run gave.
fn timed(path: &Path, runs: usize, f: impl Fn(&Tract) -> Res<Value>) -> Res<Value> {
    let (mut whole, mut calls) = (Vec::new(), Vec::new());
    let mut last = Value::Null;
    for _ in 0..runs {
        let start = Instant::now();
        let t = on(path, "main")?;
        let call = Instant::now();
        last = f(&t)?;
        calls.push(call.elapsed());
        whole.push(start.elapsed());
    }
    Ok(json!({
        "median_ms": ms(median(calls)),
        "with_open_median_ms": ms(median(whole)),
        "found": last,
    }))
}

/// The figures.
pub fn run(dir: &Path, messages: usize, differ: usize, runs: usize) -> Res<Value> {
    let (path, built) = store(dir, messages, differ)?;
    let rev = |s: &str| Rev::parse(s).map_err(err);
    let views = timed(&path, runs, |t| {
        let d = t.diff(&rev("main")?, &rev("side")?).map_err(err)?;
        Ok(json!({
            "shared_prefix": d.shared_prefix,
            "only_a": d.only_a.len(),
            "only_b": d.only_b.len(),
            "changed": d.changed.len(),
        }))
    })?;
    let commit = timed(&path, runs, |t| {
        let d = t.diff_commit(&rev("compressed")?).map_err(err)?;
        Ok(json!({
            "in_view": d.a.messages,
            "taken_out": d.only_a.len(),
            "put_in": d.only_b.len(),
        }))
    })?;
    // The baseline, in the same run: what building one of those views whole costs (a cold
    // read of the compressed branch), which a diff that restored both views paid twice.
    let whole = timed(&path, runs, |_| {
        let c = on(&path, "compressed")?;
        let n = c.compile().map_err(err)?.len();
        Ok(json!({"in_view": n}))
    })?;
    Ok(json!({
        "store": {"messages": messages, "differ": differ, "path": path, "build": built},
        "diff_of_two_views": views,
        "diff_of_a_compress_commit": commit,
        "baseline_view_built_whole": whole,
    }))
}
