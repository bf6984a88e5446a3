//! Token counting, done once when a blob is written (never on read paths).
//!
//! Counts use `o200k_base` and the framing of OpenAI's cookbook ("How to count tokens with
//! tiktoken"): each message costs its content plus [`PER_MESSAGE`] tokens, a `name` adds
//! [`PER_NAME`], and a reply is primed with [`REPLY_PRIMING`] tokens.

use crate::object::{ContentPart, Message};

/// The encoding recorded in every store.
pub const ENCODING: &str = "o200k_base";
/// Framing tokens per message.
pub const PER_MESSAGE: u32 = 3;
/// Extra tokens when a message carries a name.
pub const PER_NAME: u32 = 1;
/// Tokens that prime the assistant's reply, once per request.
pub const REPLY_PRIMING: u32 = 3;
/// Payload tokens of the synthetic result compile sends for a call with none (the view's
/// `SYNTHETIC_RESULT`; a test there checks the two agree, so reading commands never load the
/// tokenizer).
pub const SYNTHETIC_RESULT_TOKENS: u32 = 26;

/// Past this many tokens, one message is more than the largest context windows take (about a
/// million tokens): writing or compiling one says so.
pub const LARGE_MESSAGE: u32 = 1_000_000;

/// What is said of a message of `tokens` tokens when it is over [`LARGE_MESSAGE`]: its size,
/// and what to do.
pub fn too_large(tokens: u32) -> Option<String> {
    (tokens > LARGE_MESSAGE).then(|| {
        format!(
            "it holds {tokens} tokens, more than the largest model context windows take (about \
             1,000,000); edit or compress it before it is sent"
        )
    })
}

/// Tokens of a request: its messages framed, less results that answer no call, plus a
/// synthetic result for each call without one, plus reply priming.
pub fn request_tokens(total: u64, orphans: u64, unanswered: u64) -> u64 {
    // Saturating: the counts may come from a damaged row of the store.
    total
        .saturating_sub(orphans)
        .saturating_add(
            unanswered.saturating_mul(u64::from(framed(SYNTHETIC_RESULT_TOKENS, false))),
        )
        .saturating_add(u64::from(REPLY_PRIMING))
}

/// Slots of each thread's table of recently counted pieces (24 bytes each: 48 KiB, small
/// enough to stay in a core's cache, where the encoding's map is megabytes).
const PIECE_SLOTS: usize = 2048;

/// Bytes of text a process counts through tiktoken-rs's `count_ordinary` before it builds
/// [`SPLITTER`] (on a thread of its own): building it takes 6 to 12 ms of a core, more than a
/// short `tract add` counts, and saves 8 to 50 µs on each message counted after (and the byte
/// pair encoding of a long piece that recurs, tens to hundreds).
const SPLIT_AFTER_BYTES: u64 = 16 * 1024;

/// Bytes counted so far through `count_ordinary` (up to [`SPLIT_AFTER_BYTES`]).
static UNSPLIT_BYTES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// `o200k_base`'s split pattern for regex-automata (`None` if it could not be built: then
/// counts go through `count_ordinary`, the same counts, slower).
static SPLITTER: std::sync::OnceLock<Option<tiktoken_rs::Splitter>> = std::sync::OnceLock::new();

/// [`SPLITTER`], built on first use.
fn splitter() -> Option<&'static tiktoken_rs::Splitter> {
    SPLITTER
        .get_or_init(|| tiktoken_rs::Splitter::o200k_base().ok())
        .as_ref()
}

/// Builds [`SPLITTER`] on a thread of its own, once a process: the append that crossed
/// [`SPLIT_AFTER_BYTES`] (and those after it) go on counting through `count_ordinary` instead
/// of waiting for it, which stalled an append for the whole build; the thread yields to the
/// appends. Built on the caller's thread if no thread can be started.
fn build_splitter_aside() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let spawned = std::thread::Builder::new()
            .name("tract-tokens".into())
            .spawn(|| {
                crate::parallel::yield_to_appends();
                splitter();
            });
        if spawned.is_err() {
            splitter();
        }
    });
}

thread_local! {
    /// What this thread counts with: the split regex's cache and the token counts of the
    /// pieces it counted last. Counting an append's items between the rest of its work took
    /// 3 to 5 times as long as in a loop of counts, the encoding's map gone from the cache,
    /// and fancy-regex's backtracking was most of what was left (docs/performance.md).
    static SCRATCH: std::cell::RefCell<Option<tiktoken_rs::SplitScratch>> =
        const { std::cell::RefCell::new(None) };
}

/// Whether this process has loaded the encoding (set before its first use).
static LOADED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether this process has loaded the token encoding: only writing a message counts tokens,
/// so a process that opens, compiles and renders never does (the encoding is megabytes and
/// takes tens of milliseconds to load).
pub fn encoding_loaded() -> bool {
    LOADED.load(std::sync::atomic::Ordering::Relaxed)
}

/// The encoding, noting that this process loaded it.
fn encoding() -> &'static tiktoken_rs::CoreBPE {
    LOADED.store(true, std::sync::atomic::Ordering::Relaxed);
    tiktoken_rs::o200k_base_singleton()
}

/// Tokens of a piece of text (special-token text counts as ordinary text).
pub fn count_text(text: &str) -> u32 {
    if text.is_empty() {
        return 0;
    }
    use std::sync::atomic::Ordering::Relaxed;
    let n = match SPLITTER.get() {
        Some(Some(splitter)) => count_with(text, splitter),
        _ => {
            if UNSPLIT_BYTES.fetch_add(text.len() as u64, Relaxed) + text.len() as u64
                >= SPLIT_AFTER_BYTES
            {
                build_splitter_aside();
            }
            encoding().count_ordinary(text)
        }
    };
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Tokens of a text through [`SPLITTER`] and this thread's [`SCRATCH`]: what `count_ordinary`
/// gives, found faster (the splitter built first if it is not yet): what the tests and the
/// fuzz target compare with `count_ordinary`.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn count_split(text: &str) -> usize {
    match splitter() {
        Some(splitter) => count_with(text, splitter),
        None => encoding().count_ordinary(text),
    }
}

/// Tokens of a text through `splitter` and this thread's [`SCRATCH`].
fn count_with(text: &str, splitter: &tiktoken_rs::Splitter) -> usize {
    let bpe = encoding();
    SCRATCH.with_borrow_mut(|scratch| {
        let scratch = scratch.get_or_insert_with(|| splitter.scratch(PIECE_SLOTS));
        bpe.count_ordinary_split(text, splitter, scratch)
    })
}

/// Tokens of a message's payload: content, name (except on tool results), and each tool
/// call's name and arguments.
/// Framing is added by the view (see [`framed`]).
pub fn count_message(m: &Message) -> u32 {
    let mut n: u32 = match &m.content {
        crate::object::Content::Text(t) => count_text(t),
        crate::object::Content::Parts(parts) => parts
            .iter()
            .map(|p| match p {
                ContentPart::Text(t) => count_text(t),
                ContentPart::Raw(raw) => count_text(raw),
            })
            .fold(0u32, u32::saturating_add),
    };
    // Tool results are sent without their name (OpenAI and Anthropic alike).
    if let (Some(name), false) = (&m.name, m.role == crate::object::Role::Tool) {
        n = n.saturating_add(count_text(name));
    }
    for call in &m.tool_calls {
        n = n
            .saturating_add(count_text(&call.name))
            .saturating_add(count_text(&call.arguments));
    }
    n
}

/// A message's payload tokens with its framing.
pub fn framed(payload: u32, has_name: bool) -> u32 {
    payload
        .saturating_add(PER_MESSAGE)
        .saturating_add(if has_name { PER_NAME } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by fuzzing (store_open): a damaged branch-counts row with more orphan tokens than
    /// tokens in all made listing branches subtract past zero (a panic, or a wrapped count).
    #[test]
    fn counts_from_a_damaged_row_do_not_overflow() {
        assert_eq!(request_tokens(5, 10, 0), u64::from(REPLY_PRIMING));
        assert_eq!(request_tokens(u64::MAX, 0, u64::MAX), u64::MAX);
    }
    use crate::object::Role;

    #[test]
    fn counts_known_text() {
        // "hello world" is two tokens in o200k_base.
        assert_eq!(count_text("hello world"), 2);
        assert_eq!(count_text(""), 0);
    }

    #[test]
    fn counts_code_scripts_and_emoji_as_tiktoken_rs_does() {
        // 119 with tiktoken-rs 0.12.1 as published; the copy in vendor/ loads the encoding
        // another way (vendor/README.md) and must count the same.
        let text = "fn main() {\n    let s = \"héllo wörld — 你好，世界 🌍🚀 𝔘𝔫𝔦𝔠𝔬𝔡𝔢\";\n    \
                    println!(\"{s:?}\\t{}\", s.len());\n}\n// grep -rn \"TODO\" src/ | wc -l  =>  \
                    42\r\n\t\t  \n<|endoftext|> 1234567890 3.14159e-10 0xDEADBEEF αβγ ﷽ \u{200d}👩\u{200d}👩\u{200d}👧\n";
        assert_eq!(count_text(text), 119);
    }

    /// What tiktoken-rs's own `encode_ordinary` (fancy-regex) gives.
    fn reference(text: &str) -> u32 {
        let n = tiktoken_rs::o200k_base_singleton()
            .encode_ordinary(text)
            .len();
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    #[test]
    fn counts_as_the_published_tiktoken_does() {
        // Counts by OpenAI's tiktoken (Python) of prose, code, whitespace runs, several
        // scripts, emoji sequences, digits, URLs, line ends and generated mixes: the fixture
        // names the version, and its script how it was made (from the published encoding).
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/tiktoken/o200k_base-counts.json");
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let doc: serde_json::Value =
            serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(doc["encoding"], ENCODING);
        let cases = doc["cases"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        assert!(cases.len() >= 20, "only {} cases", cases.len());
        for case in cases {
            let (Some(name), Some(text), Some(tokens)) = (
                case["name"].as_str(),
                case["text"].as_str(),
                case["tokens"].as_u64(),
            ) else {
                panic!("a case without a name, text or count: {case}");
            };
            assert_eq!(u64::from(count_text(text)), tokens, "count_text, {name}");
            assert_eq!(count_split(text) as u64, tokens, "count_split, {name}");
            assert_eq!(
                encoding().count_ordinary(text) as u64,
                tokens,
                "count_ordinary, {name}"
            );
            assert_eq!(
                u64::from(reference(text)),
                tokens,
                "encode_ordinary, {name}"
            );
        }
    }

    /// The split count of `text`, checked against `count_text` (whichever way it counted).
    fn split(text: &str) -> u32 {
        let n = u32::try_from(count_split(text)).unwrap_or(u32::MAX);
        assert_eq!(n, count_text(text), "{text:?}");
        n
    }

    #[test]
    fn counts_every_real_text_of_the_fixtures_as_encode_ordinary_does() {
        // Real sessions (Claude Code's, exported ones), this repository's prose and code, and
        // the `token_count` fuzz target's corpus: every file whole (as the fuzz target reads
        // bytes, invalid UTF-8 replaced), every line, and every line cut in half (the
        // whitespace rule looks at the end of the text).
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files = vec![
            root.join("tests/fixtures"),
            root.join("docs"),
            root.join("crates/tract-core/src"),
            root.join("fuzz/corpus/token_count"),
        ];
        let mut texts = 0;
        while let Some(path) = files.pop() {
            if path.is_dir() {
                let entries = std::fs::read_dir(&path).unwrap_or_else(|e| panic!("{e}"));
                files.extend(entries.map(|e| e.unwrap_or_else(|e| panic!("{e}")).path()));
                continue;
            }
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{e}"));
            let text = String::from_utf8_lossy(&bytes);
            for _ in 0..2 {
                // Twice: the second time the pieces' counts are remembered.
                assert_eq!(split(&text), reference(&text), "{}", path.display());
            }
            for line in text.split_inclusive('\n') {
                assert_eq!(split(line), reference(line), "{line:?}");
                let cut = line.char_indices().nth(line.chars().count() / 2);
                if let Some((i, _)) = cut {
                    assert_eq!(split(&line[..i]), reference(&line[..i]), "{line:?}");
                }
                texts += 1;
            }
        }
        assert!(texts > 10_000, "only {texts} lines found");
    }

    #[test]
    fn counts_random_mixes_of_spaces_letters_marks_and_digits_as_encode_ordinary_does() {
        // The characters the split pattern tells apart: kinds of whitespace and line ends,
        // cased and uncased letters, combining marks, digits of several scripts, punctuation,
        // the contractions, emoji and joiners.
        const PARTS: &[&str] = &[
            " ",
            " ",
            "  ",
            "\t",
            "\n",
            "\r\n",
            "\r",
            "\u{a0}",
            "\u{3000}",
            "\u{2028}",
            "\u{b}",
            "a",
            "word",
            "Word",
            "WORD",
            "é",
            "e\u{301}",
            "\u{301}",
            "ǅ",
            "ʰ",
            "你好",
            "ß",
            "İ",
            "1",
            "42",
            "12345",
            "٣",
            "Ⅻ",
            "½",
            ".",
            "/",
            "//",
            "-",
            "_",
            "(",
            ")",
            "{",
            "\"",
            "'s",
            "'S",
            "'ll",
            "'LL",
            "'d",
            "'",
            "’s",
            "🌍",
            "\u{200d}",
            "👩\u{200d}👧",
            "<|endoftext|>",
        ];
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            // xorshift64*: a fixed sequence, so a failure names a text that replays.
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            state.wrapping_mul(0x2545_f491_4f6c_dd1d)
        };
        for _ in 0..30_000 {
            let len = (next() % 24) as usize;
            let text: String = (0..len)
                .map(|_| PARTS[(next() % PARTS.len() as u64) as usize])
                .collect();
            assert_eq!(split(&text), reference(&text), "{text:?}");
        }
    }

    /// Long pieces (a run of one character, a separator line, a long identifier or number)
    /// counted again come from the table of long pieces: the same counts, pieces that share
    /// a slot included, and a piece too long for it counted each time.
    #[test]
    fn long_pieces_counted_again_count_as_encode_ordinary_does() {
        let mut texts: Vec<String> = vec![
            format!("{}1234", "x".repeat(900)),
            format!("{}\n{}\n", "-".repeat(80), "=".repeat(120)),
            "Abc".repeat(300),
            "9".repeat(700),
            "é".repeat(2500),
            "y".repeat(5000),
        ];
        // More long pieces than the table has slots, so that some share one.
        texts.extend((0..40).map(|i| format!("{}{i}", "q".repeat(30 + i))));
        for round in 0..3 {
            for text in &texts {
                assert_eq!(
                    count_split(text),
                    encoding().encode_ordinary(text).len(),
                    "round {round}: {}…",
                    &text[..20]
                );
            }
        }
    }

    #[test]
    fn message_counts_name_and_calls() {
        let plain = Message::tool_result("c1", "grep", "hello world", false);
        assert_eq!(count_message(&plain), 2);
        let mut named = Message::text(Role::User, "hello world");
        named.name = Some("grep".into());
        assert_eq!(count_message(&named), 2 + count_text("grep"));
        assert_eq!(framed(10, true), 10 + PER_MESSAGE + PER_NAME);
        let user = Message::text(Role::User, "<|endoftext|>");
        assert!(count_message(&user) > 1);
    }
}
