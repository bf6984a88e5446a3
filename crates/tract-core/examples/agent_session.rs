//! An agent session with tract's Rust API: record a tool turn, trim a large result with an
//! edit (the original stays in history), and render the request for both providers.
//!
//! Run with `cargo run -p tract-core --example agent_session`.

use tract_core::{Content, ToolCall, Tract};

fn main() -> tract_core::Result<()> {
    let dir = tempfile::tempdir()
        .map_err(|source| tract_core::Error::io(std::env::temp_dir(), source))?;
    let (t, _) = Tract::init(dir.path())?;

    t.system("You are a careful coding agent.")?;
    t.user("Where is the database configured?")?;
    t.assistant(
        "",
        vec![ToolCall {
            id: "call_1".into(),
            name: "grep".into(),
            arguments: r#"{"pattern":"DATABASE_URL"}"#.into(),
        }],
    )?;
    let big = "config.py:42: DATABASE_URL=postgres://db\n".repeat(200);
    let result = t.tool_result("call_1", "grep", big, false)?;
    println!("grep result: {} tokens", result.token_count);

    // Keep only what matters in view; the 200-line original stays in history.
    let edit = t.edit(
        result.id,
        Content::Text("config.py:42: DATABASE_URL=postgres://db".into()),
    )?;
    println!(
        "edit {} of {}: {} tokens",
        edit.id.short(),
        result.id.short(),
        edit.token_count
    );

    let compiled = t.compile()?;
    println!(
        "request: {} messages, {} tokens",
        compiled.len(),
        compiled.token_count()
    );
    println!("{}", compiled.to_anthropic()?);
    for info in t.log(&tract_core::LogQuery {
        limit: Some(3),
        ..Default::default()
    })? {
        println!("{} {:<6} {}", info.id.short(), info.op(), info.preview());
    }
    Ok(())
}
