//! How text is cut into the words the search index holds: a tokenizer for what agents read,
//! code and logs as much as prose.
//!
//! - A run of letters and digits is cut where an identifier's parts meet: `getUserName` is
//!   `get`, `user`, `name`; `HTTPServer` is `http`, `server`; `utf8` is `utf`, `8`.
//! - Everything else separates words: `DATABASE_URL`, `src/main.rs`, `v2.3.1` and
//!   `foo-bar` are their parts, in order.
//! - Each Han, kana or Hangul character is a word of its own (those scripts put no spaces
//!   between words), so a phrase of them matches them in order.
//! - Words are lowercased; a piece longer than [`MAX_WORD`] bytes (a hash, base64) is left
//!   out, keeping its place.
//!
//! A run cut into pieces is also kept whole, lowercased, at its first piece's place
//! (`getusername`), so a query typed in small letters finds it too.
//!
//! A query is cut the same way but not kept whole, and a query word of several pieces is a
//! phrase of them: the query `getUserName` finds `get_user_name` and `get user name` as well.

use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// The name the index's schema knows this tokenizer by.
pub(crate) const NAME: &str = "tract_code";

/// The longest word kept, in bytes.
pub(crate) const MAX_WORD: usize = 64;

/// The tokenizer: see the module's documentation.
#[derive(Debug, Clone, Default)]
pub(crate) struct CodeTokenizer;

/// The words of one text, cut up front.
pub(crate) struct Words {
    tokens: Vec<Token>,
    next: usize,
    /// What `token` is before the first word or when there is none.
    none: Token,
}

impl Tokenizer for CodeTokenizer {
    type TokenStream<'a> = Words;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Words {
        Words {
            tokens: words(text, true),
            next: 0,
            none: Token::default(),
        }
    }
}

impl TokenStream for Words {
    fn advance(&mut self) -> bool {
        if self.next < self.tokens.len() {
            self.next += 1;
            true
        } else {
            false
        }
    }

    fn token(&self) -> &Token {
        match self.next.checked_sub(1) {
            Some(i) => &self.tokens[i],
            None => &self.none,
        }
    }

    fn token_mut(&mut self) -> &mut Token {
        match self.next.checked_sub(1) {
            Some(i) => &mut self.tokens[i],
            None => &mut self.none,
        }
    }
}

/// A character that is a word by itself: scripts written without spaces between words.
fn is_ideographic(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF   // hiragana, katakana
        | 0x3400..=0x4DBF // CJK extension A
        | 0x4E00..=0x9FFF // CJK unified ideographs
        | 0xAC00..=0xD7AF // Hangul syllables
        | 0xF900..=0xFAFF // CJK compatibility ideographs
        | 0x20000..=0x2FA1F)
}

/// What a character is to the cutting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Lower,
    Upper,
    Digit,
    /// A letter with no case (most scripts but Latin, Greek, Cyrillic, Armenian).
    Other,
}

fn class(c: char) -> Option<Class> {
    if c.is_numeric() {
        Some(Class::Digit)
    } else if c.is_uppercase() {
        Some(Class::Upper)
    } else if c.is_lowercase() {
        Some(Class::Lower)
    } else if c.is_alphanumeric() {
        Some(Class::Other)
    } else {
        None
    }
}

/// Whether a new piece starts at `cur`, after `prev`, with `next` after it.
fn starts_piece(prev: Class, cur: Class, next: Option<Class>) -> bool {
    use Class::*;
    match (prev, cur) {
        (Digit, Digit) => false,
        (Digit, _) | (_, Digit) => true,
        // getUser: a capital after a small letter.
        (Lower, Upper) => true,
        // HTTPServer: the last capital of a run, before a small letter.
        (Upper, Upper) => next == Some(Lower),
        _ => false,
    }
}

/// The words of `text`, with their byte offsets and positions; with `whole`, a run cut into
/// pieces is also a word whole, at its first piece's position (what the index holds; a query
/// is its pieces).
pub(crate) fn words(text: &str, whole: bool) -> Vec<Token> {
    let mut out = Vec::new();
    each_word(text, whole, |word, from, to, position, length| {
        out.push(Token {
            offset_from: from,
            offset_to: to,
            position,
            text: word.to_string(),
            position_length: length,
        });
    });
    out
}

/// Calls `f` with each word of `text` as [`words`] cuts it: the word lowercased (in a buffer
/// reused from word to word), its byte offsets, its position and how many positions it spans.
pub(crate) fn each_word(
    text: &str,
    whole: bool,
    mut f: impl FnMut(&str, usize, usize, usize, usize),
) {
    let mut lower = String::new();
    let mut position = 0usize;
    let mut emit = |from: usize, to: usize, at: usize, length: usize, lower: &mut String| {
        let piece = &text[from..to];
        if piece.len() > MAX_WORD {
            return;
        }
        lower.clear();
        if piece.is_ascii() {
            lower.push_str(piece);
            lower.make_ascii_lowercase();
        } else {
            lower.extend(piece.chars().flat_map(char::to_lowercase));
        }
        f(lower, from, to, at, length);
    };
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if is_ideographic(c) {
            emit(at, at + c.len_utf8(), position, 1, &mut lower);
            position += 1;
            continue;
        }
        let Some(mut prev) = class(c) else {
            continue;
        };
        let (run_start, first) = (at, position);
        let mut start = at;
        let mut end = text.len();
        while let Some(&(at, c)) = chars.peek() {
            let Some(cur) = class(c).filter(|_| !is_ideographic(c)) else {
                end = at;
                break;
            };
            chars.next();
            let next = chars.peek().and_then(|&(_, n)| class(n));
            if starts_piece(prev, cur, next) {
                emit(start, at, position, 1, &mut lower);
                position += 1;
                start = at;
            }
            prev = cur;
        }
        emit(start, end, position, 1, &mut lower);
        position += 1;
        let pieces = position - first;
        if whole && pieces > 1 {
            emit(run_start, end, first, pieces, &mut lower);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str) -> Vec<String> {
        words(text, false).into_iter().map(|t| t.text).collect()
    }

    #[test]
    fn identifiers_split_on_case_digits_and_punctuation() {
        assert_eq!(texts("getUserName"), ["get", "user", "name"]);
        assert_eq!(texts("HTTPServer"), ["http", "server"]);
        assert_eq!(texts("DATABASE_URL=x"), ["database", "url", "x"]);
        assert_eq!(
            texts("src/store/mod.rs:42"),
            ["src", "store", "mod", "rs", "42"]
        );
        assert_eq!(
            texts("utf8 v2.3.1 sha256"),
            ["utf", "8", "v", "2", "3", "1", "sha", "256"]
        );
        assert_eq!(texts("foo-bar"), ["foo", "bar"]);
        assert_eq!(
            texts("ERROR: Connection refused"),
            ["error", "connection", "refused"]
        );
    }

    #[test]
    fn unicode_words_and_ideographs() {
        assert_eq!(texts("Straße Ärger"), ["straße", "ärger"]);
        assert_eq!(texts("Привет мир"), ["привет", "мир"]);
        assert_eq!(texts("数据库连接"), ["数", "据", "库", "连", "接"]);
        assert_eq!(
            texts("日本語とEnglish"),
            ["日", "本", "語", "と", "english"]
        );
    }

    #[test]
    fn offsets_and_positions_follow_the_text() {
        let t = words("a getUser é", false);
        let spans: Vec<(usize, usize, usize)> = t
            .iter()
            .map(|t| (t.offset_from, t.offset_to, t.position))
            .collect();
        assert_eq!(spans, [(0, 1, 0), (2, 5, 1), (5, 9, 2), (10, 12, 3)]);
    }

    #[test]
    fn long_pieces_are_left_out_keeping_their_place() {
        let long = "x".repeat(MAX_WORD + 1);
        let t = words(&format!("a {long} b"), false);
        let kept: Vec<(&str, usize)> = t.iter().map(|t| (t.text.as_str(), t.position)).collect();
        assert_eq!(kept, [("a", 0), ("b", 2)]);
        assert!(words("", true).is_empty() && words("  --  ", true).is_empty());
    }

    #[test]
    fn the_index_keeps_a_cut_run_whole_too() {
        let t = words("see getUserName now", true);
        let kept: Vec<(&str, usize)> = t.iter().map(|t| (t.text.as_str(), t.position)).collect();
        assert_eq!(
            kept,
            [
                ("see", 0),
                ("get", 1),
                ("user", 2),
                ("name", 3),
                ("getusername", 1),
                ("now", 4)
            ]
        );
        // A word of one piece is not doubled.
        assert_eq!(words("plain", true).len(), 1);
    }

    #[test]
    fn the_stream_hands_out_every_word() {
        let mut tok = CodeTokenizer;
        let mut stream = tok.token_stream("one twoThree");
        let mut seen = Vec::new();
        while let Some(t) = stream.next() {
            seen.push(t.text.clone());
        }
        assert_eq!(seen, ["one", "two", "three", "twothree"]);
    }
}
