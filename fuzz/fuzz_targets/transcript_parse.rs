//! Transcripts as `tract import` reads them (every format, and detection): parsing never
//! panics, every message it yields survives the neutral form and renders as Responses items,
//! and a Claude Code session keeps what Claude Code's reader promises
//! (`transcript::check_claude_code`: the reader's messages in the view in its order, every
//! line in the view or kept, none twice).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tract_core::formats::responses::items_from_message;
use tract_core::formats::transcript::{Format, Step, Transcript, check_claude_code, parse};
use tract_core::json::{message_from_json, message_to_json};

fn check(steps: &[Step]) {
    for step in steps {
        let (message, inner) = match step {
            Step::Message { message, .. } => (message, None),
            Step::Compact { summary, .. } => (summary, None),
            Step::SubAgent { result, steps, .. } => (result, Some(steps)),
            Step::Record { .. } => continue,
        };
        let back = message_from_json(&message_to_json(message)).expect("the neutral form parses");
        assert_eq!(&back, message, "the neutral form changed the message");
        let _ = items_from_message(message);
        if let Some(inner) = inner {
            check(inner);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let formats = std::iter::once(None).chain(Format::ALL.iter().map(|(_, f)| Some(*f)));
    for format in formats {
        if let Ok(Transcript::Steps { steps, .. }) = parse(text, format) {
            check(&steps);
        }
    }
    if let Err(broken) = check_claude_code(text) {
        panic!("{broken}");
    }
});
