//! `tract config`: the settings stored in the store.

use crate::args::{ConfigArgs, ConfigWhat, ToolSummarizationArgs};
use std::fmt::Write;
use tract_core::{Error, ToolPolicy, Tract};

/// Shows or changes the stored settings.
pub fn run(t: &Tract, a: &ConfigArgs, out: &mut String) -> Result<(), Error> {
    match &a.what {
        ConfigWhat::Show { json } => {
            let policy = t.tool_policy()?;
            if *json {
                let body = serde_json::json!({ "tool_summarization": policy.to_json() });
                let _ = writeln!(
                    out,
                    "{}",
                    serde_json::to_string_pretty(&body).unwrap_or_default()
                );
            } else {
                show(out, &policy);
            }
        }
        ConfigWhat::ToolSummarization(args) => {
            let stored = if args.reset {
                ToolPolicy::default()
            } else {
                t.tool_policy()?
            };
            let policy = changed(stored, args)?;
            t.set_tool_policy(&policy)?;
            show(out, &policy);
        }
    }
    Ok(())
}

/// The stored policy with the options applied.
fn changed(mut p: ToolPolicy, a: &ToolSummarizationArgs) -> Result<ToolPolicy, Error> {
    for name in &a.remove_tools {
        p.instructions.remove(name);
    }
    for spec in &a.tools {
        let (name, text) = spec.split_once('=').ok_or_else(|| Error::InvalidInput {
            message: format!("--tool takes NAME=INSTRUCTIONS, not '{spec}'"),
        })?;
        p.instructions
            .insert(name.trim().to_string(), text.to_string());
    }
    if let Some(n) = a.auto_threshold {
        p.auto_threshold = Some(u32::try_from(n).map_err(|_| Error::InvalidInput {
            message: format!("--auto-threshold must be a non-negative number of tokens, not {n}"),
        })?);
    }
    if a.no_auto_threshold {
        p.auto_threshold = None;
    }
    if let Some(text) = &a.default_instructions {
        p.default_instructions = Some(text.clone());
    }
    if a.no_default_instructions {
        p.default_instructions = None;
    }
    Ok(p)
}

fn show(out: &mut String, p: &ToolPolicy) {
    if p.is_empty() {
        let _ = writeln!(
            out,
            "tool summarization: off (tool results are recorded as they are)"
        );
        return;
    }
    let _ = writeln!(out, "tool summarization:");
    for (tool, text) in &p.instructions {
        let _ = writeln!(out, "  {tool}: {text}");
    }
    match p.auto_threshold {
        Some(n) => {
            let text = p
                .default_instructions
                .as_deref()
                .unwrap_or("the tool prompt alone");
            let _ = writeln!(out, "  any result over {n} tokens: {text}");
        }
        None => {
            let _ = writeln!(out, "  other tools: recorded as they are (no threshold)");
        }
    }
}
