//! A text scanned before it is imported (`tract secrets scan FILE`): a JSON document, JSON
//! lines (a transcript) or plain text, each read the way a write would scrub it, so that the
//! scan finds what an import of the file would scrub.

use crate::secrets::detect::{Detector, Finding};
use crate::secrets::scrub::{self, Key};

/// One finding in a text: where it is, never the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextFinding {
    /// The rule that found it.
    pub rule: String,
    /// Its line, from 1.
    pub line: usize,
    /// Its column in that line, in bytes, from 1.
    pub column: usize,
    /// The byte offset of the value in the text.
    pub start: usize,
    /// The end of the value (exclusive).
    pub end: usize,
    /// Its keyed fingerprint, with a store's key (`None` without one).
    pub fingerprint: Option<String>,
}

/// The findings in `text`, in order: inside the strings of a JSON document or of each JSON
/// line (never in the values a session needs, such as signatures and ids), else anywhere.
pub fn scan(detector: &Detector, key: Option<&Key>, text: &str) -> Vec<TextFinding> {
    let found: Vec<Finding> = if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() {
        detector.find_in_json(text)
    } else if is_json_lines(text) {
        let mut out = Vec::new();
        let mut at = 0;
        for line in text.split_inclusive('\n') {
            out.extend(detector.find_in_json(line).into_iter().map(|f| Finding {
                start: f.start + at,
                end: f.end + at,
                ..f
            }));
            at += line.len();
        }
        out
    } else {
        detector.find(text)
    };
    let mut line = 1;
    let mut line_start = 0;
    let mut counted = 0;
    found
        .into_iter()
        .map(|f| {
            for (i, b) in text.as_bytes()[counted..f.start].iter().enumerate() {
                if *b == b'\n' {
                    line += 1;
                    line_start = counted + i + 1;
                }
            }
            counted = f.start;
            TextFinding {
                fingerprint: key.map(|k| scrub::fingerprint(k, &text[f.start..f.end])),
                line,
                column: f.start - line_start + 1,
                start: f.start,
                end: f.end,
                rule: f.rule,
            }
        })
        .collect()
}

/// Whether every line that is not blank is a JSON value (a transcript's lines).
fn is_json_lines(text: &str) -> bool {
    let mut any = false;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if serde_json::from_str::<serde::de::IgnoredAny>(line).is_err() {
            return false;
        }
        any = true;
    }
    any
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns_count_from_one() {
        let token = format!("ghp_{}", "a1B2".repeat(9));
        let text = format!("first line\nexport GITHUB_TOKEN={token}\n");
        let found = scan(&Detector::builtin(), None, &text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].line, found[0].column), (2, 21));
        assert_eq!(&text[found[0].start..found[0].end], token);
        assert_eq!(found[0].fingerprint, None);
    }

    #[test]
    fn json_lines_are_read_line_by_line() {
        let token = "ghp_00000042aB3dE5gH7jK9mN1pQ3sT5vW7yZ1b";
        let text = format!("{{\"a\":1}}\n{{\"text\":\"token {token}\"}}\n");
        let found = scan(&Detector::builtin(), Some(&[7; 32]), &text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].line, 2);
        assert_eq!(&text[found[0].start..found[0].end], token);
        assert!(found[0].fingerprint.is_some());
        assert_eq!(found[0].rule, "github-pat");
    }
}
