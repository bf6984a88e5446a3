//! How Claude Code reads its own session files: which lines make the conversation, in which
//! order. This is the rule of the Claude Agent SDK's transcript reader (`get_session_messages`,
//! `_build_conversation_chain` and `_recover_orphaned_parallel_tool_results`), the reference
//! for what a session holds (DESIGN §13), followed step for step, oddities included:
//!
//! - A line counts when it parses as a JSON object of type `user`, `assistant`, `progress`,
//!   `system` or `attachment` with a string `uuid`; any other line is left out (a line that is
//!   not JSON too, as the reader skips it).
//! - The leaf is the newest line of the main conversation that no line names as its parent
//!   (walked back to its nearest user or assistant line); the conversation is the `parentUuid`
//!   chain from it. A parent that is not in the file ends the chain there; so does a compact
//!   boundary (its `logicalParentUuid` is not followed).
//! - A response that ran tools in parallel is put back whole: its lines and the results the
//!   chain skipped follow its last line on the chain.
//! - The messages shown are the chain's user and assistant lines that are not meta, sidechain
//!   or team lines.
//!
//! Where tract reads further than the reader, the rule is here too: the chain before each
//! compact boundary, followed back through `logicalParentUuid`, and whether a file caught
//! while being written is read as it will stay ([`Reading::unsettled`]).
//!
//! [`read`] gives a session's reading whole and [`sub_agent`] a sub-agent's chain; the Claude
//! Code format of `formats::transcript` turns them into steps (what a line becomes in tract),
//! in their order. This module decides which lines and in which order, and uses nothing above
//! it.

use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// The line types that carry `uuid` and `parentUuid` links.
const ENTRY_TYPES: [&str; 5] = ["user", "assistant", "progress", "system", "attachment"];

/// One line of a session file that takes part in the chain, with the fields the chain is
/// built from read once (a session has thousands of lines, each looked at many times).
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    /// Its line in the file (from 1).
    pub line: usize,
    /// The line.
    pub value: &'a Value,
    uuid: &'a str,
    kind: &'a str,
    parent: Option<&'a str>,
    response: Option<&'a str>,
    sidechain: bool,
    meta: bool,
    team: bool,
}

impl<'a> Entry<'a> {
    fn new(line: usize, value: &'a Value) -> Self {
        let mut e = Entry {
            line,
            value,
            uuid: "",
            kind: "",
            parent: None,
            response: None,
            sidechain: false,
            meta: false,
            team: false,
        };
        let Value::Object(fields) = value else {
            return e;
        };
        // One pass over the fields: a line has a dozen, and hashed look-ups of each cost more.
        let mut message = None;
        for (k, v) in fields {
            match k.as_str() {
                "type" => e.kind = v.as_str().unwrap_or_default(),
                "uuid" => e.uuid = v.as_str().unwrap_or_default(),
                "parentUuid" => e.parent = v.as_str().filter(|p| !p.is_empty()),
                "isSidechain" => e.sidechain = truthy(v),
                "isMeta" => e.meta = truthy(v),
                "teamName" => e.team = truthy(v),
                "message" => message = Some(v),
                _ => {}
            }
        }
        if e.kind == "assistant" {
            e.response = message
                .and_then(|m| m.get("id"))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty());
        }
        e
    }

    /// The line's `uuid`.
    pub fn uuid(&self) -> &'a str {
        self.uuid
    }

    /// The line's `type`.
    pub fn kind(&self) -> &'a str {
        self.kind
    }

    /// Its parent, as the reader follows it: a non-empty string (any other value ends the
    /// chain).
    pub fn parent(&self) -> Option<&'a str> {
        self.parent
    }

    /// Whether it is a sub-agent's line (`isSidechain`, as Python takes it).
    pub fn sidechain(&self) -> bool {
        self.sidechain
    }

    /// The API response id (`message.id`) of an assistant line.
    pub fn response_id(&self) -> Option<&'a str> {
        self.response
    }

    /// Whether the reader shows this line as a message.
    pub fn visible(&self) -> bool {
        matches!(self.kind, "user" | "assistant") && !self.meta && !self.sidechain && !self.team
    }

    /// Whether it is a compact boundary: a `system` line of subtype `compact_boundary`, where
    /// the reader's chain stops.
    pub fn compact_boundary(&self) -> bool {
        self.kind == "system"
            && self.value.get("subtype").and_then(Value::as_str) == Some("compact_boundary")
    }

    /// Whether the reader may take it as the conversation's leaf.
    fn main(&self) -> bool {
        !self.sidechain && !self.team && !self.meta
    }

    /// `field` of each `block_type` content block of its message (string values only).
    fn block_ids(&self, block_type: &str, field: &str) -> Vec<&'a str> {
        let Some(blocks) = self
            .value
            .get("message")
            .and_then(|m| m.get("content"))
            .and_then(Value::as_array)
        else {
            return Vec::new();
        };
        blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some(block_type))
            .filter_map(|b| b.get(field).and_then(Value::as_str))
            .collect()
    }

    /// A user line with a parent that carries a `tool_result` block.
    fn is_tool_result(&self) -> bool {
        self.kind() == "user" && self.parent().is_some() && holds_tool_result(self.value)
    }

    /// Written by the same (sub-)agent as `other`.
    fn same_writer(&self, other: &Entry<'_>) -> bool {
        self.sidechain == other.sidechain && self.value.get("agentId") == other.value.get("agentId")
    }

    /// The timestamp the reader sorts recovered lines by (a string, else empty).
    fn timestamp_key(&self) -> &'a str {
        self.value
            .get("timestamp")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

/// Whether a line's message holds a `tool_result` block.
pub fn holds_tool_result(line: &Value) -> bool {
    line.get("message")
        .and_then(|m| m.get("content"))
        .and_then(Value::as_array)
        .is_some_and(|blocks| {
            blocks
                .iter()
                .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
        })
}

/// Python's truth value of a JSON value.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// The lines of a file that take part in the chain, in file order.
pub fn entries(values: &[(usize, Value)]) -> Vec<Entry<'_>> {
    values
        .iter()
        .filter(|(_, v)| {
            v.get("type")
                .and_then(Value::as_str)
                .is_some_and(|t| ENTRY_TYPES.contains(&t))
                && v.get("uuid").is_some_and(Value::is_string)
        })
        .map(|(line, value)| Entry::new(*line, value))
        .collect()
}

/// The lines of `entries` by uuid, as the reader's dictionary holds them: each uuid at the
/// place of its first line, with its last line's content.
struct Index<'e, 'a> {
    entries: &'e [Entry<'a>],
    /// uuid → index of its last line.
    last: HashMap<&'a str, usize>,
    /// Distinct uuids in order of first appearance.
    order: Vec<&'a str>,
}

impl<'e, 'a> Index<'e, 'a> {
    fn new(entries: &'e [Entry<'a>]) -> Self {
        let mut last = HashMap::with_capacity(entries.len());
        let mut order = Vec::with_capacity(entries.len());
        for (i, e) in entries.iter().enumerate() {
            if last.insert(e.uuid(), i).is_none() {
                order.push(e.uuid());
            }
        }
        Index {
            entries,
            last,
            order,
        }
    }

    fn get(&self, uuid: &str) -> Option<usize> {
        self.last.get(uuid).copied()
    }

    /// The `parentUuid` walk from `start` to the root, root first, stopping at a uuid seen
    /// before (a loop) or a parent not in the file.
    fn walk(&self, start: usize, seen: &mut HashSet<&'a str>) -> Vec<usize> {
        let mut chain = Vec::new();
        let mut cursor = Some(start);
        while let Some(i) = cursor {
            let e = &self.entries[i];
            if !seen.insert(e.uuid()) {
                break;
            }
            chain.push(i);
            cursor = e.parent().and_then(|p| self.get(p));
        }
        chain.reverse();
        chain
    }
}

/// A session's lines indexed by uuid, as the reader's dictionary holds them: what its chains
/// are built from, once for the conversation and every compact boundary before it.
pub struct Session<'e, 'a> {
    index: Index<'e, 'a>,
}

impl<'e, 'a> Session<'e, 'a> {
    /// The session of `entries` (the lines [`entries`] returns).
    pub fn new(entries: &'e [Entry<'a>]) -> Self {
        Session {
            index: Index::new(entries),
        }
    }

    /// The conversation as the reader builds it: indices into the entries, oldest first, every
    /// line of the chain (shown or not) with the parallel calls and results put back. Empty
    /// when no user or assistant line ends a chain.
    pub fn conversation(&self) -> Vec<usize> {
        conversation(&self.index)
    }

    /// The chain before a compact boundary: from the line its `logicalParentUuid` names, walked
    /// and put back together as the reader does the conversation (empty when that line is not
    /// in the file). The reader itself stops at the boundary; tract keeps what came before in
    /// history.
    pub fn before_boundary(&self, boundary: &Entry<'_>) -> Vec<usize> {
        let index = &self.index;
        let Some(start) = boundary
            .value
            .get("logicalParentUuid")
            .and_then(Value::as_str)
            .and_then(|u| index.get(u))
        else {
            return Vec::new();
        };
        let mut seen = HashSet::new();
        let chain = index.walk(start, &mut seen);
        recover_parallel(index, chain, &mut seen)
    }
}

/// A session file as the reader reads it, and as far as tract reads further: its lines, the
/// conversation in the parts its compact boundaries closed, and whether the reading is settled.
pub struct Reading<'a> {
    /// The lines that take part in the chain, in file order ([`entries`]).
    pub entries: Vec<Entry<'a>>,
    /// The conversation in parts, oldest first, as indices into `entries`: the last is the
    /// conversation the reader shows ([`Session::conversation`]), each before it the chain
    /// before the compact boundary that starts the next ([`Session::before_boundary`]),
    /// without the lines a later part holds. The first part may start with a boundary too,
    /// when the file holds nothing before it that a later part does not.
    pub parts: Vec<Vec<usize>>,
    /// Every line of the parts: the lines on the conversation's path.
    pub on_path: HashSet<usize>,
    /// The line in the file of a message the reader passed over for an older leaf: a shown
    /// kind of line, off the path and newer than every line on it (its chain ends on a line
    /// the reader does not take as the leaf, a meta line, until the line that continues from
    /// it is written).
    pub unsettled: Option<usize>,
    /// The session's id: the first `sessionId` of its lines.
    pub session: Option<&'a str>,
    /// Its project key ([`project_key`]) from the first working directory (`cwd`) of its lines.
    pub project: Option<String>,
}

impl Reading<'_> {
    /// The conversation the reader shows: the last of the parts.
    pub fn conversation(&self) -> &[usize] {
        self.parts.last().map_or(&[], Vec::as_slice)
    }
}

/// The session `values` hold (each line's JSON value with its line), read.
pub fn read(values: &[(usize, Value)]) -> Reading<'_> {
    let entries = entries(values);
    let (parts, on_path) = {
        let session = Session::new(&entries);
        let mut parts = vec![session.conversation()];
        let mut on_path: HashSet<usize> = parts[0].iter().copied().collect();
        while let Some(&first) = parts[0].first() {
            if !entries[first].compact_boundary() {
                break;
            }
            let before: Vec<usize> = session
                .before_boundary(&entries[first])
                .into_iter()
                .filter(|i| !on_path.contains(i))
                .collect();
            if before.is_empty() {
                break;
            }
            on_path.extend(before.iter().copied());
            parts.insert(0, before);
        }
        (parts, on_path)
    };
    let newest_on_path = on_path.iter().copied().max();
    let unsettled = entries
        .iter()
        .enumerate()
        .find(|(i, e)| {
            e.visible() && !on_path.contains(i) && newest_on_path.is_some_and(|newest| *i > newest)
        })
        .map(|(_, e)| e.line);
    let session = entries
        .iter()
        .find_map(|e| e.value.get("sessionId").and_then(Value::as_str));
    let project = entries
        .iter()
        .find_map(|e| e.value.get("cwd").and_then(Value::as_str))
        .map(project_key);
    Reading {
        entries,
        parts,
        on_path,
        unsettled,
        session,
        project,
    }
}

fn conversation(index: &Index<'_, '_>) -> Vec<usize> {
    let entries = index.entries;
    if entries.is_empty() {
        return Vec::new();
    }
    let mut parents: HashSet<&str> = HashSet::with_capacity(entries.len());
    parents.extend(entries.iter().filter_map(|e| e.parent()));
    // From each line no one names as parent, back to its nearest user or assistant line.
    let mut leaves = Vec::new();
    for (t, terminal) in entries.iter().enumerate() {
        if parents.contains(terminal.uuid()) {
            continue;
        }
        let mut seen = HashSet::new();
        let mut cursor = Some(t);
        while let Some(i) = cursor {
            let e = &entries[i];
            if !seen.insert(e.uuid()) {
                break;
            }
            if matches!(e.kind(), "user" | "assistant") {
                leaves.push(i);
                break;
            }
            cursor = e.parent().and_then(|p| index.get(p));
        }
    }
    if leaves.is_empty() {
        return Vec::new();
    }
    // The newest leaf of the main conversation (by the place of its uuid's last line; the
    // first of equals wins), else the newest of all.
    let pick = |candidates: &[usize]| -> usize {
        let place = |i: usize| index.get(entries[i].uuid()).unwrap_or(0);
        let mut best = candidates[0];
        for &c in &candidates[1..] {
            if place(c) > place(best) {
                best = c;
            }
        }
        best
    };
    let main: Vec<usize> = leaves
        .iter()
        .copied()
        .filter(|&i| entries[i].main())
        .collect();
    let leaf = if main.is_empty() {
        pick(&leaves)
    } else {
        pick(&main)
    };
    let mut seen = HashSet::new();
    let chain = index.walk(leaf, &mut seen);
    recover_parallel(index, chain, &mut seen)
}

/// Puts back the lines of parallel tool calls the walk skipped: for each response on the
/// chain, its lines and their results not on the chain, right after its last line on the
/// chain (the reader's `_recover_orphaned_parallel_tool_results`).
fn recover_parallel<'a>(
    index: &Index<'_, 'a>,
    chain: Vec<usize>,
    seen: &mut HashSet<&'a str>,
) -> Vec<usize> {
    let entries = index.entries;
    let chain_assistants: Vec<usize> = chain
        .iter()
        .copied()
        .filter(|&i| entries[i].kind() == "assistant")
        .collect();
    // The last line on the chain of each response.
    let mut anchor: HashMap<&str, usize> = HashMap::with_capacity(chain_assistants.len());
    for &i in &chain_assistants {
        if let Some(id) = entries[i].response_id() {
            anchor.insert(id, i);
        }
    }
    if anchor.is_empty() {
        return chain;
    }
    // Every line by response, and which line made each call (None when two responses claim
    // one call id); the tool result lines.
    let mut siblings: HashMap<&str, Vec<usize>> = HashMap::with_capacity(anchor.len());
    let mut call_owner: HashMap<&str, Option<usize>> = HashMap::with_capacity(anchor.len());
    let mut results: Vec<usize> = Vec::new();
    for uuid in &index.order {
        let Some(i) = index.get(uuid) else { continue };
        let e = &entries[i];
        if let Some(id) = e.response_id() {
            siblings.entry(id).or_default().push(i);
            for call in e.block_ids("tool_use", "id") {
                match call_owner.get(call) {
                    None => {
                        call_owner.insert(call, Some(i));
                    }
                    Some(owner) => {
                        let same = owner.is_some_and(|o| entries[o].response_id() == Some(id));
                        call_owner.insert(call, same.then_some(i));
                    }
                }
            }
        } else if e.is_tool_result() {
            results.push(i);
        }
    }
    // Each result under the lines it may belong to: its parent, its source assistant line and
    // the owner of each call it answers (the last two only from the same writer).
    let mut results_of: HashMap<&str, Vec<usize>> = HashMap::new();
    for &r in &results {
        let e = &entries[r];
        if let Some(p) = e.parent() {
            results_of.entry(p).or_default().push(r);
        }
        if let Some(source) = e
            .value
            .get("sourceToolAssistantUUID")
            .and_then(Value::as_str)
            && let Some(s) = index.get(source)
            && e.same_writer(&entries[s])
        {
            results_of.entry(source).or_default().push(r);
        }
        for call in e.block_ids("tool_result", "tool_use_id") {
            if let Some(Some(owner)) = call_owner.get(call)
                && e.same_writer(&entries[*owner])
            {
                results_of
                    .entry(entries[*owner].uuid())
                    .or_default()
                    .push(r);
            }
        }
    }
    // Only needed to place strays, which are rare: built on first use.
    let mut answered_on_chain: Option<HashSet<&str>> = None;
    let mut file_position: Option<HashMap<&str, usize>> = None;
    let mut processed: HashSet<&str> = HashSet::with_capacity(anchor.len());
    let mut inserts: HashMap<&str, Vec<usize>> = HashMap::new();
    for &a in &chain_assistants {
        let Some(id) = entries[a].response_id() else {
            continue;
        };
        if !processed.insert(id) {
            continue;
        }
        let alone = [a];
        let group: &[usize] = siblings.get(id).map_or(&alone[..], Vec::as_slice);
        // A response has a few lines: a list is quicker than a set.
        let members: Vec<&str> = group.iter().map(|&m| entries[m].uuid()).collect();
        let mut orphan_siblings: Vec<usize> = group
            .iter()
            .copied()
            .filter(|&m| !seen.contains(entries[m].uuid()))
            .collect();
        let mut orphan_results = Vec::new();
        let mut strays = Vec::new();
        let mut collected: Vec<&str> = Vec::new();
        for &m in group {
            for &r in results_of.get(entries[m].uuid()).into_iter().flatten() {
                let uuid = entries[r].uuid();
                if seen.contains(uuid) || collected.contains(&uuid) {
                    continue;
                }
                collected.push(uuid);
                if entries[r].parent().is_some_and(|p| members.contains(&p)) {
                    orphan_results.push(r);
                } else {
                    strays.push(r);
                }
            }
        }
        if !strays.is_empty() {
            let on_chain = answered_on_chain.get_or_insert_with(|| {
                chain
                    .iter()
                    .flat_map(|&i| entries[i].block_ids("tool_result", "tool_use_id"))
                    .collect()
            });
            let mut answered = on_chain.clone();
            for &r in &orphan_results {
                answered.extend(entries[r].block_ids("tool_result", "tool_use_id"));
            }
            let positions = file_position.get_or_insert_with(|| {
                index
                    .order
                    .iter()
                    .enumerate()
                    .map(|(k, u)| (*u, k))
                    .collect()
            });
            strays.sort_by_key(|&r| positions.get(entries[r].uuid()).copied());
            for r in strays {
                let calls = entries[r].block_ids("tool_result", "tool_use_id");
                let opens = calls.iter().any(|call| {
                    !answered.contains(call)
                        && call_owner
                            .get(call)
                            .copied()
                            .flatten()
                            .is_some_and(|o| members.contains(&entries[o].uuid()))
                });
                if !opens {
                    continue;
                }
                answered.extend(calls);
                orphan_results.push(r);
            }
        }
        if orphan_siblings.is_empty() && orphan_results.is_empty() {
            continue;
        }
        // Stable sorts: on equal times, file order and the order of the calls answered stay.
        orphan_siblings.sort_by_key(|&i| entries[i].timestamp_key());
        orphan_results.sort_by_key(|&i| entries[i].timestamp_key());
        let recovered: Vec<usize> = orphan_siblings.into_iter().chain(orphan_results).collect();
        for &r in &recovered {
            seen.insert(entries[r].uuid());
        }
        if let Some(&at) = anchor.get(id) {
            inserts.insert(entries[at].uuid(), recovered);
        }
    }
    if inserts.is_empty() {
        return chain;
    }
    let mut out = Vec::with_capacity(chain.len());
    for i in chain {
        out.push(i);
        if let Some(more) = inserts.get(entries[i].uuid()) {
            out.extend(more);
        }
    }
    out
}

/// A sub-agent's conversation as the reader builds it (`_build_subagent_chain`): from its last
/// user or assistant line back along `parentUuid`; the user and assistant lines of it.
pub fn sub_agent(entries: &[Entry<'_>]) -> Vec<usize> {
    let index = Index::new(entries);
    let Some(leaf) = entries
        .iter()
        .rposition(|e| matches!(e.kind(), "user" | "assistant"))
    else {
        return Vec::new();
    };
    let mut seen = HashSet::new();
    index
        .walk(leaf, &mut seen)
        .into_iter()
        .filter(|&i| matches!(entries[i].kind(), "user" | "assistant"))
        .collect()
}

/// The lines that carry what each model request cost, among `entries` that `own` takes (a
/// session's own lines, not its sub-agents'): of the assistant lines with `message.usage` (the
/// model's: not Claude Code's `<synthetic>` messages), the first of each response, by its
/// `message.id` and `requestId` as ccusage counts them. The later lines of a response repeat
/// its usage with a growing `output_tokens`; a line without both ids is a response of its own.
pub fn paid_lines(entries: &[Entry<'_>], own: impl Fn(&Entry<'_>) -> bool) -> HashSet<usize> {
    let mut seen: HashSet<(&str, &str)> = HashSet::new();
    let mut paid = HashSet::new();
    for e in entries.iter().filter(|e| e.kind == "assistant" && own(e)) {
        let Some(message) = e.value.get("message") else {
            continue;
        };
        if message.get("usage").is_none_or(Value::is_null)
            || message.get("model").and_then(Value::as_str) == Some("<synthetic>")
        {
            continue;
        }
        let request = e.value.get("requestId").and_then(Value::as_str);
        let first = match (e.response, request) {
            (Some(id), Some(request)) => seen.insert((id, request)),
            _ => true,
        };
        if first {
            paid.insert(e.line);
        }
    }
    paid
}

/// The project key Claude Code names a session's folder with (`~/.claude/projects/<key>/`):
/// the working directory with every character but ASCII letters and digits as `-`, cut at 200
/// characters with a hash of the whole path after it.
pub fn project_key(cwd: &str) -> String {
    const MAX: usize = 200;
    let sanitized: String = cwd
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    if sanitized.chars().count() <= MAX {
        return sanitized;
    }
    // The CLI's 32-bit string hash, in base 36.
    let mut h: i32 = 0;
    for c in cwd.chars() {
        h = h.wrapping_shl(5).wrapping_sub(h).wrapping_add(c as i32);
    }
    let mut n = h.unsigned_abs();
    let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    while n > 0 {
        out.push(digits[(n % 36) as usize]);
        n /= 36;
    }
    if out.is_empty() {
        out.push(b'0');
    }
    out.reverse();
    let head: String = sanitized.chars().take(MAX).collect();
    format!("{head}-{}", String::from_utf8_lossy(&out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lines(values: Vec<Value>) -> Vec<(usize, Value)> {
        values
            .into_iter()
            .enumerate()
            .map(|(i, v)| (i + 1, v))
            .collect()
    }

    fn uuids(values: &[(usize, Value)], chain: &[usize]) -> Vec<String> {
        let es = entries(values);
        chain.iter().map(|&i| es[i].uuid().to_string()).collect()
    }

    #[test]
    fn the_newest_main_leaf_wins_and_a_missing_parent_ends_the_chain() {
        let v = lines(vec![
            json!({"type": "user", "uuid": "a", "parentUuid": "gone", "message": {"role": "user", "content": "hi"}}),
            json!({"type": "assistant", "uuid": "b", "parentUuid": "a", "message": {"role": "assistant", "content": []}}),
            json!({"type": "assistant", "uuid": "c", "parentUuid": "a", "isSidechain": true, "message": {"role": "assistant", "content": []}}),
            json!({"type": "progress", "uuid": "p", "parentUuid": "b"}),
        ]);
        let es = entries(&v);
        // The progress line is a terminal; walked back it ends at b, the main leaf, and the
        // chain runs from there (the sidechain line is left out, the progress line too).
        assert_eq!(uuids(&v, &Session::new(&es).conversation()), ["a", "b"]);
    }

    #[test]
    fn a_parallel_response_comes_back_whole() {
        let call = |id: &str| json!([{"type": "tool_use", "id": id, "name": "Read", "input": {}}]);
        let result = |id: &str| json!([{"type": "tool_result", "tool_use_id": id, "content": "x"}]);
        let v = lines(vec![
            json!({"type": "user", "uuid": "u", "parentUuid": null, "message": {"role": "user", "content": "go"}}),
            json!({"type": "assistant", "uuid": "a1", "parentUuid": "u", "timestamp": "1", "message": {"id": "m", "role": "assistant", "content": call("t1")}}),
            json!({"type": "assistant", "uuid": "a2", "parentUuid": "a1", "timestamp": "2", "message": {"id": "m", "role": "assistant", "content": call("t2")}}),
            json!({"type": "user", "uuid": "r1", "parentUuid": "a1", "timestamp": "3", "message": {"role": "user", "content": result("t1")}}),
            json!({"type": "user", "uuid": "r2", "parentUuid": "a2", "timestamp": "4", "message": {"role": "user", "content": result("t2")}}),
            json!({"type": "assistant", "uuid": "z", "parentUuid": "r2", "message": {"id": "n", "role": "assistant", "content": "done"}}),
        ]);
        let es = entries(&v);
        assert_eq!(
            uuids(&v, &Session::new(&es).conversation()),
            ["u", "a1", "a2", "r1", "r2", "z"]
        );
    }

    #[test]
    fn a_reading_follows_compact_boundaries_back_and_tells_a_passed_over_line() {
        let msg = |role: &str| json!({"role": role, "content": "x"});
        let v = lines(vec![
            json!({"type": "user", "uuid": "a", "parentUuid": null, "sessionId": "s", "cwd": "/w", "message": msg("user")}),
            json!({"type": "assistant", "uuid": "b", "parentUuid": "a", "message": msg("assistant")}),
            json!({"type": "system", "subtype": "compact_boundary", "uuid": "c", "parentUuid": null, "logicalParentUuid": "b"}),
            json!({"type": "user", "uuid": "d", "parentUuid": "c", "message": msg("user")}),
        ]);
        let r = read(&v);
        let parts: Vec<Vec<String>> = r.parts.iter().map(|p| uuids(&v, p)).collect();
        assert_eq!(parts, [vec!["a", "b"], vec!["c", "d"]]);
        assert_eq!(uuids(&v, r.conversation()), ["c", "d"]);
        assert_eq!(r.session, Some("s"));
        assert_eq!(r.project.as_deref(), Some("-w"));
        assert_eq!(r.unsettled, None);
        // The newest chain ends on a meta line, which the reader does not take as the leaf: it
        // falls back to `x`, passing over `e` until a line continues from `f`.
        let v = lines(vec![
            json!({"type": "user", "uuid": "a", "parentUuid": null, "message": msg("user")}),
            json!({"type": "assistant", "uuid": "b", "parentUuid": "a", "message": msg("assistant")}),
            json!({"type": "assistant", "uuid": "x", "parentUuid": "a", "message": msg("assistant")}),
            json!({"type": "user", "uuid": "m", "parentUuid": "b", "isMeta": true, "message": msg("user")}),
            json!({"type": "assistant", "uuid": "e", "parentUuid": "m", "message": msg("assistant")}),
            json!({"type": "user", "uuid": "f", "parentUuid": "e", "isMeta": true, "message": msg("user")}),
        ]);
        let r = read(&v);
        assert_eq!(uuids(&v, r.conversation()), ["a", "x"]);
        assert_eq!(r.unsettled, Some(5));
    }

    #[test]
    fn project_keys_are_claude_codes() {
        assert_eq!(project_key("/home/me/my_app"), "-home-me-my-app");
        let long = format!("/{}", "x".repeat(250));
        let key = project_key(&long);
        assert!(key.starts_with(&format!("-{}", "x".repeat(199))));
        assert_eq!(key.chars().nth(200), Some('-'));
    }
}
