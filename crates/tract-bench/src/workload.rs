//! A seeded coding-agent workload: a system prompt, then turns of user message → assistant
//! with 1–2 tool calls (grep, read_file, bash) → their results (200 B–8 KB) → answer.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tract_core::{Message, Role, ToolCall};

const DIRS: &[&str] = &[
    "src",
    "src/db",
    "src/api",
    "src/auth",
    "tests",
    "crates/core/src",
    "web/components",
];
const FILES: &[&str] = &[
    "pool.rs",
    "config.rs",
    "handlers.rs",
    "session.rs",
    "mod.rs",
    "router.ts",
    "index.tsx",
    "main.py",
];
const IDENTS: &[&str] = &[
    "DATABASE_URL",
    "max_connections",
    "retry_after",
    "session_token",
    "parse_config",
    "UserRecord",
    "handle_request",
    "rate_limit",
    "timeout_ms",
    "cache_key",
    "serialize",
    "validate_input",
];
const CODE: &[&str] = &[
    "let {i} = std::env::var(\"{I}\")?;",
    "fn {i}(input: &str) -> Result<{T}, Error> {{",
    "    if {i}.is_empty() {{ return Err(Error::Missing(\"{i}\")); }}",
    "    tracing::debug!(?{i}, \"loaded\");",
    "const {I}: u64 = {n};",
    "    self.{i}.insert(key, value);",
    "import {{ {T} }} from './{i}';",
    "def {i}(self, *args, **kwargs):",
    "    return {T}::new({i}, {n})",
    "// TODO: {i} should respect {I}",
];
const QUESTIONS: &[&str] = &[
    "Why does the {i} test fail on CI but not locally?",
    "Where is {I} read, and what happens when it is missing?",
    "Refactor {i} so it no longer clones the whole config.",
    "Add a retry with backoff around {i}; keep the public API the same.",
    "The request handler times out under load. Find out why {i} is slow.",
];

/// The generator; the same seed always gives the same messages.
pub struct Workload {
    rng: ChaCha8Rng,
    call: u64,
}

impl Workload {
    /// A generator with `seed`.
    pub fn new(seed: u64) -> Self {
        Workload {
            rng: ChaCha8Rng::seed_from_u64(seed),
            call: 0,
        }
    }

    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.rng.random_range(0..xs.len())]
    }

    fn fill(&mut self, template: &str) -> String {
        let i = self.pick(IDENTS).to_lowercase();
        let upper = self.pick(IDENTS).to_uppercase();
        let ty = self.pick(&["Config", "Session", "Pool", "Request", "Token"]);
        let n = self.rng.random_range(1..100_000u32);
        template
            .replace("{i}", &i)
            .replace("{I}", &upper)
            .replace("{T}", ty)
            .replace("{n}", &n.to_string())
    }

    fn path(&mut self) -> String {
        format!("{}/{}", self.pick(DIRS), self.pick(FILES))
    }

    /// Tool output of `tool` between 200 bytes and 8 KB.
    fn output(&mut self, tool: &str) -> String {
        let target = self.rng.random_range(200..8 * 1024);
        self.output_of(tool, target)
    }

    /// Tool output of `tool` of `target` bytes.
    pub fn output_of(&mut self, tool: &str, target: usize) -> String {
        let mut out = String::with_capacity(target + 128);
        let mut line_no = self.rng.random_range(1..400u32);
        while out.len() < target {
            let code = self.pick(CODE);
            let code = self.fill(code);
            match tool {
                "grep" => {
                    let p = self.path();
                    out.push_str(&format!("{p}:{line_no}:{code}\n"));
                }
                "read_file" => out.push_str(&format!("{line_no:>5}  {code}\n")),
                _ => {
                    let status = self.pick(&["ok", "ok", "ok", "FAILED", "ignored"]);
                    out.push_str(&format!(
                        "test {}::{} ... {status}\n",
                        self.pick(IDENTS).to_lowercase(),
                        line_no
                    ));
                }
            }
            line_no += self.rng.random_range(1..12);
        }
        out.truncate(target);
        out
    }

    /// The next `n` messages of the session (the first is the system prompt).
    pub fn messages(&mut self, n: usize) -> Vec<Message> {
        let mut out = Vec::with_capacity(n + 8);
        out.push(system_prompt());
        while out.len() < n {
            self.turn(&mut out);
        }
        out.truncate(n);
        out
    }

    /// A generator with `seed` whose call ids follow the `calls` calls made before: a session
    /// generated in parts (one generator a part) keeps its call ids unique.
    pub fn resume(seed: u64, calls: u64) -> Self {
        Workload {
            call: calls,
            ..Workload::new(seed)
        }
    }

    /// How many tool calls it has made: the number a later part resumes from.
    pub fn calls(&self) -> u64 {
        self.call
    }

    /// Whole turns, without a system prompt, until there are at least `n` messages (a turn is
    /// never cut, so every call has its result).
    pub fn turns(&mut self, n: usize) -> Vec<Message> {
        let mut out = Vec::with_capacity(n + 8);
        while out.len() < n {
            self.turn(&mut out);
        }
        out
    }

    /// One turn: a user message, an assistant calling 1–2 tools, their results, an answer.
    fn turn(&mut self, out: &mut Vec<Message>) {
        let q = self.pick(QUESTIONS);
        out.push(Message::text(Role::User, self.fill(q)));
        let calls: Vec<ToolCall> = (0..self.rng.random_range(1..=2))
            .map(|_| {
                self.call += 1;
                let name = self.pick(&["grep", "read_file", "bash"]);
                let arguments = match name {
                    "grep" => format!(r#"{{"pattern":"{}","path":"."}}"#, self.pick(IDENTS)),
                    "read_file" => format!(r#"{{"path":"{}"}}"#, self.path()),
                    _ => r#"{"command":"cargo test --workspace"}"#.to_string(),
                };
                ToolCall {
                    id: format!("call_{:08x}", self.call),
                    name: name.into(),
                    arguments,
                }
            })
            .collect();
        let mut a = Message::text(Role::Assistant, "Let me look at the code.");
        a.tool_calls = calls.clone();
        out.push(a);
        for c in &calls {
            let body = self.output(&c.name);
            out.push(Message::tool_result(
                c.id.clone(),
                c.name.clone(),
                body,
                false,
            ));
        }
        let answer = (0..self.rng.random_range(2..8))
            .map(|_| {
                let code = self.pick(CODE);
                self.fill(code)
            })
            .collect::<Vec<_>>()
            .join("\n");
        out.push(Message::text(
            Role::Assistant,
            format!("Here is what I found:\n{answer}"),
        ));
    }
}

/// The session's system prompt.
pub fn system_prompt() -> Message {
    Message::text(
        Role::System,
        "You are a careful coding agent. Inspect the repository with tools before you answer. Prefer small, reviewable changes.",
    )
}

/// Bytes of message text: content, tool-call names and arguments.
pub fn text_bytes(messages: &[Message]) -> u64 {
    messages
        .iter()
        .map(|m| {
            let calls: usize = m
                .tool_calls
                .iter()
                .map(|c| c.name.len() + c.arguments.len())
                .sum();
            (m.content.text().len() + calls) as u64
        })
        .sum()
}
