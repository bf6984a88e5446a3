//! RFC 3339 times, as Claude Code writes a line's `timestamp`, read to microseconds.

/// Microseconds since the Unix epoch of an RFC 3339 UTC time such as
/// `2026-01-20T11:57:17.716Z` (an offset is applied).
pub(super) fn parse_rfc3339_us(t: &str) -> Option<u64> {
    let b = t.as_bytes();
    // ASCII only: the fields below are sliced by byte position.
    if !t.is_ascii()
        || b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't' | b' ')
    {
        return None;
    }
    let num = |s: &str| s.parse::<i64>().ok();
    let (y, mo, d) = (num(&t[0..4])?, num(&t[5..7])?, num(&t[8..10])?);
    let (h, mi, s) = (num(&t[11..13])?, num(&t[14..16])?, num(&t[17..19])?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut rest = &t[19..];
    let mut micros = 0i64;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let mut scaled = frac[..digits.min(6)].to_string();
        while scaled.len() < 6 {
            scaled.push('0');
        }
        micros = num(&scaled)?;
        rest = &frac[digits..];
    }
    let offset_s = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6 && matches!(&rest[..1], "+" | "-") && &rest[3..4] == ":" => {
            let sign = if &rest[..1] == "-" { -1 } else { 1 };
            sign * (num(&rest[1..3])? * 3600 + num(&rest[4..6])? * 60)
        }
        _ => return None,
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3600 + mi * 60 + s - offset_s;
    u64::try_from(secs * 1_000_000 + micros).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times_read_to_microseconds() {
        assert_eq!(parse_rfc3339_us("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_rfc3339_us("2026-01-20T11:57:17.716Z"),
            Some(1_768_910_237_716_000)
        );
        assert_eq!(
            parse_rfc3339_us("2026-01-20T12:57:17.716+01:00"),
            Some(1_768_910_237_716_000)
        );
        for bad in [
            "",
            "2026-01-20",
            "2026-13-20T00:00:00Z",
            "2026-01-20T00:00:00",
            "x026-01-20T00:00:00Z",
            "2026-01-2\u{e9}T00:00:00Z",
            "2026-01-20T00:00:00.\u{e9}Z",
        ] {
            assert_eq!(parse_rfc3339_us(bad), None, "{bad}");
        }
    }
}
