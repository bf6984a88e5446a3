//! `tract secrets`: what looks like a credential in the store or in a file, and the rules.

use crate::context::Context;
use crate::error::CommandError;
use crate::output;
use crate::render;
use crate::ui::Ui;
use crate::vocabulary::{SecretFinding, SecretsRedaction, TextFinding};
use clap::Subcommand;
use std::fmt::Write;
use tract_core::{Detector, ScanOptions};

/// What looks like a credential, found by the store's secrets rules.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

/// The `tract secrets` subcommands.
#[derive(Debug, Subcommand)]
enum What {
    /// List what looks like a credential in the current branch's view (--history: every
    /// commit it reaches; --all: every branch), or in FILE (`-`: standard input) before it is
    /// imported. Never the values: where each is, its rule and its fingerprint.
    Scan(ScanArgs),
    /// List the rules: the built-in ones (and whether the store turned them off) and the
    /// store's own.
    Rules,
}

/// `tract secrets scan`.
#[derive(Debug, clap::Args)]
struct ScanArgs {
    /// A file to check instead of the store (`-`: standard input): a JSON document, JSON lines
    /// or plain text.
    #[arg(value_name = "FILE", conflicts_with_all = ["history", "all", "redact"])]
    file: Option<std::path::PathBuf>,
    /// Every commit the branch reaches, not only its view: edited and compressed versions too.
    #[arg(long)]
    history: bool,
    /// Every branch.
    #[arg(long)]
    all: bool,
    /// One JSON list, one object per finding.
    #[arg(long)]
    json: bool,
    /// Scrub what was found where it is stored, in one transaction: each message becomes a
    /// tombstone showing it with its findings replaced by their markers, what was made from it
    /// (summaries, compressions) follows; ids stay valid.
    #[arg(long)]
    redact: bool,
    /// With --redact: do not compact the file afterwards (the removed bytes may then stay in
    /// freed pages until `tract gc --compact` runs).
    #[arg(long, requires = "redact")]
    no_compact: bool,
}

/// Runs `tract secrets`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    match &a.what {
        What::Scan(args) => match &args.file {
            Some(file) => scan_file(ctx, ui, file, args.json),
            None => scan_store(ctx, ui, args),
        },
        What::Rules => rules(ctx, ui),
    }
}

fn scan_file(
    ctx: &Context,
    ui: &mut Ui<'_>,
    file: &std::path::Path,
    json: bool,
) -> Result<(), CommandError> {
    let text = crate::arguments::read_text(file)?;
    // The store's rules and fingerprints where there is a store; the built-in rules otherwise
    // (a file is checked before there is anywhere to import it).
    let found = match ctx.store_path() {
        Ok(path) => ctx
            .open_at(&path, tract_core::OpenMode::Existing)?
            .scan_text(&text)?,
        Err(_) => tract_core::secrets::text::scan(&Detector::builtin(), None, &text),
    };
    if json {
        let list: Vec<TextFinding> = found.iter().map(TextFinding::from).collect();
        output::print(ui, &list, false);
        return Ok(());
    }
    let name = if file.as_os_str() == "-" {
        "<stdin>".to_string()
    } else {
        file.display().to_string()
    };
    for f in &found {
        let _ = writeln!(
            ui,
            "{name}:{}:{}: {}{}",
            f.line,
            f.column,
            f.rule,
            f.fingerprint
                .as_deref()
                .map(|p| format!(" {p}"))
                .unwrap_or_default()
        );
    }
    ui.note(&format!(
        "{} in {name}",
        render::count(found.len() as u64, "finding", "findings")
    ));
    Ok(())
}

fn scan_store(ctx: &Context, ui: &mut Ui<'_>, a: &ScanArgs) -> Result<(), CommandError> {
    // A scan only reads; with --redact it writes.
    let t = match (a.redact, a.all) {
        (true, true) => ctx.open()?,
        (true, false) => ctx.open_existing_branch()?,
        (false, true) => ctx.open_read_only()?,
        (false, false) => ctx.open_to_read()?,
    };
    let options = ScanOptions {
        history: a.history,
        all: a.all,
    };
    let found = t.scan_secrets(&options)?;
    if a.json && !a.redact {
        let list: Vec<SecretFinding> = found.iter().map(SecretFinding::from).collect();
        output::print(ui, &list, false);
        return Ok(());
    }
    let messages = found
        .iter()
        .map(|f| f.blob)
        .collect::<std::collections::HashSet<_>>()
        .len();
    if !a.redact {
        for f in &found {
            let _ = writeln!(
                ui,
                "{} {} {} {} {}:{}-{}",
                f.commit.short(),
                f.branch.as_deref().unwrap_or("HEAD"),
                f.rule,
                f.fingerprint.as_deref().unwrap_or("-"),
                f.field,
                f.start,
                f.end
            );
        }
        let mut summary = format!(
            "{} in {}",
            render::count(found.len() as u64, "finding", "findings"),
            render::count(messages as u64, "message", "messages")
        );
        if !found.is_empty() {
            summary.push_str(" (tract secrets scan --redact scrubs them where they are stored)");
        }
        ui.note(&summary);
        return Ok(());
    }
    let r = t.redact_secrets(&found)?;
    if a.json {
        output::print(ui, &SecretsRedaction::from(&r), false);
    } else {
        let _ = writeln!(
            ui,
            "scrubbed {} in {}; ids are unchanged, views show the markers",
            render::count(r.findings as u64, "finding", "findings"),
            render::count(r.scrubbed.len() as u64, "message", "messages")
        );
        if !r.followed.is_empty() {
            let _ = writeln!(
                ui,
                "scrubbed with them, made from their content: {}",
                r.followed
                    .iter()
                    .map(|c| c.short())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    if !r.scrubbed.is_empty() && !a.no_compact {
        // Committed already; compaction only makes sure no freed page keeps the bytes.
        if let Err(e) = t.into_store().compact() {
            ui.warning(&format!(
                "the file was not compacted ({e}); run `tract gc --compact` when the store is \
                 not in use"
            ));
        }
    }
    Ok(())
}

fn rules(ctx: &Context, ui: &mut Ui<'_>) -> Result<(), CommandError> {
    let policy = match ctx.store_path() {
        Ok(_) => ctx.open()?.secrets_policy()?,
        Err(_) => None,
    }
    .unwrap_or_default();
    for name in Detector::builtin().rule_names() {
        let off = if policy.disabled.contains(&name) {
            " (disabled)"
        } else {
            ""
        };
        let _ = writeln!(ui, "{name}{off}");
    }
    for (name, regex) in &policy.rules {
        let _ = writeln!(ui, "{name} (the store's own): /{regex}/");
    }
    Ok(())
}
