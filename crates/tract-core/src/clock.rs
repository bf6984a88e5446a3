//! Where commit and reflog timestamps come from: the system clock, or a fixed instant so that
//! tests (and reproducible demos) get the same ids on every run.

use std::time::{SystemTime, UNIX_EPOCH};

/// A time in microseconds since the Unix epoch as RFC 3339 UTC with microseconds, the form
/// every surface shows commit times in.
pub fn rfc3339_micros(us: u64) -> String {
    let t = UNIX_EPOCH + std::time::Duration::from_micros(us);
    humantime::format_rfc3339_micros(t).to_string()
}

/// The time source of a store handle.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Clock {
    /// The system's wall clock.
    #[default]
    System,
    /// Always this instant, in microseconds since the Unix epoch. Commits along a branch still
    /// get increasing timestamps (each one at least one microsecond after its parent), so
    /// histories stay ordered and ids stay distinct.
    Fixed(u64),
}

impl Clock {
    /// Microseconds since the Unix epoch, now.
    pub fn now_us(self) -> u64 {
        match self {
            Clock::Fixed(t) => t,
            Clock::System => SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
                .unwrap_or(0),
        }
    }
}
