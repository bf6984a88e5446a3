//! What a command makes of the text of its arguments beyond what clap parses: a revision, a
//! text or a file that may be standard input (`-`), a time.

use crate::error::CommandError;
use std::time::UNIX_EPOCH;
use tract_core::Error;

/// A revision argument, parsed.
pub fn rev(text: &str) -> Result<tract_core::Rev, CommandError> {
    Ok(tract_core::Rev::parse(text)?)
}

/// `text`, or all of standard input when it is `-`.
pub fn text_or_stdin(text: &str) -> Result<String, CommandError> {
    use std::io::Read;
    if text != "-" {
        return Ok(text.to_string());
    }
    let mut s = String::new();
    std::io::stdin()
        .read_to_string(&mut s)
        .map_err(|source| tract_core::Error::io("<stdin>", source))?;
    Ok(s)
}

/// The text an option gives (`TEXT`), or the text of the file it names (`@FILE`).
pub fn text_or_file(text: Option<&str>) -> Result<Option<String>, CommandError> {
    match text {
        Some(s) if s.starts_with('@') => {
            let path = std::path::PathBuf::from(&s[1..]);
            Ok(Some(
                std::fs::read_to_string(&path).map_err(|e| Error::io(path, e))?,
            ))
        }
        other => Ok(other.map(str::to_string)),
    }
}

/// A file's text, or standard input's for `-`.
pub fn read_text(file: &std::path::Path) -> Result<String, CommandError> {
    if file.as_os_str() == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .map_err(|e| CommandError::invalid_input(format!("cannot read standard input: {e}")))?;
        return Ok(text);
    }
    std::fs::read_to_string(file)
        .map_err(|e| CommandError::invalid_input(format!("cannot read {}: {e}", file.display())))
}

/// Microseconds since the Unix epoch of `text`, the value of the option or argument `name`:
/// an RFC 3339 time (UTC with `Z`, or with an offset such as `+01:00`), a date (its midnight,
/// UTC), or a duration ago (`7d`, `2h`, `30min`, humantime's units) counted back from `now_us`.
/// Anything else is an input error naming `name`.
pub fn when_us(name: &str, text: &str, now_us: u64) -> Result<u64, Error> {
    let t = text.trim();
    let bad = || Error::InvalidInput {
        message: format!(
            "{name} '{text}' is not a time: give an RFC 3339 time (2026-01-31T09:00:00Z) or a \
             duration ago (7d, 2h, 30min)"
        ),
    };
    if let Ok(d) = humantime::parse_duration(t) {
        let back = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        return Ok(now_us.saturating_sub(back));
    }
    let us = |s: &str| -> Option<u64> {
        let at = humantime::parse_rfc3339_weak(s).ok()?;
        let since = at.duration_since(UNIX_EPOCH).ok()?;
        u64::try_from(since.as_micros()).ok()
    };
    // An offset from UTC (`+01:00`, `-05:30`), applied here: humantime reads UTC only (and
    // takes any `+HH:MM` after a fraction of a second for `+00:00`).
    if let Some((time, sign, offset)) = t
        .len()
        .checked_sub(6)
        .filter(|&i| t.is_char_boundary(i))
        .map(|i| (&t[..i], &t[i..i + 1], &t[i + 1..]))
        && offset.find(':') == Some(2)
        && offset.bytes().filter(u8::is_ascii_digit).count() == 4
        && let Some((h, m)) = offset.split_once(':')
        && let (Ok(h), Ok(m)) = (h.parse::<u64>(), m.parse::<u64>())
        && h < 24
        && m < 60
        && matches!(sign, "+" | "-")
        && let Some(v) = us(time)
    {
        let shift = (h * 60 + m) * 60_000_000;
        // 10:00+01:00 is 09:00 UTC.
        let utc = match sign {
            "+" => v.checked_sub(shift),
            _ => v.checked_add(shift),
        };
        return utc.ok_or_else(bad);
    }
    if let Some(v) = us(t) {
        return Ok(v);
    }
    // A date alone: its first moment, UTC.
    if t.len() == 10
        && let Some(v) = us(&format!("{t}T00:00:00Z"))
    {
        return Ok(v);
    }
    Err(bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_767_225_600_000_000; // 2026-01-01T00:00:00Z

    #[test]
    fn times_are_rfc_3339_dates_or_durations_ago() {
        let at = |s: &str| when_us("--since", s, NOW);
        assert_eq!(at("2026-01-01T00:00:00Z").ok(), Some(NOW));
        assert_eq!(at("2026-01-01T00:00:00.000003Z").ok(), Some(NOW + 3));
        assert_eq!(at("2026-01-01").ok(), Some(NOW));
        assert_eq!(at("2026-01-01T01:00:00+01:00").ok(), Some(NOW));
        assert_eq!(at("2025-12-31T19:00:00-05:00").ok(), Some(NOW));
        assert_eq!(at("2026-01-01T01:00:00.000006+01:00").ok(), Some(NOW + 6));
        assert_eq!(at("7d").ok(), Some(NOW - 7 * 86_400_000_000));
        assert_eq!(at(" 2h ").ok(), Some(NOW - 2 * 3_600_000_000));
        assert_eq!(at("30min").ok(), Some(NOW - 30 * 60_000_000));
        for bad in [
            "",
            "yesterday",
            "7",
            "2026-13-01",
            "2026-01-01T00:00:00+1:00",
            "2026-01-01T00:00:00++1:00",
            "é",
        ] {
            let e = at(bad).err().map(|e| e.to_string()).unwrap_or_default();
            assert!(
                e.contains("--since") && e.contains("not a time"),
                "{bad:?}: {e}"
            );
        }
    }
}
