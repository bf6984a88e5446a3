//! `tract compress`.

use crate::args::{ClearArgs, CompressArgs, Strategy};
use crate::render;
use std::fmt::Write;
use std::io::IsTerminal;
use tract_core::{CompressRequest, Error, Extractive, Manual, OpenAiCompatible, Summarizer, Tract};

/// Runs `tract compress`.
pub fn run(t: &Tract, a: &CompressArgs, out: &mut String) -> Result<(), Error> {
    if a.strategy == Strategy::Clear {
        let clear = ClearArgs {
            keep: a.keep,
            exclude_tools: Vec::new(),
            clear_at_least: 0,
            placeholder: None,
            dry_run: a.dry_run,
        };
        return crate::tools::clear(t, &clear, out);
    }
    let system_prompt = match a.system_prompt.as_deref() {
        Some(s) if s.starts_with('@') => {
            let path = std::path::PathBuf::from(&s[1..]);
            Some(std::fs::read_to_string(&path).map_err(|source| Error::Io { path, source })?)
        }
        other => other.map(str::to_string),
    };
    let commits = match &a.range {
        Some(r) => {
            let (from, to) = r.split_once("..").ok_or_else(|| Error::InvalidInput {
                message: format!("--range takes A..B, not '{r}'"),
            })?;
            Some(
                t.positions_between(from, to)?
                    .iter()
                    .map(|p| p.to_hex())
                    .collect(),
            )
        }
        None if !a.commits.is_empty() => Some(a.commits.clone()),
        None => None,
    };
    let manual = a.content.clone().map(Manual);
    let llm = match a.strategy {
        Strategy::Llm => Some(llm_client(a)?),
        _ => None,
    };
    let summarizer: Option<&dyn Summarizer> = match (&manual, &llm) {
        (Some(m), _) => Some(m),
        (None, Some(l)) => Some(l),
        (None, None) => Some(&Extractive),
    };
    let req = CompressRequest {
        commits: commits.clone(),
        preserve: a.preserve.clone(),
        system_prompt,
        instructions: a.instructions.clone(),
        target_tokens: a.target_tokens,
        summarizer,
        on_progress: None,
    };
    let req = if a.tool_turns {
        t.tool_turn_request(commits, a.name.as_deref(), true, req)?
    } else {
        req
    };
    if a.dry_run {
        let runs = t.plan_compress(&req)?;
        let total: u64 = runs.iter().map(|r| r.tokens).sum();
        for r in &runs {
            let ids: Vec<String> = r.sources.iter().map(|s| s.short()).collect();
            let _ = writeln!(
                out,
                "would summarize {} message(s), {} tokens: {}",
                ids.len(),
                r.tokens,
                ids.join(" ")
            );
        }
        let _ = writeln!(
            out,
            "{} run(s), {total} tokens (dry run, nothing committed)",
            runs.len()
        );
        return Ok(());
    }
    // A progress bar on a terminal, when there is more than one run to summarize.
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::hidden();
        bar.set_style(
            indicatif::ProgressStyle::with_template("summarizing {bar:30} {pos}/{len} runs")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let progress = |done: usize, total: usize| {
        if let Some(bar) = &bar
            && total > 1
        {
            if bar.is_hidden() {
                bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            }
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        }
    };
    let req = CompressRequest {
        on_progress: Some(&progress),
        ..req
    };
    let done = t.compress(&req);
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let done = done?;
    render::outcome(
        out,
        &done.commits,
        "compressed {n} run(s)",
        done.tokens_before,
        done.tokens_after,
    );
    Ok(())
}

/// The chat-completions client from the flags, filled in from the environment.
fn llm_client(a: &CompressArgs) -> Result<OpenAiCompatible, Error> {
    tract_core::Environment::from_process()
        .llm(a.llm_base_url.clone(), a.llm_model.clone(), None)
        .map_err(|_| Error::InvalidInput {
            message: "--strategy llm needs a model: --llm-model, TRACT_LLM_MODEL or OPENAI_MODEL"
                .into(),
        })
}
