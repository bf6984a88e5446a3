//! The fuzz corpora replayed, and the damaged stores fuzzing found (fuzz/corpus/store_open).

use crate::support::postgres_url;
use tract_core::{Bind, BranchName, Error, Message, Rev, SearchQuery, Tract};

/// The inputs of a fuzz target's corpus in `fuzz/corpus/` (the inputs that reached new code,
/// and every input that once failed), or none where the repository's fuzz folder is absent.
fn fuzz_corpus(target: &str) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    entries
        .map(|e| {
            let path = e.unwrap().path();
            let data = std::fs::read(&path).unwrap();
            (path, data)
        })
        .collect()
}

/// The fuzz corpora replay as the targets run them (fuzz/fuzz_targets): nothing panics, what
/// decodes is canonical, parsed messages and revisions survive a round trip, and a damaged
/// store is an error. Nothing here touches a backend's server, so the PostgreSQL run of the
/// suite does not replay them again.
#[test]
fn fuzz_corpora_replay() {
    if postgres_url().is_some() {
        return;
    }
    for (path, data) in fuzz_corpus("object_decode") {
        if let Ok(m) = Message::decode(&data) {
            assert_eq!(m.encode().unwrap(), data, "{}", path.display());
        }
        if let Ok(c) = tract_core::Commit::decode(&data) {
            assert_eq!(c.encode().unwrap(), data, "{}", path.display());
        }
    }
    for (path, data) in fuzz_corpus("json_messages") {
        let Ok(text) = std::str::from_utf8(&data) else {
            continue;
        };
        for m in tract_core::json::messages_from_text(text).unwrap_or_default() {
            let back = tract_core::json::message_from_json(&tract_core::json::message_to_json(&m));
            assert_eq!(back.unwrap(), m, "{}", path.display());
        }
    }
    for (path, data) in fuzz_corpus("revision_parse") {
        let Ok(text) = std::str::from_utf8(&data) else {
            continue;
        };
        if let Ok(rev) = Rev::parse(text) {
            let again = Rev::parse(&rev.to_string()).unwrap();
            assert_eq!(again, rev, "{}", path.display());
        }
        let _ = BranchName::new(text);
        let _ = tract_core::HexPrefix::new(text);
    }
    for (path, data) in fuzz_corpus("transcript_parse") {
        let Ok(text) = std::str::from_utf8(&data) else {
            continue;
        };
        if let Err(broken) = tract_core::formats::transcript::check_claude_code(text) {
            panic!("{}: {broken}", path.display());
        }
        let formats = std::iter::once(None).chain(
            tract_core::formats::transcript::Format::ALL
                .iter()
                .map(|(_, f)| Some(*f)),
        );
        for format in formats {
            if let Ok(tract_core::formats::transcript::Transcript::Steps { steps, .. }) =
                tract_core::formats::transcript::parse(text, format)
            {
                for step in &steps {
                    if let tract_core::formats::transcript::Step::Message { message, .. } = step {
                        let back = tract_core::json::message_from_json(
                            &tract_core::json::message_to_json(message),
                        )
                        .unwrap();
                        assert_eq!(&back, message, "{}", path.display());
                    }
                }
            }
        }
    }
    for (_, data) in fuzz_corpus("store_open") {
        let options = tract_core::StoreOptions::default();
        let Ok(store) = tract_core::Store::from_bytes(&data, options) else {
            continue;
        };
        let Ok(t) = Tract::from_store(store, &Bind::HeadAtOpen) else {
            continue;
        };
        let _ = t.compile();
        let _ = t.log(&tract_core::LogQuery {
            limit: Some(50),
            ..Default::default()
        });
        let _ = t.branches();
        let _ = t.status();
        let _ = t.find_tool_turns(None);
        let _ = t.search(&SearchQuery {
            query: "e".into(),
            history: true,
            limit: Some(20),
            ..SearchQuery::default()
        });
        let _ = t.log(&tract_core::LogQuery {
            limit: Some(50),
            graph: true,
            ..Default::default()
        });
    }
}

/// Found by fuzzing (store_open): a store whose allocator state is damaged opens and reads,
/// but redb panicked when the last handle closed it (it writes that state on close).
#[test]
fn a_damaged_store_closes_without_a_panic() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus/store_open/crash-close-allocator-state");
    let data = std::fs::read(path).unwrap();
    let store = tract_core::Store::from_bytes(&data, tract_core::StoreOptions::default()).unwrap();
    let t = Tract::from_store(store, &Bind::HeadAtOpen).unwrap();
    let _ = t.log(&tract_core::LogQuery {
        limit: Some(50),
        ..Default::default()
    });
    drop(t);
}

/// Found by fuzzing (store_open): a damaged page made redb panic in the middle of a read
/// (a value's bounds past its page) after the store had opened; reads are guarded as opening
/// is, so the damage is an error.
#[test]
fn a_damaged_page_read_after_opening_is_an_error() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus/store_open/crash-read-value-out-of-bounds");
    let data = std::fs::read(path).unwrap();
    let store = tract_core::Store::from_bytes(&data, tract_core::StoreOptions::default()).unwrap();
    let t = Tract::from_store(store, &Bind::HeadAtOpen).unwrap();
    let compiled = t.compile();
    assert!(
        matches!(compiled, Err(Error::Corrupt { .. })),
        "{compiled:?}"
    );
    // Reads inside a write transaction and fsck's table scans are guarded the same way: an
    // error, never a panic.
    let appended = t.user("appended to a damaged store");
    assert!(appended.is_err(), "{appended:?}");
    let checked = tract_core::fsck(t.store());
    assert!(
        checked.as_ref().map_or(true, |r| !r.is_clean()),
        "{checked:?}"
    );
}

/// Found by fuzzing (store_open): a damaged page made redb panic while opening checked the
/// format version (after the engine itself had opened the file).
#[test]
fn a_damaged_page_read_by_the_format_check_is_an_error() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus/store_open/crash-format-check-page");
    let data = std::fs::read(path).unwrap();
    let opened = tract_core::Store::from_bytes(&data, tract_core::StoreOptions::default());
    assert!(matches!(opened, Err(Error::Corrupt { .. })), "{opened:?}");
}

/// Found by fuzzing (store_open): a damaged page of redb's freed-page table made its first
/// commit panic (a page in a region the file does not have), and finishing the table's
/// removals while that panic unwound panicked again, which aborts the process; it happened on
/// any append and on closing. The vendored redb skips that work while unwinding
/// (vendor/README.md): an append is an error and closing is quiet.
#[test]
fn a_damaged_freed_page_table_is_an_error_not_an_abort() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus/store_open/crash-close-freed-pages-double-panic");
    let data = std::fs::read(path).unwrap();
    let store = tract_core::Store::from_bytes(&data, tract_core::StoreOptions::default()).unwrap();
    let t = Tract::from_store(store, &Bind::HeadAtOpen).unwrap();
    let _ = t.log(&tract_core::LogQuery {
        limit: Some(50),
        ..Default::default()
    });
    let appended = t.user("appended to a damaged store");
    assert!(appended.is_err(), "{appended:?}");
    let _ = tract_core::fsck(t.store());
    drop(t);
}

/// Found by fuzzing (store_open): a damaged page number claimed a page of 2 GiB (or 4 GiB),
/// which redb allocated and zeroed before reading it from a 57 KB file. The vendored redb
/// checks that a large page lies in the file first (vendor/README.md): opening and compiling is
/// an error, and nothing near that size is allocated.
#[test]
fn a_page_claimed_past_the_end_of_the_file_is_an_error_without_the_allocation() {
    for name in ["oom-page-past-the-end-2GiB", "oom-page-past-the-end-4GiB"] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/corpus/store_open")
            .join(name);
        let data = std::fs::read(path).unwrap();
        let opened = tract_core::Store::from_bytes(&data, tract_core::StoreOptions::default())
            .and_then(|s| Tract::from_store(s, &Bind::HeadAtOpen))
            .and_then(|t| t.compile().map(|_| t));
        // Which check names the damage first depends on whether redb was built with debug
        // assertions (the fuzz build has them): a corrupt store either way.
        assert!(
            matches!(&opened, Err(e) if e.category() == tract_core::ErrorCategory::Corrupt),
            "{name}: {opened:?}"
        );
    }
    // This process's peak resident memory stays far below the pages claimed.
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let peak_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    assert!(peak_kib < 1_500_000, "peak RSS {peak_kib} KiB");
}
