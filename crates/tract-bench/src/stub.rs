//! A chat-completions server on 127.0.0.1 that answers every request with a fixed summary,
//! so the bench can time the HTTP summarizer without a model. It stops when the bench exits.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;

/// Starts the server; returns its base URL.
pub fn start() -> std::io::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}/v1", listener.local_addr()?);
    std::thread::spawn(move || {
        let reply = r#"{"choices":[{"message":{"role":"assistant","content":"stub summary"}}]}"#;
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let Ok(clone) = stream.try_clone() else {
                continue;
            };
            let mut reader = BufReader::new(clone);
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            let mut stream = stream;
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply}",
                reply.len()
            );
        }
    });
    Ok(url)
}
