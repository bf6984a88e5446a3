//! The passage a ranked hit shows: the best fragment of its text for the query's words (rarer
//! words weighing more, as tantivy's snippets pick it), widened to whole words, on one line,
//! with the words marked.

use crate::storage::search::query::{Parsed, Weights};
use crate::storage::search::tantivy_index::index::fields;
use crate::storage::search::tokenizer::{self, CodeTokenizer};
use std::collections::HashSet;
use tantivy::snippet::SnippetGenerator;
use tantivy::tokenizer::TextAnalyzer;

/// Characters of a ranked hit's passage, at most.
const SNIPPET_CHARS: usize = 160;

/// The passages of one query's hits.
pub(crate) struct Passages {
    generator: SnippetGenerator,
    /// The words to mark.
    words: HashSet<String>,
}

impl Passages {
    /// Passages of `parsed`'s words, each weighing as `weights` says.
    pub(crate) fn new(parsed: &Parsed, weights: &Weights) -> Passages {
        let words: HashSet<String> = parsed.words().cloned().collect();
        let terms = words
            .iter()
            .map(|w| (w.clone(), weights.idf.get(w).copied().unwrap_or(1.0)))
            .collect();
        let generator = SnippetGenerator::new(
            terms,
            TextAnalyzer::from(CodeTokenizer),
            fields().text,
            SNIPPET_CHARS,
        );
        Passages { generator, words }
    }

    /// The passage of `text`, and where the words are marked in it.
    pub(crate) fn of(&self, text: &str) -> (String, Vec<(usize, usize)>) {
        passage(text, &self.generator.snippet(text), &self.words)
    }
}

/// Bytes a passage is widened by, at most, to reach whitespace on each side.
const WIDEN: usize = 24;

/// The passage `s` picked from `text`, widened to whole words (the snippet's fragment ends at
/// its last word, cutting `env()` to `env`), on one line, marked `…` where it cuts the text,
/// with the query's `words` in it marked (overlapping or touching ones joined).
fn passage(
    text: &str,
    s: &tantivy::snippet::Snippet,
    words: &HashSet<String>,
) -> (String, Vec<(usize, usize)>) {
    if s.fragment().is_empty() {
        let start: String = text.chars().take(SNIPPET_CHARS).collect();
        let cut = start.len() < text.len();
        let (mut line, _) = one_line(&start, &[]);
        if cut {
            line.push('…');
        }
        return (line, Vec::new());
    }
    let range = s.fragment_range();
    let back = text[..range.start]
        .char_indices()
        .rev()
        .take_while(|(i, _)| range.start - i <= WIDEN)
        .find(|(_, c)| c.is_whitespace())
        .map(|(i, c)| i + c.len_utf8());
    let start = match back {
        Some(i) => i,
        None if range.start <= WIDEN => 0,
        None => range.start,
    };
    let ahead = text[range.end..]
        .char_indices()
        .take_while(|(i, _)| *i <= WIDEN)
        .find(|(_, c)| c.is_whitespace())
        .map(|(i, _)| range.end + i);
    let end = match ahead {
        Some(i) => i,
        None if text.len() - range.end <= WIDEN => text.len(),
        None => range.end,
    };
    let mut marks: Vec<(usize, usize)> = tokenizer::words(&text[start..end], true)
        .into_iter()
        .filter(|w| words.contains(&w.text))
        .map(|w| (w.offset_from, w.offset_to))
        .collect();
    marks.sort();
    let mut joined: Vec<(usize, usize)> = Vec::new();
    for (a, b) in marks {
        match joined.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => joined.push((a, b)),
        }
    }
    let (line, marks) = one_line(&text[start..end], &joined);
    let lead = if start > 0 { "…" } else { "" };
    let tail = if end < text.len() { "…" } else { "" };
    let line = format!("{lead}{}{tail}", line.trim_end());
    let marks = marks
        .into_iter()
        .map(|(a, b)| (a + lead.len(), b + lead.len()))
        .collect();
    (line, marks)
}

/// `text` on one line (each run of whitespace one space), with `ranges` moved to match.
pub(crate) fn one_line(text: &str, ranges: &[(usize, usize)]) -> (String, Vec<(usize, usize)>) {
    let mut out = String::with_capacity(text.len());
    // Where each byte of `text` lands in `out`.
    let mut map = vec![0usize; text.len() + 1];
    let mut space = false;
    for (i, c) in text.char_indices() {
        map[i] = out.len();
        if c.is_whitespace() {
            if !space && !out.is_empty() {
                out.push(' ');
            }
            space = true;
        } else {
            out.push(c);
            space = false;
        }
    }
    map[text.len()] = out.len();
    let moved = ranges
        .iter()
        .filter(|(a, b)| a < b && *b <= text.len())
        .map(|(a, b)| (map[*a], map[*b]))
        .collect();
    (out, moved)
}
