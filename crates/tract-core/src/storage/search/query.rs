//! The search syntax, turned into a query of the index's text:
//!
//! - `word word`: every word must appear, in any order (ranked by BM25);
//! - `"some words"`: the words in this order;
//! - `-word`, `-"some words"`: must not appear;
//! - `a OR b`: either (binds the clauses on each side of it);
//! - a word of several pieces (`getUserName`, `src/main.rs`, `DATABASE_URL`) is a phrase of
//!   its pieces, cut as the text is ([`crate::storage::search::tokenizer`]).
//!
//! Case does not matter; punctuation separates words and is not searched (`--regex` is).

use crate::error::{Error, Result};
use crate::storage::search::tokenizer::words;
use tantivy::Term;
use tantivy::query::{BooleanQuery, Occur, PhraseQuery, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption};

/// One clause as written: words or a phrase, and whether it is excluded.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Clause {
    /// A bare word (`phrase: false`) or a quoted phrase.
    Text { text: String, negated: bool },
    /// `OR` between two clauses.
    Or,
}

/// Splits the query into clauses.
fn clauses(query: &str) -> Result<Vec<Clause>> {
    let mut out = Vec::new();
    let mut rest = query.trim_start();
    while !rest.is_empty() {
        let (negated, after) = match rest.strip_prefix('-') {
            Some(r) if r.starts_with(|c: char| !c.is_whitespace()) => (true, r),
            _ => (false, rest),
        };
        if let Some(quoted) = after.strip_prefix('"') {
            let end = quoted.find('"').ok_or_else(|| {
                Error::invalid_input(format!(
                    "the search '{query}' opens a quote it does not close"
                ))
            })?;
            out.push(Clause::Text {
                text: quoted[..end].to_string(),
                negated,
            });
            rest = quoted[end + 1..].trim_start();
            continue;
        }
        let end = after.find(char::is_whitespace).unwrap_or(after.len());
        let word = &after[..end];
        if word == "OR" && !negated {
            out.push(Clause::Or);
        } else {
            out.push(Clause::Text {
                text: word.to_string(),
                negated,
            });
        }
        rest = after[end..].trim_start();
    }
    Ok(out)
}

/// A query as written, each clause as its words: what the index is asked, and what a commit
/// not indexed yet is matched and scored against.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Parsed {
    /// Groups of alternatives, all required; each alternative a word or a phrase's words.
    groups: Vec<Vec<Vec<String>>>,
    /// Words or phrases that must not appear.
    excluded: Vec<Vec<String>>,
}

/// The words of a clause as a query asks for them (pieces, in order).
fn clause_words(text: &str) -> Vec<String> {
    words(text, false).into_iter().map(|w| w.text).collect()
}

/// The query of one clause's words on `field`: a term, or a phrase of them.
fn text_query(field: Field, ws: &[String]) -> Box<dyn Query> {
    match ws {
        [one] => Box::new(TermQuery::new(
            Term::from_field_text(field, one),
            IndexRecordOption::WithFreqs,
        )),
        many => Box::new(PhraseQuery::new(
            many.iter()
                .map(|w| Term::from_field_text(field, w))
                .collect(),
        )),
    }
}

/// BM25's parameters, as tantivy's.
const K1: f32 = 1.2;
const B: f32 = 0.75;

/// What scoring a commit not indexed yet needs: each query word's inverse document frequency
/// and the average length of a text, over the index (and what is not indexed yet).
#[derive(Debug, Clone, Default)]
pub(crate) struct Weights {
    pub(crate) idf: std::collections::HashMap<String, f32>,
    pub(crate) average: f32,
}

impl Weights {
    /// Weights from document counts: `docs` in all, `tokens` in all their texts, and each
    /// word's number of documents.
    pub(crate) fn new(
        docs: u64,
        tokens: u64,
        freq: impl IntoIterator<Item = (String, u64)>,
    ) -> Self {
        let n = docs as f32;
        Weights {
            idf: freq
                .into_iter()
                .map(|(w, df)| {
                    let df = df as f32;
                    (w, (1.0 + (n - df + 0.5) / (df + 0.5)).ln())
                })
                .collect(),
            average: if docs == 0 { 1.0 } else { tokens as f32 / n },
        }
    }
}

/// A text's words by position, for matching a query without an index.
#[derive(Debug, Default)]
pub(crate) struct Positions {
    at: std::collections::HashMap<String, Vec<usize>>,
    len: usize,
}

impl Positions {
    /// The words of `text` as the index cuts them; with `only`, only those words are kept
    /// (the length still counts every word).
    pub(crate) fn of(text: &str, only: Option<&std::collections::HashSet<String>>) -> Positions {
        let mut at: std::collections::HashMap<String, Vec<usize>> = Default::default();
        let mut len = 0;
        crate::storage::search::tokenizer::each_word(text, true, |w, _, _, position, _| {
            len += 1;
            if only.is_none_or(|o| o.contains(w)) {
                match at.get_mut(w) {
                    Some(ps) => ps.push(position),
                    None => {
                        at.insert(w.to_string(), vec![position]);
                    }
                }
            }
        });
        // A whole word sits at its first piece's position, after the pieces: keep each list
        // in order for the phrase lookups.
        for ps in at.values_mut() {
            ps.sort_unstable();
        }
        Positions { at, len }
    }

    /// How many times the words `ws` appear in this order.
    fn count(&self, ws: &[String]) -> usize {
        let Some(first) = ws.first().and_then(|w| self.at.get(w)) else {
            return 0;
        };
        first
            .iter()
            .filter(|&&p| {
                ws.iter().enumerate().skip(1).all(|(i, w)| {
                    self.at
                        .get(w)
                        .is_some_and(|ps| ps.binary_search(&(p + i)).is_ok())
                })
            })
            .count()
    }

    /// Whether the text holds `word`.
    pub(crate) fn holds(&self, word: &str) -> bool {
        self.at.contains_key(word)
    }

    /// Words in the text.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Parsed {
    /// The query of the index's text `field`.
    pub(crate) fn query(&self, field: Field) -> Box<dyn Query> {
        let mut all: Vec<(Occur, Box<dyn Query>)> = self
            .groups
            .iter()
            .map(|g| {
                let q: Box<dyn Query> = match g.as_slice() {
                    [one] => text_query(field, one),
                    many => Box::new(BooleanQuery::new(
                        many.iter()
                            .map(|ws| (Occur::Should, text_query(field, ws)))
                            .collect(),
                    )),
                };
                (Occur::Must, q)
            })
            .collect();
        all.extend(
            self.excluded
                .iter()
                .map(|ws| (Occur::MustNot, text_query(field, ws))),
        );
        Box::new(BooleanQuery::new(all))
    }

    /// Its groups of alternatives, all required; each alternative a word or a phrase's
    /// words. For an index that renders queries its own way (the database's): unused in a
    /// build without one.
    #[allow(dead_code)]
    pub(crate) fn groups(&self) -> &[Vec<Vec<String>>] {
        &self.groups
    }

    /// The words or phrases that must not appear (as [`Parsed::groups`]).
    #[allow(dead_code)]
    pub(crate) fn excluded(&self) -> &[Vec<String>] {
        &self.excluded
    }

    /// Every word the query names, those it excludes too.
    pub(crate) fn all_words(&self) -> std::collections::HashSet<String> {
        self.groups
            .iter()
            .flatten()
            .chain(&self.excluded)
            .flatten()
            .cloned()
            .collect()
    }

    /// Every word the query looks for (not those it excludes).
    pub(crate) fn words(&self) -> impl Iterator<Item = &String> {
        self.groups.iter().flatten().flatten()
    }

    /// The score of a text with these `positions` (BM25, as the index scores: a phrase weighs
    /// its words' weights together), `None` when it does not match.
    pub(crate) fn score(&self, positions: &Positions, w: &Weights) -> Option<f32> {
        if self.excluded.iter().any(|ws| positions.count(ws) > 0) {
            return None;
        }
        let length = positions.len() as f32;
        let mut total = 0.0;
        for group in &self.groups {
            let mut matched = false;
            for ws in group {
                let tf = positions.count(ws) as f32;
                if tf == 0.0 {
                    continue;
                }
                matched = true;
                let idf: f32 = ws
                    .iter()
                    .map(|x| w.idf.get(x).copied().unwrap_or(0.0))
                    .sum();
                total += idf * (tf * (K1 + 1.0))
                    / (tf + K1 * (1.0 - B + B * length / w.average.max(1.0)));
            }
            if !matched {
                return None;
            }
        }
        Some(total)
    }
}

/// The query `query`. A query with nothing to look for (empty, only punctuation, only
/// exclusions, an `OR` with nothing beside it) is an error.
pub(crate) fn parse(query: &str) -> Result<Parsed> {
    let cls = clauses(query)?;
    let mut parsed = Parsed::default();
    let mut join = false;
    for c in cls {
        match c {
            Clause::Or => {
                if parsed.groups.is_empty() || join {
                    return Err(Error::invalid_input(format!(
                        "the search '{query}' has an OR with nothing before it"
                    )));
                }
                join = true;
            }
            Clause::Text { text, negated } => {
                let ws = clause_words(&text);
                if ws.is_empty() {
                    continue;
                }
                if negated {
                    parsed.excluded.push(ws);
                } else if join && let Some(last) = parsed.groups.last_mut() {
                    last.push(ws);
                } else {
                    parsed.groups.push(vec![ws]);
                }
                join = false;
            }
        }
    }
    if join {
        return Err(Error::invalid_input(format!(
            "the search '{query}' has an OR with nothing after it"
        )));
    }
    if parsed.groups.is_empty() {
        return Err(Error::invalid_input(format!(
            "the search '{query}' has no word to look for (punctuation is not searched; a \
             regular expression searches it)"
        )));
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clauses_are_words_phrases_exclusions_and_or() {
        let c = clauses(r#"grep "connection refused" -timeout a OR b - x"#).unwrap();
        let text = |t: &str, negated| Clause::Text {
            text: t.into(),
            negated,
        };
        assert_eq!(
            c,
            [
                text("grep", false),
                text("connection refused", false),
                text("timeout", true),
                text("a", false),
                Clause::Or,
                text("b", false),
                text("-", false),
                text("x", false),
            ]
        );
        assert!(clauses(r#"an "open quote"#).is_err());
    }

    #[test]
    fn queries_with_nothing_to_find_are_refused() {
        for bad in ["", "   ", "-x", "--- ...", "OR a", "a OR", "a OR OR b"] {
            let e = parse(bad).err();
            assert!(
                matches!(e, Some(Error::InvalidInput { .. })),
                "{bad:?}: {e:?}"
            );
        }
        for good in ["a", "a -b", "a OR b c", r#""x y" z"#, "getUserName"] {
            assert!(parse(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn texts_are_matched_and_scored_as_the_index_would() {
        let q = parse(r#"retry "connection refused" -timeout"#).unwrap();
        let w = Weights::new(
            100,
            1000,
            ["retry", "connection", "refused"].map(|x| (x.to_string(), 10)),
        );
        let hit = Positions::of("retry: connection refused by host", None);
        let more = Positions::of("retry retry: connection refused", None);
        let order = Positions::of("retry: refused connection", None);
        let excluded = Positions::of("retry: connection refused, timeout", None);
        let (a, b) = (q.score(&hit, &w).unwrap(), q.score(&more, &w).unwrap());
        assert!(b > a, "more of the word, in fewer words");
        assert_eq!(q.score(&order, &w), None, "a phrase in its order");
        assert_eq!(q.score(&excluded, &w), None);
        let either = parse("alpha OR beta gamma").unwrap();
        assert!(
            either
                .score(&Positions::of("beta gamma", None), &w)
                .is_some()
        );
        assert!(
            either
                .score(&Positions::of("alpha beta", None), &w)
                .is_none()
        );
        // Identifiers as the index holds them: pieces, and the whole in small letters.
        let id = Positions::of("call getUserName now", None);
        assert!(parse("user name").unwrap().score(&id, &w).is_some());
        assert!(parse("getusername").unwrap().score(&id, &w).is_some());
        assert!(parse("getUserName").unwrap().score(&id, &w).is_some());
    }
}
