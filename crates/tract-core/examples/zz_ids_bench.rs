use std::time::Instant;
use tract_core::{Message, Provider, Rendering, Role, ToolCall, Tract};
fn main() -> Result<(), tract_core::Error> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(50_000);
    let t = Tract::in_memory()?;
    let mut batch = Vec::new();
    for i in 0..n / 4 {
        batch.push(Message::text(
            Role::User,
            format!("step {i}: look at module {}", i % 97),
        ));
        let mut a = Message::text(Role::Assistant, "");
        a.tool_calls = vec![ToolCall {
            id: format!("call_{i}"),
            name: "grep".into(),
            arguments: format!("{{\"q\":\"m{i}\"}}"),
        }];
        batch.push(a);
        let mut r = Message::tool_result(
            format!("call_{i}"),
            "grep",
            format!("src/m{i}.rs:1: found it {i}"),
            false,
        );
        r.name = Some("grep".into());
        batch.push(r);
        batch.push(Message::text(
            Role::Assistant,
            format!("module {i} is fine"),
        ));
    }
    t.append_batch(batch)?;
    let mut kept = Rendering::new(Provider::OpenAi);
    kept.json(&t.compile()?)?;
    let (mut scan, mut render) = (Vec::new(), Vec::new());
    for i in 0..21 {
        t.user(format!("render step {i}"))?;
        let c = t.compile()?;
        let s = Instant::now();
        std::hint::black_box(c.reused_call_ids().len());
        scan.push(s.elapsed());
        let c = t.compile()?;
        let s = Instant::now();
        std::hint::black_box(kept.json(&c)?.len());
        render.push(s.elapsed());
    }
    scan.sort();
    render.sort();
    println!(
        "{{\"messages\": {n}, \"scan_ms\": {:.3}, \"kept_render_ms\": {:.3}}}",
        scan[10].as_secs_f64() * 1e3,
        render[10].as_secs_f64() * 1e3
    );
    Ok(())
}
