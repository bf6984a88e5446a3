//! Revisions, branch names and id prefixes as users type them: parsing never panics, a parsed
//! revision prints as text that parses back to it, a valid branch name is read as that branch,
//! and a hex prefix covers exactly the ids that start with it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tract_core::fuzzing::prefix_range;
use tract_core::{BranchName, CommitId, HexPrefix, Rev};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(rev) = Rev::parse(text) {
        let printed = rev.to_string();
        let again = Rev::parse(&printed).expect("a printed revision parses");
        assert_eq!(again, rev, "{text:?} printed as {printed:?}");
    }
    if let Ok(name) = BranchName::new(text) {
        assert_eq!(name.as_str(), text);
        let rev = Rev::parse(text).expect("a branch name is a revision");
        assert_eq!(rev.as_branch_name(), Some(text), "{text:?}");
    }
    if let Some(id) = CommitId::from_hex(text) {
        assert_eq!(id.to_hex(), text.to_ascii_lowercase());
        assert_eq!(Rev::parse(text).ok().and_then(|r| r.as_commit()), Some(id));
    }
    if let Some(prefix) = HexPrefix::new(text) {
        assert_eq!(prefix.as_str(), text.to_ascii_lowercase());
        let (low, high) = prefix_range(&prefix);
        assert!(low <= high);
        let digits = prefix.as_str();
        for end in [low, high] {
            assert!(CommitId::from_bytes(end).to_hex().starts_with(digits));
        }
        // The keys just outside the range do not start with the prefix.
        let outside = |key: [u8; 32], up: bool| {
            let n = u128::from_be_bytes(key[..16].try_into().expect("16 bytes"));
            let m = if up {
                n.checked_add(1)
            } else {
                n.checked_sub(1)
            };
            m.map(|m| {
                let mut k = key;
                k[..16].copy_from_slice(&m.to_be_bytes());
                k
            })
        };
        if digits.len() <= 32 {
            for key in [outside(low, false), outside(high, true)]
                .into_iter()
                .flatten()
            {
                assert!(!CommitId::from_bytes(key).to_hex().starts_with(digits));
            }
        }
    }
});
