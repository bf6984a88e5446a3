//! The usage ledger: `tract-bench --usage [--messages 1000000] [--branches 1000] [--runs 30]
//! [--steps 400] [--dir DIR]`.
//!
//! A store of `messages` messages over `branches` branches (a user's question, then the
//! assistant's answer with what it cost, in one of three models; every tenth branch a fork of
//! the one before at its middle, going on with answers of its own) is built once into DIR
//! (default: `tract-bench-usage` in the temporary directory) and reused by later runs. Then, on
//! a handle opened anew for each run, as `tract usage` runs: one branch's totals, and every
//! branch's with the store's (each request once); medians in milliseconds. And what recording
//! usage costs an agent step (a user message, then an answer, each its own durable write): the
//! same steps with and without usage, alternated run by run in fresh stores, median per step
//! and the ratio.

use crate::{median, ms};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};
use tract_core::{Bind, BranchName, Message, OpenOptions, Role, Tract, Usage, UsageOptions};

type Res<T> = Result<T, String>;

fn err(e: tract_core::Error) -> String {
    e.to_string()
}

/// The models answers come from, in turn.
const MODELS: [&str; 3] = ["claude-sonnet-4-5", "claude-haiku-4-5", "gpt-4.1"];

/// The answer of request `k`, with what it cost (numbers that vary, as a session's do).
fn answer(k: usize) -> Res<Message> {
    let mut m = Message::text(Role::Assistant, format!("answer {k}: done, see the diff."));
    let u = Usage::from_json(&json!({
        "input_tokens": 3 + k % 17,
        "output_tokens": 40 + k % 300,
        "cache_read_input_tokens": 20_000 + (k * 37) % 9_000,
        "cache_creation_input_tokens": (k * 13) % 700,
        "model": MODELS[k % MODELS.len()],
    }))
    .map_err(err)?;
    u.put_on(&mut m).map_err(err)?;
    Ok(m)
}

/// A conversation of `n` messages from request number `from`: question, answer, in turn.
fn conversation(n: usize, from: usize) -> Res<Vec<Message>> {
    (0..n)
        .map(|i| {
            if i % 2 == 0 {
                Ok(Message::text(
                    Role::User,
                    format!("question {}", from + i / 2),
                ))
            } else {
                answer(from + i / 2)
            }
        })
        .collect()
}

/// The store, built into `dir` unless it is there already (a file naming its size says so).
fn store(dir: &Path, messages: usize, branches: usize) -> Res<(std::path::PathBuf, Value)> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let path = dir.join(format!("usage-{messages}-{branches}.redb"));
    let done = dir.join(format!("usage-{messages}-{branches}.done"));
    if done.exists() {
        return Ok((path, json!({"reused": true})));
    }
    let _ = std::fs::remove_file(&path);
    let start = Instant::now();
    let each = (messages / branches.max(1)).max(2);
    let t = Tract::open_with(
        &path,
        &OpenOptions {
            bind: Bind::StoreHead,
            ..Default::default()
        },
    )
    .map_err(err)?;
    for b in 0..branches {
        let name = BranchName::new(&format!("session/{b:04}")).map_err(err)?;
        let fork = b % 10 == 9;
        if fork {
            // A fork of the branch before at its middle, going on with as many messages.
            let before = t
                .branches()
                .map_err(err)?
                .into_iter()
                .find(|x| x.name == format!("session/{:04}", b - 1))
                .ok_or("the branch before is missing")?;
            let at = Tract::open_with(
                &path,
                &OpenOptions {
                    bind: Bind::Branch(BranchName::new(&before.name).map_err(err)?),
                    ..Default::default()
                },
            )
            .map_err(err)?
            .log(&tract_core::LogQuery::default())
            .map_err(err)?
            .get(each / 2)
            .map(|c| c.id)
            .ok_or("the branch before is short")?;
            t.create_branch(&name, &at.into()).map_err(err)?;
        }
        let h = Tract::open_with(
            &path,
            &OpenOptions {
                bind: Bind::Branch(name),
                ..Default::default()
            },
        )
        .map_err(err)?;
        let n = if fork { each / 2 } else { each };
        for chunk in conversation(n, b * each)?.chunks(2048) {
            h.append_batch(chunk.to_vec()).map_err(err)?;
        }
    }
    std::fs::write(&done, b"").map_err(|e| e.to_string())?;
    Ok((
        path,
        json!({"reused": false, "build_s": start.elapsed().as_secs_f64()}),
    ))
}

/// One measurement per run, each on a handle opened anew: its median in milliseconds, with
/// the open counted and apart.
fn timed(path: &Path, runs: usize, f: impl Fn(&Tract) -> Res<u64>) -> Res<Value> {
    let (mut whole, mut calls) = (Vec::new(), Vec::new());
    let mut requests = 0;
    for _ in 0..runs {
        let start = Instant::now();
        let t = Tract::open_with(
            path,
            &OpenOptions {
                bind: Bind::StoreHead,
                ..Default::default()
            },
        )
        .map_err(err)?;
        let call = Instant::now();
        requests = f(&t)?;
        calls.push(call.elapsed());
        whole.push(start.elapsed());
    }
    Ok(json!({
        "requests": requests,
        "median_ms": ms(median(calls)),
        "with_open_median_ms": ms(median(whole)),
    }))
}

/// An agent's steps in a fresh store: a question, then its answer (with what it cost, or
/// without), each a durable write of its own. The time per step.
fn steps(n: usize, with_usage: bool) -> Res<Duration> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let t = Tract::open(dir.path().join("store.redb")).map_err(err)?;
    let start = Instant::now();
    for k in 0..n {
        t.user(format!("question {k}")).map_err(err)?;
        let mut a = answer(k)?;
        if !with_usage {
            a.metadata.clear();
        }
        t.append(a).map_err(err)?;
    }
    Ok(start.elapsed() / n.max(1) as u32)
}

/// The figures.
pub fn run(dir: &Path, messages: usize, branches: usize, runs: usize, n: usize) -> Res<Value> {
    let (path, built) = store(dir, messages, branches)?;
    let one = BranchName::new("session/0000").map_err(err)?;
    let o = UsageOptions::default();
    let branch = timed(&path, runs, |t| {
        let u = t.usage(Some(one.as_str()), &o).map_err(err)?;
        Ok(u.ledger.totals.requests)
    })?;
    let all = timed(&path, runs, |t| {
        let u = t.usage_of_branches(&o).map_err(err)?;
        Ok(u.total.ledger.totals.requests)
    })?;
    let (mut with, mut without) = (Vec::new(), Vec::new());
    // Alternated, each first in turn: the first of a pair meets a colder machine.
    for r in 0..runs.clamp(4, 8) {
        if r % 2 == 0 {
            without.push(steps(n, false)?);
            with.push(steps(n, true)?);
        } else {
            with.push(steps(n, true)?);
            without.push(steps(n, false)?);
        }
    }
    let (with, without) = (median(with), median(without));
    Ok(json!({
        "store": {"messages": messages, "branches": branches, "path": path, "build": built},
        "usage_of_one_branch": branch,
        "usage_of_every_branch_and_the_store": all,
        "agent_step": {
            "steps": n,
            "with_usage_median_ms": ms(with),
            "without_median_ms": ms(without),
            "ratio": with.as_secs_f64() / without.as_secs_f64().max(1e-9),
        },
    }))
}
