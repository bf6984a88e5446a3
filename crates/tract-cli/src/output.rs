//! Printing `--json` output: the types it prints are the vocabulary's
//! ([`crate::vocabulary`]), shared with `tract mcp` and `tract serve`.

use crate::ui::Ui;
use serde::Serialize;

/// Prints `value` as JSON: indented, or on one line with `compact`.
pub fn print<T: Serialize + ?Sized>(ui: &mut Ui<'_>, value: &T, compact: bool) {
    let text = if compact {
        serde_json::to_string(value)
    } else {
        serde_json::to_string_pretty(value)
    };
    // Serializing these types cannot fail (string keys, finite numbers); print nothing if it did.
    if let Ok(mut text) = text {
        text.push('\n');
        ui.print(&text);
    }
}
