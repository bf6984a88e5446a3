//! Summarizers: what turns a run of messages into one summary. One trait, several kinds: the
//! built-in extractive one (no network, deterministic), manual content, and caller functions.

pub mod compress;
pub mod llm;

use crate::error::{Error, Result};
use crate::object::{Message, Role, ToolCall};
use crate::tokens;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// The system prompt for summarizing tool calls and their results.
pub const TOOL_SUMMARIZE_SYSTEM: &str = "You condense the tool activity of an AI agent into a short record that the agent will read instead of the raw output. Report what each tool call was for and what it found or changed, not the raw output. Keep every concrete value the agent may need later: file paths, line numbers, identifiers, commands, exit codes, error messages (verbatim when short), versions, counts and decisions taken. When several calls worked toward one goal, tell them as one story in order: what was tried, what failed, what worked. Drop boilerplate, repeated lines and progress noise. Do not invent anything that is not in the input. Stay within the requested length.";

/// The system prompt for summarizing a stretch of conversation.
pub const CONVERSATION_SUMMARIZE_SYSTEM: &str = "You condense part of a conversation between a user and an AI agent into a short record that replaces it in the agent's context. Keep the user's goals and constraints, the decisions made and why, facts established (names, paths, values, numbers), open questions and what remains to be done. Attribute statements to the user or the agent where it matters. Do not invent anything. Stay within the requested length.";

/// The system prompt for summarizing a sub-agent's branch into the result of the tool call
/// that started it.
pub const BRANCH_SUMMARIZE_SYSTEM: &str = "You report the work of a sub-agent to the agent that delegated a task to it. Your report is the result of that task. Start with the answer or outcome. Then give the facts the sub-agent established (file paths, line numbers, identifiers, commands, values, error messages), what it changed, what it tried that failed, and what remains open. Do not invent anything that is not in the transcript. Stay within the requested length.";

/// What a summarizer is asked.
#[derive(Debug, Clone)]
pub struct SummaryRequest {
    /// The system prompt.
    pub system_prompt: String,
    /// Extra instructions from the caller.
    pub instructions: Option<String>,
    /// The length to aim for, in tokens.
    pub target_tokens: Option<u32>,
    /// The messages to summarize, as they are in view (edited ones with their current content),
    /// shared with the view rather than copied.
    pub messages: Vec<Arc<Message>>,
    /// Messages that tell what `messages` answer without being summarized themselves: the
    /// call whose result alone is summarized (a tool-summarization policy or hook).
    pub context: Vec<Arc<Message>>,
}

impl SummaryRequest {
    /// The request as chat messages (OpenAI form): the system prompt, then one user message
    /// holding the instructions, the target length and the transcript.
    pub fn to_chat_messages(&self) -> serde_json::Value {
        let mut prompt = String::new();
        if let Some(i) = &self.instructions {
            prompt.push_str(&format!("Instructions: {i}\n"));
        }
        if let Some(t) = self.target_tokens {
            prompt.push_str(&format!("Target length: at most {t} tokens.\n"));
        }
        // Each message of a transcript ends with a blank line.
        if self.context.is_empty() {
            prompt.push('\n');
        } else {
            prompt.push_str("\nContext (what the transcript answers; not to be summarized):\n");
            prompt.push_str(&transcript(&self.context));
        }
        prompt.push_str("Transcript:\n");
        prompt.push_str(&transcript(&self.messages));
        serde_json::json!([
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": prompt},
        ])
    }
}

/// The messages as plain text, one block per message.
pub fn transcript(messages: &[Arc<Message>]) -> String {
    let mut out = String::new();
    for m in messages {
        out.push_str(&header(m));
        out.push('\n');
        let text = m.content.text();
        if !text.is_empty() {
            out.push_str(&text);
            out.push('\n');
        }
        for c in &m.tool_calls {
            out.push_str(&format!("call {} {}({})\n", c.id, c.name, c.arguments));
        }
        out.push('\n');
    }
    out
}

fn header(m: &Message) -> String {
    match (m.role, &m.name) {
        (Role::Tool, Some(name)) => {
            let status = if m.is_error { " error" } else { "" };
            format!("[tool {name}{status}]")
        }
        (role, _) => format!("[{role}]"),
    }
}

/// Something that summarizes. Implementations must fail rather than return partial text: a
/// failure commits nothing.
pub trait Summarizer: Send + Sync {
    /// Recorded on the compress commit: what produced the summary.
    fn identity(&self) -> String;
    /// The summary of `req.messages`.
    fn summarize(&self, req: &SummaryRequest) -> Result<String>;
}

/// The summarizer a call uses: the one it names, else the handle's default (which a surface
/// sets, for example from the environment), else the built-in extractive one.
pub(crate) fn with_default<R>(
    given: Option<&dyn Summarizer>,
    default: Option<Arc<dyn Summarizer>>,
    f: impl FnOnce(&dyn Summarizer) -> R,
) -> R {
    match (given, default) {
        (Some(s), _) => f(s),
        (None, Some(d)) => f(d.as_ref()),
        (None, None) => f(&Extractive),
    }
}

/// The built-in summarizer: no network, deterministic. For each message it keeps the head and
/// tail lines and the lines that carry paths, numbers, errors and key=value pairs, within the
/// target length. A tool result is told as the answer of its call (`grep({...}) returned:`)
/// when the call is in the request; one tool result alone comes back as that result
/// shortened, with no header, as a tool-summarization policy replaces it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Extractive;

/// The length the extractive summarizer aims for without a target.
pub const EXTRACTIVE_DEFAULT_TOKENS: u32 = 256;

/// Lines kept from the start and the end of each message.
const HEAD_LINES: usize = 2;
const TAIL_LINES: usize = 2;
/// Longer lines (and call arguments) are cut to this many characters.
const LONGEST_LINE: usize = 200;

fn is_key_line(line: &str) -> bool {
    let l = line.to_ascii_lowercase();
    [
        "error",
        "fail",
        "panic",
        "exception",
        "warning",
        "exit",
        "denied",
        "not found",
    ]
    .iter()
    .any(|w| l.contains(w))
        || line.contains('/')
        || line.contains(".rs:")
        || line.contains(".py:")
        || line.contains('=')
        || line.chars().any(|c| c.is_ascii_digit())
}

/// `text` cut to [`LONGEST_LINE`] characters, marked where it was cut.
fn cut(text: &str) -> String {
    if text.chars().count() > LONGEST_LINE {
        let kept: String = text.chars().take(LONGEST_LINE - 1).collect();
        format!("{kept}…")
    } else {
        text.to_string()
    }
}

/// A call as the extractive summary names it: `grep({"pattern":"x"})`.
fn call_line(c: &ToolCall) -> String {
    cut(&format!("{}({})", c.name, c.arguments))
}

/// Whether `messages` are one tool turn: an assistant message calling tools, then only
/// results of its calls.
fn one_turn(messages: &[Arc<Message>]) -> bool {
    let Some((call, results)) = messages.split_first() else {
        return false;
    };
    call.role == Role::Assistant
        && !call.tool_calls.is_empty()
        && !results.is_empty()
        && results.iter().all(|r| {
            r.role == Role::Tool
                && call
                    .tool_calls
                    .iter()
                    .any(|c| Some(c.id.as_str()) == r.tool_call_id.as_deref())
        })
}

impl Summarizer for Extractive {
    fn identity(&self) -> String {
        "extractive".into()
    }

    fn summarize(&self, req: &SummaryRequest) -> Result<String> {
        let budget = req.target_tokens.unwrap_or(EXTRACTIVE_DEFAULT_TOKENS) as usize;
        let messages = &req.messages;
        // The calls of the request and its context, by id: a result is told as their answer.
        let calls: HashMap<&str, &ToolCall> = req
            .context
            .iter()
            .chain(messages)
            .flat_map(|m| &m.tool_calls)
            .map(|c| (c.id.as_str(), c))
            .collect();
        let answered: HashSet<&str> = messages
            .iter()
            .filter(|m| m.role == Role::Tool)
            .filter_map(|m| m.tool_call_id.as_deref())
            .collect();
        let lone_result = messages.len() == 1 && messages[0].role == Role::Tool;
        let mut out = if lone_result || one_turn(messages) {
            String::new()
        } else {
            format!("[Summary of {} messages]\n", messages.len())
        };
        let mut used = tokens::count_text(&out) as usize;
        for (i, m) in messages.iter().enumerate() {
            // What is left is shared among the messages still to come, so one long output
            // cannot crowd out the rest, and what a short one leaves goes to those after it.
            let share = (budget.saturating_sub(used) / (messages.len() - i)).max(8);
            let mut block = String::new();
            match m.role {
                Role::Tool if lone_result => {}
                Role::Tool => {
                    let call = m.tool_call_id.as_deref().and_then(|id| calls.get(id));
                    match call {
                        Some(c) => {
                            let how = if m.is_error { "failed" } else { "returned" };
                            block.push_str(&format!("{} {how}:\n", call_line(c)));
                        }
                        None => block.push_str(&format!("{}\n", header(m))),
                    }
                }
                Role::Assistant if !m.tool_calls.is_empty() => {
                    // Calls whose results are here are told with them.
                    let unanswered: Vec<String> = m
                        .tool_calls
                        .iter()
                        .filter(|c| !answered.contains(c.id.as_str()))
                        .map(call_line)
                        .collect();
                    if !unanswered.is_empty() || !m.content.text().trim().is_empty() {
                        block.push_str(&header(m));
                        for c in &unanswered {
                            block.push(' ');
                            block.push_str(c);
                        }
                        block.push('\n');
                    }
                }
                _ => block.push_str(&format!("{}\n", header(m))),
            }
            let text = m.content.text();
            let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            let n = lines.len();
            let mut kept = 0usize;
            let mut block_tokens = tokens::count_text(&block) as usize;
            for (j, line) in lines.iter().enumerate() {
                let wanted = j < HEAD_LINES || j + TAIL_LINES >= n || is_key_line(line);
                if !wanted {
                    continue;
                }
                let line = cut(line);
                let cost = tokens::count_text(&line) as usize + 1;
                if block_tokens + cost > share {
                    break;
                }
                block.push_str(&line);
                block.push('\n');
                block_tokens += cost;
                kept += 1;
            }
            if kept < n {
                block.push_str(&format!("(… {} of {} lines omitted)\n", n - kept, n));
            }
            used += block_tokens;
            out.push_str(&block);
            if used >= budget {
                break;
            }
        }
        Ok(out.trim_end().to_string())
    }
}

/// The identity of [`Manual`] summaries.
pub const MANUAL: &str = "manual";

/// A summary the caller wrote (`content=`).
#[derive(Debug, Clone)]
pub struct Manual(pub String);

impl Summarizer for Manual {
    fn identity(&self) -> String {
        MANUAL.into()
    }

    fn summarize(&self, _req: &SummaryRequest) -> Result<String> {
        if self.0.trim().is_empty() {
            return Err(Error::invalid_input("the summary content is empty"));
        }
        Ok(self.0.clone())
    }
}

/// A caller's function (a Rust closure; the Python binding wraps callables in one).
pub struct FnSummarizer<F> {
    name: String,
    f: F,
}

impl<F> FnSummarizer<F>
where
    F: Fn(&SummaryRequest) -> Result<String> + Send + Sync,
{
    /// Wraps `f`; `name` is recorded on the commit as `callable:NAME`.
    pub fn new(name: impl Into<String>, f: F) -> Self {
        FnSummarizer {
            name: name.into(),
            f,
        }
    }
}

impl<F> Summarizer for FnSummarizer<F>
where
    F: Fn(&SummaryRequest) -> Result<String> + Send + Sync,
{
    fn identity(&self) -> String {
        format!("callable:{}", self.name)
    }

    fn summarize(&self, req: &SummaryRequest) -> Result<String> {
        let text = (self.f)(req)?;
        if text.trim().is_empty() {
            return Err(Error::Summarizer {
                summarizer: self.identity(),
                reason: "it returned an empty summary".into(),
            });
        }
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(target: u32) -> SummaryRequest {
        let mut grep = Message::tool_result("c1", "grep", "", false);
        let body: Vec<String> = (0..300)
            .map(|i| {
                if i == 150 {
                    "src/db/pool.rs:42: error: DATABASE_URL missing".to_string()
                } else {
                    "just some words without anything special".to_string()
                }
            })
            .collect();
        grep.content = crate::object::Content::Text(body.join("\n"));
        SummaryRequest {
            system_prompt: TOOL_SUMMARIZE_SYSTEM.into(),
            instructions: None,
            target_tokens: Some(target),
            messages: vec![Arc::new(grep)],
            context: Vec::new(),
        }
    }

    #[test]
    fn extractive_keeps_key_lines_within_the_target() {
        let out = Extractive.summarize(&request(80)).unwrap();
        assert!(
            out.contains("src/db/pool.rs:42: error: DATABASE_URL missing"),
            "{out}"
        );
        assert!(out.contains("lines omitted"), "{out}");
        assert!(
            tokens::count_text(&out) <= 80 + 16,
            "{}",
            tokens::count_text(&out)
        );
        assert_eq!(
            out,
            Extractive.summarize(&request(80)).unwrap(),
            "deterministic"
        );
    }

    fn grep_call(id: &str) -> Message {
        let mut call = Message::text(Role::Assistant, "");
        call.tool_calls = vec![ToolCall {
            id: id.into(),
            name: "grep".into(),
            arguments: r#"{"pattern":"DATABASE_URL"}"#.into(),
        }];
        call
    }

    /// A policy summarizes one result, its call given as context: the summary was
    /// "[Summary of 2 messages]\n[assistant] grep(...)\n[tool grep]\n...", which the model
    /// then read as the tool's output.
    #[test]
    fn one_result_reads_as_that_result_shortened() {
        let mut req = request(80);
        req.context = vec![Arc::new(grep_call("c1"))];
        let out = Extractive.summarize(&req).unwrap();
        assert!(
            out.starts_with("just some words without anything special\n"),
            "{out}"
        );
        assert!(
            !out.contains("[Summary of") && !out.contains("[assistant]"),
            "{out}"
        );
        assert!(!out.contains("[tool grep]"), "{out}");
        assert!(out.contains("src/db/pool.rs:42: error: DATABASE_URL missing"));
        assert!(out.ends_with("lines omitted)"), "{out}");
        // The context reaches a model, marked as such.
        let chat = req.to_chat_messages();
        let prompt = chat[1]["content"].as_str().unwrap();
        assert!(
            prompt.contains("Context (what the transcript answers"),
            "{prompt}"
        );
        assert!(prompt.contains("call c1 grep("), "{prompt}");
    }

    /// A tool turn (a call and its result, as `compress --tool-turns` selects it) reads as
    /// the call and what it returned; several turns keep the summary's header.
    #[test]
    fn a_tool_turn_reads_as_the_call_and_its_shortened_result() {
        let mut req = request(80);
        let result = Arc::clone(&req.messages[0]);
        req.messages = vec![Arc::new(grep_call("c1")), Arc::clone(&result)];
        let out = Extractive.summarize(&req).unwrap();
        assert!(
            out.starts_with("grep({\"pattern\":\"DATABASE_URL\"}) returned:\njust some words"),
            "{out}"
        );
        assert!(
            !out.contains("[Summary of") && !out.contains("[assistant]"),
            "{out}"
        );
        let mut second = (*result).clone();
        second.tool_call_id = Some("c2".into());
        req.messages.push(Arc::new(grep_call("c2")));
        req.messages.push(Arc::new(second));
        req.target_tokens = Some(200);
        let out = Extractive.summarize(&req).unwrap();
        assert!(out.starts_with("[Summary of 4 messages]\ngrep("), "{out}");
        assert_eq!(out.matches(" returned:").count(), 2, "{out}");
        assert!(tokens::count_text(&out) <= 200 + 16);
    }

    #[test]
    fn chat_messages_carry_prompt_instructions_and_target() {
        let mut req = request(50);
        req.instructions = Some("keep paths".into());
        let v = req.to_chat_messages();
        assert_eq!(v[0]["content"], TOOL_SUMMARIZE_SYSTEM);
        let user = v[1]["content"].as_str().unwrap();
        assert!(user.contains("Instructions: keep paths") && user.contains("at most 50 tokens"));
        assert!(user.contains("[tool grep]"));
    }

    #[test]
    fn empty_summaries_are_refused() {
        assert!(Manual(" ".into()).summarize(&request(10)).is_err());
        let f = FnSummarizer::new("blank", |_: &SummaryRequest| Ok(String::new()));
        assert!(matches!(
            f.summarize(&request(10)),
            Err(Error::Summarizer { .. })
        ));
    }
}
