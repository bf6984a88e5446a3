//! Progress of a long command, drawn on standard error when it is a terminal: never in piped
//! output or a test's, never on standard output (which holds the answer).

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A bar (or, without a length, a counter) drawn on standard error at a terminal once the
/// work has gone on for a moment ([`SHOWN_AFTER`]: a quick one draws nothing, and a loop of
/// quick passes does not flicker), and cleared when it is dropped (an error is then printed
/// on a clean line). Elsewhere it draws nothing.
#[derive(Debug)]
pub struct Progress {
    steps: Steps,
}

/// Where the steps of a [`Progress`] are reported: cheap to clone into the closure a long
/// operation calls (possibly from other threads); clones never clear the display.
#[derive(Debug, Clone)]
pub struct Steps(Option<Arc<Bar>>);

#[derive(Debug)]
struct Bar {
    bar: indicatif::ProgressBar,
    started: Instant,
    shown: AtomicBool,
}

/// How long work goes on before its progress is drawn.
pub const SHOWN_AFTER: Duration = Duration::from_millis(300);

impl Progress {
    /// A progress display with `template` (indicatif's: `{pos}`, `{len}`, `{bar:30}`,
    /// `{msg}`), hidden until the work has gone on for [`SHOWN_AFTER`].
    pub fn new(template: &str) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::hidden();
            bar.set_style(
                indicatif::ProgressStyle::with_template(template)
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            Arc::new(Bar {
                bar,
                started: Instant::now(),
                shown: AtomicBool::new(false),
            })
        });
        Progress { steps: Steps(bar) }
    }

    /// Where to report steps.
    pub fn steps(&self) -> Steps {
        self.steps.clone()
    }

    /// `done` of `total` (`None`: not known): see [`Steps::step`].
    pub fn step(&self, done: u64, total: Option<u64>, message: &str) {
        self.steps.step(done, total, message);
    }

    /// Clears what was drawn, for good (the next phase of the work draws its own).
    pub fn clear(&self) {
        if let Some(b) = &self.steps.0
            && !b.bar.is_finished()
        {
            b.bar.finish_and_clear();
        }
    }
}

impl Steps {
    /// `done` of `total` (`None`: not known, a counter), with `message` for `{msg}`. Steps
    /// reported from several threads may arrive out of order: within one message and total,
    /// the count only goes forward.
    pub fn step(&self, done: u64, total: Option<u64>, message: &str) {
        let Some(b) = &self.0 else {
            return;
        };
        let shown = b.shown.load(Ordering::Acquire);
        if !shown && b.started.elapsed() < SHOWN_AFTER {
            return;
        }
        let same = b.bar.message() == message && total.is_none_or(|t| b.bar.length() == Some(t));
        if same && done < b.bar.position() {
            return;
        }
        if let Some(total) = total {
            b.bar.set_length(total);
        }
        if b.bar.message() != message {
            b.bar.set_message(message.to_string());
        }
        b.bar.set_position(done);
        if !shown && !b.shown.swap(true, Ordering::AcqRel) {
            b.bar
                .set_draw_target(indicatif::ProgressDrawTarget::stderr());
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.clear();
    }
}
