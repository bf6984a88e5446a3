//! Token counts: tract's (the encoding's pattern split by regex-automata, its one look-ahead
//! rewritten, piece counts remembered per thread) equal tiktoken-rs's `encode_ordinary`
//! (fancy-regex, backtracking) on any text. The input's bytes are read as UTF-8, invalid
//! sequences replaced; each text is counted twice, the second time from remembered pieces.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tract_core::fuzzing::token_counts;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    for _ in 0..2 {
        let (counted, reference) = token_counts(&text);
        assert_eq!(counted, reference, "{text:?}");
    }
});
