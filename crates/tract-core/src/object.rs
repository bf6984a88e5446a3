//! The two object kinds, blob and commit, and their hashed encoding.
//!
//! An object's bytes are a 4-byte header (`b"tr"`, kind, format version) followed by the
//! postcard encoding of its body; its id is BLAKE3 over exactly those bytes. Hashed types hold
//! only deterministic data (no floats, no hash maps); provider JSON is kept verbatim as text.

use crate::error::{Error, Result};
use crate::id::{BlobId, CommitId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The newest object format version this build reads and writes. Version 2 added merge
/// commits; every other object is still written as version 1, so its id does not change.
pub const OBJECT_VERSION: u8 = 3;
/// The version of objects that version 1 can describe.
const BASE_VERSION: u8 = 1;
const MAGIC: &[u8; 2] = b"tr";
const KIND_BLOB: u8 = b'b';
const KIND_COMMIT: u8 = b'c';
const HEADER_LEN: usize = 4;

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Role {
    /// Instructions to the model.
    System,
    /// The user.
    User,
    /// The model; may carry tool calls.
    Assistant,
    /// A tool's result, answering one tool call.
    Tool,
}

impl Role {
    /// The lowercase name used by every provider format.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    /// Parses `system | user | assistant | tool`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "system" => Ok(Role::System),
            "user" => Ok(Role::User),
            "assistant" => Ok(Role::Assistant),
            "tool" => Ok(Role::Tool),
            other => Err(Error::invalid_message(format!(
                "unknown role '{other}' (expected system, user, assistant or tool)"
            ))),
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One part of a multi-part content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ContentPart {
    /// A text part.
    Text(String),
    /// Any other part (an image, a file), kept as the provider JSON object it came as.
    Raw(String),
}

/// A message's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Content {
    /// Plain text (possibly empty).
    Text(String),
    /// Ordered parts.
    Parts(Vec<ContentPart>),
}

impl Content {
    /// The text of the content: the text itself, or the text parts joined by newlines.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Content::Text(t) => std::borrow::Cow::Borrowed(t),
            Content::Parts(parts) => {
                let texts: Vec<std::borrow::Cow<'_, str>> = parts
                    .iter()
                    .filter_map(|p| match p {
                        ContentPart::Text(t) => Some(std::borrow::Cow::Borrowed(t.as_str())),
                        ContentPart::Raw(raw) => raw_text(raw).map(std::borrow::Cow::Owned),
                    })
                    .collect();
                std::borrow::Cow::Owned(texts.join("\n"))
            }
        }
    }

    /// Whether there is nothing in it.
    pub fn is_empty(&self) -> bool {
        match self {
            Content::Text(t) => t.is_empty(),
            Content::Parts(p) => p.is_empty(),
        }
    }
}

/// The text of a raw part that is a text block with more than its text (a `cache_control`,
/// citations): what is said is still said.
fn raw_text(raw: &str) -> Option<String> {
    // Raw parts are stored compact; most are images or documents (often large), which are not
    // parsed here: only a part that can be a text block is.
    if !raw.contains(r#""type":"text""#) {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(raw).ok()?;
    if v.get("type")?.as_str()? != "text" {
        return None;
    }
    v.get("text")?.as_str().map(str::to_string)
}

/// How the note of a hook's summary edit begins (`summarized by extractive`): how a viewer
/// tells a result the policy or a hook summarized from one edited by hand, and what makes the
/// edit's content derived from the version it replaced.
pub const HOOK_SUMMARY_NOTE: &str = "summarized by ";

/// A tool call requested by an assistant message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's call id; the result carries it as `tool_call_id`.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, as the JSON text the model produced (kept verbatim, never re-serialized).
    pub arguments: String,
}

/// One message payload: the body of a blob.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// What is said.
    pub content: Content,
    /// The tool name of a tool result, or a participant name.
    pub name: Option<String>,
    /// Tool calls of an assistant message, in the order the model made them.
    pub tool_calls: Vec<ToolCall>,
    /// The call a tool result answers.
    pub tool_call_id: Option<String>,
    /// Whether a tool result reports a failure.
    pub is_error: bool,
    /// Extra provider fields and user metadata: key to verbatim JSON text.
    pub metadata: BTreeMap<String, String>,
}

impl Message {
    /// What stands for this message once its content is removed (redacted, or replaced by
    /// retention): `text` as content, with the role, name, call id, error flag and tool calls
    /// (ids and names; arguments emptied, as they may hold what was removed), so requests
    /// built from the view stay valid, and what the answer cost.
    pub fn stand_in(&self, text: impl Into<String>) -> Message {
        Message {
            role: self.role,
            content: Content::Text(text.into()),
            name: self.name.clone(),
            tool_calls: self
                .tool_calls
                .iter()
                .map(|c| ToolCall {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    arguments: "{}".to_string(),
                })
                .collect(),
            tool_call_id: self.tool_call_id.clone(),
            is_error: self.is_error,
            // What the answer cost stays: it was paid whatever became of the content.
            metadata: self
                .metadata
                .iter()
                .filter(|(k, _)| k.as_str() == USAGE_METADATA_KEY)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        }
    }

    /// A message with text content and nothing else.
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Message {
            role,
            content: Content::Text(text.into()),
            name: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            is_error: false,
            metadata: BTreeMap::new(),
        }
    }

    /// A tool result for `call_id` from tool `name`.
    pub fn tool_result(
        call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
        is_error: bool,
    ) -> Self {
        Message {
            role: Role::Tool,
            content: Content::Text(content.into()),
            name: Some(name.into()),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
            is_error,
            metadata: BTreeMap::new(),
        }
    }

    /// Checks what the roles require: a tool result names its call, only assistants call
    /// tools, call ids are present and unique.
    pub fn validate(&self) -> Result<()> {
        if self.role == Role::Tool {
            match &self.tool_call_id {
                Some(id) if !id.is_empty() => {}
                _ => {
                    return Err(Error::invalid_message(
                        "a tool message needs a non-empty tool_call_id",
                    ));
                }
            }
        } else if self.tool_call_id.is_some() {
            return Err(Error::invalid_message(format!(
                "only tool messages carry a tool_call_id (this one is {})",
                self.role
            )));
        }
        if !self.tool_calls.is_empty() && self.role != Role::Assistant {
            return Err(Error::invalid_message(format!(
                "only assistant messages carry tool_calls (this one is {})",
                self.role
            )));
        }
        let mut seen = std::collections::BTreeSet::new();
        for call in &self.tool_calls {
            if call.id.is_empty() || call.name.is_empty() {
                return Err(Error::invalid_message("a tool call needs an id and a name"));
            }
            if !seen.insert(call.id.as_str()) {
                return Err(Error::invalid_message(format!(
                    "tool call id '{}' appears twice in one message",
                    call.id
                )));
            }
        }
        if self.is_error && self.role != Role::Tool {
            return Err(Error::invalid_message("only tool results can be errors"));
        }
        Ok(())
    }

    /// Refuses a user or system message that says nothing (no content, or only blank text):
    /// what a caller writes must say something. A tool call's assistant message may be empty.
    /// Imported transcripts and framework mirrors are not held to this: a real transcript keeps
    /// the empty messages it has.
    pub fn check_says_something(&self) -> Result<()> {
        if !matches!(self.role, Role::User | Role::System) {
            return Ok(());
        }
        let blank = |t: &str| t.trim().is_empty();
        let says_nothing = match &self.content {
            Content::Text(t) => blank(t),
            Content::Parts(parts) => parts
                .iter()
                .all(|p| matches!(p, ContentPart::Text(t) if blank(t))),
        };
        if says_nothing {
            return Err(Error::invalid_message(format!(
                "a {} message cannot be empty",
                self.role
            )));
        }
        Ok(())
    }

    /// The object bytes of this message as a blob.
    pub fn encode(&self) -> Result<Vec<u8>> {
        encode(KIND_BLOB, BASE_VERSION, self)
    }

    /// The id of this message as a blob.
    pub fn id(&self) -> Result<BlobId> {
        Ok(BlobId::of(&self.encode()?))
    }

    /// Decodes blob bytes (in their canonical encoding only).
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        decode(KIND_BLOB, bytes, |_| BASE_VERSION)
    }
}

/// What a commit does to the view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Op {
    /// A new message at the end of the view.
    Append,
    /// Replaces the content of the position `target` (an append, or an earlier edit of it).
    Edit {
        /// The commit edited.
        target: CommitId,
    },
    /// Replaces the contiguous view positions `sources` with this commit's summary, at the
    /// position of the first source. The sources stay in history.
    Compress {
        /// The positions summarized, in view order.
        sources: Vec<CommitId>,
        /// Positions the caller asked to keep (they split the selection into runs).
        preserved: Vec<CommitId>,
        /// Who summarized: `extractive`, `manual`, `callable:NAME`, `openai:MODEL@URL`, ….
        summarizer: String,
        /// The request's parameters (system prompt, instructions, target tokens), verbatim.
        params: BTreeMap<String, String>,
    },
    /// Brings another branch back: the commit's second parent is that branch's tip. With
    /// [`MergeStrategy::Append`] the view continues with the other branch's messages since
    /// `base` (the commit carries no blob); with [`MergeStrategy::ToolResult`] the commit's blob
    /// is the result of a pending tool call.
    Merge {
        /// The fork point: the newest commit both sides share, on the first-parent line of the
        /// merged branch.
        base: CommitId,
        /// The merged branch's name when it was merged (the second parent is its tip).
        branch: String,
        /// How the other branch comes back.
        strategy: MergeStrategy,
        /// Who summarized the branch into the result, when it was summarized.
        summarizer: Option<String>,
    },
    /// Keeps data of the caller's own (a framework's checkpoint, a session store's entries) on
    /// the branch, beside its messages: the commit's blob holds the data as a system message's
    /// text. The view does not change; history, sync, gc and redaction treat it as any commit.
    Record {
        /// What the data is, as a dotted name (`langgraph.checkpoint`): how its owner finds it.
        kind: String,
    },
}

/// The metadata key of what an assistant message cost (a `Usage`, in `usage.rs`).
pub const USAGE_METADATA_KEY: &str = "tract.usage";

/// The metadata key that marks a record's blob (its value is the kind, as JSON).
pub const RECORD_METADATA_KEY: &str = "tract.record";

/// The blob a record of `kind` with `data` carries: the data as a system message's text,
/// marked with the kind so that it never shares a blob with a message.
pub fn record_carrier(kind: &str, data: String) -> Message {
    let mut m = Message::text(Role::System, data);
    m.metadata.insert(
        RECORD_METADATA_KEY.into(),
        serde_json::Value::String(kind.to_string()).to_string(),
    );
    m
}

/// The longest record kind accepted, in bytes.
const RECORD_KIND_MAX: usize = 128;

/// Checks a record kind: 1 to 128 ASCII letters, digits and `.`, `_`, `-`, `:`, `/`, not
/// starting or ending with `.` (kinds are dotted names, matched by prefix).
pub fn check_record_kind(kind: &str) -> Result<()> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || "._-:/".contains(c);
    if kind.is_empty()
        || kind.len() > RECORD_KIND_MAX
        || !kind.chars().all(ok_char)
        || kind.starts_with('.')
        || kind.ends_with('.')
    {
        return Err(Error::invalid_input(format!(
            "invalid record kind '{kind}': use 1 to {RECORD_KIND_MAX} ASCII letters, digits and \
             . _ - : /, not starting or ending with '.'"
        )));
    }
    Ok(())
}

/// How a merge brings another branch's work into the view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum MergeStrategy {
    /// The view continues with the other branch's messages since the fork point.
    Append,
    /// The other branch answers the pending tool call `call_id` (a sub-agent's answer coming
    /// back as the result of the call that started it).
    ToolResult {
        /// The call answered.
        call_id: String,
    },
}

impl MergeStrategy {
    /// `append` or `tool_result`.
    pub fn name(&self) -> &'static str {
        match self {
            MergeStrategy::Append => "append",
            MergeStrategy::ToolResult { .. } => "tool_result",
        }
    }
}

impl Op {
    /// A short name: `append`, `edit`, `compress`, `merge`, `record`.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Append => "append",
            Op::Edit { .. } => "edit",
            Op::Compress { .. } => "compress",
            Op::Merge { .. } => "merge",
            Op::Record { .. } => "record",
        }
    }

    /// The object format version a commit with this operation needs.
    fn version(&self) -> u8 {
        match self {
            Op::Merge { .. } => 2,
            Op::Record { .. } => 3,
            Op::Append | Op::Edit { .. } | Op::Compress { .. } => BASE_VERSION,
        }
    }
}

/// A commit: the body of a commit object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commit {
    /// Zero parents for a root, two for a merge (the branch merged into first), one
    /// otherwise.
    pub parents: Vec<CommitId>,
    /// What it does.
    pub op: Op,
    /// The blob it carries, for operations with content.
    pub blob: Option<BlobId>,
    /// Microseconds since the Unix epoch.
    pub timestamp_us: u64,
    /// An optional note.
    pub message: Option<String>,
}

impl Commit {
    /// The object bytes of this commit.
    pub fn encode(&self) -> Result<Vec<u8>> {
        encode(KIND_COMMIT, self.op.version(), self)
    }

    /// The id of this commit.
    pub fn id(&self) -> Result<CommitId> {
        Ok(CommitId::of(&self.encode()?))
    }

    /// Decodes commit bytes (in their canonical encoding only).
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        decode(KIND_COMMIT, bytes, |c: &Commit| c.op.version())
    }

    /// Every commit this one refers to: its parents, and an edit's target, a compression's
    /// sources or a merge's base. What keeps a commit reachable (`fsck`, `gc`).
    pub fn links(&self) -> impl Iterator<Item = CommitId> + '_ {
        let op: &[CommitId] = match &self.op {
            Op::Append | Op::Record { .. } => &[],
            Op::Edit { target } => std::slice::from_ref(target),
            Op::Compress { sources, .. } => sources,
            Op::Merge { base, .. } => std::slice::from_ref(base),
        };
        self.parents.iter().chain(op).copied()
    }

    /// The first parent, the one the view folds along.
    pub fn parent(&self) -> Option<CommitId> {
        self.parents.first().copied()
    }
}

fn encode<T: Serialize>(kind: u8, version: u8, body: &T) -> Result<Vec<u8>> {
    let mut out = vec![MAGIC[0], MAGIC[1], kind, version];
    postcard::to_io(body, &mut out)
        .map_err(|e| Error::invalid_input(format!("cannot encode object: {e}")))?;
    Ok(out)
}

/// Checks an object's header (magic, kind, a version this build reads) without decoding the
/// body.
pub(crate) fn check_header(bytes: &[u8], commit: bool) -> Result<()> {
    header(if commit { KIND_COMMIT } else { KIND_BLOB }, bytes)
}

fn header(kind: u8, bytes: &[u8]) -> Result<()> {
    if bytes.len() < HEADER_LEN || &bytes[..2] != MAGIC {
        return Err(Error::corrupt("object without a tract header"));
    }
    if bytes[2] != kind {
        return Err(Error::corrupt(format!(
            "expected a {} object, found kind '{}'",
            if kind == KIND_BLOB { "blob" } else { "commit" },
            bytes[2] as char
        )));
    }
    if bytes[3] > OBJECT_VERSION {
        return Err(Error::NewerFormat {
            found: u32::from(bytes[3]),
            supported: u32::from(OBJECT_VERSION),
        });
    }
    Ok(())
}

/// Decodes an object whose version, for the value decoded, must be `version(&value)`.
fn decode<T: Serialize + for<'de> Deserialize<'de>>(
    kind: u8,
    bytes: &[u8],
    version: impl FnOnce(&T) -> u8,
) -> Result<T> {
    header(kind, bytes)?;
    let body = &bytes[HEADER_LEN..];
    let (value, rest) = postcard::take_from_bytes(body)
        .map_err(|e| Error::corrupt(format!("object does not decode: {e}")))?;
    if !rest.is_empty() {
        return Err(Error::corrupt("object has trailing bytes"));
    }
    // One value, one encoding: bytes that decode but are not what `encode` writes (another
    // version byte, an over-long varint, unsorted map keys) would give an object a second id.
    if bytes[3] != version(&value) || !encodes_to(&value, body) {
        return Err(Error::corrupt("object is not in its canonical encoding"));
    }
    Ok(value)
}

/// Whether `value` encodes to exactly `bytes`, compared as it is written (nothing allocated).
fn encodes_to<T: Serialize>(value: &T, bytes: &[u8]) -> bool {
    struct Expect<'a>(&'a [u8]);
    impl std::io::Write for Expect<'_> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            match self.0.strip_prefix(buf) {
                Some(rest) => {
                    self.0 = rest;
                    Ok(buf.len())
                }
                None => Err(std::io::Error::other("differs")),
            }
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut expect = Expect(bytes);
    postcard::to_io(value, &mut expect).is_ok() && expect.0.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixed_message() -> Message {
        let mut m = Message::text(Role::Assistant, "Let me look.");
        m.tool_calls.push(ToolCall {
            id: "call_1".into(),
            name: "grep".into(),
            arguments: r#"{"pattern": "TODO", "path": "src/"}"#.into(),
        });
        m.metadata.insert("model".into(), "\"gpt-4o\"".into());
        m
    }

    /// Pins the format: if this id changes, every stored id changes. Bump OBJECT_VERSION and
    /// write a migration instead of editing the expected value.
    #[test]
    fn golden_blob_and_commit_ids() {
        let blob = fixed_message().encode().unwrap();
        let blob_id = BlobId::of(&blob);
        assert_eq!(
            blob_id.to_hex(),
            "84b10338ce75d37eb2b1508cf96a691305a8e6b4876d8a6746c2de835b9bd921",
        );
        let commit = Commit {
            parents: vec![CommitId::from_bytes([7; 32])],
            op: Op::Append,
            blob: Some(blob_id),
            timestamp_us: 1_700_000_000_000_000,
            message: None,
        };
        assert_eq!(
            commit.id().unwrap().to_hex(),
            "d08b6f8c7ffed08c5355898a6639cf23ea17a6cb2576c670df4f67baf6e59018",
        );
    }

    #[test]
    fn round_trip_and_kind_check() {
        let m = fixed_message();
        let bytes = m.encode().unwrap();
        assert_eq!(Message::decode(&bytes).unwrap(), m);
        assert!(matches!(Commit::decode(&bytes), Err(Error::Corrupt { .. })));
        let mut newer = bytes.clone();
        newer[3] = OBJECT_VERSION + 1;
        assert!(matches!(
            Message::decode(&newer),
            Err(Error::NewerFormat { .. })
        ));
        assert!(Message::decode(&bytes[..bytes.len() - 1]).is_err());
    }

    #[test]
    fn merge_commits_are_version_2_and_others_stay_version_1() {
        let merge = Commit {
            parents: vec![CommitId::from_bytes([1; 32]), CommitId::from_bytes([2; 32])],
            op: Op::Merge {
                base: CommitId::from_bytes([3; 32]),
                branch: "sub".into(),
                strategy: MergeStrategy::ToolResult {
                    call_id: "call_1".into(),
                },
                summarizer: None,
            },
            blob: None,
            timestamp_us: 1,
            message: None,
        };
        let bytes = merge.encode().unwrap();
        assert_eq!(bytes[3], 2);
        assert_eq!(Commit::decode(&bytes).unwrap(), merge);
        let append = Commit {
            op: Op::Append,
            ..merge
        };
        assert_eq!(append.encode().unwrap()[3], 1);
        assert_eq!(fixed_message().encode().unwrap()[3], 1);
    }

    #[test]
    fn record_commits_are_version_3() {
        let record = Commit {
            parents: vec![CommitId::from_bytes([1; 32])],
            op: Op::Record {
                kind: "langgraph.checkpoint".into(),
            },
            blob: Some(BlobId::from_bytes([2; 32])),
            timestamp_us: 1,
            message: None,
        };
        let bytes = record.encode().unwrap();
        assert_eq!(bytes[3], 3);
        assert_eq!(Commit::decode(&bytes).unwrap(), record);
        assert_eq!(record.links().count(), 1, "its parent only");
    }

    #[test]
    fn kinds_are_dotted_names() {
        for ok in ["langgraph.checkpoint", "claude.entries", "a", "x-y_z:1/2"] {
            assert!(check_record_kind(ok).is_ok(), "{ok}");
        }
        for bad in ["", ".a", "a.", "has space", "é", &"k".repeat(129)] {
            assert!(
                matches!(check_record_kind(bad), Err(Error::InvalidInput { .. })),
                "{bad}"
            );
        }
    }

    fn is_not_canonical<T: std::fmt::Debug>(result: Result<T>) -> bool {
        matches!(result, Err(Error::Corrupt { message }) if message.contains("canonical"))
    }

    /// Found by fuzzing (object_decode): bytes that decode but differ from what `encode`
    /// writes were accepted, so one object could be stored under a second id.
    #[test]
    fn only_the_canonical_encoding_decodes() {
        let merge = Commit {
            parents: vec![CommitId::from_bytes([1; 32]), CommitId::from_bytes([2; 32])],
            op: Op::Merge {
                base: CommitId::from_bytes([3; 32]),
                branch: "sub".into(),
                strategy: MergeStrategy::Append,
                summarizer: None,
            },
            blob: None,
            timestamp_us: 1,
            message: None,
        };
        let append = Commit {
            op: Op::Append,
            ..merge.clone()
        };
        // The version byte must be the one the value is written with.
        let mut bytes = append.encode().unwrap();
        bytes[3] = 2;
        assert!(is_not_canonical(Commit::decode(&bytes)));
        let mut bytes = merge.encode().unwrap();
        bytes[3] = 1;
        assert!(is_not_canonical(Commit::decode(&bytes)));
        let mut bytes = fixed_message().encode().unwrap();
        bytes[3] = 0;
        assert!(is_not_canonical(Message::decode(&bytes)));
        // An over-long varint: the timestamp 1 written in two bytes.
        let bytes = append.encode().unwrap();
        let (head, last) = bytes.split_at(bytes.len() - 2);
        assert_eq!(last, [1, 0], "timestamp 1, then no message");
        let long = [head, &[0x81, 0x00, 0x00]].concat();
        assert!(is_not_canonical(Commit::decode(&long)));
        // Metadata keys out of order.
        let mut m = Message::text(Role::User, "x");
        m.metadata.insert("a".into(), "1".into());
        m.metadata.insert("b".into(), "2".into());
        let bytes = m.encode().unwrap();
        let swapped = String::from_utf8_lossy(&bytes)
            .replace("\u{1}a\u{1}1\u{1}b\u{1}2", "\u{1}b\u{1}2\u{1}a\u{1}1")
            .into_bytes();
        assert_ne!(swapped, bytes);
        assert!(is_not_canonical(Message::decode(&swapped)));
        // What encode writes still decodes.
        assert_eq!(Commit::decode(&merge.encode().unwrap()).unwrap(), merge);
        assert_eq!(Message::decode(&m.encode().unwrap()).unwrap(), m);
    }

    #[test]
    fn identical_payloads_have_identical_ids() {
        let a = fixed_message().encode().unwrap();
        let b = fixed_message().encode().unwrap();
        assert_eq!(BlobId::of(&a), BlobId::of(&b));
    }

    #[test]
    fn validation_rejects_inconsistent_messages() {
        let mut tool = Message::tool_result("", "grep", "x", false);
        assert!(tool.validate().is_err());
        tool.tool_call_id = Some("c1".into());
        assert!(tool.validate().is_ok());
        let mut user = Message::text(Role::User, "hi");
        user.is_error = true;
        assert!(user.validate().is_err());
        let mut dup = fixed_message();
        dup.tool_calls.push(dup.tool_calls[0].clone());
        assert!(dup.validate().is_err());
    }
}
