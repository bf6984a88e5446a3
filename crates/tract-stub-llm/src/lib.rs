//! A chat-completions server on 127.0.0.1 for tests and benchmarks: it answers each request
//! from a script (or one reply forever), records the request bodies, and never talks to
//! anything but the loopback interface. [`serve_prompt_cache`] answers as Anthropic's Messages
//! API with the usage a prompt cache would report: what each request shares, byte for byte,
//! with the one before.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A status and a body.
    Body(u16, String),
    /// Read the request, then say nothing for this long and close.
    Hang(Duration),
}

/// A successful completion whose message content is `text`.
pub fn ok(text: &str) -> Reply {
    Reply::Body(
        200,
        serde_json::json!({"choices": [{"message": {"role": "assistant", "content": text}}]})
            .to_string(),
    )
}

/// A chat completion a model would send: `text` (or none) and tool calls, each `(id, tool,
/// arguments)`, with the usage of `(prompt, completion)` tokens.
pub fn completion(text: Option<&str>, calls: &[(&str, &str, &str)], usage: (u64, u64)) -> Reply {
    let calls: Vec<serde_json::Value> = calls
        .iter()
        .map(|(id, name, args)| {
            serde_json::json!({
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": args},
            })
        })
        .collect();
    let mut message = serde_json::json!({"role": "assistant", "content": text});
    if !calls.is_empty() {
        message["tool_calls"] = serde_json::Value::Array(calls);
    }
    Reply::Body(
        200,
        serde_json::json!({
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "model": "stub-model",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": usage.0,
                "completion_tokens": usage.1,
                "total_tokens": usage.0 + usage.1,
            },
        })
        .to_string(),
    )
}

/// An Anthropic Messages answer: `text` (or none) and tool uses, each `(id, tool, input as
/// JSON text)`, with the usage of `(input, output)` tokens.
pub fn message(text: Option<&str>, calls: &[(&str, &str, &str)], usage: (u64, u64)) -> Reply {
    let mut content = Vec::new();
    if let Some(t) = text {
        content.push(serde_json::json!({"type": "text", "text": t}));
    }
    for (id, name, input) in calls {
        let input: serde_json::Value =
            serde_json::from_str(input).unwrap_or(serde_json::Value::Null);
        content
            .push(serde_json::json!({"type": "tool_use", "id": id, "name": name, "input": input}));
    }
    Reply::Body(
        200,
        serde_json::json!({
            "id": "msg_stub",
            "type": "message",
            "role": "assistant",
            "model": "stub-model",
            "content": content,
            "stop_reason": if calls.is_empty() { "end_turn" } else { "tool_use" },
            "usage": {"input_tokens": usage.0, "output_tokens": usage.1},
        })
        .to_string(),
    )
}

/// A running server.
pub struct StubLlm {
    /// The base URL to give a client (`http://127.0.0.1:PORT/v1`).
    pub url: String,
    /// The bodies of the requests received so far, in order.
    pub bodies: Arc<Mutex<Vec<String>>>,
    /// Their request lines and headers (`POST /v1/messages HTTP/1.1`, then one header a
    /// line), in order.
    pub heads: Arc<Mutex<Vec<String>>>,
}

/// Serves `script`, one reply per connection, then stops.
pub fn serve(script: Vec<Reply>) -> std::io::Result<StubLlm> {
    start(move |n| script.get(n).cloned())
}

/// Answers every request with `reply` until the process exits.
pub fn serve_forever(reply: Reply) -> std::io::Result<StubLlm> {
    start(move |_| Some(reply.clone()))
}

fn start(next: impl Fn(usize) -> Option<Reply> + Send + 'static) -> std::io::Result<StubLlm> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}/v1", listener.local_addr()?);
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let heads = Arc::new(Mutex::new(Vec::new()));
    let (log, head_log) = (Arc::clone(&bodies), Arc::clone(&heads));
    std::thread::spawn(move || {
        let mut n = 0;
        while let Some(reply) = next(n) {
            let Ok((stream, _)) = listener.accept() else {
                return;
            };
            if let Some((head, body)) = read_head_and_body(&stream) {
                head_log
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(head);
                log.lock().unwrap_or_else(|e| e.into_inner()).push(body);
            }
            answer(stream, reply);
            n += 1;
        }
    });
    Ok(StubLlm { url, bodies, heads })
}

/// The request's body, after its headers (`Content-Length` bytes).
fn read_request(stream: &TcpStream) -> Option<String> {
    read_head_and_body(stream).map(|(_, body)| body)
}

/// The request's line and headers, and its body.
fn read_head_and_body(stream: &TcpStream) -> Option<(String, String)> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut length = 0usize;
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 || line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        head.push_str(line.trim_end());
        head.push('\n');
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some((head, String::from_utf8_lossy(&body).into_owned()))
}

fn answer(stream: TcpStream, reply: Reply) {
    match reply {
        Reply::Hang(d) => std::thread::sleep(d),
        Reply::Body(status, text) => answer_with(stream, status, &text),
    }
}

fn answer_with(mut stream: TcpStream, status: u16, text: &str) {
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
}

/// One request a [`serve_prompt_cache`] server answered.
#[derive(Debug, Clone)]
pub struct Seen {
    /// The request's body, exactly as received.
    pub body: String,
    /// The bytes it begins with alike with the request before (0 for the first).
    pub shared_bytes: usize,
    /// Whether it extends the request before: that request's body, without the brackets and
    /// braces that close it, begins this one (`true` for the first).
    pub extends: bool,
}

/// A running [`serve_prompt_cache`] server.
pub struct PromptCacheStub {
    /// The base URL to give a client (`http://127.0.0.1:PORT/v1`; requests go to
    /// `/v1/messages`).
    pub url: String,
    /// The requests answered so far, in order.
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

/// Bytes a token stands for in the usage this server reports.
pub const BYTES_PER_TOKEN: usize = 4;

/// Answers every request as Anthropic's Messages API until the process exits, with the usage a
/// prompt cache keyed by exact bytes would report: the bytes the request shares with the one
/// before are read from the cache, the rest written to it (a token per
/// [`BYTES_PER_TOKEN`] bytes). The answer is a `tool_use` block (tool `read`, a path named
/// after the request's number) for even-numbered requests and a text for odd ones, from the
/// request's `model`.
pub fn serve_prompt_cache() -> std::io::Result<PromptCacheStub> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}/v1", listener.local_addr()?);
    let seen = Arc::new(Mutex::new(Vec::<Seen>::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let Some(body) = read_request(&stream) else {
                continue;
            };
            let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
            let n = log.len();
            let (shared_bytes, extends) = match log.last() {
                Some(before) => {
                    let shared = before
                        .body
                        .bytes()
                        .zip(body.bytes())
                        .take_while(|(a, b)| a == b)
                        .count();
                    let open = before.body.trim_end_matches([']', '}']);
                    (shared, body.starts_with(open))
                }
                None => (0, true),
            };
            let answer = prompt_cache_answer(n, &body, shared_bytes);
            log.push(Seen {
                body,
                shared_bytes,
                extends,
            });
            drop(log);
            answer_with(stream, 200, &answer.to_string());
        }
    });
    Ok(PromptCacheStub { url, seen })
}

/// The Messages API answer to request `n`, whose `body` shares `shared` bytes with the one
/// before.
fn prompt_cache_answer(n: usize, body: &str, shared: usize) -> serde_json::Value {
    let model = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("model").and_then(|m| m.as_str()).map(str::to_string))
        .unwrap_or_default();
    let calls = n.is_multiple_of(2);
    let content = if calls {
        serde_json::json!([{"type": "tool_use", "id": format!("toolu_{n:05}"), "name": "read",
            "input": {"path": format!("src/file_{n}.rs")}}])
    } else {
        serde_json::json!([{"type": "text", "text": format!("Step {n} is done.")}])
    };
    serde_json::json!({
        "id": format!("msg_{n:05}"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": if calls { "tool_use" } else { "end_turn" },
        "usage": {
            "input_tokens": 3,
            "output_tokens": 12,
            "cache_read_input_tokens": shared / BYTES_PER_TOKEN,
            "cache_creation_input_tokens": (body.len() - shared) / BYTES_PER_TOKEN,
        },
    })
}
