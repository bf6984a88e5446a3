//! `tract config`: the settings stored in the store.

use crate::context::Context;
use crate::error::CommandError;
use crate::output;
use crate::render;
use crate::ui::Ui;
use crate::vocabulary::Config;
use clap::Subcommand;
use std::fmt::Write;
use tract_core::{
    DeleteIdleBranches, PriceTable, Prices, ReplaceToolResults, Replacement, RetentionPolicy,
    RetentionRule, SecretsPolicy, Summarizer, ToolPolicy,
};

/// Settings stored in the store, which every process and command applies.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to show or change.
    #[command(subcommand)]
    what: What,
}

/// The `tract config` subcommands.
#[derive(Debug, Subcommand)]
enum What {
    /// Show the stored settings.
    Show {
        /// As JSON.
        #[arg(long)]
        json: bool,
    },
    /// Change the tool-summarization policy that `tract add` and every process apply to tool
    /// results: per-tool instructions, and a token threshold over which any result is
    /// summarized. Options not given keep their stored value.
    #[command(name = "tool-summarization")]
    ToolSummarization(PolicyArgs),
    /// Change the retention policy `tract gc` applies (and nothing else): rules scoped by
    /// branch name patterns that replace old tool results or delete idle branches, and pinned
    /// branches no rule touches. `tract gc --dry-run` shows what each rule would do. Options
    /// not given keep the stored rules and pins.
    Retention(RetentionArgs),
    /// Change the secrets policy every write applies: what looks like a credential is replaced
    /// by `[REDACTED:<rule>:<fingerprint>]` before a message is stored. Options not given keep
    /// their stored value; a store made by an older tract has no policy until this or `tract
    /// upgrade` gives it one.
    Secrets(SecretsArgs),
    /// Change the price table `tract usage` prices requests with: per model (or pattern of
    /// model names, `claude-sonnet-4-5*`), per million tokens of each kind. None is bundled;
    /// a model the table does not price has an unknown cost. Options not given keep the
    /// stored table.
    Prices(PricesArgs),
}

/// `tract config prices`.
#[derive(Debug, clap::Args)]
struct PricesArgs {
    /// Price MODEL (a name, or a pattern: `*` any run of characters): with --input and
    /// --output, and --cache-read and --cache-write where they differ from --input.
    #[arg(long, value_name = "MODEL", requires_all = ["input", "output"])]
    model: Option<String>,
    /// Input tokens, per million (with --model).
    #[arg(long, value_name = "PRICE", requires = "model")]
    input: Option<f64>,
    /// Output tokens, per million (with --model).
    #[arg(long, value_name = "PRICE", requires = "model")]
    output: Option<f64>,
    /// Input tokens read from the cache, per million (with --model; default: --input).
    #[arg(long, value_name = "PRICE", requires = "model")]
    cache_read: Option<f64>,
    /// Input tokens written to the cache, per million (with --model; default: --input).
    #[arg(long, value_name = "PRICE", requires = "model")]
    cache_write: Option<f64>,
    /// Remove MODEL's prices (repeatable).
    #[arg(long = "remove", value_name = "MODEL")]
    remove: Vec<String>,
    /// The currency the prices are in (USD unless given).
    #[arg(long, value_name = "NAME")]
    currency: Option<String>,
    /// Start from the table in FILE (JSON, `-` reads standard input: {"currency": "USD",
    /// "models": {MODEL: {"input": N, "output": N, "cache_read": N, "cache_creation": N}}})
    /// instead of the stored one.
    #[arg(long, value_name = "FILE", conflicts_with = "reset")]
    from: Option<std::path::PathBuf>,
    /// Start from an empty table.
    #[arg(long)]
    reset: bool,
    /// Show the table as JSON.
    #[arg(long)]
    json: bool,
}

/// `tract config secrets`.
#[derive(Debug, clap::Args)]
struct SecretsArgs {
    /// Scrub what every write stores (the default of a new store).
    #[arg(long, conflicts_with = "off")]
    on: bool,
    /// Store messages as they are written: nothing is scrubbed.
    #[arg(long)]
    off: bool,
    /// Add a rule of your own, or replace the one of that name (repeatable): values REGEX
    /// matches are scrubbed, the first capture group's if it has one. NAME: lowercase letters,
    /// digits, `.`, `_` and `-`.
    #[arg(long = "rule", value_name = "NAME=REGEX")]
    rules: Vec<String>,
    /// Remove rule NAME of your own (repeatable).
    #[arg(long = "remove-rule", value_name = "NAME")]
    remove_rules: Vec<String>,
    /// Turn off built-in rule RULE (repeatable; `tract secrets rules` lists them).
    #[arg(long = "disable", value_name = "RULE")]
    disable: Vec<String>,
    /// Turn built-in rule RULE back on (repeatable).
    #[arg(long = "enable", value_name = "RULE")]
    enable: Vec<String>,
    /// Never scrub this value (a literal), or the values a pattern written `/REGEX/` matches
    /// (repeatable).
    #[arg(long = "allow", value_name = "LITERAL_OR_/PATTERN/")]
    allow: Vec<String>,
    /// Remove an allowed value or pattern (repeatable).
    #[arg(long = "remove-allow", value_name = "LITERAL_OR_/PATTERN/")]
    remove_allow: Vec<String>,
    /// Start from the default policy (every built-in rule, nothing of your own) instead of the
    /// stored one.
    #[arg(long)]
    reset: bool,
}

/// `tract config retention`.
#[derive(Debug, clap::Args)]
struct RetentionArgs {
    /// Add rule NAME, or replace the rule of that name (repeatable). KEYS, comma-separated:
    /// `branches=PATTERN` (repeatable; `*` any run of characters, `/` included), then either
    /// `tool-results-older-than=DAYS`, `keep-newest=N` (the newest N messages of each view
    /// stay) and `replace-with=summary|placeholder` (summary: only results that have one are
    /// replaced, by it; placeholder: every one), or `delete-idle-for=DAYS`.
    /// Example: --rule 'old-results: branches=claude/*, tool-results-older-than=30'
    #[arg(long = "rule", value_name = "NAME: KEYS")]
    rules: Vec<String>,
    /// Remove rule NAME (repeatable).
    #[arg(long = "remove-rule", value_name = "NAME")]
    remove_rules: Vec<String>,
    /// Pin the branches matching PATTERN: no rule touches them or what they reach
    /// (repeatable).
    #[arg(long = "pin", value_name = "PATTERN")]
    pins: Vec<String>,
    /// Remove pin PATTERN (repeatable).
    #[arg(long = "unpin", value_name = "PATTERN")]
    unpins: Vec<String>,
    /// Start from the policy in this JSON file (`-`: standard input) instead of the stored
    /// one; the format `tract config show --json` prints under `retention`.
    #[arg(long, value_name = "FILE", conflicts_with = "reset")]
    from: Option<std::path::PathBuf>,
    /// Start from an empty policy (no rule: gc removes only what nothing reaches).
    #[arg(long)]
    reset: bool,
}

/// `tract config tool-summarization`.
#[derive(Debug, clap::Args)]
struct PolicyArgs {
    /// Summarize results of tool NAME with these instructions (repeatable).
    #[arg(long = "tool", value_name = "NAME=INSTRUCTIONS")]
    tools: Vec<String>,
    /// Stop summarizing results of tool NAME by its instructions (repeatable).
    #[arg(long = "remove-tool", value_name = "NAME")]
    remove_tools: Vec<String>,
    /// Summarize any result over this many tokens.
    #[arg(
        long,
        value_name = "TOKENS",
        allow_negative_numbers = true,
        conflicts_with = "no_auto_threshold"
    )]
    auto_threshold: Option<i64>,
    /// Remove the threshold.
    #[arg(long)]
    no_auto_threshold: bool,
    /// Instructions for results summarized because of the threshold.
    #[arg(long, value_name = "TEXT", conflicts_with = "no_default_instructions")]
    default_instructions: Option<String>,
    /// Remove the default instructions (the tool prompt alone is used).
    #[arg(long)]
    no_default_instructions: bool,
    /// Start from an empty policy instead of the stored one.
    #[arg(long)]
    reset: bool,
}

/// Runs `tract config`.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let t = ctx.open()?;
    match &a.what {
        What::Show { json } => {
            let policy = t.tool_policy()?;
            let retention = t.retention_policy()?;
            let secrets = t.secrets_policy()?;
            let summarizer = summarizer_of(ctx);
            if *json {
                output::print(
                    ui,
                    &Config::new(&policy, &retention, secrets.as_ref(), summarizer.as_deref()),
                    false,
                );
            } else {
                show(ui, &policy);
                note_summarizer(ui, &policy, summarizer.as_deref());
                show_retention(ui, &retention);
                show_secrets(ui, secrets.as_ref());
            }
        }
        What::ToolSummarization(args) => {
            let stored = if args.reset {
                ToolPolicy::default()
            } else {
                t.tool_policy()?
            };
            let policy = changed(stored, args)?;
            t.set_tool_policy(&policy)?;
            show(ui, &policy);
            note_summarizer(ui, &policy, summarizer_of(ctx).as_deref());
        }
        What::Retention(args) => {
            let stored = match (&args.from, args.reset) {
                (Some(file), _) => RetentionPolicy::from_json(&crate::arguments::read_text(file)?)?,
                (None, true) => RetentionPolicy::default(),
                (None, false) => t.retention_policy()?,
            };
            let policy = retention_changed(stored, args)?;
            t.set_retention_policy(&policy)?;
            show_retention(ui, &policy);
        }
        What::Secrets(args) => {
            let stored = match (args.reset, t.secrets_policy()?) {
                (false, Some(p)) => p,
                // A store with none starts from the default: changing it gives it one.
                _ => SecretsPolicy::default(),
            };
            let policy = secrets_changed(stored, args)?;
            t.set_secrets_policy(&policy)?;
            show_secrets(ui, Some(&policy));
        }
        What::Prices(args) => {
            let mut table = match (&args.from, args.reset) {
                (Some(file), _) => PriceTable::from_json(&crate::arguments::read_text(file)?)?,
                (None, true) => PriceTable::default(),
                (None, false) => t.prices()?,
            };
            for model in &args.remove {
                if table.models.remove(model).is_none() {
                    return Err(tract_core::Error::InvalidInput {
                        message: format!("the price table has no model '{model}'"),
                    }
                    .into());
                }
            }
            if let (Some(model), Some(input), Some(output)) = (&args.model, args.input, args.output)
            {
                let prices = Prices {
                    input,
                    output,
                    cache_read: args.cache_read,
                    cache_creation: args.cache_write,
                };
                table.models.insert(model.clone(), prices);
            }
            if let Some(c) = &args.currency {
                table.currency = c.clone();
            }
            let changed = args.from.is_some()
                || args.reset
                || args.model.is_some()
                || !args.remove.is_empty()
                || args.currency.is_some();
            if changed {
                t.set_prices(&table)?;
            }
            if args.json {
                output::print(ui, &table, false);
            } else {
                show_prices(ui, &table);
            }
        }
    }
    Ok(())
}

/// The stored retention policy with the options applied (validated when stored).
fn retention_changed(
    mut p: RetentionPolicy,
    a: &RetentionArgs,
) -> Result<RetentionPolicy, CommandError> {
    for name in &a.remove_rules {
        let before = p.rules.len();
        p.rules.retain(|r| r.name != *name);
        if p.rules.len() == before {
            return Err(CommandError::invalid_input(format!(
                "there is no retention rule named '{name}'"
            )));
        }
    }
    for spec in &a.rules {
        let rule = rule_of(spec)?;
        match p.rules.iter_mut().find(|r| r.name == rule.name) {
            Some(slot) => *slot = rule,
            None => p.rules.push(rule),
        }
    }
    p.pinned.retain(|pin| !a.unpins.contains(pin));
    for pin in &a.pins {
        if !p.pinned.contains(pin) {
            p.pinned.push(pin.clone());
        }
    }
    Ok(p)
}

/// The rule's replacement of tool results, made now if it had none.
fn replace(rule: &mut RetentionRule) -> &mut ReplaceToolResults {
    rule.replace_tool_results.get_or_insert(ReplaceToolResults {
        older_than_days: None,
        keep_newest: None,
        with: Replacement::default(),
    })
}

/// A rule from its `NAME: KEY=VALUE, ...` spelling.
fn rule_of(spec: &str) -> Result<RetentionRule, CommandError> {
    let bad = |why: String| CommandError::invalid_input(format!("--rule '{spec}': {why}"));
    let (name, keys) = spec
        .split_once(':')
        .ok_or_else(|| bad("write it NAME: KEY=VALUE, ...".into()))?;
    let mut rule = RetentionRule {
        name: name.trim().to_string(),
        branches: Vec::new(),
        replace_tool_results: None,
        delete_idle_branches: None,
    };
    let days = |v: &str| -> Result<u32, CommandError> {
        v.strip_suffix('d')
            .unwrap_or(v)
            .trim()
            .parse()
            .map_err(|_| bad(format!("'{v}' is not a number of days")))
    };
    for pair in keys.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| bad(format!("'{pair}' is not KEY=VALUE")))?;
        let value = value.trim();
        match key.trim() {
            "branches" => rule.branches.push(value.to_string()),
            "delete-idle-for" => {
                rule.delete_idle_branches = Some(DeleteIdleBranches {
                    idle_days: days(value)?,
                })
            }
            "tool-results-older-than" => replace(&mut rule).older_than_days = Some(days(value)?),
            "keep-newest" => {
                replace(&mut rule).keep_newest = Some(
                    value
                        .parse()
                        .map_err(|_| bad(format!("'{value}' is not a number of messages")))?,
                )
            }
            "replace-with" => {
                replace(&mut rule).with = match value {
                    "summary" => Replacement::Summary,
                    "placeholder" => Replacement::Placeholder,
                    other => {
                        return Err(bad(format!(
                            "replace-with is summary or placeholder, not '{other}'"
                        )));
                    }
                }
            }
            other => {
                return Err(bad(format!(
                    "unknown key '{other}' (branches, tool-results-older-than, keep-newest, \
                     replace-with, delete-idle-for)"
                )));
            }
        }
    }
    // What the core would refuse, said with the keys written here rather than the JSON
    // fields of `--from`.
    if rule.branches.is_empty() {
        return Err(bad(
            "the rule names no branches: give it branches=PATTERN (`*` for every branch)".into(),
        ));
    }
    match (&rule.replace_tool_results, &rule.delete_idle_branches) {
        (None, None) => {
            return Err(bad(
                "the rule does nothing: give it tool-results-older-than=DAYS or \
                 keep-newest=N (to replace tool results), or delete-idle-for=DAYS (to delete \
                 idle branches)"
                    .into(),
            ));
        }
        (Some(r), None) if r.older_than_days.is_none() && r.keep_newest.is_none() => {
            return Err(bad("the rule would replace every tool result: give it \
                 tool-results-older-than=DAYS or keep-newest=N"
                .into()));
        }
        (None, Some(d)) if d.idle_days == 0 => {
            return Err(bad("delete-idle-for must be 1 or more days".into()));
        }
        _ => {}
    }
    Ok(rule)
}

fn show_prices(ui: &mut Ui<'_>, table: &PriceTable) {
    if table.is_empty() {
        let _ = writeln!(ui, "prices: none (tract usage gives no cost)");
        return;
    }
    let _ = writeln!(ui, "prices ({} per million tokens):", table.currency);
    for (model, p) in &table.models {
        let _ = writeln!(
            ui,
            "  {model}: input {}, output {}, cache read {}, cache write {}",
            p.input,
            p.output,
            p.cache_read.unwrap_or(p.input),
            p.cache_creation.unwrap_or(p.input)
        );
    }
}

fn show_retention(ui: &mut Ui<'_>, p: &RetentionPolicy) {
    if p.rules.is_empty() {
        let _ = writeln!(ui, "retention: off (gc removes only what nothing reaches)");
    } else {
        let _ = writeln!(ui, "retention (applied by tract gc):");
    }
    for rule in &p.rules {
        let what = match (&rule.replace_tool_results, &rule.delete_idle_branches) {
            (Some(r), _) => {
                let mut s = "tool results".to_string();
                if let Some(d) = r.older_than_days {
                    let _ = write!(s, " older than {}", render::count(d.into(), "day", "days"));
                }
                if let Some(n) = r.keep_newest {
                    let _ = write!(
                        s,
                        " outside the newest {} of each view",
                        render::count(n.into(), "message", "messages")
                    );
                }
                s.push_str(match r.with {
                    Replacement::Summary => " replaced by their summary (those without one kept)",
                    Replacement::Placeholder => " replaced by a placeholder",
                });
                s
            }
            (None, Some(d)) => format!(
                "branches idle for {} deleted",
                render::count(d.idle_days.into(), "day", "days")
            ),
            (None, None) => "nothing".to_string(),
        };
        let _ = writeln!(ui, "  {} [{}]: {what}", rule.name, rule.branches.join(" "));
    }
    if !p.pinned.is_empty() {
        let _ = writeln!(ui, "  pinned: {}", p.pinned.join(" "));
    }
}

/// The stored secrets policy with the options applied (validated when stored).
fn secrets_changed(mut p: SecretsPolicy, a: &SecretsArgs) -> Result<SecretsPolicy, CommandError> {
    if a.on {
        p.enabled = true;
    }
    if a.off {
        p.enabled = false;
    }
    for name in &a.remove_rules {
        if p.rules.remove(name).is_none() {
            return Err(CommandError::invalid_input(format!(
                "there is no secrets rule of your own named '{name}'"
            )));
        }
    }
    for spec in &a.rules {
        let (name, regex) = spec.split_once('=').ok_or_else(|| {
            CommandError::invalid_input("--rule takes NAME=REGEX (the name, then '=')")
        })?;
        p.rules.insert(name.trim().to_string(), regex.to_string());
    }
    for rule in &a.enable {
        if !p.disabled.remove(rule) {
            return Err(CommandError::invalid_input(format!(
                "built-in rule '{rule}' is not disabled"
            )));
        }
    }
    p.disabled.extend(a.disable.iter().cloned());
    for entry in &a.remove_allow {
        let before = p.allow.len();
        p.allow.retain(|e| e != entry);
        if p.allow.len() == before {
            // Not echoed: an allowed value may be a credential of its own.
            return Err(CommandError::invalid_input(
                "--remove-allow names no allowed value or pattern",
            ));
        }
    }
    for entry in &a.allow {
        if !p.allow.contains(entry) {
            p.allow.push(entry.clone());
        }
    }
    Ok(p)
}

fn show_secrets(ui: &mut Ui<'_>, p: Option<&SecretsPolicy>) {
    let Some(p) = p else {
        let _ = writeln!(
            ui,
            "secrets: not scrubbed (the store has no policy: an older tract made it; tract \
             upgrade turns scrubbing on)"
        );
        return;
    };
    if !p.enabled {
        let _ = writeln!(
            ui,
            "secrets: not scrubbed (turned off; tract config secrets --on turns it on)"
        );
        return;
    }
    let built_in = tract_core::Detector::builtin().rule_names().len();
    let _ = writeln!(
        ui,
        "secrets: scrubbed as they are written, by {}",
        render::count(
            (built_in - p.disabled.len().min(built_in)) as u64,
            "built-in rule",
            "built-in rules"
        )
    );
    if !p.disabled.is_empty() {
        let names: Vec<&str> = p.disabled.iter().map(String::as_str).collect();
        let _ = writeln!(ui, "  disabled: {}", names.join(" "));
    }
    for (name, regex) in &p.rules {
        let _ = writeln!(ui, "  {name}: /{regex}/");
    }
    if !p.allow.is_empty() {
        let _ = writeln!(
            ui,
            "  allowed: {} (listed by config show --json)",
            render::count(
                p.allow.len() as u64,
                "value or pattern",
                "values or patterns"
            )
        );
    }
}

/// The stored policy with the options applied.
fn changed(mut p: ToolPolicy, a: &PolicyArgs) -> Result<ToolPolicy, CommandError> {
    for name in &a.remove_tools {
        p.instructions.remove(name);
    }
    for spec in &a.tools {
        let (name, text) = spec.split_once('=').ok_or_else(|| {
            CommandError::invalid_input(format!("--tool takes NAME=INSTRUCTIONS, not '{spec}'"))
        })?;
        p.instructions
            .insert(name.trim().to_string(), text.to_string());
    }
    if let Some(n) = a.auto_threshold {
        p.auto_threshold = Some(u32::try_from(n).map_err(|_| {
            CommandError::invalid_input(format!(
                "--auto-threshold must be a non-negative number of tokens, not {n}"
            ))
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

/// The LLM summarizer the environment sets (its identity), if any: without one, policies
/// are applied by the built-in extractive summarizer.
fn summarizer_of(ctx: &Context) -> Option<String> {
    ctx.env().summarizer().map(|s| s.identity())
}

/// Says, on standard error, that the policy's instructions wait for an LLM summarizer when
/// none is set: the extractive summarizer shortens results without reading them.
fn note_summarizer(ui: &mut Ui<'_>, p: &ToolPolicy, llm: Option<&str>) {
    if llm.is_none() && p.has_instructions() {
        ui.note(NO_LLM_NOTE);
    }
}

/// What [`note_summarizer`] says.
const NO_LLM_NOTE: &str = "the instructions apply when an LLM summarizer is set \
     (TRACT_LLM_MODEL, or OPENAI_MODEL, with TRACT_LLM_BASE_URL and TRACT_LLM_API_KEY); until \
     then the built-in extractive summarizer shortens these results and ignores them";

fn show(ui: &mut Ui<'_>, p: &ToolPolicy) {
    if p.is_empty() {
        let _ = writeln!(
            ui,
            "tool summarization: off (tool results are recorded as they are)"
        );
        return;
    }
    let _ = writeln!(ui, "tool summarization:");
    for (tool, text) in &p.instructions {
        let _ = writeln!(ui, "  {tool}: {text}");
    }
    match p.auto_threshold {
        Some(n) => {
            let text = p
                .default_instructions
                .as_deref()
                .unwrap_or("the tool prompt alone");
            let over = render::count(n.into(), "token", "tokens");
            let _ = writeln!(ui, "  any result over {over}: {text}");
        }
        None => {
            let _ = writeln!(ui, "  other tools: recorded as they are (no threshold)");
        }
    }
}
