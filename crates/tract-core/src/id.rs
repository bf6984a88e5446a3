//! Ids: BLAKE3 digests, one type per kind of thing they name, shown as hex, found by prefix.
//!
//! A [`CommitId`] and a [`BlobId`] are both the hash of an object's bytes, but they name
//! different things and are never interchangeable; a [`ChunkId`] names one piece of a large
//! blob. All three encode as their 32 bytes (postcard writes a newtype as its content), so the
//! types change nothing in any stored id.

use std::fmt;

/// How many hex digits `short()` shows.
pub const SHORT_LEN: usize = 10;

/// The fewest hex digits accepted as a prefix, so a typo does not match by luck.
pub const MIN_PREFIX: usize = 4;

macro_rules! digest_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(
            Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
        )]
        pub struct $name([u8; 32]);

        impl $name {
            /// The id of `bytes`: their BLAKE3 digest.
            pub fn of(bytes: &[u8]) -> Self {
                $name(*blake3::hash(bytes).as_bytes())
            }

            /// The id with these digest bytes.
            pub const fn from_bytes(bytes: [u8; 32]) -> Self {
                $name(bytes)
            }

            /// The digest bytes.
            pub const fn as_bytes(&self) -> &[u8; 32] {
                &self.0
            }

            /// Full lowercase hex (64 digits).
            pub fn to_hex(&self) -> String {
                blake3::Hash::from_bytes(self.0).to_hex().to_string()
            }

            /// The first [`SHORT_LEN`] hex digits.
            pub fn short(&self) -> String {
                let mut s = self.to_hex();
                s.truncate(SHORT_LEN);
                s
            }

            /// Parses 64 hex digits (`None` for anything else).
            pub fn from_hex(s: &str) -> Option<Self> {
                blake3::Hash::from_hex(s).ok().map(|h| $name(*h.as_bytes()))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.to_hex())
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.short())
            }
        }
    };
}

digest_id!(
    /// The id of a commit: BLAKE3 over its object bytes (header and body).
    CommitId
);
digest_id!(
    /// The id of a blob (one message payload): BLAKE3 over its object bytes.
    BlobId
);
digest_id!(
    /// The id of one chunk of a large blob: BLAKE3 over the chunk's bytes.
    ChunkId
);

/// Hashes an id by its first eight bytes: ids are BLAKE3 digests, already uniformly random,
/// so SipHash over all 32 bytes (the std default) only costs time in the hot maps.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8).take(1) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.0 ^= u64::from_le_bytes(b);
        }
    }

    // The array's length prefix carries no information.
    fn write_usize(&mut self, _: usize) {}
}

/// A map keyed by commit id, hashed with [`IdHasher`].
pub(crate) type CommitMap<V> =
    std::collections::HashMap<CommitId, V, std::hash::BuildHasherDefault<IdHasher>>;

/// A hex prefix of an id: [`MIN_PREFIX`] to 64 hex digits, checked when made.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HexPrefix(String);

impl HexPrefix {
    /// The prefix `s`, if it is [`MIN_PREFIX`] to 64 hex digits.
    pub fn new(s: &str) -> Option<Self> {
        let ok = (MIN_PREFIX..=64).contains(&s.len()) && s.chars().all(|c| c.is_ascii_hexdigit());
        ok.then(|| HexPrefix(s.to_ascii_lowercase()))
    }

    /// The digits, lowercase.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The inclusive range `[low, high]` of 32-byte keys the prefix covers.
    pub(crate) fn range(&self) -> ([u8; 32], [u8; 32]) {
        let mut low = [0u8; 32];
        let mut high = [0xffu8; 32];
        for (i, c) in self.0.chars().enumerate() {
            // Checked in `new`: every character is a hex digit.
            let nibble = c.to_digit(16).unwrap_or(0) as u8;
            let byte = i / 2;
            if i % 2 == 0 {
                low[byte] = nibble << 4;
                high[byte] = (nibble << 4) | 0x0f;
            } else {
                low[byte] |= nibble;
                high[byte] = (high[byte] & 0xf0) | nibble;
            }
        }
        (low, high)
    }
}

impl fmt::Display for HexPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip_and_short() {
        let id = CommitId::of(b"hello");
        assert_eq!(CommitId::from_hex(&id.to_hex()).unwrap(), id);
        assert_eq!(id.short().len(), SHORT_LEN);
        assert!(id.to_hex().starts_with(&id.short()));
        // The same digest, typed apart.
        assert_eq!(BlobId::of(b"hello").as_bytes(), id.as_bytes());
    }

    #[test]
    fn prefix_range_covers_odd_lengths() {
        let (low, high) = HexPrefix::new("abcde").unwrap().range();
        assert_eq!(low[0], 0xab);
        assert_eq!(low[2], 0xe0);
        assert_eq!(high[2], 0xef);
        assert_eq!(high[3], 0xff);
        assert_eq!(HexPrefix::new("ABCD").unwrap().as_str(), "abcd");
    }

    #[test]
    fn bad_prefixes_are_rejected() {
        assert!(HexPrefix::new("abc").is_none());
        assert!(HexPrefix::new("zzzz").is_none());
        assert!(HexPrefix::new(&"a".repeat(65)).is_none());
    }
}
