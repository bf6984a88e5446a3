//! Message JSON as `tract add --json` and the Python API take it (one object, a list, or
//! JSONL): parsing never panics, and a parsed message written in the neutral form parses back
//! to the same message.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tract_core::json::{message_from_json, message_from_str, message_to_json, messages_from_text};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = message_from_str(text);
    let Ok(messages) = messages_from_text(text) else {
        return;
    };
    for message in messages {
        let neutral = message_to_json(&message);
        let back = message_from_json(&neutral).expect("the neutral form parses");
        assert_eq!(back, message, "the neutral form changed the message");
        let text = neutral.to_string();
        let again = message_from_str(&text).expect("the neutral form's text parses");
        assert_eq!(
            again, message,
            "the neutral form's text changed the message"
        );
    }
});
