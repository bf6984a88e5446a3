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

/// Tokens of a piece of text (special-token text counts as ordinary text).
pub fn count_text(text: &str) -> u32 {
    if text.is_empty() {
        return 0;
    }
    let n = tiktoken_rs::o200k_base_singleton().count_ordinary(text);
    u32::try_from(n).unwrap_or(u32::MAX)
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
