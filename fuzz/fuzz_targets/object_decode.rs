//! Blob and commit object bytes: decoding never panics, and whatever decodes is in its one
//! canonical form, so re-encoding gives back the same bytes (and so the same id).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tract_core::{Commit, Message};

fuzz_target!(|data: &[u8]| {
    if let Ok(message) = Message::decode(data) {
        let again = message.encode().expect("a decoded message encodes");
        assert_eq!(again, data, "a message decoded from non-canonical bytes");
    }
    if let Ok(commit) = Commit::decode(data) {
        let again = commit.encode().expect("a decoded commit encodes");
        assert_eq!(again, data, "a commit decoded from non-canonical bytes");
    }
});
