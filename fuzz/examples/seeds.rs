//! Writes the seed inputs of every fuzz target into `fuzz/corpus/<target>/`: object and record
//! bytes, message JSON and revisions as tract writes and reads them, and small real store
//! files (appends, a tool call, an edit, a compress, a branch, a merge and records). Seeds are named by
//! the BLAKE3 of their bytes, so running this again adds nothing twice.
//!
//! `cargo +nightly run --release --example seeds` (from `fuzz/`, whose `.cargo/config.toml`
//! builds it with `--cfg fuzzing`, as cargo-fuzz builds the targets: the stores are written
//! with the fuzz build's 4 KiB chunks).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tract_core::ChunkId;
use tract_core::fuzzing::{CHUNK_SIZE, encode_record};
use tract_core::{
    BlobId, BranchName, Clock, Commit, CommitId, CompressRequest, Content, ContentPart, Manual,
    MergeRequest, MergeStrategy, Message, Op, OpenOptions, Role, StoreOptions, ToolCall, Tract,
};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn corpus(target: &str) -> Result<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

fn write_seed(target: &str, bytes: &[u8]) -> Result<()> {
    let name = BlobId::of(bytes).to_hex();
    std::fs::write(corpus(target)?.join(&name[..16]), bytes)?;
    Ok(())
}

fn call(id: &str, name: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: r#"{"pattern":"TODO"}"#.into(),
    }
}

fn messages() -> Vec<Message> {
    let mut assistant = Message::text(Role::Assistant, "Let me look.");
    assistant.tool_calls.push(call("call_1", "grep"));
    assistant
        .metadata
        .insert("model".into(), "\"gpt-4o\"".into());
    let mut parts = Message::text(Role::User, "");
    parts.content = Content::Parts(vec![
        ContentPart::Text("look".into()),
        ContentPart::Raw(r#"{"type":"image_url","image_url":{"url":"data:x"}}"#.into()),
    ]);
    parts.name = Some("ada".into());
    vec![
        Message::text(Role::System, "You are a careful coding agent."),
        parts,
        assistant,
        Message::tool_result("call_1", "grep", "config.py:42: DATABASE_URL", true),
        Message::text(Role::User, "error: file not found\n".repeat(10)),
    ]
}

fn commits() -> Vec<Commit> {
    let id = |n: u8| CommitId::from_bytes([n; 32]);
    let blob = Some(BlobId::from_bytes([9; 32]));
    let base = Commit {
        parents: vec![],
        op: Op::Append,
        blob,
        timestamp_us: 1_700_000_000_000_000,
        message: None,
    };
    vec![
        base.clone(),
        Commit {
            parents: vec![id(1)],
            op: Op::Edit { target: id(2) },
            message: Some("shorter".into()),
            ..base.clone()
        },
        Commit {
            parents: vec![id(1)],
            op: Op::Compress {
                sources: vec![id(2), id(3)],
                preserved: vec![id(4)],
                summarizer: "extractive".into(),
                params: BTreeMap::from([("target_tokens".into(), "50".into())]),
            },
            ..base.clone()
        },
        Commit {
            parents: vec![id(1), id(5)],
            op: Op::Merge {
                base: id(6),
                branch: "sub".into(),
                strategy: MergeStrategy::ToolResult {
                    call_id: "task_1".into(),
                },
                summarizer: Some("extractive".into()),
            },
            ..base.clone()
        },
        Commit {
            parents: vec![id(1), id(5)],
            op: Op::Merge {
                base: id(6),
                branch: "side".into(),
                strategy: MergeStrategy::Append,
                summarizer: None,
            },
            blob: None,
            ..base.clone()
        },
        Commit {
            parents: vec![id(1)],
            op: Op::Record {
                kind: "langgraph.checkpoint".into(),
            },
            ..base
        },
    ]
}

/// A record seed for `record_decode`: flags, u16 length, record, then chunk records.
fn record_seed(record: &[u8], has_tokens: bool, chunks: &[Vec<u8>]) -> Result<Vec<u8>> {
    let mut out = vec![u8::from(has_tokens)];
    for piece in std::iter::once(record).chain(chunks.iter().map(Vec::as_slice)) {
        out.extend_from_slice(&u16::try_from(piece.len())?.to_le_bytes());
        out.extend_from_slice(piece);
    }
    Ok(out)
}

fn objects_and_records() -> Result<()> {
    let mut objects = Vec::new();
    for m in messages() {
        objects.push((m.encode()?, true));
    }
    for c in commits() {
        objects.push((c.encode()?, false));
    }
    for (bytes, blob) in &objects {
        write_seed("object_decode", bytes)?;
        let (record, _) = encode_record(bytes, blob.then_some(7));
        write_seed("record_decode", &record_seed(&record, *blob, &[])?)?;
    }
    // A compressed record, and a chunked one (compressible, so its chunks are small).
    let text = "error: file not found\n".repeat(40).into_bytes();
    let (record, _) = encode_record(&text, Some(3));
    write_seed("record_decode", &record_seed(&record, true, &[])?)?;
    // A chunked record in the layout the store writes, with a short chunk: a real one decodes
    // to a megabyte, which would slow every run that starts from it.
    let piece = b"error: file not found\n";
    let mut record = vec![2];
    record.extend_from_slice(&(piece.len() as u64).to_le_bytes());
    record.extend_from_slice(ChunkId::of(piece).as_bytes());
    let chunk = [&[0u8][..], piece].concat();
    write_seed("record_decode", &record_seed(&record, false, &[chunk])?)?;
    // Round-trip mode (flag bit 1).
    write_seed("record_decode", b"\x03hello, record")?;
    Ok(())
}

fn json() -> Result<()> {
    let all: Vec<serde_json::Value> = messages()
        .iter()
        .map(tract_core::json::message_to_json)
        .collect();
    for v in &all {
        write_seed("json_messages", v.to_string().as_bytes())?;
    }
    write_seed(
        "json_messages",
        serde_json::to_string_pretty(&all)?.as_bytes(),
    )?;
    let jsonl: Vec<String> = all.iter().map(|v| v.to_string()).collect();
    write_seed("json_messages", jsonl.join("\n").as_bytes())?;
    let wire = r#"{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"grep","arguments":{"b":1,"a":[2.5,-0.0,1e3]}}}],"metadata":{"k":{"x":"y"}}}"#;
    write_seed("json_messages", wire.as_bytes())?;
    Ok(())
}

fn revisions() -> Result<()> {
    let id = CommitId::of(b"x").to_hex();
    for text in [
        "HEAD",
        "@",
        "HEAD~",
        "main~3",
        " @ ",
        "feature/x",
        "v1.2",
        "beef",
        "abcde",
        &id,
        &format!("{}~2", &id[..12]),
        "a..b",
        "x~y",
    ] {
        write_seed("revision_parse", text.as_bytes())?;
    }
    Ok(())
}

fn open(path: &Path) -> Result<Tract> {
    let options = OpenOptions {
        store: StoreOptions {
            clock: Clock::Fixed(1_700_000_000_000_000),
            ..StoreOptions::default()
        },
        ..OpenOptions::default()
    };
    Ok(Tract::open_with(path, &options)?)
}

/// Builds a store in a fresh file, closes it and keeps its bytes as a seed.
fn store(name: &str, build: impl FnOnce(&Tract) -> Result<()>) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("store.redb");
    {
        let t = open(&path)?;
        build(&t)?;
    }
    // Compacted by the storage engine itself, as small as a real store of this content gets.
    let mut db = redb::Database::open(&path)?;
    while db.compact()? {}
    drop(db);
    let bytes = std::fs::read(&path)?;
    println!("store_open seed {name}: {} bytes", bytes.len());
    write_seed("store_open", &bytes)
}

fn stores() -> Result<()> {
    store("empty", |_| Ok(()))?;
    store("tool call", |t| {
        t.system("You are a careful coding agent.")?;
        t.user("Where is the database configured?")?;
        t.assistant("", vec![call("call_1", "grep")])?;
        t.tool_result("call_1", "grep", "config.py:42: DATABASE_URL", false)?;
        t.assistant("In config.py, line 42.", vec![])?;
        // Over a chunk in size, so it is stored in chunks (compressible, so they are small).
        t.assistant("", vec![call("call_2", "cat")])?;
        let big = "error: file not found\n".repeat(CHUNK_SIZE / 20);
        t.tool_result("call_2", "cat", big, true)?;
        Ok(())
    })?;
    store("edit, compress, branch, merge", |t| {
        t.system("sys")?;
        let q = t.user("fix the failing test")?;
        t.assistant("delegating", vec![call("task_1", "task")])?;
        let sub = t.fork(&BranchName::new("sub")?, None)?;
        sub.user("find why test_login fails")?;
        sub.assistant("", vec![call("g1", "grep")])?;
        sub.tool_result("g1", "grep", "auth.py:12: expiry off by one", false)?;
        sub.assistant("auth.py:12 is off by one.", vec![])?;
        let req = MergeRequest {
            strategy: MergeStrategy::ToolResult {
                call_id: "task_1".into(),
            },
            ..MergeRequest::default()
        };
        t.merge(&BranchName::new("sub")?, &req)?;
        t.edit(q.id, Content::Text("fix test_login".into()))?;
        let side = t.fork(&BranchName::new("side")?, None)?;
        side.user("more on the side")?;
        t.user("main goes on")?;
        t.merge(&BranchName::new("side")?, &MergeRequest::default())?;
        let summary = Manual("the test was fixed".into());
        t.compress(&CompressRequest {
            summarizer: Some(&summary),
            ..CompressRequest::default()
        })?;
        Ok(())
    })?;
    store("records", |t| {
        t.user("hello")?;
        t.record("langgraph.checkpoint", r#"{"step":1}"#, vec![])?;
        let mut asking = Message::text(Role::Assistant, "");
        asking.tool_calls.push(call("c1", "grep"));
        let answer = Message::tool_result("c1", "grep", "found", false);
        t.record("langgraph.writes", "w", vec![asking, answer])?;
        Ok(())
    })?;
    Ok(())
}

fn main() -> Result<()> {
    objects_and_records()?;
    json()?;
    revisions()?;
    stores()?;
    Ok(())
}
