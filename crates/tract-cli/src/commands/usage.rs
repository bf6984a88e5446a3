//! `tract usage`.

use crate::arguments::when_us;
use crate::context::Context;
use crate::error::CommandError;
use crate::output;
use crate::render::count;
use crate::ui::Ui;
use crate::vocabulary::{UsageReport, UsageReports};
use std::fmt::Write;
use tract_core::{BranchUsage, Totals, UsageOptions};

/// What the model requests of a branch cost, summed along its first parents (what a compaction
/// took out of view was paid for too): input, output, cache read and cache write tokens, the
/// cache hit rate and how many times the context was written to the cache, per model. Usage
/// comes with the answers that report it (`tract add --usage`, Python's `usage=`, Claude Code
/// sessions imported or captured).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Every branch, one by one (each summed along its own first parents).
    #[arg(long)]
    all: bool,
    /// Also per day (UTC) or per model (shown with every report's JSON); `session` is
    /// `--all`. Per day walks the branch's requests back from its tip.
    #[arg(long, value_name = "day|model|session")]
    by: Option<By>,
    /// Only the requests since this time (RFC 3339, or a duration ago: 7d, 2h): walked back
    /// from the tip to it.
    #[arg(long, value_name = "TIME")]
    since: Option<String>,
    /// The report as JSON.
    #[arg(long)]
    json: bool,
}

/// What a report is broken down by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum By {
    /// Each day a request was recorded (UTC).
    Day,
    /// Each model.
    Model,
    /// Each session: each branch.
    Session,
}

/// Runs `tract usage`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let t = ctx.open_to_read()?;
    let now_us = ctx.env().store_options()?.clock.now_us();
    let since_us = a
        .since
        .as_deref()
        .map(|text| when_us("--since", text, now_us))
        .transpose()?;
    let o = UsageOptions {
        since_us,
        by_day: a.by == Some(By::Day),
    };
    if a.all || a.by == Some(By::Session) {
        let all = t.usage_of_branches(&o)?;
        if a.json {
            output::print(ui, &UsageReports::from(&all), false);
        } else {
            for u in &all.branches {
                report(ui, u, a.by);
                ui.print("\n");
            }
            let mut total = all.total.clone();
            total.branch = "every branch (each request once)".into();
            report(ui, &total, a.by);
        }
        return Ok(());
    }
    let u = t.usage(None, &o)?;
    if a.json {
        output::print(ui, &UsageReport::from(&u), false);
    } else {
        report(ui, &u, a.by);
    }
    Ok(())
}

/// A branch's usage, for people.
fn report(ui: &mut Ui<'_>, u: &BranchUsage, by: Option<By>) {
    let mut out = String::new();
    let t = &u.ledger.totals;
    let since = u
        .since_us
        .map(|s| format!(" since {}", tract_core::clock::rfc3339_micros(s)))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "{}: {}{since}",
        u.branch,
        count(t.requests, "request", "requests")
    );
    line(&mut out, "  ", t);
    if by == Some(By::Model) || u.ledger.by_model.len() > 1 {
        for (model, m) in &u.ledger.by_model {
            let name = if model.is_empty() {
                "(no model named)"
            } else {
                model
            };
            let _ = writeln!(
                out,
                "  {name}: {}",
                count(m.requests, "request", "requests")
            );
            line(&mut out, "    ", m);
        }
    }
    if let Some(days) = &u.by_day {
        for (day, d) in days {
            let _ = writeln!(
                out,
                "  {day}: {}",
                count(d.totals.requests, "request", "requests")
            );
            line(&mut out, "    ", &d.totals);
        }
    }
    if let Some(p) = &u.cost {
        let money = |c: Option<f64>| match c {
            Some(c) => format!("{c:.4} {}", p.currency),
            None => "unknown".to_string(),
        };
        let _ = writeln!(out, "  cost: {}", money(p.cost.total));
        if p.cost.by_model.len() > 1 || p.cost.total.is_none() {
            for (model, c) in &p.cost.by_model {
                let name = if model.is_empty() {
                    "(no model named)"
                } else {
                    model
                };
                let _ = writeln!(out, "    {name}: {}", money(*c));
            }
        }
        if !p.cost.unpriced.is_empty() {
            let _ = writeln!(
                out,
                "  not in the price table (`tract config prices`): {}",
                p.cost
                    .unpriced
                    .iter()
                    .map(|m| if m.is_empty() {
                        "(no model named)"
                    } else {
                        m.as_str()
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    if !u.ledger.unknown_kinds.is_empty() {
        let kinds: Vec<&str> = u.ledger.unknown_kinds.iter().map(String::as_str).collect();
        let _ = writeln!(out, "  also reported, not summed: {}", kinds.join(", "));
    }
    ui.print(&out);
}

/// The tokens of `t` and how the cache served them, on one line.
fn line(out: &mut String, indent: &str, t: &Totals) {
    let _ = write!(
        out,
        "{indent}input {}  output {}  cache read {}  cache write {}",
        t.input_tokens, t.output_tokens, t.cache_read_input_tokens, t.cache_creation_input_tokens
    );
    if let (Some(hit), Some(rewrite)) = (t.cache_hit_rate(), t.rewrite_factor()) {
        let _ = write!(
            out,
            "  (cache hit rate {:.1}%, context written {rewrite:.2}x)",
            hit * 100.0
        );
    }
    out.push('\n');
}
