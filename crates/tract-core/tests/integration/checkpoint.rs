//! View checkpoints: a new handle builds its view from the branch's newest checkpoint and the
//! commits after it, and gets the view a replay of the whole history gives, through appends,
//! tool calls with and without results, edits, compression, merges, redaction, resets, and
//! checkpoints that are missing or damaged.

use crate::support::{branch, call, open_bound, temp_store};
use std::path::Path;
use tract_core::{
    Bind, CommitId, Compiled, CompressRequest, Content, FnSummarizer, MergeRequest, ResultQuery,
    Rev, Tract,
};

/// A small deterministic generator (xorshift), so a failure can be replayed from its seed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// What a compiled view shows, to compare two builds of it.
fn shown(c: &Compiled) -> String {
    let messages: Vec<String> = c
        .messages()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "{:?} {:?} {} {}",
                m.position, m.commit, m.tokens, m.synthetic
            )
        })
        .collect();
    format!(
        "{}\n{}\n{}\n{:?}\n{}\n{:?}",
        c.to_openai().unwrap(),
        c.to_anthropic().unwrap(),
        c.to_responses(None).unwrap(),
        messages,
        c.token_count(),
        c.warnings()
    )
}

/// `a` is `b`; else where they first differ.
fn same(a: &str, b: &str, step: &str) {
    if a != b {
        let at = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
        let around = |s: &str| {
            s.get(at.saturating_sub(300)..(at + 300).min(s.len()))
                .unwrap_or("")
                .to_string()
        };
        panic!(
            "{step}: differs at byte {at}:\n{}\n---\n{}",
            around(a),
            around(b)
        );
    }
}

/// A new handle on `main` (its view built from the checkpoint) shows what a replay of the whole
/// history shows, and answers the tool queries as the handle that wrote it does.
fn check_cold(path: &Path, writer: &Tract, step: &str) {
    let cold = open_bound(path, Bind::Branch(branch("main")));
    let from_checkpoint = cold.compile().unwrap();
    let replayed = cold.compile_replayed().unwrap();
    same(&shown(&from_checkpoint), &shown(&replayed), step);
    same(
        &shown(&writer.compile().unwrap()),
        &shown(&replayed),
        &format!("{step}: the writer's own view"),
    );
    let ids = |t: &Tract| -> Vec<CommitId> {
        let mut out: Vec<CommitId> = t
            .find_tool_results(&ResultQuery::default())
            .unwrap()
            .iter()
            .map(|i| i.id)
            .collect();
        out.extend(t.find_tool_calls(None).unwrap().iter().map(|i| i.id));
        out
    };
    assert_eq!(ids(&cold), ids(writer), "{step}: tool queries");
    let (a, b) = (cold.status().unwrap(), writer.status().unwrap());
    assert_eq!(
        (a.messages, a.token_count, a.unanswered_calls),
        (b.messages, b.token_count, b.unanswered_calls),
        "{step}: status"
    );
}

/// Compresses `run` into one summary saying `summary`.
fn compress(t: &Tract, run: Vec<Rev>, summary: &'static str) {
    let summarizer = FnSummarizer::new("fixed", move |_req| Ok(summary.to_string()));
    t.compress(&CompressRequest {
        commits: Some(run),
        summarizer: Some(&summarizer),
        ..CompressRequest::default()
    })
    .unwrap();
}

/// Four new messages, then compressed into one summary saying "the start".
fn compress_early(t: &Tract) {
    let run: Vec<Rev> = (0..4)
        .map(|i| Rev::from(t.user(format!("early {i}")).unwrap().id))
        .collect();
    compress(t, run, "the start");
}

/// The newest checkpoint of `main`, if one was written.
fn newest(t: &Tract) -> Option<Vec<u8>> {
    t.store()
        .damage()
        .unwrap()
        .meta("checkpoint-at.main")
        .unwrap()
}

/// A new handle on `main` (its view built from the checkpoint) shows what a replay shows.
fn cold_is_replayed(path: &Path) {
    let cold = open_bound(path, Bind::Branch(branch("main")));
    assert_eq!(
        shown(&cold.compile().unwrap()),
        shown(&cold.compile_replayed().unwrap())
    );
}

/// A handle on `branch` that checkpoints its view about once in `interval` commits.
fn with_interval(path: &Path, name: &str, interval: u64) -> Tract {
    let options = tract_core::OpenOptions {
        bind: Bind::Branch(branch(name)),
        store: tract_core::StoreOptions {
            checkpoint_interval: interval,
            ..tract_core::StoreOptions::default()
        },
        ..tract_core::OpenOptions::default()
    };
    Tract::open_with(path, &options).unwrap()
}

fn run(seed: u64, ops: usize) -> usize {
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    let mut rng = Rng(seed);
    let mut pending: Vec<(String, String)> = Vec::new();
    let mut next = 0u64;
    let mut checked = 0;
    // Every summary says something of its own: a message with the content of one redacted
    // earlier is stored as the tombstone its blob is (docs/decisions.md, "Redaction").
    let summaries = std::sync::atomic::AtomicU64::new(0);
    let summarizer = FnSummarizer::new("fixed", |req| {
        let n = summaries.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(format!("summary {n} of {} messages", req.messages.len()))
    });
    for op in 0..ops {
        next += 1;
        match rng.below(100) {
            0..=29 => {
                t.user(format!(
                    "user {next}: {}",
                    "word ".repeat(rng.below(20) as usize)
                ))
                .unwrap();
            }
            30..=41 => {
                let calls: Vec<_> = (0..=rng.below(2))
                    .map(|k| {
                        call(
                            &format!("c{next}_{k}"),
                            ["grep", "bash", "read"][k as usize],
                        )
                    })
                    .collect();
                pending.extend(calls.iter().map(|c| (c.id.clone(), c.name.clone())));
                t.assistant("", calls).unwrap();
            }
            42..=61 if !pending.is_empty() => {
                let (id, name) = pending.remove(rng.below(pending.len() as u64) as usize);
                let error = rng.below(10) == 0;
                t.tool_result(&id, &name, format!("output of {id}: {next}"), error)
                    .unwrap();
            }
            62..=71 => {
                t.assistant(format!("answer {next}"), vec![]).unwrap();
            }
            72..=76 => {
                let results = t.find_tool_results(&ResultQuery::default()).unwrap();
                if !results.is_empty() {
                    let r = &results[rng.below(results.len() as u64) as usize];
                    let m = r.message.as_ref().unwrap();
                    let (id, name) = (
                        m.tool_call_id.clone().unwrap(),
                        m.name.clone().unwrap_or_default(),
                    );
                    t.edit_tool_result(r.id, &id, &name, Content::Text(format!("edited {next}")))
                        .unwrap();
                }
            }
            77..=82 => {
                let c = t.compile().unwrap();
                let positions: Vec<CommitId> = c
                    .messages()
                    .unwrap()
                    .iter()
                    .filter_map(|m| m.position)
                    .collect();
                if positions.len() > 12 {
                    let len = 3 + rng.below(8) as usize;
                    let start = rng.below((positions.len() - len) as u64) as usize;
                    let run: Vec<Rev> = positions[start..start + len]
                        .iter()
                        .map(|p| Rev::from(*p))
                        .collect();
                    // A run the view cannot give up (it would split what must stay together)
                    // is refused, and nothing changes: that is fine here.
                    let _ = t.compress(&CompressRequest {
                        commits: Some(run),
                        summarizer: Some(&summarizer),
                        ..CompressRequest::default()
                    });
                }
            }
            83..=85 => {
                let name = format!("side{next}");
                let side = t.fork(&branch(&name), &Rev::head()).unwrap();
                for k in 0..=rng.below(4) {
                    side.user(format!("side {next} {k}")).unwrap();
                }
                t.merge(&branch(&name), &MergeRequest::default()).unwrap();
            }
            86 => {
                let log = t.log(&tract_core::LogQuery::default()).unwrap();
                let shown: Vec<_> = log.iter().filter(|i| i.message.is_some()).collect();
                if shown.len() > 5 {
                    let victim = shown[rng.below(shown.len() as u64) as usize].id;
                    let _ = t.redact(victim, "a planted secret");
                }
            }
            87..=89 => {
                let log = t.log(&tract_core::LogQuery::default()).unwrap();
                if log.len() > 20 {
                    let back = log[1 + rng.below(10) as usize].id;
                    t.reset(&Rev::from(back)).unwrap();
                    pending.clear();
                }
            }
            90..=93 => {
                // A checkpoint missing or damaged: its manifest or one of its chunks removed,
                // or a byte of it changed.
                if let Some(at) = newest(&t) {
                    let at = CommitId::from_bytes(at.try_into().unwrap());
                    let mut d = t.store().damage().unwrap();
                    let manifest_key = format!("checkpoint.{}", at.to_hex());
                    if let Some(mut manifest) = d.meta(&manifest_key).unwrap() {
                        match rng.below(3) {
                            0 => d.set_meta(&manifest_key, None).unwrap(),
                            1 => {
                                let i = rng.below(manifest.len() as u64) as usize;
                                manifest[i] ^= 0x5a;
                                d.set_meta(&manifest_key, Some(&manifest)).unwrap();
                            }
                            _ => {
                                // The manifest ends with its last chunk's id, then 8 bytes of
                                // check: that chunk goes.
                                let n = manifest.len();
                                let id: String = manifest[n - 40..n - 8]
                                    .iter()
                                    .map(|b| format!("{b:02x}"))
                                    .collect();
                                d.set_meta(&format!("checkpoint-chunk.{id}"), None).unwrap();
                            }
                        }
                        d.commit().unwrap();
                    }
                }
            }
            _ => {
                check_cold(&path, &t, &format!("seed {seed}, op {op}"));
                checked += 1;
            }
        }
    }
    check_cold(&path, &t, &format!("seed {seed}, at the end"));
    assert!(
        newest(&t).is_some(),
        "seed {seed}: no checkpoint was written"
    );
    checked
}

#[test]
fn views_built_from_checkpoints_are_views_replayed_over_thousands_of_operations() {
    let (seeds, ops): (&[u64], usize) = match crate::support::postgres_url() {
        Some(_) => (&[0x9e37_79b9], 600),
        None => (&[0x9e37_79b9, 0x7f4a_7c15], 1000),
    };
    let mut checked = 0;
    for &seed in seeds {
        checked += run(seed, ops);
    }
    assert!(checked >= 30, "{checked} cold opens compared");
}

#[test]
fn a_new_handle_reads_only_the_history_after_the_checkpoint() {
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    let first = t.user("the first message").unwrap();
    let mut run = vec![Rev::from(first.id)];
    for i in 0..3 {
        run.push(Rev::from(t.user(format!("early message {i}")).unwrap().id));
    }
    for i in 0..20 {
        t.user(format!("message {i}")).unwrap();
    }
    // A compress is followed by a checkpoint.
    compress(&t, run, "the start");
    for i in 0..5 {
        t.user(format!("after {i}")).unwrap();
    }
    assert!(newest(&t).is_some());
    // The first commit is damaged: a replay reads it (and fails), a view built from the
    // checkpoint does not need it.
    let mut d = t.store().damage().unwrap();
    d.flip_byte(
        tract_core::storage::store::faults::Object::Commit(first.id),
        1,
    )
    .unwrap();
    d.commit().unwrap();
    let cold = open_bound(&path, Bind::Branch(branch("main")));
    let c = cold.compile().unwrap();
    assert_eq!(c.messages().unwrap().len(), 1 + 20 + 5);
    assert_eq!(shown(&c), shown(&t.compile().unwrap()));
    assert!(cold.compile_replayed().is_err());
}

#[test]
fn fsck_reads_back_the_checkpoint_of_each_branch_and_names_a_damaged_one() {
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    let run: Vec<Rev> = (0..4)
        .map(|i| Rev::from(t.user(format!("early {i}")).unwrap().id))
        .collect();
    t.assistant("", vec![call("c1", "grep")]).unwrap();
    t.tool_result("c1", "grep", "found", false).unwrap();
    compress(&t, run, "the start");
    t.fork(&branch("side"), &Rev::head()).unwrap();
    let report = tract_core::fsck(t.store()).unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!(
        report.checkpoints_checked, 2,
        "main's, and the fork's (the same one)"
    );

    let at = CommitId::from_bytes(newest(&t).unwrap().try_into().unwrap());
    let key = format!("checkpoint.{}", at.to_hex());
    let mut d = t.store().damage().unwrap();
    let mut manifest = d.meta(&key).unwrap().unwrap();
    manifest[3] ^= 1;
    d.set_meta(&key, Some(&manifest)).unwrap();
    d.commit().unwrap();
    let report = tract_core::fsck(t.store()).unwrap();
    let named: Vec<&str> = report
        .problems
        .iter()
        .filter(|p| p.kind == "checkpoint")
        .map(|p| p.subject.as_str())
        .collect();
    assert_eq!(
        named,
        ["branch main", "branch side"],
        "{:?}",
        report.problems
    );
    // A new handle replays past it and sees the same view.
    cold_is_replayed(&path);
}

#[test]
fn a_clear_of_old_results_is_followed_by_a_checkpoint() {
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    for i in 0..6 {
        let id = format!("c{i}");
        t.assistant("", vec![call(&id, "grep")]).unwrap();
        t.tool_result(&id, "grep", format!("a long result {i} ").repeat(50), false)
            .unwrap();
    }
    // The handle's view is cached, and its first write checkpoints it.
    t.compile().unwrap();
    t.user("and now?").unwrap();
    let before = newest(&t);
    assert!(before.is_some());
    let opts = tract_core::ClearOptions {
        keep: 1,
        ..tract_core::ClearOptions::default()
    };
    let cleared = t.clear_tool_results(&opts).unwrap();
    assert!(cleared.cleared.len() > 1, "{cleared:?}");
    let tip = t.head().unwrap().commit.unwrap();
    assert_eq!(newest(&t), Some(tip.as_bytes().to_vec()));
    cold_is_replayed(&path);
}

/// The metadata keys starting with `prefix`.
fn keys(t: &Tract, prefix: &str) -> Vec<String> {
    t.store().damage().unwrap().meta_keys(prefix).unwrap()
}

#[test]
fn gc_keeps_each_branch_s_newest_checkpoint_and_removes_the_others() {
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    t.compile().unwrap();
    // Each compress is followed by a checkpoint: three on main, then one on a fork.
    for round in 0..3 {
        let run: Vec<Rev> = (0..4)
            .map(|i| Rev::from(t.user(format!("round {round}, message {i}")).unwrap().id))
            .collect();
        t.assistant("", vec![call(&format!("c{round}"), "grep")])
            .unwrap();
        t.tool_result(format!("c{round}"), "grep", "found", false)
            .unwrap();
        compress(
            &t,
            run,
            ["the first round", "the second round", "the third round"][round],
        );
    }
    // A fork whose own first messages are compressed: a checkpoint of its own.
    let compressed_fork = |name: &str, summary: &'static str| {
        let fork = t.fork(&branch(name), &Rev::head()).unwrap();
        fork.compile().unwrap();
        let run: Vec<Rev> = (0..3)
            .map(|i| Rev::from(fork.user(format!("{name} {i}")).unwrap().id))
            .collect();
        compress(&fork, run, summary);
    };
    compressed_fork("side", "the side's start");
    compressed_fork("doomed", "the doomed start");
    t.delete_branch(&branch("doomed")).unwrap();
    let manifests = keys(&t, "checkpoint.");
    assert!(manifests.len() >= 5, "{manifests:?}");
    let chunks = keys(&t, "checkpoint-chunk.");

    let out = tract_core::gc(t.store(), std::time::Duration::from_secs(3600)).unwrap();
    // main's newest is the one side forked with, so two are kept.
    assert_eq!(out.checkpoints as usize, manifests.len() - 2, "{out:?}");
    assert!(out.checkpoint_chunks > 0, "{out:?}");
    let pointed: Vec<String> = ["main", "side"]
        .iter()
        .map(|b| {
            let at = t
                .store()
                .damage()
                .unwrap()
                .meta(&format!("checkpoint-at.{b}"))
                .unwrap()
                .unwrap();
            format!(
                "checkpoint.{}",
                CommitId::from_bytes(at.try_into().unwrap()).to_hex()
            )
        })
        .collect();
    let mut kept = keys(&t, "checkpoint.");
    kept.sort();
    let mut expected = pointed.clone();
    expected.sort();
    expected.dedup();
    assert_eq!(kept, expected);
    assert_eq!(
        keys(&t, "checkpoint-chunk.").len(),
        chunks.len() - out.checkpoint_chunks as usize
    );
    assert!(keys(&t, "checkpoint-at.doomed").is_empty());
    let report = tract_core::fsck(t.store()).unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!(report.checkpoints_checked, 2);
    // New handles read the kept checkpoints (no problem said) and show what a replay shows.
    for b in ["main", "side"] {
        let cold = open_bound(&path, Bind::Branch(branch(b)));
        assert_eq!(
            shown(&cold.compile().unwrap()),
            shown(&cold.compile_replayed().unwrap()),
            "{b}"
        );
    }
    // A second gc finds nothing more to remove.
    let again = tract_core::gc(t.store(), std::time::Duration::from_secs(3600)).unwrap();
    assert_eq!((again.checkpoints, again.checkpoint_chunks), (0, 0));
}

#[test]
fn the_checkpoint_interval_is_the_handle_s_to_set_and_zero_writes_none() {
    let (_dir, path) = temp_store();
    let open = |interval| with_interval(&path, "main", interval);
    // 0: none at all, not even after a compress.
    let off = open(0);
    off.compile().unwrap();
    compress_early(&off);
    off.user("after the compress").unwrap();
    assert_eq!(newest(&off), None);
    // 1: after every write from a cached view.
    let every = open(1);
    every.compile().unwrap();
    for i in 0..5 {
        let id = every.user(format!("message {i}")).unwrap().id;
        assert_eq!(newest(&every), Some(id.as_bytes().to_vec()), "write {i}");
    }
    cold_is_replayed(&path);
}

#[test]
fn opening_compiling_and_rendering_load_no_token_encoding() {
    // The check runs in a process of its own, this test run again by name: the writes below
    // load the encoding in this one.
    const CHILD: &str = "TRACT_TEST_ENCODING_CHILD";
    if let Some(path) = std::env::var_os(CHILD) {
        let t = open_bound(Path::new(&path), Bind::Branch(branch("main")));
        let c = t.compile().unwrap();
        assert!(c.token_count() > 0);
        assert_eq!(c.warnings().len(), 1, "the call without a result");
        for rendered in [
            c.to_openai().unwrap(),
            c.to_anthropic().unwrap(),
            c.to_responses(None).unwrap(),
        ] {
            assert!(rendered.to_string().contains("the start"));
        }
        assert_eq!(t.status().unwrap().unanswered_calls, 1);
        assert_eq!(t.find_tool_calls(None).unwrap().len(), 2);
        assert!(
            !tract_core::tokens::encoding_loaded(),
            "reading a store loaded the token encoding"
        );
        return;
    }
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    t.compile().unwrap();
    compress_early(&t);
    t.assistant("", vec![call("c1", "grep")]).unwrap();
    t.tool_result("c1", "grep", "found", false).unwrap();
    t.assistant("", vec![call("c2", "grep")]).unwrap();
    assert!(tract_core::tokens::encoding_loaded());
    crate::support::passes_alone(
        "checkpoint::opening_compiling_and_rendering_load_no_token_encoding",
        CHILD,
        &path,
    );
}

#[test]
fn a_checkpoint_asks_only_for_the_chunks_it_does_not_know_are_stored() {
    use tract_core::storage::store::faults::Call;
    let (_dir, path) = temp_store();
    let every = |name: &str| with_interval(&path, name, 1);
    let t = every("main");
    t.user("the first message").unwrap();
    t.compile().unwrap();
    // About 47 chunks of positions (a chunk ends where an id says, one position in 64: ids
    // change with the time, so the count varies from run to run; 10 or fewer is
    // vanishingly rare at this length).
    t.append_batch(
        (0..3000)
            .map(|i| tract_core::Message::text(tract_core::Role::User, format!("message {i}")))
            .collect(),
    )
    .unwrap();
    let chunks = keys(&t, "checkpoint-chunk.").len();
    assert!(chunks >= 10, "{chunks} chunks");
    let meta_reads = |t: &Tract, text: &str| {
        let faults = t.store().faults();
        let before = faults.calls(Call::Meta);
        t.user(text).unwrap();
        faults.calls(Call::Meta) - before
    };
    // The writer knows what its last checkpoint stored: one new chunk to ask for, whatever
    // the view's length.
    let known = meta_reads(&t, "one more");
    // A new handle's view, loaded from the checkpoint, knows its chunks too.
    let other = every("main");
    other.compile().unwrap();
    let loaded = meta_reads(&other, "and one more");
    assert!(
        known < 10 && loaded < 10,
        "{known} / {loaded} metadata reads"
    );
    // A view replayed (its checkpoint removed) asks for every chunk, and stores what is
    // missing.
    let mut d = t.store().damage().unwrap();
    d.set_meta("checkpoint-at.main", None).unwrap();
    d.commit().unwrap();
    let replayed = every("main");
    replayed.compile().unwrap();
    let asked = meta_reads(&replayed, "after the replay");
    assert!(
        asked as usize >= chunks,
        "{asked} metadata reads for {chunks} chunks"
    );
    cold_is_replayed(&path);
}

#[test]
fn a_clone_checkpoints_each_branch_it_receives_at_its_tip() {
    let (_dir, path) = temp_store();
    let t = open_bound(&path, Bind::Branch(branch("main")));
    t.compile().unwrap();
    compress_early(&t);
    t.user("after the compress").unwrap();
    let sent = newest(&t).expect("checkpointed after the compress");
    assert_ne!(
        Some(sent.clone()),
        t.head().unwrap().commit.map(|h| h.as_bytes().to_vec())
    );
    let (_dest_dir, dest) = temp_store();
    let (copy, _) = Tract::clone_store(&path, &dest, tract_core::StoreOptions::default()).unwrap();
    // Sync copies objects, refs and settings; the receiver starts from the sender's checkpoint
    // (copied, not replayed: a clone of a long history would replay all of it) and checkpoints
    // what it received after it, at the tip.
    let hex: String = sent.iter().map(|b| format!("{b:02x}")).collect();
    assert!(keys(&copy, "checkpoint.").contains(&format!("checkpoint.{hex}")));
    assert_eq!(
        newest(&copy),
        copy.head().unwrap().commit.map(|h| h.as_bytes().to_vec())
    );
    assert_eq!(
        shown(&copy.compile().unwrap()),
        shown(&t.compile().unwrap())
    );
    assert_eq!(
        copy.checkpoint_views().unwrap(),
        0,
        "the tip is checkpointed already"
    );
    cold_is_replayed(&dest);
}

/// Each branch's commits a cold read walks past its checkpoint, as `fsck` counts them, once it
/// finds the store at `path` sound.
fn past_checkpoint(path: &Path) -> std::collections::BTreeMap<String, u64> {
    let t = open_bound(path, Bind::Branch(branch("main")));
    let report = tract_core::fsck(t.store()).unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    report.past_checkpoint.into_iter().collect()
}

/// Every branch of the store at `path` is at most `k` commits past its checkpoint, and a new
/// handle on it shows what a replay shows.
fn cold_within(path: &Path, k: u64, step: &str) {
    let past = past_checkpoint(path);
    assert!(!past.is_empty(), "{step}");
    for (name, n) in past {
        assert!(n <= k, "{step}: {name} is {n} commits past its checkpoint");
        let cold = open_bound(path, Bind::Branch(branch(&name)));
        same(
            &shown(&cold.compile().unwrap()),
            &shown(&cold.compile_replayed().unwrap()),
            &format!("{step}: {name}"),
        );
    }
}

#[test]
fn every_writer_leaves_checkpoints_a_cold_read_starts_from() {
    use tract_core::{Message, Role};
    const K: u64 = 8;
    let (_dir, path) = temp_store();
    // Appends one at a time, from handles that never compile.
    let plain = with_interval(&path, "main", K);
    for i in 0..30 {
        plain.user(format!("question {i}")).unwrap();
        plain.assistant(format!("answer {i}"), Vec::new()).unwrap();
    }
    // Batches, longer and shorter than the interval.
    let batch = with_interval(&path, "batch", K);
    for n in [20, 3, 5, 1, 11] {
        let messages = (0..n)
            .map(|i| Message::text(Role::User, format!("batch of {n}: {i}")))
            .collect();
        batch.append_batch(messages).unwrap();
    }
    // A real Claude Code session (with the sub-agent it ran), imported.
    let imported = with_interval(&path, "imported", K);
    imported
        .import_file(
            crate::support::fixture("claude-code-real/v2.1.39-task-subagent.jsonl"),
            None,
        )
        .unwrap();
    cold_within(&path, K, "written");
    // tract's own export of every commit, imported into another store as it is (its commits
    // keep their ids: they are stored, not folded).
    let history = plain
        .export(tract_core::formats::exports::ExportFormat::Jsonl, true)
        .unwrap();
    let (_copy_dir, copy) = temp_store();
    with_interval(&copy, "main", K)
        .import(tract_core::formats::transcript::parse(&history, None).unwrap())
        .unwrap();
    cold_within(&copy, K, "a commit export imported");
    // A push's receiver, then a pull's.
    let (_peer_dir, peer) = temp_store();
    let receiver = open_bound(&peer, Bind::Branch(branch("main")));
    let pushed =
        tract_core::push(plain.store(), &peer, &tract_core::SyncOptions::default()).unwrap();
    assert!(pushed.refused.is_empty());
    cold_within(&peer, K, "pushed");
    for i in 0..13 {
        plain.user(format!("after the push {i}")).unwrap();
    }
    let pulled =
        tract_core::pull(receiver.store(), &path, &tract_core::SyncOptions::default()).unwrap();
    assert!(pulled.refused.is_empty() && !pulled.branches.is_empty());
    cold_within(&peer, K, "pulled");
}

#[test]
fn a_branch_an_older_tract_wrote_is_not_replayed_by_a_write_but_by_upgrade() {
    const K: u64 = 8;
    let (_dir, path) = temp_store();
    let old = with_interval(&path, "main", K);
    for i in 0..40 {
        old.user(format!("written before {i}")).unwrap();
    }
    // As an older tract left it: no checkpoint, and counts without the commits since one.
    let mut d = old.store().damage().unwrap();
    d.set_meta("checkpoint-at.main", None).unwrap();
    let mut stats = d.branch_stats("main").unwrap().unwrap();
    stats.since_checkpoint = None;
    d.set_branch_stats("main", Some(&stats)).unwrap();
    d.commit().unwrap();
    drop(old);
    // A handle that never compiles appends: no write replays the 40 commits before it.
    let writer = with_interval(&path, "main", K);
    for i in 0..20 {
        writer.user(format!("written after {i}")).unwrap();
    }
    assert_eq!(newest(&writer), None);
    assert_eq!(past_checkpoint(&path)["main"], 60);
    // `tract upgrade` checkpoints it; from there every write keeps it checkpointed.
    assert_eq!(writer.checkpoint_views().unwrap(), 1);
    for i in 0..20 {
        writer.user(format!("after the upgrade {i}")).unwrap();
    }
    cold_within(&path, K, "after the upgrade");
}
