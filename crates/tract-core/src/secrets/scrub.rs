//! Scrubbing a message: every finding replaced by its marker, and what was scrubbed listed in
//! the message's metadata. Never the secret itself in what is kept or returned.

use super::detect::{Detector, Finding};
use crate::error::{Error, Result};
use crate::object::{Content, ContentPart, Message, RECORD_METADATA_KEY, USAGE_METADATA_KEY};
use std::borrow::Cow;

/// The metadata key under which a scrubbed message lists what was scrubbed (JSON list of `Scrub`).
pub const SCRUBBED_METADATA_KEY: &str = "tract.scrubbed";

/// One scrubbed value: never the secret itself.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Scrub {
    /// The rule that found it.
    pub rule: String,
    /// Which part of the message: `content`, `content[2]` (a part), `tool_calls[0].arguments`, `metadata.KEY`.
    pub field: String,
    /// The byte offset of the marker in that field's scrubbed text.
    pub offset: usize,
    /// The value's keyed fingerprint ([`fingerprint`]).
    pub fingerprint: String,
}

/// The store's fingerprint key: 32 bytes.
pub type Key = [u8; 32];

/// How many hex digits of the MAC a fingerprint keeps.
const FINGERPRINT_HEX: usize = 12;

/// A keyed fingerprint of a secret value: BLAKE3 in keyed mode (a MAC) over the value alone, as 12 lowercase hex digits.
pub fn fingerprint(key: &Key, value: &str) -> String {
    let hash = blake3::keyed_hash(key, value.as_bytes());
    hash.to_hex()[..FINGERPRINT_HEX].to_string()
}

/// `[REDACTED:<rule>:<fingerprint>]`
pub fn marker(rule: &str, fingerprint: &str) -> String {
    format!("[REDACTED:{rule}:{fingerprint}]")
}

/// A fresh key from the system's random source.
pub fn new_key() -> Result<Key> {
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).map_err(|e| {
        Error::io(
            "(the system's random source)",
            std::io::Error::other(e.to_string()),
        )
    })?;
    Ok(key)
}

/// How a field is scanned.
#[derive(Clone, Copy)]
enum Kind {
    Plain,
    Json,
}

/// A field of a message scrubbing reads; named (`content[2]`) only when something is found in
/// it.
#[derive(Clone, Copy)]
enum Field<'m> {
    Content,
    Part(usize),
    Arguments(usize),
    Metadata(&'m str),
}

impl std::fmt::Display for Field<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Field::Content => f.write_str("content"),
            Field::Part(i) => write!(f, "content[{i}]"),
            Field::Arguments(i) => write!(f, "tool_calls[{i}].arguments"),
            Field::Metadata(key) => write!(f, "metadata.{key}"),
        }
    }
}

/// The fields of a message scrubbing reads: (field, kind, text).
fn fields(message: &Message) -> impl Iterator<Item = (Field<'_>, Kind, &str)> {
    let content: Vec<(Field<'_>, Kind, &str)> = match &message.content {
        Content::Text(t) => vec![(Field::Content, Kind::Plain, t.as_str())],
        Content::Parts(parts) => parts
            .iter()
            .enumerate()
            .map(|(i, part)| match part {
                ContentPart::Text(t) => (Field::Part(i), Kind::Plain, t.as_str()),
                ContentPart::Raw(r) => (Field::Part(i), Kind::Json, r.as_str()),
            })
            .collect(),
    };
    let calls = message
        .tool_calls
        .iter()
        .enumerate()
        .map(|(i, call)| (Field::Arguments(i), Kind::Json, call.arguments.as_str()));
    // tract's own keys (`tract.record`, `tract.scrubbed`) hold no user text; the usage a
    // caller gives holds its strings (model, request id, what else the provider reported).
    let metadata = message
        .metadata
        .iter()
        .filter(|(key, _)| !key.starts_with("tract.") || key.as_str() == USAGE_METADATA_KEY)
        .map(|(key, value)| (Field::Metadata(key), Kind::Json, value.as_str()));
    content.into_iter().chain(calls).chain(metadata)
}

fn scan(detector: &Detector, kind: Kind, text: &str) -> Vec<Finding> {
    match kind {
        Kind::Plain => detector.find(text),
        Kind::Json => detector.find_in_json(text),
    }
}

/// Every finding in a message, per field (what `secrets scan` lists): (field, finding).
pub fn findings(detector: &Detector, message: &Message) -> Vec<(String, Finding)> {
    let mut out = Vec::new();
    each_finding(detector, message, |field, f, _| {
        out.push((field.to_string(), f))
    });
    out
}

/// Every finding in a message with the keyed fingerprint of its value: (field, finding,
/// fingerprint), what a scan of a store lists.
pub(crate) fn fingerprinted(
    detector: &Detector,
    key: &Key,
    message: &Message,
) -> Vec<(String, Finding, String)> {
    let mut out = Vec::new();
    each_finding(detector, message, |field, f, text| {
        let print = fingerprint(key, text.get(f.start..f.end).unwrap_or_default());
        out.push((field.to_string(), f, print));
    });
    out
}

/// Calls `found` with each finding of each field: the field, the finding, the field's text.
fn each_finding(
    detector: &Detector,
    message: &Message,
    mut found: impl FnMut(Field<'_>, Finding, &str),
) {
    for (field, kind, text) in fields(message) {
        for f in scan(detector, kind, text) {
            found(field, f, text);
        }
    }
}

/// `text` with each finding replaced by its marker, and the scrubs (offsets in the new text) as
/// `field`'s.
fn replace_findings(key: &Key, text: &str, found: &[Finding], field: &str) -> (String, Vec<Scrub>) {
    let mut out = String::with_capacity(text.len());
    let mut scrubs = Vec::with_capacity(found.len());
    let mut at = 0;
    for f in found {
        out.push_str(&text[at..f.start]);
        let print = fingerprint(key, &text[f.start..f.end]);
        scrubs.push(Scrub {
            rule: f.rule.clone(),
            field: field.to_string(),
            offset: out.len(),
            fingerprint: print.clone(),
        });
        out.push_str(&marker(&f.rule, &print));
        at = f.end;
    }
    out.push_str(&text[at..]);
    (out, scrubs)
}

/// The message with every finding replaced by its marker and `SCRUBBED_METADATA_KEY` set (appending to a list already there), or `None` when nothing was found (the common case: no copy made).
///
/// A record's carrier (metadata `tract.record`) is never scrubbed here: the caller decides.
pub fn scrub(detector: &Detector, key: &Key, message: &Message) -> Option<(Message, Vec<Scrub>)> {
    if message.metadata.contains_key(RECORD_METADATA_KEY) {
        return None;
    }
    let found: Vec<(Field<'_>, Vec<Finding>)> = fields(message)
        .filter_map(|(field, kind, text)| {
            let f = scan(detector, kind, text);
            (!f.is_empty()).then_some((field, f))
        })
        .collect();
    if found.is_empty() {
        return None;
    }
    let mut out = message.clone();
    let mut scrubs = Vec::new();
    for (field, f) in &found {
        let slot: Option<&mut String> = match (*field, &mut out.content) {
            (Field::Content, Content::Text(t)) => Some(t),
            (Field::Part(i), Content::Parts(parts)) => parts.get_mut(i).map(|p| match p {
                ContentPart::Text(t) | ContentPart::Raw(t) => t,
            }),
            (Field::Arguments(i), _) => out.tool_calls.get_mut(i).map(|c| &mut c.arguments),
            (Field::Metadata(k), _) => out.metadata.get_mut(k),
            _ => None,
        };
        if let Some(text) = slot {
            let (new, mut s) = replace_findings(key, text, f, &field.to_string());
            *text = new;
            scrubs.append(&mut s);
        }
    }
    note_scrubs(&mut out, &scrubs);
    Some((out, scrubs))
}

/// A record's carrier whose data is a transcript's lines as JSON, with each finding inside its
/// strings replaced by its marker and listed, or `None` when nothing was found. (A framework's
/// record is never given here: its encoded state is kept as written.)
pub fn scrub_record(
    detector: &Detector,
    key: &Key,
    carrier: &Message,
) -> Option<(Message, Vec<Scrub>)> {
    let findings = record_findings(detector, carrier);
    if findings.is_empty() {
        return None;
    }
    let mut out = carrier.clone();
    let mut scrubs = Vec::new();
    for (field, text, found) in findings {
        let (new, mut s) = replace_findings(key, &text, &found, field);
        if field == "content" {
            out.content = Content::Text(new);
        } else {
            out.metadata.insert(USAGE_METADATA_KEY.to_string(), new);
        }
        scrubs.append(&mut s);
    }
    note_scrubs(&mut out, &scrubs);
    Some((out, scrubs))
}

/// The findings in a transcript record's carrier, per field that has some: its data (the
/// lines, JSON) and what the answer it keeps cost (`metadata.tract.usage`, JSON), each with
/// the field's text.
pub fn record_findings<'m>(
    detector: &Detector,
    carrier: &'m Message,
) -> Vec<(&'static str, Cow<'m, str>, Vec<Finding>)> {
    let usage = carrier
        .metadata
        .get(USAGE_METADATA_KEY)
        .map(|u| Cow::Borrowed(u.as_str()));
    [
        ("content", Some(carrier.content.text())),
        ("metadata.tract.usage", usage),
    ]
    .into_iter()
    .filter_map(|(field, text)| {
        let text = text?;
        let found = detector.find_in_json(&text);
        (!found.is_empty()).then_some((field, text, found))
    })
    .collect()
}

/// What a message lists as scrubbed from it (none for a message nothing was scrubbed from).
pub fn listed(message: &Message) -> Vec<Scrub> {
    message
        .metadata
        .get(SCRUBBED_METADATA_KEY)
        .and_then(|v| serde_json::from_str(v).ok())
        .unwrap_or_default()
}

/// Lists `scrubs` in `message`'s metadata, after those listed already.
fn note_scrubs(message: &mut Message, scrubs: &[Scrub]) {
    if scrubs.is_empty() {
        return;
    }
    let mut all = listed(message);
    all.extend_from_slice(scrubs);
    if let Ok(json) = serde_json::to_string(&all) {
        message
            .metadata
            .insert(SCRUBBED_METADATA_KEY.to_string(), json);
    }
}

/// The secrets module's tests (here, at its top: they use every file of it).
#[cfg(test)]
mod tests {
    use crate::object::{Content, ContentPart, Message, Role, ToolCall};
    use crate::secrets::detect::entropy;
    use crate::secrets::rules::{self, PROBES};
    use crate::secrets::*;

    fn builtin() -> std::sync::Arc<Detector> {
        Detector::builtin()
    }

    fn names(found: &[Finding]) -> Vec<&str> {
        found.iter().map(|f| f.rule.as_str()).collect()
    }

    #[test]
    fn every_bundled_rule_compiles() {
        let d = builtin();
        let b = rules::builtin();
        assert!(b.rules.len() > 200, "{} rules", b.rules.len());
        let mut failed = Vec::new();
        for spec in &b.rules {
            let ok = regex::bytes::RegexBuilder::new(&spec.regex)
                .unicode(false)
                .size_limit(16 << 20)
                .dfa_size_limit(16 << 20)
                .build()
                .is_ok();
            if !ok {
                failed.push(spec.id.clone());
            }
            for a in &spec.allowlists {
                for r in &a.regexes {
                    if regex::bytes::RegexBuilder::new(r)
                        .unicode(false)
                        .build()
                        .is_err()
                    {
                        failed.push(format!("{} allowlist {r}", spec.id));
                    }
                }
            }
        }
        for r in &b.global.regexes {
            if regex::bytes::RegexBuilder::new(r)
                .unicode(false)
                .build()
                .is_err()
            {
                failed.push(format!("global allowlist {r}"));
            }
        }
        assert!(failed.is_empty(), "do not compile: {failed:?}");
        assert_eq!(d.rule_names().len(), b.rules.len());
        for (id, _) in rules::DROPPED {
            assert!(!d.rule_names().iter().any(|n| n == id));
            assert!(
                include_str!("gitleaks.json").contains(&format!("\"id\": \"{id}\"")),
                "{id} is not in gitleaks.json"
            );
        }
    }

    #[test]
    fn every_probe_is_found_by_its_rule() {
        let d = builtin();
        for (rule, text, secret) in PROBES {
            let found = d.find(text);
            let start = text.find(secret).unwrap();
            let want = Finding {
                rule: rule.to_string(),
                start,
                end: start + secret.len(),
            };
            assert_eq!(found, vec![want], "in {text:?}");
        }
    }

    #[test]
    fn one_secret_one_marker_in_an_env_line_prose_and_json() {
        let d = builtin();
        let token = "ghp_R7tK2mQ9xW4zL8nB3vC6yH1jF5dS0aP7gE2u";
        for text in [
            format!("GITHUB_TOKEN={token}"),
            format!("export GITHUB_TOKEN=\"{token}\""),
            format!("the token is {token}, keep it"),
            format!("github_token: {token}"),
        ] {
            let f = d.find(&text);
            assert_eq!(names(&f), ["github-pat"], "{text}");
            assert_eq!(&text[f[0].start..f[0].end], token);
        }
        let args =
            serde_json::json!({"command": format!("export GITHUB_TOKEN={token}\nls"), "token": token})
                .to_string();
        let f = d.find_in_json(&args);
        assert_eq!(names(&f), ["github-pat", "github-pat"]);
        for x in &f {
            assert_eq!(&args[x.start..x.end], token);
        }
    }

    #[test]
    fn assignments_are_secrets_whatever_their_shape() {
        let d = builtin();
        let cases = [
            ("password = \"hunter2horse\"", "hunter2horse"),
            ("DB_PASSWORD=hunter2horse", "hunter2horse"),
            ("export API_TOKEN=abc123def", "abc123def"),
            ("  password: s3cr3t-Pa55", "s3cr3t-Pa55"),
            ("{\"password\": \"correct horse\"}", "correct horse"),
            ("db_password = 'Tr0ub4dor&3'", "Tr0ub4dor&3"),
            ("client_secret: \"9f8e7d6c5b4a\"", "9f8e7d6c5b4a"),
            (
                "SECRET_KEY = \"3f9a2c7e1b4d8f6a0c5e9b2d7f1a4c8e3f9a2c7e\"",
                "3f9a2c7e1b4d8f6a0c5e9b2d7f1a4c8e3f9a2c7e",
            ),
        ];
        for (text, secret) in cases {
            let f = d.find(text);
            assert_eq!(f.len(), 1, "{text}: {f:?}");
            assert_eq!(&text[f[0].start..f[0].end], secret, "{text}");
        }
        for text in [
            "password = \"${DB_PASSWORD}\"",
            "password: <password>",
            "password = changeme",
            "password: \"***\"",
            "password=xxxxxxxx",
            "password = \"\"",
            "secret: true",
            "password_file: /run/secrets/db",
            "token = self.token",
            "password=password",
            "api_key: str",
            "password = getpass()",
            "\"input_tokens\": 123456",
            "max_tokens: 4096",
            "token_type: bearer",
            "def login(password: Optional[str] = None):",
            "const token: string = req.headers.authorization;",
            "the password: is kept in the keychain",
        ] {
            assert_eq!(d.find(text), vec![], "{text}");
        }
    }

    #[test]
    fn urls_headers_and_keys() {
        let d = builtin();
        let cases = [
            (
                "postgresql://user:pa55word@db:5432/x",
                "pa55word",
                "credentialed-url",
            ),
            (
                "mysql://root:rootpw9@localhost/db",
                "rootpw9",
                "credentialed-url",
            ),
            (
                "redis://:s3cretRedis@cache:6379/0",
                "s3cretRedis",
                "credentialed-url",
            ),
            (
                "amqp://guest:Gu3st-pw@rabbit/",
                "Gu3st-pw",
                "credentialed-url",
            ),
            (
                "git clone https://bob:Qx8kL2mN9@git.example.com/r.git",
                "Qx8kL2mN9",
                "credentialed-url",
            ),
        ];
        for (text, secret, rule) in cases {
            let f = d.find(text);
            assert_eq!(names(&f), [rule], "{text}");
            assert_eq!(&text[f[0].start..f[0].end], secret, "{text}");
        }
        assert_eq!(
            d.find("see https://example.com/a:b@c and git@github.com:o/r"),
            vec![]
        );
        let jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkZha2UifQ.Kx7Lm9Nq2Rs4Tv6Wy8Za1Bc3De5Fg7Hi9Jk1";
        let text = format!("curl -H \"Authorization: Bearer {jwt}\" https://api");
        let f = d.find(&text);
        assert_eq!(names(&f), ["jwt"]);
        assert_eq!(&text[f[0].start..f[0].end], jwt);
    }

    #[test]
    fn a_private_key_is_replaced_whole_also_in_json() {
        let d = builtin();
        let (_, text, block) = PROBES.iter().find(|p| p.0 == "private-key").unwrap();
        let json = serde_json::json!({"content": text}).to_string();
        let f = d.find_in_json(&json);
        assert_eq!(names(&f), ["private-key"]);
        let escaped = serde_json::to_string(block).unwrap();
        assert_eq!(&json[f[0].start..f[0].end], &escaped[1..escaped.len() - 1]);
    }

    #[test]
    fn session_values_are_never_findings() {
        let d = builtin();
        let sig = "EqQBCkgIARABGAIiQJ8Yq3mRtKp0vR7xW2nB5yL9cF4hJ6sD1aG0eU8iOQx3Lm9Rt7Vz2Kp5Wn8BcZt3mKp0vR7xW2nB5yL9cF4hJ6sD1aG0eU8iO==";
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
        let values = [
            serde_json::json!({"type": "thinking", "thinking": "ok", "signature": sig}),
            serde_json::json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}),
            serde_json::json!({"id": "toolu_01AbCdEfGhIjKlMnOpQrStUv", "tool_use_id": "call_9f8e7d6c5b4a3f2e1d0c", "uuid": "4f9c2e7a-1b3d-4e8f-9a6c-5d2b7e1f0c3a"}),
            serde_json::json!({"sha": "3f9a2c7e1b4d8f6a0c5e9b2d7f1a4c8e3f9a2c7e", "integrity": "sha512-Zk3mQ9xW2pL7vB4nR8tY1cJ6hF0dS5aG3f9a2c7e1b4d8f6a0c5e9b2d7f1a4c8e=="}),
            serde_json::json!({"type": "reasoning", "encrypted_content": "gAAAAABo3f9a2c7e1b4d8f6a0c5e9b2d7f1a4c8eZk3mQ9xW2pL7vB4nR8tY1cJ6hF0dS5aG"}),
            serde_json::json!({"thoughtSignature": sig, "thought_signature": sig}),
            serde_json::json!({"inlineData": {"mimeType": "image/png", "data": png}}),
        ];
        for v in values {
            let s = v.to_string();
            assert_eq!(d.find_in_json(&s), vec![], "{s}");
        }
        for text in [
            "commit 3f9a2c7e1b4d8f6a0c5e9b2d7f1a4c8e3f9a2c7e",
            "blob 3f9a2c7e1b4d8f6a0c5e9b2d7f1a4c8e3f9a2c7e3f9a2c7e1b4d8f6a0c5e9b2d",
            "request 4f9c2e7a-1b3d-4e8f-9a6c-5d2b7e1f0c3a failed",
            &format!("<img src=\"data:image/png;base64,{png}\">"),
        ] {
            assert_eq!(d.find(text), vec![], "{text}");
        }
    }

    #[test]
    fn entropy_is_gitleaks_shannon() {
        assert_eq!(entropy(b""), 0.0);
        assert_eq!(entropy(b"aaaa"), 0.0);
        assert!((entropy(b"ab") - 1.0).abs() < 1e-9);
        assert!((entropy(b"abcd") - 2.0).abs() < 1e-9);
    }

    #[test]
    fn real_claude_code_sessions_hold_no_secret() {
        let d = builtin();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        let mut files = Vec::new();
        let mut todo = vec![
            root.join("claude-code-real"),
            root.join("claude-code-agents"),
            root.join("claude-code-agents.jsonl"),
        ];
        while let Some(p) = todo.pop() {
            if p.is_dir() {
                todo.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            } else if p.extension().is_some_and(|e| e == "jsonl") {
                files.push(p);
            }
        }
        assert!(files.len() >= 5, "{files:?}");
        let mut lines = 0;
        let mut hits = Vec::new();
        for file in &files {
            let text = std::fs::read_to_string(file).unwrap();
            for (n, line) in text.lines().enumerate() {
                lines += 1;
                for f in d.find_in_json(line) {
                    let around = &line[f.start.saturating_sub(60)..(f.end + 20).min(line.len())];
                    hits.push(format!(
                        "{}:{}: {} {around:?}",
                        file.display(),
                        n + 1,
                        f.rule
                    ));
                }
            }
        }
        assert!(lines > 100);
        assert!(hits.is_empty(), "{}", hits.join("\n"));
    }

    #[test]
    fn adversarial_input_takes_linear_time() {
        let d = builtin();
        let size = 2 << 20;
        let inputs = [
            "password=".repeat(size / 9),
            "key: ".repeat(size / 5),
            "-----BEGIN RSA PRIVATE KEY-----\n".repeat(size / 32),
            "a".repeat(size),
            "ab.c-d_e".repeat(size / 8),
            "token=aZ3".repeat(size / 10),
            "Authorization: Bearer ".repeat(size / 22),
            "postgres://u:".repeat(size / 13),
        ];
        for input in &inputs {
            let t = std::time::Instant::now();
            let _ = d.find(input);
            let _ = d.find_in_json(input);
            let took = t.elapsed();
            assert!(
                took < std::time::Duration::from_secs(8),
                "{:?}… took {took:?}",
                &input[..20]
            );
        }
    }

    fn message_with(text: &str, args: &str) -> Message {
        Message {
            role: Role::Assistant,
            content: Content::Parts(vec![
                ContentPart::Text(text.to_string()),
                ContentPart::Raw(
                    serde_json::json!({"type": "thinking", "thinking": "hm", "signature": "EqQBCkgIARABGAIiQJ8Yq3mRtKp0vR7xW2nB5yL9cF4hJ6sD1aG0eU8iOQx3Lm9Rt7Vz2Kp5Wn8Bc"})
                        .to_string(),
                ),
            ]),
            name: None,
            tool_calls: vec![ToolCall {
                id: "toolu_01AbCdEfGhIjKlMnOpQrStUv".into(),
                name: "Bash".into(),
                arguments: args.to_string(),
            }],
            tool_call_id: None,
            is_error: false,
            metadata: Default::default(),
        }
    }

    #[test]
    fn scrubbing_keeps_json_valid_and_markers_equal() {
        let d = builtin();
        let key: Key = [7; 32];
        let token = "ghp_R7tK2mQ9xW4zL8nB3vC6yH1jF5dS0aP7gE2u";
        let args = serde_json::json!({"command": format!("GITHUB_TOKEN={token} gh pr list"), "password": "hunter2horse"}).to_string();
        let m = message_with(&format!("I will use {token} now"), &args);
        let (out, scrubs) = scrub(&d, &key, &m).unwrap();
        let want = marker("github-pat", &fingerprint(&key, token));
        let Content::Parts(parts) = &out.content else {
            panic!()
        };
        let ContentPart::Text(t) = &parts[0] else {
            panic!()
        };
        assert_eq!(t, &format!("I will use {want} now"));
        assert_eq!(parts[1], m_part(&m, 1), "the thinking part is untouched");
        let v: serde_json::Value = serde_json::from_str(&out.tool_calls[0].arguments).unwrap();
        assert_eq!(v["command"], format!("GITHUB_TOKEN={want} gh pr list"));
        assert!(
            v["password"]
                .as_str()
                .unwrap()
                .starts_with("[REDACTED:password-assignment:")
        );
        assert_eq!(out.tool_calls[0].id, m.tool_calls[0].id);
        assert_eq!(scrubs.len(), 3);
        for s in &scrubs {
            let text = match s.field.as_str() {
                "content[0]" => t.as_str(),
                "tool_calls[0].arguments" => out.tool_calls[0].arguments.as_str(),
                other => panic!("{other}"),
            };
            assert!(text[s.offset..].starts_with("[REDACTED:"));
        }
        let listed: Vec<Scrub> =
            serde_json::from_str(&out.metadata[SCRUBBED_METADATA_KEY]).unwrap();
        assert_eq!(listed, scrubs);
        let debug = format!("{out:?}{scrubs:?}");
        assert!(!debug.contains(token) && !debug.contains("hunter2horse"));
        // Idempotent.
        assert!(scrub(&d, &key, &out).is_none());
        // Same fingerprint across messages, different across keys.
        let other = Message::text(Role::User, format!("export GITHUB_TOKEN={token}"));
        let (o, _) = scrub(&d, &key, &other).unwrap();
        assert_eq!(o.content.text(), format!("export GITHUB_TOKEN={want}"));
        let (o2, _) = scrub(&d, &[8; 32], &other).unwrap();
        assert_ne!(o2.content.text(), o.content.text());
    }

    fn m_part(m: &Message, i: usize) -> ContentPart {
        match &m.content {
            Content::Parts(p) => p[i].clone(),
            Content::Text(_) => panic!(),
        }
    }

    #[test]
    fn a_message_that_is_only_a_secret_and_records() {
        let d = builtin();
        let key: Key = [1; 32];
        let secret = "sk_live_4eC39HqLyjWDarjtT1zdp7dcXy9";
        let m = Message::text(Role::User, secret);
        let (out, s) = scrub(&d, &key, &m).unwrap();
        assert_eq!(
            out.content.text(),
            marker("stripe-access-token", &s[0].fingerprint)
        );
        assert_eq!(s[0].offset, 0);
        let record = crate::object::record_carrier("x.y", secret.to_string());
        assert!(scrub(&d, &key, &record).is_none());
        assert_eq!(findings(&d, &record).len(), 1);
        assert!(scrub(&d, &key, &Message::text(Role::User, "hello")).is_none());
        // Appends to a list already there; tract's own metadata is not scanned.
        let mut again = Message::text(Role::User, format!("and {secret}"));
        again.metadata.insert(
            SCRUBBED_METADATA_KEY.into(),
            serde_json::to_string(&s).unwrap(),
        );
        let (out, _) = scrub(&d, &key, &again).unwrap();
        let listed: Vec<Scrub> =
            serde_json::from_str(&out.metadata[SCRUBBED_METADATA_KEY]).unwrap();
        assert_eq!(listed.len(), 2);
        let mut meta = Message::text(Role::User, "hi");
        meta.metadata.insert(
            "env".into(),
            serde_json::json!({"PASSWORD": "hunter2horse"}).to_string(),
        );
        let (out, s) = scrub(&d, &key, &meta).unwrap();
        assert_eq!(s[0].field, "metadata.env");
        let v: serde_json::Value = serde_json::from_str(&out.metadata["env"]).unwrap();
        assert!(v["PASSWORD"].as_str().unwrap().starts_with("[REDACTED:"));
    }

    #[test]
    fn policies_are_validated_without_echoing_secrets() {
        let ok = SecretsPolicy {
            rules: [("acme-key".to_string(), r"acme_[0-9a-f]{16}".to_string())].into(),
            disabled: ["twilio-account-sid".to_string()].into(),
            allow: vec!["hunter2horse".into(), "/^test-/".into()],
            ..SecretsPolicy::default()
        };
        ok.validate().unwrap();
        let d = Detector::new(&ok).unwrap();
        assert!(d.rule_names().contains(&"acme-key".to_string()));
        assert!(!d.rule_names().contains(&"twilio-account-sid".to_string()));
        assert_eq!(names(&d.find("x acme_0123456789abcdef y")), ["acme-key"]);
        assert_eq!(d.find("password = \"hunter2horse\""), vec![]);
        assert_eq!(d.find("AC7d2f9b4e1a8c3f6d0b5e2a9c4f7d1b8e"), vec![]);
        let bad = |p: SecretsPolicy| p.validate().unwrap_err().to_string();
        let rule = |n: &str, r: &str| SecretsPolicy {
            rules: [(n.to_string(), r.to_string())].into(),
            ..SecretsPolicy::default()
        };
        assert!(bad(rule("", "x")).contains("name"));
        assert!(bad(rule("Acme", "x")).contains("name"));
        assert!(bad(rule("github-pat", "ghp_x")).contains("built-in"));
        assert!(bad(rule("a", "(")).contains("does not compile"));
        assert!(bad(rule("a", "x*")).contains("empty string"));
        assert!(bad(rule("a", r"\w+")).contains("ordinary text"));
        let e = bad(SecretsPolicy {
            disabled: ["github-pats".to_string()].into(),
            ..SecretsPolicy::default()
        });
        assert!(e.contains("github-pat'"), "{e}");
        for (allow, why) in [
            ("", "empty"),
            ("/(/", "compile"),
            ("/.*/", "empty string"),
            ("/./", "every sample"),
        ] {
            let e = bad(SecretsPolicy {
                allow: vec![allow.into()],
                ..SecretsPolicy::default()
            });
            assert!(e.contains(why), "{allow}: {e}");
        }
        let json = r#"{"enabled": false, "disabled": ["jwt"]}"#;
        let p: SecretsPolicy = serde_json::from_str(json).unwrap();
        assert!(!p.enabled && p.rules.is_empty());
        assert!(serde_json::from_str::<SecretsPolicy>(r#"{"enable": true}"#).is_err());
        assert!(SecretsPolicy::default().enabled);
    }
}
