//! One function per subcommand; each returns what to print.

use crate::args::{AddArgs, Cli, Command, Format};
use crate::{compress, config, demo, input, render, tools};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use tract_core::{Content, Environment, Error, OpenMode, Role, Tract};

/// Carries out the command and returns its standard output.
pub fn execute(cli: &Cli) -> Result<String, Error> {
    let mut out = String::new();
    match &cli.command {
        Command::Init { dir } => init(cli.store.as_deref(), dir.as_deref(), &mut out)?,
        Command::Demo { dir } => demo::run(dir.as_deref(), &mut out)?,
        Command::Add(a) => add(&open(cli)?, a, &mut out)?,
        Command::Edit(e) => {
            let t = open(cli)?;
            let text = match (&e.text, &e.content, &e.file) {
                (Some(text), _, _) => input::text_or_stdin(text)?,
                (_, Some(content), _) => content.clone(),
                (_, _, Some(path)) => {
                    std::fs::read_to_string(path).map_err(|source| Error::Io {
                        path: path.clone(),
                        source,
                    })?
                }
                (None, None, None) => {
                    return Err(Error::InvalidInput {
                        message: "give the new content: TEXT, --content, --file or -".into(),
                    });
                }
            };
            let info = t.edit(&e.target, Content::Text(text))?;
            let _ = writeln!(out, "{}", info.id.short());
        }
        Command::Tools(a) => tools::run(&open(cli)?, a, &mut out)?,
        Command::Repair => {
            let repaired = open(cli)?.repair()?;
            for info in &repaired {
                render::log_line(&mut out, info);
            }
            let _ = writeln!(
                out,
                "{} tool call(s) without a result answered with a marked error result",
                repaired.len()
            );
        }
        Command::Search(a) => tools::search(&open(cli)?, a, &mut out)?,
        Command::Clear(a) => tools::clear(&open(cli)?, a, &mut out)?,
        Command::Compress(a) => compress::run(&open(cli)?, a, &mut out)?,
        Command::Config(a) => config::run(&open(cli)?, a, &mut out)?,
        Command::Log {
            rev,
            limit,
            json,
            oneline,
            role,
            tool,
        } => {
            let role = role.as_deref().map(Role::parse).transpose()?;
            let infos = open(cli)?.log_where(rev.as_deref(), *limit, |i| {
                role.is_none_or(|r| i.role() == Some(r))
                    && tool.as_deref().is_none_or(|t| i.tool_names().contains(&t))
            })?;
            if *json {
                let list: Vec<_> = infos.iter().map(|i| i.to_json()).collect();
                out = pretty(&serde_json::Value::Array(list), false);
            } else {
                for info in &infos {
                    if *oneline {
                        render::oneline(&mut out, info);
                    } else {
                        render::log_line(&mut out, info);
                    }
                }
            }
        }
        Command::Show { rev, json, history } => {
            let t = open(cli)?;
            let rev = rev.as_deref().unwrap_or("HEAD");
            let infos = if *history {
                t.edit_history(rev)?
            } else {
                vec![t.get_commit(rev)?]
            };
            // The link from a compressed message to the summary that replaced it.
            let into = match infos.as_slice() {
                [one] if !*history && one.message.is_some() => {
                    t.compressed_into(&one.id.to_hex())?
                }
                _ => None,
            };
            if *json {
                let mut list: Vec<_> = infos.iter().map(|i| i.to_json()).collect();
                if let (Some(into), Some(serde_json::Value::Object(first))) =
                    (&into, list.first_mut())
                {
                    first.insert("compressed_into".into(), into.id.to_hex().into());
                }
                out = match (history, list.as_slice()) {
                    (false, [one]) => pretty(one, false),
                    _ => pretty(&serde_json::Value::Array(list), false),
                };
            } else {
                for (i, info) in infos.iter().enumerate() {
                    if i > 0 {
                        out.push('\n');
                    }
                    render::show(&mut out, info);
                }
                if let Some(into) = into {
                    let _ = writeln!(out, "\ncompressed into {}", into.id.short());
                }
            }
        }
        Command::Compile {
            format,
            at,
            compact,
        } => {
            let t = open(cli)?;
            let compiled = match at {
                Some(rev) => t.compile_at(rev)?,
                None => t.compile()?,
            };
            for w in compiled.warnings() {
                eprintln!("warning: {w}");
            }
            let body = match format {
                Format::Openai => compiled.to_openai(),
                Format::Anthropic => compiled.to_anthropic(),
            };
            out = pretty(&body, *compact);
        }
        Command::Branch { name, rev } => {
            let t = open(cli)?;
            match name {
                Some(name) => {
                    let at = t.create_branch(name, rev.as_deref())?;
                    let _ = writeln!(out, "created branch {name} at {}", at.short());
                }
                None => {
                    for b in t.branches()? {
                        let mark = if b.current { '*' } else { ' ' };
                        let _ = writeln!(out, "{mark} {} {}", b.name, b.head.short());
                    }
                }
            }
        }
        Command::Switch { name, create } => {
            let t = open(cli)?;
            if *create {
                t.create_branch(name, None)?;
            }
            t.switch(name)?;
            let _ = writeln!(out, "switched to branch {name}");
        }
        Command::Checkout { rev } => {
            let head = open(cli)?.checkout(rev)?;
            match (head.branch(), head.commit) {
                (Some(b), _) => {
                    let _ = writeln!(out, "switched to branch {b}");
                }
                (None, Some(c)) => {
                    let _ = writeln!(
                        out,
                        "HEAD detached at {}; new messages grow from here (`tract switch -c NAME` keeps them on a branch)",
                        c.short()
                    );
                }
                (None, None) => {}
            }
        }
        Command::Reset { rev } => {
            let t = open(cli)?;
            let before = t.head()?;
            let after = t.reset(rev)?;
            let name = after.branch().unwrap_or("HEAD").to_string();
            let show =
                |c: Option<tract_core::ObjectId>| c.map_or_else(|| "(none)".into(), |c| c.short());
            let _ = writeln!(
                out,
                "{name} now at {} (was {}; `tract reflog {name}` keeps the old head)",
                show(after.commit),
                show(before.commit)
            );
        }
        Command::Reflog { name, limit } => {
            for (i, e) in open(cli)?.reflog(name, *limit)?.iter().enumerate() {
                render::reflog_line(&mut out, name, i, e);
            }
        }
        Command::Status { json } => {
            let s = open(cli)?.status()?;
            if *json {
                out = pretty(&render::status_json(&s), false);
            } else {
                render::status(&mut out, &s);
            }
        }
    }
    Ok(out)
}

pub(crate) fn pretty(v: &serde_json::Value, compact: bool) -> String {
    let mut s = if compact {
        v.to_string()
    } else {
        serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
    };
    s.push('\n');
    s
}

/// The store named by --store / TRACT_STORE, or the one found upward from here.
fn store_path(cli: &Cli) -> Result<PathBuf, Error> {
    if let Some(p) = &cli.store {
        return Ok(p.clone());
    }
    let cwd = std::env::current_dir().map_err(|source| Error::Io {
        path: ".".into(),
        source,
    })?;
    Tract::discover(&cwd).ok_or_else(|| Error::NotFound {
        what: format!(
            "a tract store in {} or any parent directory (run `tract init`)",
            cwd.display()
        ),
    })
}

fn open(cli: &Cli) -> Result<Tract, Error> {
    open_in(&store_path(cli)?, OpenMode::Existing)
}

/// Opens a store with what the environment sets: the lock wait, the clock and the summarizer
/// for summaries nobody names (the policy's, in `tract add`).
pub(crate) fn open_in(path: &Path, mode: OpenMode) -> Result<Tract, Error> {
    let env = Environment::from_process();
    let t = Tract::open_with(path, mode, env.store_options()?)?;
    t.set_summarizer(
        env.summarizer()
            .map(|s| std::sync::Arc::new(s) as std::sync::Arc<dyn tract_core::Summarizer>),
    );
    Ok(t)
}

fn init(store: Option<&Path>, dir: Option<&Path>, out: &mut String) -> Result<(), Error> {
    let (t, created) = match (store, dir) {
        (Some(_), Some(_)) => {
            return Err(Error::InvalidInput {
                message: "give either --store or a directory, not both".into(),
            });
        }
        (Some(p), None) => {
            let existed = p.exists();
            (open_in(p, OpenMode::CreateIfMissing)?, !existed)
        }
        (None, d) => {
            let path = Tract::init_dir(d.unwrap_or(Path::new(".")))?;
            let existed = path.exists();
            (open_in(&path, OpenMode::CreateIfMissing)?, !existed)
        }
    };
    let path = t
        .store()
        .path()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let verb = if created {
        "Initialized empty"
    } else {
        "Reinitialized existing"
    };
    let _ = writeln!(out, "{verb} tract store in {path}");
    Ok(())
}

fn add(t: &Tract, a: &AddArgs, out: &mut String) -> Result<(), Error> {
    let messages = match (&a.json, &a.text) {
        (Some(json), _) => input::messages_from_json_text(&input::text_or_stdin(json)?)?,
        (None, Some(text)) => vec![input::message_from_flags(
            &a.role,
            input::text_or_stdin(text)?,
            a.name.clone(),
            a.tool_call_id.clone(),
            a.error,
            a.tool_calls.as_deref(),
        )?],
        (None, None) => {
            return Err(Error::InvalidInput {
                message: "give the message TEXT or --json".into(),
            });
        }
    };
    // One transaction, whatever the count: a stream with a bad message commits nothing. Tool
    // results go through the store's tool-summarization policy (an LLM named by the
    // environment summarizes, else the extractive summarizer).
    for outcome in t.append_batch_with_policy(messages, None)? {
        let _ = writeln!(out, "{}", outcome.original.id.short());
        for w in &outcome.warnings {
            eprintln!("warning: {w}");
        }
        if let Some(edit) = &outcome.replacement {
            let how = edit.commit.message.as_deref().unwrap_or("edited");
            eprintln!(
                "note: the {} result {} was {how}; the model sees edit {} ({} → {} tokens)",
                outcome
                    .original
                    .message
                    .as_ref()
                    .and_then(|m| m.name.as_deref())
                    .unwrap_or("tool"),
                outcome.original.id.short(),
                edit.id.short(),
                outcome.original.token_count,
                edit.token_count,
            );
        }
    }
    Ok(())
}
