//! `tract demo`: a realistic coding-agent session in a new store, then log, status, compile.

use crate::context::Context;
use crate::error::CommandError;
use crate::output;
use crate::render;
use crate::ui::Ui;
use std::fmt::Write;
use std::path::PathBuf;
use tract_core::{Content, Error, OpenMode, ToolCall, Tract};

/// Build a realistic agent transcript in a new store, then show log, status and compile.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to create the demo project (default: a new temporary directory).
    dir: Option<PathBuf>,
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

const GREP_OUTPUT: &str = "src/db/pool.rs:14:    let url = std::env::var(\"DATABASE_URL\")?;
src/db/pool.rs:15:    let max = std::env::var(\"DB_POOL_MAX\").unwrap_or(\"5\".into());
src/config.rs:42:    pub database_url: String, // DATABASE_URL
src/config.rs:77:        database_url: env(\"DATABASE_URL\")?,
tests/db.rs:9:    std::env::set_var(\"DATABASE_URL\", \"postgres://localhost/test\");
docs/deploy.md:31:Set DATABASE_URL and DB_POOL_MAX before starting the server.";

const READ_OUTPUT: &str = "use sqlx::postgres::PgPoolOptions;

pub async fn connect() -> anyhow::Result<sqlx::PgPool> {
    let url = std::env::var(\"DATABASE_URL\")?;
    let max = std::env::var(\"DB_POOL_MAX\").unwrap_or(\"5\".into());
    let max: u32 = max.parse()?;
    Ok(PgPoolOptions::new().max_connections(max).connect(&url).await?)
}";

const TEST_OUTPUT: &str = "running 12 tests
test db::pool_respects_max ... FAILED
test db::connects ... ok

failures:
---- db::pool_respects_max stdout ----
thread 'db::pool_respects_max' panicked at tests/db.rs:31:5:
called `Result::unwrap()` on an `Err` value: ParseIntError { kind: InvalidDigit }

test result: FAILED. 11 passed; 1 failed; 0 ignored";

/// Creates the demo store under `dir` (a new temporary directory by default) and prints
/// what `log`, `status` and `compile` show.
pub fn run(ctx: &Context, out: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    let dir = match &a.dir {
        Some(d) => d.clone(),
        None => fresh_dir()?,
    };
    let store = dir.join(".tract").join("store.redb");
    if store.exists() {
        return Err(Error::InvalidOperation {
            message: format!(
                "{} already holds a tract store; pick a new directory",
                dir.display()
            ),
        }
        .into());
    }
    std::fs::create_dir_all(&dir).map_err(|source| Error::io(dir.clone(), source))?;
    let t = ctx.open_at(&Tract::init_dir(&dir)?, OpenMode::CreateIfMissing)?;

    t.system(
        "You are a careful coding agent. Use tools to inspect the repository before answering.",
    )?;
    t.user(
        "The pool test fails in CI. Where is the database pool configured, and why does it fail?",
    )?;
    t.assistant(
        "Let me find where the pool is configured.",
        vec![
            call(
                "call_grep_1",
                "grep",
                r#"{"pattern":"DATABASE_URL|DB_POOL_MAX","path":"."}"#,
            ),
            call("call_read_1", "read_file", r#"{"path":"src/db/pool.rs"}"#),
        ],
    )?;
    let grep = t.tool_result("call_grep_1", "grep", GREP_OUTPUT, false)?;
    t.tool_result("call_read_1", "read_file", READ_OUTPUT, false)?;
    t.assistant(
        "",
        vec![call(
            "call_bash_1",
            "bash",
            r#"{"command":"cargo test db::"}"#,
        )],
    )?;
    t.tool_result("call_bash_1", "bash", TEST_OUTPUT, true)?;
    t.assistant(
        "The pool is built in src/db/pool.rs from DATABASE_URL and DB_POOL_MAX. The failing test sets DB_POOL_MAX to a value that is not a number, and `max.parse()` rejects it.",
        Vec::new(),
    )?;
    // The grep output has served its purpose: keep only what matters in view.
    t.edit(
        grep.id,
        Content::Text(
            "src/db/pool.rs:14-15 and src/config.rs:42,77 read DATABASE_URL / DB_POOL_MAX".into(),
        ),
    )?;
    t.user("Fix it so a bad DB_POOL_MAX falls back to 5.")?;
    // The agent crashed here, mid-tool: the call has no result.
    t.assistant(
        "",
        vec![call(
            "call_edit_1",
            "edit_file",
            r#"{"path":"src/db/pool.rs"}"#,
        )],
    )?;

    let _ = writeln!(out, "demo store: {}", store.display());
    let _ = writeln!(out, "(try: tract --store {} log)\n", store.display());
    let _ = writeln!(out, "$ tract log");
    for info in t.log(&tract_core::LogQuery::default())? {
        render::log_line(out, &info);
    }
    let _ = writeln!(out, "\n$ tract status");
    render::status(out, &t.status()?);
    // Ranked search over history: the grep output edited out of view is still found.
    let _ = writeln!(out, "\n$ tract search --history \"DB_POOL_MAX\"");
    let hits = t.search(&tract_core::SearchQuery {
        query: "\"DB_POOL_MAX\"".into(),
        history: true,
        limit: Some(5),
        ..tract_core::SearchQuery::default()
    })?;
    crate::commands::search::print_hits(out, &hits, None);
    let compiled = t.compile()?;
    let _ = writeln!(out, "\n$ tract compile --format anthropic");
    for w in compiled.warnings() {
        let _ = writeln!(out, "warning: {w}");
    }
    output::print(out, &compiled.to_anthropic()?, false);
    Ok(())
}

/// A new directory under the system temporary directory, kept after the demo.
fn fresh_dir() -> Result<PathBuf, Error> {
    tempfile::Builder::new()
        .prefix("tract-demo-")
        .tempdir()
        .map(tempfile::TempDir::keep)
        .map_err(|source| Error::io(std::env::temp_dir(), source))
}
