//! What answers cost: the usage a Claude Code session records, imported or captured line by
//! line, summed as an independent reading of the raw file sums it; a branch's totals along its
//! first parents through edits, forks, resets and redactions.

use crate::support::{branch, file_store, fixture, open_bound, temp_store};
use serde_json::{Value, json};
use std::collections::HashSet;
use tract_core::{Bind, Message, Role, Tract, Usage, UsageOptions};

/// The real sessions that record usage.
const SESSIONS: [&str; 6] = [
    "claude-code-real/v1.0.108-inline-sidechain-task.jsonl",
    "claude-code-real/v1.0.98-init-command.jsonl",
    "claude-code-real/v2.0.76-compact-boundary.jsonl",
    "claude-code-real/v2.1.37-interrupt-resume-branch.jsonl",
    "claude-code-real/v2.1.38-task-agent-progress.jsonl",
    "claude-code-real/v2.1.39-task-subagent.jsonl",
];

/// The four counts and the requests of a session, summed straight from its raw lines as ccusage
/// counts them: each assistant line of the session's own (not a sub-agent's sidechain line,
/// not a `progress` line relaying one) with `message.usage`, once per `message.id` and
/// `requestId` (a line without both counts alone); Claude Code's `<synthetic>` messages are
/// not requests.
fn raw_sums(text: &str) -> [u64; 5] {
    let mut seen = HashSet::new();
    let mut sums = [0u64; 5];
    for line in text.lines() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let m = &v["message"];
        if v["type"] != "assistant"
            || v["isSidechain"] == true
            || !m["usage"].is_object()
            || m["model"] == "<synthetic>"
        {
            continue;
        }
        if let (Some(id), Some(req)) = (m["id"].as_str(), v["requestId"].as_str())
            && !seen.insert((id.to_string(), req.to_string()))
        {
            continue;
        }
        let u = &m["usage"];
        let n = |k: &str| u[k].as_u64().unwrap_or(0);
        sums[0] += n("input_tokens");
        sums[1] += n("output_tokens");
        sums[2] += n("cache_read_input_tokens");
        sums[3] += n("cache_creation_input_tokens");
        sums[4] += 1;
    }
    sums
}

/// A branch's totals as the same five numbers.
fn totals(t: &Tract, o: &UsageOptions) -> [u64; 5] {
    let u = t.usage(None, o).unwrap().ledger.totals;
    [
        u.input_tokens,
        u.output_tokens,
        u.cache_read_input_tokens,
        u.cache_creation_input_tokens,
        u.requests,
    ]
}

#[test]
fn a_real_sessions_totals_are_the_sum_of_its_raw_lines_each_response_once() {
    for name in SESSIONS {
        let file = fixture(name);
        let text = std::fs::read_to_string(&file).unwrap();
        let expected = raw_sums(&text);
        assert!(expected[4] > 0, "{name} records usage");
        let t = Tract::in_memory().unwrap();
        t.import_file(&file, None).unwrap();
        assert_eq!(totals(&t, &UsageOptions::default()), expected, "{name}");
        // Walked request by request (since the first), the history says the same as the
        // ledger's rows.
        let walked = UsageOptions {
            since_us: Some(0),
            by_day: true,
        };
        assert_eq!(totals(&t, &walked), expected, "{name}, walked");
        let by_day = t.usage(None, &walked).unwrap().by_day.unwrap();
        let requests: u64 = by_day.values().map(|d| d.totals.requests).sum();
        assert_eq!(requests, expected[4], "{name}, per day");
        let report = t.usage(None, &UsageOptions::default()).unwrap();
        assert!(
            report
                .ledger
                .by_model
                .keys()
                .any(|m| m.starts_with("claude-")),
            "{name}: {:?}",
            report.ledger.by_model.keys()
        );
        // The store's total counts each request once: the session's and its sub-agents' own,
        // from the ledger's rows as from a walk of every branch's history.
        let store = t.usage_of_branches(&UsageOptions::default()).unwrap().total;
        let walked_store = t.usage_of_branches(&walked).unwrap().total;
        assert_eq!(store.ledger.totals, walked_store.ledger.totals, "{name}");
        let mut own_total = expected[4];
        // A sub-agent's branch carries its own requests past where it forked, none of them
        // counted in the session's: as many as its lines record.
        for c in t.log(&tract_core::LogQuery::default()).unwrap() {
            let tract_core::Op::Merge {
                base,
                branch: agent,
                ..
            } = &c.commit.op
            else {
                continue;
            };
            let at = |rev: &str| {
                t.usage(Some(rev), &UsageOptions::default())
                    .unwrap()
                    .ledger
                    .totals
                    .requests
            };
            let own = at(agent) - at(&base.to_hex());
            let id = agent.rsplit('/').next().unwrap();
            let beside = file
                .with_extension("")
                .join(format!("subagents/agent-{id}.jsonl"));
            // Its file beside the session's, or its sidechain lines in the session's own.
            let lines: String = std::fs::read_to_string(&beside)
                .unwrap_or_else(|_| text.clone())
                .lines()
                .filter(|l| l.contains(r#""isSidechain":true"#))
                .map(|l| l.replace(r#""isSidechain":true"#, r#""isSidechain":false"#) + "\n")
                .collect();
            assert_eq!(own, raw_sums(&lines)[4], "{name}: {agent}");
            assert!(own > 0, "{name}: {agent}");
            own_total += own;
        }
        assert_eq!(store.ledger.totals.requests, own_total, "{name}");
    }
}

#[test]
fn a_session_captured_line_by_line_counts_each_response_once() {
    // A rewound session (its abandoned attempt was paid for too) and one whose responses
    // come in several lines each.
    for name in [SESSIONS[1], SESSIONS[3]] {
        let text = std::fs::read_to_string(fixture(name)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        // What is tried is the import's reading, the same on every backend: a store file (a
        // few hundred imports, each a transaction, take minutes through PgBouncer).
        let (dir, path) = file_store();
        let file = dir.path().join("s.jsonl");
        let live = open_bound(&path, Bind::Branch(branch("live")));
        // From the first line of the conversation (what comes before it makes no session yet).
        let first = lines
            .iter()
            .position(|l| l.contains(r#""type":"user""#))
            .unwrap();
        for k in first + 1..=lines.len() {
            std::fs::write(&file, lines[..k].join("\n") + "\n").unwrap();
            live.import_file(
                &file,
                Some(tract_core::formats::transcript::Format::ClaudeCode),
            )
            .unwrap();
        }
        assert_eq!(
            totals(&live, &UsageOptions::default()),
            raw_sums(&text),
            "{name}"
        );
    }
}

/// An assistant answer that cost `input` tokens in, `output` out, `cached` read from the cache.
fn answer(text: &str, model: &str, input: u64, output: u64, cached: u64) -> Message {
    let mut m = Message::text(Role::Assistant, text);
    Usage::from_json(&json!({
        "input_tokens": input, "output_tokens": output,
        "cache_read_input_tokens": cached, "model": model
    }))
    .unwrap()
    .put_on(&mut m)
    .unwrap();
    m
}

#[test]
fn a_branch_sums_its_first_parent_history_through_edits_forks_and_resets() {
    let (_d, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    let none = UsageOptions::default();
    assert_eq!(totals(&t, &none), [0; 5]);
    t.user("one").unwrap();
    let first = t.append(answer("a", "m1", 100, 10, 0)).unwrap();
    t.user("two").unwrap();
    let second = t.append(answer("b", "m2", 20, 5, 90)).unwrap();
    assert_eq!(totals(&t, &none), [120, 15, 90, 0, 2]);
    // An edit keeps what the answer cost, and counts nothing again.
    t.edit(second.id, tract_core::Content::Text("b, better".into()))
        .unwrap();
    t.redact(first.id, "a test").unwrap();
    assert_eq!(totals(&t, &none), [120, 15, 90, 0, 2]);
    let report = t.usage(None, &none).unwrap();
    assert_eq!(report.ledger.by_model["m1"].requests, 1);
    assert_eq!(report.ledger.by_model["m2"].cache_read_input_tokens, 90);
    assert_eq!(report.ledger.totals.largest_input_tokens, 110);
    let rate = report.ledger.totals.cache_hit_rate().unwrap();
    assert!((rate - 90.0 / 210.0).abs() < 1e-9);
    // Many commits without usage: the totals stay, read from a row near the tip.
    for k in 0..150 {
        t.user(format!("note {k}")).unwrap();
    }
    assert_eq!(totals(&t, &none), [120, 15, 90, 0, 2]);
    // A fork at the first answer has its history's totals; the fork's own answers are its own.
    t.create_branch(&branch("fork"), &first.id.into()).unwrap();
    let fork = open_bound(&path, Bind::Branch(branch("fork")));
    assert_eq!(totals(&fork, &none), [100, 10, 0, 0, 1]);
    fork.append(answer("c", "m1", 1, 1, 0)).unwrap();
    assert_eq!(totals(&fork, &none), [101, 11, 0, 0, 2]);
    assert_eq!(totals(&t, &none), [120, 15, 90, 0, 2]);
    // Since a time: only what came after.
    let now = t.head().unwrap().commit.unwrap();
    let since = t.get_commit(now).unwrap().commit.timestamp_us + 1;
    t.append(answer("d", "m2", 7, 7, 7)).unwrap();
    let recent = UsageOptions {
        since_us: Some(since),
        by_day: false,
    };
    assert_eq!(totals(&t, &recent), [7, 7, 7, 0, 1]);
    // A branch reset back has the totals of where it is.
    t.reset(&first.id.into()).unwrap();
    assert_eq!(totals(&t, &none), [100, 10, 0, 0, 1]);
    // Every branch, by name.
    let store = t.usage_of_branches(&none).unwrap();
    let all: Vec<(String, u64)> = store
        .branches
        .into_iter()
        .map(|b| (b.branch, b.ledger.totals.requests))
        .collect();
    assert_eq!(all, [("fork".to_string(), 2), ("main".to_string(), 1)]);
    // The store's: the answer both branches hold counts once.
    assert_eq!(store.total.ledger.totals.requests, 2);
    assert_eq!(store.total.ledger.totals.input_tokens, 101);
    // Priced by the store's table: a model it does not price has no cost, and neither has
    // the whole, never zero.
    assert!(fork.usage(None, &none).unwrap().cost.is_none());
    let table = tract_core::PriceTable::from_json(
        r#"{"currency": "EUR", "models": {"m*": {"input": 2, "output": 10}}}"#,
    )
    .unwrap();
    t.set_prices(&table).unwrap();
    let priced = fork.usage(None, &none).unwrap().cost.unwrap();
    assert_eq!(priced.currency, "EUR");
    let expected = (101.0 * 2.0 + 11.0 * 10.0) / 1e6;
    assert!((priced.cost.total.unwrap() - expected).abs() < 1e-12);
    t.set_prices(
        &tract_core::PriceTable::from_json(r#"{"models": {"m2": {"input": 1, "output": 1}}}"#)
            .unwrap(),
    )
    .unwrap();
    let priced = fork.usage(None, &none).unwrap().cost.unwrap();
    assert_eq!(
        (priced.cost.total, priced.cost.unpriced),
        (None, vec!["m1".to_string()])
    );
    // A bad table is refused and the stored one kept.
    assert!(
        tract_core::PriceTable::from_json(r#"{"models": {"m": {"input": -1, "output": 1}}}"#)
            .is_err()
    );
    assert_eq!(t.prices().unwrap().models.len(), 1);
}

#[test]
fn usage_on_an_answer_kept_off_the_conversation_counts_and_its_secrets_are_scrubbed() {
    // A rewound attempt: its answer is a record, and was paid for.
    // A GitHub token of the real shape (fake).
    let key = "ghp_00000001aB3dE5gH7jK9mN1pQ3sT5vW7yZ1b".to_string();
    let line = |uuid: &str, parent: Option<&str>, kind: &str, message: Value| {
        json!({"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s",
               "timestamp": "2026-01-01T00:00:00Z", "requestId": format!("req_{uuid}"),
               "message": message})
        .to_string()
    };
    let usage = json!({"input_tokens": 3, "output_tokens": 4, "cache_read_input_tokens": 5});
    let text = [
        line("u1", None, "user", json!({"role": "user", "content": "hi"})),
        line(
            "a1",
            Some("u1"),
            "assistant",
            json!({"role": "assistant", "id": "msg_a", "model": key, "usage": usage,
                   "content": [{"type": "text", "text": "first try"}]}),
        ),
        line(
            "u2",
            None,
            "user",
            json!({"role": "user", "content": "again"}),
        ),
        line(
            "a2",
            Some("u2"),
            "assistant",
            json!({"role": "assistant", "id": "msg_b", "model": "claude-x", "usage": usage,
                   "content": [{"type": "text", "text": "second try"}]}),
        ),
    ]
    .join("\n");
    assert_eq!(raw_sums(&text), [6, 8, 10, 0, 2]);
    let (dir, path) = temp_store();
    let file = dir.path().join("s.jsonl");
    std::fs::write(&file, text + "\n").unwrap();
    let t = open_bound(&path, Bind::Branch(branch("s")));
    t.import_file(&file, None).unwrap();
    assert_eq!(totals(&t, &UsageOptions::default()), [6, 8, 10, 0, 2]);
    // The model name held a credential: scrubbed in the record's usage as in its line.
    let models: Vec<String> = t
        .usage(None, &UsageOptions::default())
        .unwrap()
        .ledger
        .by_model
        .into_keys()
        .collect();
    assert!(models.iter().all(|m| !m.contains(&key)), "{models:?}");
    assert!(models.iter().any(|m| m.contains("REDACTED")), "{models:?}");
}

#[test]
fn the_stores_total_counts_each_request_once_over_a_tree_of_forks() {
    // Branches forked from others at any point, some of them rewound and going on: the total
    // from the ledger's rows is the one a walk of every history finds. The ledger's logic, the
    // same on every backend: a store file (its thousand writes take minutes through PgBouncer).
    let (_d, path) = file_store();
    let main = open_bound(&path, Bind::Branch(branch("b0")));
    let mut seed: u64 = 0x5eed;
    let mut next = move |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n.max(1)
    };
    let grow = |t: &Tract, n: u64, k: &mut u64| {
        for _ in 0..n {
            *k += 1;
            t.user(format!("q{k}")).unwrap();
            // Most answers carry usage; some runs of commits carry none.
            if !(*k).is_multiple_of(7) {
                t.append(answer("a", "m1", *k, 1, 2)).unwrap();
            } else {
                // Longer than the rows' spacing: a row without usage is written.
                for j in 0..20 {
                    t.user(format!("note {k}.{j}")).unwrap();
                }
            }
        }
    };
    let mut k = 0u64;
    grow(&main, 40, &mut k);
    let mut names = vec!["b0".to_string()];
    for b in 1..24 {
        let from = names[next(names.len() as u64) as usize].clone();
        let log = open_bound(&path, Bind::Branch(branch(&from)))
            .log(&tract_core::LogQuery::default())
            .unwrap();
        let at = log[next(log.len() as u64) as usize].id;
        let name = format!("b{b}");
        main.create_branch(&branch(&name), &at.into()).unwrap();
        let t = open_bound(&path, Bind::Branch(branch(&name)));
        grow(&t, 1 + next(12), &mut k);
        names.push(name);
    }
    let rows = main
        .usage_of_branches(&UsageOptions::default())
        .unwrap()
        .total;
    let walked = main
        .usage_of_branches(&UsageOptions {
            since_us: Some(0),
            by_day: false,
        })
        .unwrap()
        .total;
    assert_eq!(rows.ledger.totals, walked.ledger.totals);
    assert!(rows.ledger.totals.requests > 40);
}

/// `fsck` replays each branch's usage from its history and compares it with what the ledger's
/// rows say (`tract usage`): a row damaged, or one that says another history's totals, is a
/// bookkeeping problem naming the branch.
#[test]
fn fsck_checks_each_branchs_usage_ledger_against_a_replay() {
    let t = Tract::in_memory().unwrap();
    for k in 0..40u64 {
        t.user(format!("question {k}")).unwrap();
        t.append(answer("an answer", "m", 10 + k, 2, 5)).unwrap();
    }
    t.create_branch(&branch("side"), &tract_core::Rev::parse("HEAD").unwrap())
        .unwrap();
    let report = tract_core::fsck(t.store()).unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    let tip = t.compile().unwrap().head().unwrap();
    let key = format!("ledger.{}", tip.to_hex());
    let earlier = {
        let d = t.store().damage().unwrap();
        let keys = d.meta_keys("ledger.").unwrap();
        assert!(keys.len() >= 40, "a row for each answer");
        let other = keys.into_iter().find(|k| *k != key).unwrap();
        d.meta(&other).unwrap().unwrap()
    };
    let row = t.store().damage().unwrap().meta(&key).unwrap().unwrap();
    // Another commit's totals where the tip's should be; then bytes that do not decode.
    let mut flipped = row.clone();
    flipped[row.len() / 2] ^= 0xff;
    flipped.truncate(row.len() - 3);
    for (bad, swapped) in [(earlier, true), (flipped, false)] {
        let mut d = t.store().damage().unwrap();
        d.set_meta(&key, Some(&bad)).unwrap();
        d.commit().unwrap();
        let report = tract_core::fsck(t.store()).unwrap();
        let named: Vec<(&str, String)> = report
            .problems
            .iter()
            .map(|p| (p.kind, p.subject.clone()))
            .collect();
        let expected = match swapped {
            // A row that reads, with another history's totals: each branch at it is named.
            true => vec![
                ("bookkeeping", "branch main".to_string()),
                ("bookkeeping", "branch side".to_string()),
            ],
            // One that does not read: `tract usage` reads past it, and the row is named.
            false => vec![("bookkeeping", format!("commit {}", tip.to_hex()))],
        };
        assert_eq!(named, expected, "{:?}", report.problems);
        assert!(report.problems[0].detail.contains("usage ledger"));
        let requests = t
            .usage(None, &UsageOptions::default())
            .unwrap()
            .ledger
            .totals
            .requests;
        assert_eq!(requests == 40, !swapped);
    }
    let mut d = t.store().damage().unwrap();
    d.set_meta(&key, Some(&row)).unwrap();
    d.commit().unwrap();
    assert!(tract_core::fsck(t.store()).unwrap().is_clean());
}

/// Rows are derived data and not sent: the receiver of a push keeps them as it stores the
/// commits, so its `tract usage` reads rows (not the history's messages), and says what the
/// sender's does.
#[test]
fn a_pushed_history_has_its_ledger_rows_kept_by_the_receiver() {
    let (_a, a) = file_store();
    let (_b, b) = file_store();
    let src = Tract::open(&a).unwrap();
    for k in 0..100u64 {
        src.user(format!("question {k}")).unwrap();
        src.append(answer("an answer", "m", 10 + k, 2, 5)).unwrap();
    }
    let rows = |t: &Tract| {
        t.store()
            .damage()
            .unwrap()
            .meta_keys("ledger.")
            .unwrap()
            .len()
    };
    let sent = rows(&src);
    assert!(sent >= 100);
    let dest = Tract::open(&b).unwrap();
    let sent_report =
        tract_core::push(src.store(), &b, &tract_core::SyncOptions::default()).unwrap();
    assert!(sent_report.refused.is_empty());
    assert_eq!(rows(&dest), sent, "the same rows, kept by the receiver");
    let o = UsageOptions::default();
    assert_eq!(totals(&dest, &o), totals(&src, &o));
    assert!(tract_core::fsck(dest.store()).unwrap().is_clean());
}
