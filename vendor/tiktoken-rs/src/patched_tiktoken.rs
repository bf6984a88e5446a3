use super::vendor_tiktoken::*;
use anyhow::Result;
use anyhow::anyhow;
use fancy_regex::Regex;
use rustc_hash::FxHashMap as HashMap;
use regex_automata::meta::{BuildError, Cache, Regex as AutomataRegex};
use regex_automata::{Anchored, Input};
use std::collections::HashSet;

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Rank {}
    impl Sealed for usize {}
    impl Sealed for u64 {}
    impl Sealed for i64 {}
}

/// Lossless conversion from [`Rank`] (`u32`) to a wider integer type.
///
/// This trait is used by the generic encoding methods
/// ([`encode_ordinary_as`](CoreBPE::encode_ordinary_as), etc.) so callers
/// can obtain tokens in whichever integer type their downstream code
/// expects (e.g. `usize` for indexing, `u64` for ML frameworks).
///
/// This trait is sealed and cannot be implemented outside this crate.
/// Implementations exist for `u32` (identity), `usize`, `u64`, and `i64`.
pub trait FromRank: sealed::Sealed {
    fn from_rank(rank: Rank) -> Self;
}

impl FromRank for Rank {
    #[inline]
    fn from_rank(rank: Rank) -> Self {
        rank
    }
}

impl FromRank for usize {
    #[inline]
    fn from_rank(rank: Rank) -> Self {
        rank as usize
    }
}

impl FromRank for u64 {
    #[inline]
    fn from_rank(rank: Rank) -> Self {
        u64::from(rank)
    }
}

impl FromRank for i64 {
    #[inline]
    fn from_rank(rank: Rank) -> Self {
        i64::from(rank)
    }
}

/// Rust API
impl CoreBPE {
    // ====================
    // Encoding
    // ====================

    // This function a copy of the similar function in python API, but it return
    // Rust's results and errors
    pub fn new(
        encoder: HashMap<Vec<u8>, Rank>,
        special_tokens_encoder: HashMap<String, Rank>,
        pattern: &str,
    ) -> Result<Self> {
        let regex = Regex::new(pattern)?;

        let special_regex = {
            let parts = special_tokens_encoder
                .keys()
                .map(|s| fancy_regex::escape(s))
                .collect::<Vec<_>>();
            Regex::new(&parts.join("|"))?
        };

        let special_tokens_decoder: HashMap<Rank, Vec<u8>> = special_tokens_encoder
            .iter()
            .map(|(k, v)| (*v, k.as_bytes().to_vec()))
            .collect();

        Ok(Self {
            encoder,
            special_tokens_encoder,
            decoder: std::sync::OnceLock::new(),
            special_tokens_decoder,
            regex_tls: (0..MAX_NUM_THREADS).map(|_| regex.clone()).collect(),
            special_regex_tls: (0..MAX_NUM_THREADS)
                .map(|_| special_regex.clone())
                .collect(),
            sorted_token_bytes: std::sync::OnceLock::new(),
        })
    }

    // ====================
    // Generic encoding
    // ====================

    /// Like [`encode_ordinary`](CoreBPE::encode_ordinary), but converts each
    /// token from [`Rank`] (`u32`) into `T`.
    ///
    /// This is useful when you need tokens in a different integer type
    /// (e.g. `usize` for indexing, or `u64` for ML frameworks).
    ///
    /// # Examples
    ///
    /// ```
    /// use tiktoken_rs::o200k_base;
    ///
    /// let bpe = o200k_base().unwrap();
    /// let tokens: Vec<usize> = bpe.encode_ordinary_as("hello world");
    /// ```
    pub fn encode_ordinary_as<T: FromRank>(&self, text: &str) -> Vec<T> {
        self.encode_ordinary(text)
            .into_iter()
            .map(T::from_rank)
            .collect()
    }

    /// Like [`encode_with_special_tokens`](CoreBPE::encode_with_special_tokens),
    /// but converts each token from [`Rank`] (`u32`) into `T`.
    ///
    /// # Examples
    ///
    /// ```
    /// use tiktoken_rs::o200k_base;
    ///
    /// let bpe = o200k_base().unwrap();
    /// let tokens: Vec<u64> = bpe.encode_with_special_tokens_as("hello <|endoftext|>");
    /// ```
    pub fn encode_with_special_tokens_as<T: FromRank>(&self, text: &str) -> Vec<T> {
        self.encode_with_special_tokens(text)
            .into_iter()
            .map(T::from_rank)
            .collect()
    }

    /// Like [`encode`](CoreBPE::encode), but converts each token from
    /// [`Rank`] (`u32`) into `T`.
    ///
    /// Returns the same error as [`encode`](CoreBPE::encode) if tokenization
    /// fails.
    pub fn encode_as<T: FromRank>(
        &self,
        text: &str,
        allowed_special: &HashSet<&str>,
    ) -> Result<(Vec<T>, usize)> {
        let (tokens, last_piece_token_len) = self.encode(text, allowed_special)?;
        Ok((
            tokens.into_iter().map(T::from_rank).collect(),
            last_piece_token_len,
        ))
    }

    // ====================
    // Counting
    // ====================

    /// Returns the number of tokens that `encode_ordinary` would produce,
    /// without returning the token list itself.
    ///
    /// Equivalent to `self.encode_ordinary(text).len()`.
    pub fn count_ordinary(&self, text: &str) -> usize {
        self.encode_ordinary(text).len()
    }

    /// Returns the number of tokens that `encode` would produce for the given
    /// `allowed_special` set, without returning the token list itself.
    ///
    /// Equivalent to `self.encode(text, allowed_special)?.0.len()`.
    pub fn count(&self, text: &str, allowed_special: &HashSet<&str>) -> Result<usize> {
        Ok(self.encode(text, allowed_special)?.0.len())
    }

    /// Returns the number of tokens that `encode_with_special_tokens` would
    /// produce, without returning the token list itself.
    ///
    /// Equivalent to `self.encode_with_special_tokens(text).len()`.
    pub fn count_with_special_tokens(&self, text: &str) -> usize {
        self.encode_with_special_tokens(text).len()
    }

    // ====================
    // Decoding
    // ====================

    /// Decode a vector of tokens into a valid UTF-8 String
    ///
    /// If unicode validation is not wanted, see _decode_native.
    pub fn decode(&self, tokens: &[Rank]) -> Result<String> {
        match String::from_utf8(self.decode_bytes(tokens)?) {
            Ok(text) => Ok(text),
            Err(e) => Err(anyhow!("Unable to decode into a valid UTF-8 string: {}", e)),
        }
    }

    pub fn _decode_native_and_split(
        &self,
        tokens: Vec<Rank>,
    ) -> impl Iterator<Item = Vec<u8>> + '_ {
        tokens.into_iter().map(|token| {
            let token_bytes = self
                .decoder()
                .get(&token)
                .unwrap_or_else(|| &self.special_tokens_decoder[&token]);
            token_bytes.clone()
        })
    }

    /// Tokenize a string and return the decoded tokens using the correct BPE model.
    ///
    /// This method takes a string, encodes it using the BPE model, and decodes the encoded tokens into
    /// a vector of strings. It can be used to tokenize a string and return the decoded tokens using the
    /// correct BPE model.
    ///
    /// # Examples
    ///
    /// ```
    ///     use tiktoken_rs::o200k_base;
    ///     let bpe = o200k_base().unwrap();
    ///     let tokenized: Result<Vec<_>, _> = bpe
    ///         .split_by_token("This is a test         with a lot of spaces", true);
    ///     let tokenized = tokenized.unwrap();
    ///     assert_eq!(
    ///         tokenized,
    ///         vec!["This", " is", " a", " test", "        ", " with", " a", " lot", " of", " spaces"]
    ///     );
    /// ```
    ///
    /// # Arguments
    ///
    /// * text: A string slice containing the text to be tokenized.
    /// * use_special_tokens: A boolean indicating whether to use the special tokens in the BPE model.
    ///
    /// # Returns
    ///
    /// * `Result<Vec<String>>`: A Result containing a vector of decoded tokens as strings, or an error
    ///   if the string cannot be converted into a valid UTF-8 string.
    ///
    /// # Errors
    ///
    /// This function will return an error if:
    ///
    /// * The input text cannot be converted into a valid UTF-8 string during the decoding process.
    ///
    pub fn split_by_token<'a>(
        &'a self,
        text: &'a str,
        use_special_tokens: bool,
    ) -> Result<Vec<String>> {
        self.split_by_token_iter(text, use_special_tokens).collect()
    }

    /// Iterator for decoding and splitting a String.
    /// See `split_by_token` for more details.
    pub fn split_by_token_iter<'a>(
        &'a self,
        text: &'a str,
        use_special_tokens: bool,
    ) -> impl Iterator<Item = Result<String>> + 'a {
        // First, encode the text using the BPE model
        let encoded = match use_special_tokens {
            true => self.encode_with_special_tokens(text),
            false => self.encode_ordinary(text),
        };

        self._decode_native_and_split(encoded).map(|token| {
            // Map each token to a Result<String>
            Ok(String::from_utf8_lossy(token.as_slice()).to_string())
        })
    }

    /// Tokenize a string and return the decoded tokens using the correct BPE model.
    /// This method is equivalent to `split_by_token(text, false)`.
    pub fn split_by_token_ordinary<'a>(&'a self, text: &'a str) -> Result<Vec<String>> {
        self.split_by_token(text, false)
    }

    /// Iterator for decoding and splitting a String.
    /// This method is equivalent to `split_by_token_iter(text, false)`.
    pub fn split_by_token_ordinary_iter<'a>(
        &'a self,
        text: &'a str,
    ) -> impl Iterator<Item = Result<String>> + 'a {
        self.split_by_token_iter(text, false)
    }
}

impl CoreBPE {
    /// `count_ordinary` for the encoding `splitter` was made for (tract's patch,
    /// vendor/README.md): the same count, found faster in two ways. The text is split into
    /// pieces by regex-automata, without fancy-regex's backtracking (see [`Splitter`]); and
    /// the token counts of short pieces are looked up in `scratch` first and remembered
    /// there: the encoder's map is megabytes, so a caller doing other work between counts
    /// finds little of it in the processor's caches, while most pieces of text recur.
    pub fn count_ordinary_split(
        &self,
        text: &str,
        splitter: &Splitter,
        scratch: &mut SplitScratch,
    ) -> usize {
        let mut n = 0;
        let mut at = 0;
        while at < text.len() {
            let input = Input::new(text).range(at..).anchored(Anchored::Yes);
            let end = splitter
                .regex
                .search_with(&mut scratch.cache, &input)
                .map(|m| match splitter.lookahead[m.pattern().as_usize()] {
                    // The look-ahead character is not part of the piece.
                    true => {
                        let last = text[at..m.end()].chars().next_back();
                        m.end() - last.map_or(0, char::len_utf8)
                    }
                    false => m.end(),
                });
            match end {
                Some(end) if end > at => {
                    n += scratch.pieces.count(&text.as_bytes()[at..end], |piece| {
                        self.piece_tokens(piece)
                    });
                    at = end;
                }
                // Every character starts a piece of these patterns, so this is not expected;
                // should it happen, the rest is counted by `count_ordinary` (the patterns look
                // at nothing before a piece's start).
                _ => return n + self.count_ordinary(&text[at..]),
            }
        }
        n
    }

    /// The tokens a piece of text the pattern split off encodes to.
    fn piece_tokens(&self, piece: &[u8]) -> usize {
        match self.encoder.get(piece) {
            Some(_) => 1,
            None => byte_pair_encode(piece, &self.encoder).len(),
        }
    }
}

/// An encoding's split pattern for regex-automata: the pattern's alternatives as patterns of
/// one regex, in order (leftmost-first, as the alternation), its one look-ahead, `\s+(?!\S)`,
/// written as `\s+$` (at the end of the text) and `\s+\s` (before a whitespace character,
/// which is then left out of the piece). The rewrite is GitHub's `bpe-openai`'s, checked
/// there and in tract against `encode_ordinary` (fancy-regex, backtracking).
pub struct Splitter {
    regex: AutomataRegex,
    /// Per pattern: whether its match ends with a look-ahead character.
    lookahead: Vec<bool>,
}

impl Splitter {
    /// The splitter of `o200k_base` (its pattern is [`crate::O200K_BASE_PAT_STR`]).
    pub fn o200k_base() -> std::result::Result<Self, Box<BuildError>> {
        let first = [
            r#"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"#,
            r#"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"#,
            r#"\p{N}{1,3}"#,
            r#" ?[^\s\p{L}\p{N}]+[\r\n/]*"#,
            r#"\s*[\r\n]+"#,
            r#"\s+$"#,
        ]
        .join("|");
        let patterns = [(first.as_str(), false), (r#"\s+\s"#, true), (r#"\s+"#, false)];
        let regex = AutomataRegex::new_many(&patterns.map(|(p, _)| p)).map_err(Box::new)?;
        Ok(Splitter {
            regex,
            lookahead: patterns.iter().map(|(_, l)| *l).collect(),
        })
    }

    /// What one thread counts with: the regex's search cache and a table of `slots` pieces
    /// (rounded up to a power of two, 24 bytes each).
    pub fn scratch(&self, slots: usize) -> SplitScratch {
        SplitScratch {
            cache: self.regex.create_cache(),
            pieces: PieceCounts::new(slots),
        }
    }
}

/// One thread's state for [`CoreBPE::count_ordinary_split`]: made by the [`Splitter`] it is
/// used with, and used with one encoding only.
pub struct SplitScratch {
    cache: Cache,
    pieces: PieceCounts,
}

/// The longest piece [`PieceCounts`] remembers.
const PIECE_MAX: usize = 22;

/// One remembered piece: its bytes (`len` of them; 0 is an empty slot, as no piece is
/// empty) and how many tokens it encodes to (at most one per byte).
#[derive(Clone, Copy)]
struct PieceSlot {
    len: u8,
    tokens: u8,
    bytes: [u8; PIECE_MAX],
}

/// The longest piece [`PieceCounts`]'s table of long pieces remembers.
const LONG_PIECE_MAX: usize = 4096;

/// Slots of [`PieceCounts`]'s table of long pieces (at most 64 KiB of pieces a thread).
const LONG_SLOTS: usize = 16;

/// Token counts of recently counted pieces: a direct-mapped table small enough to stay in a
/// processor's cache (a slot holds the last piece that hashed to it, compared byte for byte,
/// so a count read from it is always the piece's own), and a few slots for pieces longer than
/// its slots hold (a separator line, a long run of one character, an identifier repeated
/// through a tool's output), whose byte pair encoding is what costs: tens to hundreds of
/// microseconds for a piece of a kilobyte.
pub(crate) struct PieceCounts {
    slots: Box<[PieceSlot]>,
    long: Box<[Option<(Box<[u8]>, usize)>]>,
}

impl PieceCounts {
    /// A table of `slots` slots (rounded up to a power of two), 24 bytes each.
    pub(crate) fn new(slots: usize) -> Self {
        let empty = PieceSlot {
            len: 0,
            tokens: 0,
            bytes: [0; PIECE_MAX],
        };
        PieceCounts {
            slots: vec![empty; slots.max(1).next_power_of_two()].into_boxed_slice(),
            long: vec![None; LONG_SLOTS].into_boxed_slice(),
        }
    }

    /// The token count of `piece`: remembered, or `count(piece)`, then remembered when the
    /// piece is short enough (at most [`LONG_PIECE_MAX`] bytes).
    fn count(&mut self, piece: &[u8], count: impl FnOnce(&[u8]) -> usize) -> usize {
        if piece.len() > LONG_PIECE_MAX {
            return count(piece);
        }
        let mut h = rustc_hash::FxHasher::default();
        std::hash::Hasher::write(&mut h, piece);
        if piece.len() > PIECE_MAX {
            let slot = &mut self.long[std::hash::Hasher::finish(&h) as usize % LONG_SLOTS];
            if let Some((bytes, n)) = slot
                && **bytes == *piece
            {
                return *n;
            }
            let n = count(piece);
            *slot = Some((piece.into(), n));
            return n;
        }
        let mask = self.slots.len() - 1;
        let slot = &mut self.slots[std::hash::Hasher::finish(&h) as usize & mask];
        if usize::from(slot.len) == piece.len() && &slot.bytes[..piece.len()] == piece {
            return usize::from(slot.tokens);
        }
        let n = count(piece);
        if let Ok(tokens) = u8::try_from(n) {
            slot.len = piece.len() as u8;
            slot.tokens = tokens;
            slot.bytes[..piece.len()].copy_from_slice(piece);
        }
        n
    }
}
