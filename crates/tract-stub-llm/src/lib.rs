//! A chat-completions server on 127.0.0.1 for tests and benchmarks: it answers each request
//! from a script (or one reply forever), records the request bodies, and never talks to
//! anything but the loopback interface.

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

/// A running server.
pub struct StubLlm {
    /// The base URL to give a client (`http://127.0.0.1:PORT/v1`).
    pub url: String,
    /// The bodies of the requests received so far, in order.
    pub bodies: Arc<Mutex<Vec<String>>>,
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
    let log = Arc::clone(&bodies);
    std::thread::spawn(move || {
        let mut n = 0;
        while let Some(reply) = next(n) {
            let Ok((stream, _)) = listener.accept() else {
                return;
            };
            if let Some(body) = read_request(&stream) {
                log.lock().unwrap_or_else(|e| e.into_inner()).push(body);
            }
            answer(stream, reply);
            n += 1;
        }
    });
    Ok(StubLlm { url, bodies })
}

/// The request's body, after its headers (`Content-Length` bytes).
fn read_request(stream: &TcpStream) -> Option<String> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 || line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(String::from_utf8_lossy(&body).into_owned())
}

fn answer(mut stream: TcpStream, reply: Reply) {
    match reply {
        Reply::Hang(d) => std::thread::sleep(d),
        Reply::Body(status, text) => {
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    }
}
