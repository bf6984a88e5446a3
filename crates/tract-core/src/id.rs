//! Object ids: BLAKE3 digests, shown as hex, found by unique prefix.

use crate::error::{Error, Result};
use std::fmt;

/// The BLAKE3 digest of an object's stored bytes (header and body).
#[derive(
    Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct ObjectId(pub [u8; 32]);

/// How many hex digits `short()` shows.
pub const SHORT_LEN: usize = 10;

/// The fewest hex digits accepted as a prefix, so a typo does not match by luck.
pub const MIN_PREFIX: usize = 4;

impl ObjectId {
    /// The id of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        ObjectId(*blake3::hash(bytes).as_bytes())
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

    /// Parses 64 hex digits.
    pub fn from_hex(s: &str) -> Result<Self> {
        blake3::Hash::from_hex(s)
            .map(|h| ObjectId(*h.as_bytes()))
            .map_err(|_| Error::invalid_input(format!("'{s}' is not a full object id")))
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectId({})", self.short())
    }
}

/// Hashes an [`ObjectId`] by its first eight bytes: ids are BLAKE3 digests, already uniformly
/// random, so SipHash over all 32 bytes (the std default) only costs time in the hot maps.
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

/// A map keyed by object id, hashed with [`IdHasher`].
pub(crate) type IdMap<V> =
    std::collections::HashMap<ObjectId, V, std::hash::BuildHasherDefault<IdHasher>>;

/// A hex prefix as the inclusive key range `[low, high]` it covers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PrefixRange {
    pub low: [u8; 32],
    pub high: [u8; 32],
}

/// Checks a hex prefix and turns it into the key range it covers.
pub(crate) fn prefix_range(prefix: &str) -> Result<PrefixRange> {
    if prefix.len() < MIN_PREFIX || prefix.len() > 64 {
        return Err(Error::invalid_input(format!(
            "'{prefix}' is not a commit id: give {MIN_PREFIX} to 64 hex digits or a branch name"
        )));
    }
    let mut low = [0u8; 32];
    let mut high = [0xffu8; 32];
    for (i, c) in prefix.chars().enumerate() {
        let nibble = c.to_digit(16).ok_or_else(|| {
            Error::invalid_input(format!(
                "'{prefix}' is not a commit id or a known branch name"
            ))
        })? as u8;
        let byte = i / 2;
        if i % 2 == 0 {
            low[byte] = nibble << 4;
            high[byte] = (nibble << 4) | 0x0f;
        } else {
            low[byte] |= nibble;
            high[byte] = (high[byte] & 0xf0) | nibble;
        }
    }
    Ok(PrefixRange { low, high })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip_and_short() {
        let id = ObjectId::of(b"hello");
        assert_eq!(ObjectId::from_hex(&id.to_hex()).unwrap(), id);
        assert_eq!(id.short().len(), SHORT_LEN);
        assert!(id.to_hex().starts_with(&id.short()));
    }

    #[test]
    fn prefix_range_covers_odd_lengths() {
        let r = prefix_range("abcde").unwrap();
        assert_eq!(r.low[0], 0xab);
        assert_eq!(r.low[2], 0xe0);
        assert_eq!(r.high[2], 0xef);
        assert_eq!(r.high[3], 0xff);
    }

    #[test]
    fn bad_prefixes_are_rejected() {
        assert!(prefix_range("ab").is_err());
        assert!(prefix_range("zzzz").is_err());
        assert!(prefix_range(&"a".repeat(65)).is_err());
    }
}
