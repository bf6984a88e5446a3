//! The search syntax, turned into a query of the index's text:
//!
//! - `word word`: every word must appear, in any order (ranked by BM25);
//! - `"some words"`: the words in this order;
//! - `-word`, `-"some words"`: must not appear;
//! - `a OR b`: either (binds the clauses on each side of it);
//! - a word of several pieces (`getUserName`, `src/main.rs`, `DATABASE_URL`) is a phrase of
//!   its pieces, cut as the text is ([`crate::index::tokenizer`]).
//!
//! Case does not matter; punctuation separates words and is not searched (`--regex` is).

use crate::error::{Error, Result};
use crate::index::tokenizer::words;
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

/// The query of one clause's text on `field`: a term, a phrase of its words, or nothing (no
/// words in it).
fn text_query(field: Field, text: &str) -> Option<Box<dyn Query>> {
    let ws = words(text, false);
    match ws.as_slice() {
        [] => None,
        [one] => Some(Box::new(TermQuery::new(
            Term::from_field_text(field, &one.text),
            IndexRecordOption::WithFreqs,
        ))),
        many => {
            let first = many[0].position;
            let terms = many
                .iter()
                .map(|w| (w.position - first, Term::from_field_text(field, &w.text)))
                .collect();
            Some(Box::new(PhraseQuery::new_with_offset(terms)))
        }
    }
}

/// The query of the text `query` on `field`. A query with nothing to look for (empty, only
/// punctuation, only exclusions, an `OR` with nothing beside it) is an error.
pub(crate) fn parse(query: &str, field: Field) -> Result<Box<dyn Query>> {
    let cls = clauses(query)?;
    // Groups of alternatives, all required; exclusions apart.
    let mut groups: Vec<Vec<Box<dyn Query>>> = Vec::new();
    let mut excluded: Vec<Box<dyn Query>> = Vec::new();
    let mut join = false;
    for c in cls {
        match c {
            Clause::Or => {
                if groups.is_empty() || join {
                    return Err(Error::invalid_input(format!(
                        "the search '{query}' has an OR with nothing before it"
                    )));
                }
                join = true;
            }
            Clause::Text { text, negated } => {
                let Some(q) = text_query(field, &text) else {
                    continue;
                };
                if negated {
                    excluded.push(q);
                } else if join && let Some(last) = groups.last_mut() {
                    last.push(q);
                } else {
                    groups.push(vec![q]);
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
    if groups.is_empty() {
        return Err(Error::invalid_input(format!(
            "the search '{query}' has no word to look for (punctuation is not searched; a \
             regular expression searches it)"
        )));
    }
    let mut all: Vec<(Occur, Box<dyn Query>)> = groups
        .into_iter()
        .map(|mut g| {
            let q: Box<dyn Query> = match g.len() {
                1 => g.remove(0),
                _ => Box::new(BooleanQuery::new(
                    g.into_iter().map(|q| (Occur::Should, q)).collect(),
                )),
            };
            (Occur::Must, q)
        })
        .collect();
    all.extend(excluded.into_iter().map(|q| (Occur::MustNot, q)));
    Ok(Box::new(BooleanQuery::new(all)))
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
        let field = {
            let mut b = tantivy::schema::Schema::builder();
            b.add_text_field("t", tantivy::schema::TEXT)
        };
        for bad in ["", "   ", "-x", "--- ...", "OR a", "a OR", "a OR OR b"] {
            let e = parse(bad, field).err();
            assert!(
                matches!(e, Some(Error::InvalidInput { .. })),
                "{bad:?}: {e:?}"
            );
        }
        for good in ["a", "a -b", "a OR b c", r#""x y" z"#, "getUserName"] {
            assert!(parse(good, field).is_ok(), "{good:?}");
        }
    }
}
