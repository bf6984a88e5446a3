//! A transcript's text as JSON values, each with its line: one JSON document, or JSONL read
//! as Claude Code's reader reads a session's lines.

use crate::error::Result;
use crate::formats::transcript::steps::bad;
use serde_json::Value;

/// The JSON values of a text, each with its line: one document (an object, or a list of
/// values, each at the document's first line), or JSONL. Lines that are not JSON are returned
/// apart (line and error): only Claude Code's format skips them, as Claude Code does.
pub(super) struct Values {
    /// The values, each with its line.
    pub(super) values: Vec<(usize, Value)>,
    /// The lines that are not JSON, each with what is wrong.
    pub(super) unreadable: Vec<(usize, String)>,
    /// Read as one JSON document, not line by line.
    document: bool,
}

impl Values {
    /// The values of `text`: one JSON document where the whole text is one, else its lines.
    pub(super) fn read(text: &str) -> Result<Values> {
        let trimmed = text.trim_start();
        if trimmed.is_empty() {
            return Err(bad(1, "the file is empty"));
        }
        let first_line = text.len() - trimmed.len();
        let first_line = text[..first_line].matches('\n').count() + 1;
        if let Ok(v) = serde_json::from_str::<Value>(text) {
            let values = match v {
                Value::Array(list) => list.into_iter().map(|v| (first_line, v)).collect(),
                v => vec![(first_line, v)],
            };
            return Ok(Values {
                values,
                unreadable: Vec::new(),
                document: true,
            });
        }
        Ok(Values::lines(text))
    }

    /// The text read line by line, as Claude Code's reader reads a session: lines end at
    /// `\n`, `\r\n` or a lone `\r` (Python's universal newlines), are trimmed as Python's
    /// `str.strip()` trims (which also takes U+001C..U+001F for whitespace), and a lone UTF-16
    /// surrogate escape (JavaScript writes one for a cut emoji; a Rust string cannot hold it)
    /// reads as U+FFFD.
    pub(super) fn lines(text: &str) -> Values {
        let mut values = Vec::new();
        let mut unreadable = Vec::new();
        for (i, line) in text.split('\n').enumerate() {
            for piece in line.split('\r') {
                let piece = piece.trim_matches(|c: char| {
                    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
                });
                if piece.is_empty() {
                    continue;
                }
                match serde_json::from_str::<Value>(piece) {
                    Ok(v) => values.push((i + 1, v)),
                    Err(e) => match lone_surrogates_replaced(piece)
                        .and_then(|fixed| serde_json::from_str::<Value>(&fixed).ok())
                    {
                        Some(v) => values.push((i + 1, v)),
                        None => unreadable.push((i + 1, format!("malformed JSON: {e}"))),
                    },
                }
            }
        }
        Values {
            values,
            unreadable,
            document: false,
        }
    }

    /// The values, for a format whose lines must all be JSON.
    pub(super) fn strict(self) -> Result<Vec<(usize, Value)>> {
        match self.unreadable.into_iter().next() {
            Some((line, reason)) => Err(bad(line, reason)),
            None => Ok(self.values),
        }
    }

    /// The values as Claude Code reads a session: line by line, even where the whole text
    /// (`text`, what was read) is one JSON document.
    pub(super) fn into_session(self, text: &str) -> Values {
        if self.document {
            Values::lines(text)
        } else {
            self
        }
    }
}

/// `line` with each lone UTF-16 surrogate escape (`\\ud83d` not part of a pair) written as
/// `\\ufffd`; `None` when it holds none.
fn lone_surrogates_replaced(line: &str) -> Option<String> {
    let b = line.as_bytes();
    let unit = |at: usize| -> Option<u16> {
        if b.get(at) != Some(&b'\\') || b.get(at + 1) != Some(&b'u') {
            return None;
        }
        let hex = line.get(at + 2..at + 6)?;
        u16::from_str_radix(hex, 16).ok()
    };
    let mut out = String::with_capacity(line.len());
    let mut changed = false;
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        match unit(i) {
            Some(0xD800..=0xDBFF) => {
                if matches!(unit(i + 6), Some(0xDC00..=0xDFFF)) {
                    i += 12;
                } else {
                    out.push_str(&line[copied..i]);
                    out.push_str("\\ufffd");
                    i += 6;
                    copied = i;
                    changed = true;
                }
            }
            Some(0xDC00..=0xDFFF) => {
                out.push_str(&line[copied..i]);
                out.push_str("\\ufffd");
                i += 6;
                copied = i;
                changed = true;
            }
            // Any other escape: the backslash and what it escapes.
            _ => i += 2,
        }
    }
    if !changed {
        return None;
    }
    out.push_str(&line[copied..]);
    Some(out)
}
