//! Finding credentials in a text: the rules of a policy, compiled lazily and run only around
//! their keywords.
//!
//! How a text is scanned, in linear time:
//! - one Aho-Corasick pass (ASCII case-insensitive, overlapping) finds every rule keyword;
//! - a rule runs only on the regions around its keywords' hits: the hit's line (its trailing
//!   newline included), cut to 1 KiB before and 8 KiB after the hit on long lines (a base64
//!   blob is one line). A rule that may span lines (a private key block) runs from the first
//!   hit's line to the end of the text. A rule's regions are merged where they touch, so a rule
//!   reads each byte at most once; a rule without keywords runs once on the whole text;
//! - regexes are the `regex` crate's (finite automata, no backtracking), on bytes with ASCII
//!   classes as gitleaks' Go RE2 has them, each compiled the first time one of its keywords is
//!   seen;
//! - a match that touches the cut end of a region is dropped (the cut could have made `$` or
//!   `\b` match there).
//!
//! How findings are named and which values are never findings: see [`Detector`].

use super::policy::SecretsPolicy;
use super::rules::{self, AllowSpec, RuleSpec, Target, Tier};
use crate::error::Result;
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use regex::bytes::{Regex, RegexBuilder};
use std::sync::{Arc, OnceLock};

/// One credential found in a text: the byte span of the secret value and the rule that found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The rule's id (a built-in id or a custom rule's name).
    pub rule: String,
    /// Where the secret starts (bytes, on a char boundary).
    pub start: usize,
    /// Where it ends (exclusive).
    pub end: usize,
}

/// How far before a keyword hit a line's region reaches on a long line.
const BEFORE: usize = 1024;
/// How far after a keyword hit a line's region reaches on a long line.
const AFTER: usize = 8192;
/// The largest regex a rule may compile to (a bundled rule that exceeds it is dropped).
const SIZE_LIMIT: usize = 16 << 20;

/// A compiled allowlist.
struct Allow {
    regexes: Vec<Regex>,
    target: Target,
    stopwords: Vec<String>,
    all: bool,
}

impl Allow {
    fn compile(spec: &AllowSpec) -> Allow {
        Allow {
            // A bundled allowlist regex that does not compile is left out (tested: none is).
            regexes: spec
                .regexes
                .iter()
                .filter_map(|r| compile_builtin(r))
                .collect(),
            target: spec.target,
            stopwords: spec.stopwords.clone(),
            all: spec.all,
        }
    }

    /// Whether it allows `secret` (found by `whole` on the lines `line` gives), as gitleaks
    /// decides. The lines are looked up only by a line allowlist (few are).
    fn allows<'t>(&self, secret: &[u8], whole: &[u8], line: &dyn Fn() -> &'t [u8]) -> bool {
        let target = match self.target {
            Target::Secret => secret,
            Target::Match => whole,
            Target::Line => line(),
        };
        let by_regex =
            (!self.regexes.is_empty()).then(|| self.regexes.iter().any(|r| r.is_match(target)));
        let by_stopword = (!self.stopwords.is_empty()).then(|| {
            let lower = secret.to_ascii_lowercase();
            self.stopwords
                .iter()
                .any(|w| memchr::memmem::find(&lower, w.as_bytes()).is_some())
        });
        let checks = [by_regex, by_stopword];
        let mut given = checks.iter().flatten();
        if self.all {
            given.clone().next().is_some() && given.all(|c| *c)
        } else {
            given.any(|c| *c)
        }
    }
}

fn compile_builtin(pattern: &str) -> Option<Regex> {
    RegexBuilder::new(pattern)
        .unicode(false)
        .size_limit(SIZE_LIMIT)
        .dfa_size_limit(SIZE_LIMIT)
        .build()
        .ok()
}

/// One rule, compiled on first use.
pub(crate) struct Rule {
    spec: RuleSpec,
    regex: OnceLock<Option<Regex>>,
    allow: OnceLock<Vec<Allow>>,
}

impl Rule {
    fn new(spec: RuleSpec) -> Rule {
        Rule {
            spec,
            regex: OnceLock::new(),
            allow: OnceLock::new(),
        }
    }

    fn custom(name: &str, regex: Regex) -> Rule {
        let rule = Rule::new(RuleSpec {
            id: name.to_string(),
            regex: regex.as_str().to_string(),
            secret_group: None,
            key_group: None,
            entropy: None,
            keywords: Vec::new(),
            allowlists: Vec::new(),
            tier: Tier::Specific,
            whole: false,
            keyed: true,
            plausible: false,
            multiline: true,
        });
        let _ = rule.regex.set(Some(regex));
        rule
    }

    /// The compiled regex; `None` for a bundled pattern the `regex` crate refuses (tested:
    /// none does).
    pub(crate) fn regex(&self) -> Option<&Regex> {
        self.regex
            .get_or_init(|| compile_builtin(&self.spec.regex))
            .as_ref()
    }

    fn allowlists(&self) -> &[Allow] {
        self.allow
            .get_or_init(|| self.spec.allowlists.iter().map(Allow::compile).collect())
    }
}

/// The built-in rules, compiled on first use and shared by every detector of the process.
fn builtin_rules() -> &'static [Arc<Rule>] {
    static RULES: OnceLock<Vec<Arc<Rule>>> = OnceLock::new();
    RULES.get_or_init(|| {
        rules::builtin()
            .rules
            .iter()
            .map(|s| Arc::new(Rule::new(s.clone())))
            .collect()
    })
}

fn global_allow() -> &'static Allow {
    static GLOBAL: OnceLock<Allow> = OnceLock::new();
    GLOBAL.get_or_init(|| Allow::compile(&rules::builtin().global))
}

/// What a policy lets through.
enum Allowed {
    Literal(String),
    Pattern(Regex),
}

/// The compiled rules of a policy.
///
/// How overlapping findings are named (one secret, one marker, wherever it is written): the
/// candidates are ranked by tier (format-specific rules, then tract's assignment rules and
/// gitleaks' `curl-*` rules, then `generic-api-key`), then the longer span, then the rule's
/// order (gitleaks' rules in their file's order, tract's own after them, custom rules last),
/// and taken best first, each dropped if it overlaps one already taken.
///
/// What is never a finding: a marker already in the text (`[REDACTED:…]`); a value gitleaks'
/// global or the rule's allowlists allow; a value the policy allows; and, unless the rule is
/// keyed (the value is assigned to a key saying it is a secret: `SECRET_KEY = …`, `*_token`,
/// `password`, `api_key`, `_authToken`, a service's key), a value that is an identifier rather
/// than a credential by its shape alone: a UUID, 40 hex digits (a git SHA), 64 hex digits (a
/// tract id, a SHA-256), a value inside a data URI (`data:…;base64,`), a lockfile hash
/// (`sha512-…`, `sha256:…`).
pub struct Detector {
    rules: Vec<Arc<Rule>>,
    /// Every keyword of every rule.
    keywords: Option<AhoCorasick>,
    /// For each keyword pattern, the rules it belongs to.
    keyword_rules: Vec<Vec<usize>>,
    /// Rules without keywords: they run on the whole text.
    everywhere: Vec<usize>,
    allowed: Vec<Allowed>,
}

/// A region of the text a rule runs on.
#[derive(Clone, Copy)]
struct Region {
    start: usize,
    end: usize,
    /// The region ends before its line does.
    cut: bool,
}

/// A candidate before overlaps are resolved.
struct Candidate {
    rule: usize,
    start: usize,
    end: usize,
}

impl Detector {
    /// The built-in rules alone (process-wide, made once on first use).
    pub fn builtin() -> Arc<Detector> {
        static BUILTIN: OnceLock<Arc<Detector>> = OnceLock::new();
        BUILTIN
            .get_or_init(|| Arc::new(Detector::assemble(builtin_rules().to_vec(), Vec::new())))
            .clone()
    }

    /// The built-in rules less `disabled`, plus `custom` (name -> regex), less what `allow` allows.
    pub fn new(policy: &SecretsPolicy) -> Result<Detector> {
        policy.validate()?;
        let mut rules: Vec<Arc<Rule>> = builtin_rules()
            .iter()
            .filter(|r| !policy.disabled.contains(&r.spec.id))
            .cloned()
            .collect();
        for (name, pattern) in &policy.rules {
            let regex = super::policy::compile_custom(name, pattern)?;
            rules.push(Arc::new(Rule::custom(name, regex)));
        }
        let mut allowed = Vec::new();
        for entry in &policy.allow {
            allowed.push(match super::policy::allow_pattern(entry)? {
                Some(regex) => Allowed::Pattern(regex),
                None => Allowed::Literal(entry.clone()),
            });
        }
        Ok(Detector::assemble(rules, allowed))
    }

    fn assemble(rules: Vec<Arc<Rule>>, allowed: Vec<Allowed>) -> Detector {
        let mut patterns: Vec<String> = Vec::new();
        let mut keyword_rules: Vec<Vec<usize>> = Vec::new();
        let mut everywhere = Vec::new();
        for (i, rule) in rules.iter().enumerate() {
            if rule.spec.keywords.is_empty() {
                everywhere.push(i);
            }
            for k in &rule.spec.keywords {
                match patterns.iter().position(|p| p == k) {
                    Some(at) => keyword_rules[at].push(i),
                    None => {
                        patterns.push(k.clone());
                        keyword_rules.push(vec![i]);
                    }
                }
            }
        }
        // Keywords are short literals: building their automaton cannot fail (if it ever did,
        // every keyed rule would run everywhere instead, slower but as thorough).
        // A DFA: the keyword pass reads every byte of every text, and an overlapping search
        // gets little from a prefilter (common keywords such as `ey`, `key`, `api` hit often).
        let keywords = AhoCorasickBuilder::new()
            .kind(Some(AhoCorasickKind::DFA))
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .build(&patterns)
            .ok();
        if keywords.is_none() {
            everywhere = (0..rules.len()).collect();
        }
        Detector {
            rules,
            keywords,
            keyword_rules,
            everywhere,
            allowed,
        }
    }

    /// Names of every rule this detector has (built-in ids and custom names).
    pub fn rule_names(&self) -> Vec<String> {
        self.rules.iter().map(|r| r.spec.id.clone()).collect()
    }

    /// Findings in plain text, sorted by start, never overlapping.
    pub fn find(&self, text: &str) -> Vec<Finding> {
        self.find_bytes(text.as_bytes())
    }

    /// [`Detector::find`] on the bytes of a text (spans are widened to char boundaries).
    fn find_bytes(&self, bytes: &[u8]) -> Vec<Finding> {
        let regions = self.regions(bytes);
        let markers = markers(bytes);
        let mut candidates = Vec::new();
        let mut spans = Vec::new();
        for group in regions.chunk_by(|a, b| a.0 == b.0) {
            spans.clear();
            spans.extend(group.iter().map(|(_, r)| *r));
            self.run_rule(group[0].0, bytes, &spans, &markers, &mut candidates);
        }
        self.resolve(candidates)
    }

    /// Findings in JSON text (tool-call arguments, a provider part, a metadata value): only spans
    /// that lie inside one JSON string literal (so replacing them keeps the JSON valid), and none
    /// inside the value of a never-scrub key (see below). Text that is not valid JSON: as `find`.
    ///
    /// Never scanned: the string values (and everything nested in the values) of the keys in
    /// [`NEVER_SCRUB_KEYS`] (signatures, ids, hashes), and the value of a `data` key when it
    /// is a data URI or 64 or more characters of base64 alone (an image's or a document's
    /// bytes, Gemini's `inlineData`); a `data` key holding text (a command, a config) is
    /// scanned.
    pub fn find_in_json(&self, json: &str) -> Vec<Finding> {
        if serde_json::from_str::<serde::de::IgnoredAny>(json).is_err() {
            return self.find(json);
        }
        let literals = string_literals(json.as_bytes());
        let hidden: Vec<&Literal> = literals
            .iter()
            .filter(|l| l.protected && l.end > l.start)
            .collect();
        let findings = if hidden.is_empty() {
            self.find(json)
        } else {
            // Protected values are blanked (same length: spans stay put) so that nothing is
            // matched in them, nor across them. Control characters never occur raw in a JSON
            // string, so the blank cannot meet a rule's literal; a literal's content is whole
            // characters (it lies between two quotes), so the blanked text is UTF-8 still.
            let mut blanked = json.as_bytes().to_vec();
            for l in hidden {
                blanked[l.start..l.end].fill(0x01);
            }
            self.find_bytes(&blanked)
        };
        let bytes = json.as_bytes();
        findings
            .into_iter()
            .filter_map(|mut f| {
                let at = literals.partition_point(|l| l.end < f.end);
                let lit = literals.get(at)?;
                if lit.protected || f.start < lit.start || f.end > lit.end {
                    return None;
                }
                // Never split an escape sequence: the marker must replace whole characters.
                if odd_backslashes_before(bytes, lit.start, f.start) {
                    let skip = if bytes.get(f.start) == Some(&b'u') {
                        5
                    } else {
                        1
                    };
                    f.start = (f.start + skip).min(f.end);
                }
                if odd_backslashes_before(bytes, lit.start, f.end) {
                    f.end -= 1;
                }
                (f.end > f.start).then_some(f)
            })
            .collect()
    }

    /// The rules to run and the regions each runs on: (rule, region), by rule, each rule's
    /// regions in order and apart (only the rules with somewhere to run: one list for the
    /// few a text wakes, not one per rule).
    fn regions(&self, text: &[u8]) -> Vec<(usize, Region)> {
        let whole = Region {
            start: 0,
            end: text.len(),
            cut: false,
        };
        let mut out: Vec<(usize, Region)> = self.everywhere.iter().map(|&i| (i, whole)).collect();
        let Some(ac) = &self.keywords else {
            return out;
        };
        // The line around each hit, found with cursors that only move forward (hits come by
        // their end, in order), so finding lines costs one pass however many hits there are.
        let mut line_start = 0; // start of the line holding the last hit
        let mut scanned = 0; // the end of the last hit
        let mut next_nl = 0; // the first newline at or after `scanned` (or the text's end)
        for hit in ac.find_overlapping_iter(text) {
            let (s, e) = (hit.start(), hit.end());
            if e > scanned {
                if let Some(nl) = memchr::memrchr(b'\n', &text[scanned.min(s)..s]) {
                    line_start = scanned.min(s) + nl + 1;
                }
                if e > next_nl {
                    next_nl = memchr::memchr(b'\n', &text[e..]).map_or(text.len(), |n| e + n);
                }
                scanned = e;
            }
            let line_end = (next_nl + 1).min(text.len());
            let start = line_start.max(s.saturating_sub(BEFORE));
            let (end, cut) = if line_end - e > AFTER {
                (e + AFTER, true)
            } else {
                (line_end, false)
            };
            for &r in &self.keyword_rules[hit.pattern().as_usize()] {
                let region = if self.rules[r].spec.multiline {
                    Region {
                        start: line_start,
                        end: text.len(),
                        cut: false,
                    }
                } else {
                    Region { start, end, cut }
                };
                out.push((r, region));
            }
        }
        // Each rule's regions stay in the order of their hits (a stable sort); a region that
        // starts before the one ahead of it ends is merged into it.
        out.sort_by_key(|(r, _)| *r);
        out.dedup_by(|next, last| {
            if next.0 != last.0 || next.1.start > last.1.end {
                return false;
            }
            if next.1.end > last.1.end {
                last.1.end = next.1.end;
                last.1.cut = next.1.cut;
            }
            true
        });
        out
    }

    /// Runs rule `i` on its regions, adding what it finds.
    fn run_rule(
        &self,
        i: usize,
        text: &[u8],
        regions: &[Region],
        markers: &[(usize, usize)],
        out: &mut Vec<Candidate>,
    ) {
        let rule = &self.rules[i];
        let Some(re) = rule.regex() else {
            return;
        };
        let spec = &rule.spec;
        // tract's assignment rules match every `key=x` however short its value: such a match
        // is told from the automaton's span alone, before its groups are resolved (the costly
        // part of a match).
        let assignment = spec.plausible && spec.key_group.is_some();
        // One set of capture slots for every match (a match no longer allocates).
        let mut caps = re.capture_locations();
        for region in regions {
            let hay = &text[..region.end];
            let mut at = region.start;
            while at <= region.end {
                let Some(found) = re.find_at(hay, at) else {
                    break;
                };
                at = if found.end() > found.start() {
                    found.end()
                } else {
                    found.end() + 1
                };
                if region.cut && found.end() == region.end {
                    continue;
                }
                if assignment && short_assigned_value(text, found.start(), found.end()) {
                    continue;
                }
                // The same match, its groups resolved (the leftmost-first match from its own
                // start is itself).
                let Some(m) = re.captures_read_at(&mut caps, hay, found.start()) else {
                    continue;
                };
                let whole = Some((m.start(), m.end()));
                let secret = if spec.whole {
                    whole
                } else if let Some(g) = spec.secret_group {
                    caps.get(g)
                } else if caps.len() > 1 {
                    (1..caps.len())
                        .filter(|g| Some(*g) != spec.key_group)
                        .find_map(|g| caps.get(g).filter(|(s, e)| e > s))
                } else {
                    whole
                };
                let Some((start, end)) = secret.filter(|(s, e)| e > s) else {
                    continue;
                };
                let (start, end) = snap(text, start, end);
                // The first marker ending after the value's start is the only one that may
                // overlap it (markers are sorted by their ends too).
                let first = markers.partition_point(|&(_, me)| me <= start);
                if markers.get(first).is_some_and(|&(ms, _)| ms < end) {
                    continue;
                }
                let value = &text[start..end];
                if spec.entropy.is_some_and(|min| entropy(value) <= min) {
                    continue;
                }
                let line = || line_of(text, m.start(), m.end());
                let global = global_allow();
                if global.allows(value, m.as_bytes(), &line)
                    || rule
                        .allowlists()
                        .iter()
                        .any(|a| a.allows(value, m.as_bytes(), &line))
                {
                    continue;
                }
                if spec.plausible {
                    let key = spec
                        .key_group
                        .and_then(|g| caps.get(g))
                        .map(|(s, e)| &text[s..e]);
                    let next = text.get(end).copied();
                    let quoted = matches!(text.get(start.wrapping_sub(1)), Some(b'"' | b'\''));
                    if !plausible(key, value, quoted, next) {
                        continue;
                    }
                }
                if !spec.keyed && is_identifier(text, start, end) {
                    continue;
                }
                if self.allowed.iter().any(|a| match a {
                    Allowed::Literal(l) => l.as_bytes() == value,
                    Allowed::Pattern(p) => p.is_match(value),
                }) {
                    continue;
                }
                out.push(Candidate {
                    rule: i,
                    start,
                    end,
                });
            }
        }
    }

    /// Overlapping candidates resolved as the module says; the findings sorted by start.
    fn resolve(&self, mut candidates: Vec<Candidate>) -> Vec<Finding> {
        candidates.sort_by(|a, b| {
            let (ra, rb) = (&self.rules[a.rule].spec, &self.rules[b.rule].spec);
            ra.tier
                .cmp(&rb.tier)
                .then((b.end - b.start).cmp(&(a.end - a.start)))
                .then(a.rule.cmp(&b.rule))
                .then(a.start.cmp(&b.start))
        });
        let mut taken: std::collections::BTreeMap<usize, (usize, usize)> =
            std::collections::BTreeMap::new();
        for c in candidates {
            let before = taken.range(..c.end).next_back();
            if before.is_some_and(|(_, &(end, _))| end > c.start) {
                continue;
            }
            taken.insert(c.start, (c.end, c.rule));
        }
        taken
            .into_iter()
            .map(|(start, (end, rule))| Finding {
                rule: self.rules[rule].spec.id.clone(),
                start,
                end,
            })
            .collect()
    }
}

/// The never-scrub keys of [`Detector::find_in_json`].
pub const NEVER_SCRUB_KEYS: &[&str] = &[
    "signature",
    "encrypted_content",
    "thoughtSignature",
    "thought_signature",
    "id",
    "tool_use_id",
    "tool_call_id",
    "call_id",
    "uuid",
    "parentUuid",
    "sessionId",
    "requestId",
    "integrity",
    "resolved",
    "sha",
    "hash",
    "checksum",
    "digest",
];

/// Shannon entropy in bits per character, as gitleaks computes it (characters counted, over
/// the length in bytes).
pub(crate) fn entropy(value: &[u8]) -> f64 {
    if value.is_empty() {
        return 0.0;
    }
    let text = String::from_utf8_lossy(value);
    let mut counts: std::collections::HashMap<char, usize> = std::collections::HashMap::new();
    for c in text.chars() {
        *counts.entry(c).or_default() += 1;
    }
    let len = value.len() as f64;
    counts
        .values()
        .map(|&n| {
            let p = n as f64 / len;
            -p * p.log2()
        })
        .sum()
}

/// Whether the match `start..end` of an assignment rule ([`rules`]' `assignment`: a delimiter,
/// a key of `[a-z0-9_.-]`, quotes and blanks, `=`, `:=`, `:` or `=>`, blanks, the value) holds
/// a value too short for [`plausible`] (under 6 bytes of ASCII).
///
/// Nothing before the separator but the delimiter may be `=` or `:`, so the value lies after
/// the first of them past the delimiter; when all after it is ASCII (and the span is not
/// widened past its end to a char boundary), it is at most that long.
fn short_assigned_value(text: &[u8], start: usize, end: usize) -> bool {
    let from = (start + 1).min(end);
    let Some(sep) = text[from..end]
        .iter()
        .position(|b| matches!(b, b'=' | b':'))
    else {
        return false;
    };
    let after = &text[from + sep + 1..end];
    after.len() < 6 && after.is_ascii() && text.get(end).is_none_or(|b| (b & 0xC0) != 0x80)
}

/// The span widened to char boundaries (a byte class may have stopped inside a character).
fn snap(text: &[u8], mut start: usize, mut end: usize) -> (usize, usize) {
    let is_cont = |b: u8| (b & 0xC0) == 0x80;
    while start > 0 && text.get(start).is_some_and(|&b| is_cont(b)) {
        start -= 1;
    }
    while end < text.len() && is_cont(text[end]) {
        end += 1;
    }
    (start, end)
}

/// The lines holding `start..end` (without their newlines), at most a few KiB either side.
fn line_of(text: &[u8], start: usize, end: usize) -> &[u8] {
    let lo = start.saturating_sub(BEFORE);
    let hi = (end + AFTER).min(text.len());
    let s = memchr::memrchr(b'\n', &text[lo..start]).map_or(lo, |n| lo + n + 1);
    let e = memchr::memchr(b'\n', &text[end..hi]).map_or(hi, |n| end + n);
    &text[s..e]
}

/// The spans of the markers already in a text (`[REDACTED:<rule>:<fingerprint>]`).
///
/// Sorted by start, and so by end too (each ends at the first `]` after its start).
fn markers(text: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for at in memchr::memmem::find_iter(text, b"[REDACTED:") {
        let rest = &text[at..];
        let Some(close) = memchr::memchr(b']', &rest[..rest.len().min(200)]) else {
            continue;
        };
        out.push((at, at + close + 1));
    }
    out
}

/// Whether the value is an identifier or a hash by its shape (see the module's doc).
fn is_identifier(text: &[u8], start: usize, end: usize) -> bool {
    let v = &text[start..end];
    let hex = |s: &[u8]| s.iter().all(u8::is_ascii_hexdigit);
    let uuid = v.len() == 36
        && v.iter().enumerate().all(|(i, &b)| {
            if matches!(i, 8 | 13 | 18 | 23) {
                b == b'-'
            } else {
                b.is_ascii_hexdigit()
            }
        });
    if uuid || ((v.len() == 40 || v.len() == 64) && hex(v)) {
        return true;
    }
    if v.starts_with(b"data:") {
        return true;
    }
    // Inside a data URI: `data:<type>;base64,` before the value, with nothing but base64 between.
    let back = &text[start.saturating_sub(4096)..start];
    if let Some(at) = memchr::memmem::rfind(back, b";base64,") {
        let between = &back[at + 8..];
        let has_data = memchr::memmem::rfind(&back[..at], b"data:")
            .is_some_and(|d| at - d < 128 && !back[d..at].iter().any(u8::is_ascii_whitespace));
        if has_data
            && between
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
        {
            return true;
        }
    }
    // A lockfile's hash: `sha512-…` (npm's integrity), `sha256:…` (an OCI digest, pip's hashes).
    let lower: Vec<u8> = text[start.saturating_sub(8)..start.min(text.len())].to_ascii_lowercase();
    let v_lower = v.to_ascii_lowercase();
    for prefix in [&b"sha1"[..], b"sha256", b"sha384", b"sha512"] {
        for sep in [b'-', b':', b'='] {
            let mut p = prefix.to_vec();
            p.push(sep);
            if v_lower.starts_with(&p) || lower.ends_with(&p) {
                return true;
            }
        }
    }
    false
}

/// Words a key's value is when it only names a type or a variable (code, not a credential).
const NOT_VALUES: &[&str] = &[
    "string",
    "str",
    "bool",
    "boolean",
    "optional",
    "none",
    "null",
    "nil",
    "true",
    "false",
    "undefined",
    "required",
    "secret",
    "password",
    "token",
    "changeme",
    "change_me",
    "example",
    "placeholder",
    "redacted",
    "dummy",
    "default",
    "value",
    "hidden",
    "masked",
    "omitted",
    "env",
    "environment",
    "number",
    "integer",
    "object",
    "any",
    "unknown",
    "empty",
    "notset",
    "secretstr",
    "bytes",
    "text",
];

/// Key endings (after the secret word) that say the value is not the secret itself.
const NOT_SECRET_KEY_ENDS: &[&str] = &[
    "type",
    "count",
    "limit",
    "url",
    "uri",
    "endpoint",
    "file",
    "path",
    "dir",
    "name",
    "id",
    "ids",
    "length",
    "len",
    "size",
    "expiry",
    "expires",
    "expiresat",
    "expiresin",
    "ttl",
    "usage",
    "budget",
    "field",
    "env",
    "var",
    "header",
    "prefix",
    "policy",
    "mode",
    "kind",
    "format",
    "version",
    "min",
    "max",
    "hash",
    "hint",
    "prompt",
    "label",
    "placeholder",
    "reset",
    "required",
    "regex",
    "pattern",
    "rule",
    "rules",
    "strength",
    "changed",
    "enabled",
    "store",
    "manager",
    "input",
    "ref",
    "arn",
    "location",
    "provider",
    "source",
    "command",
    "cmd",
    "key",
    "keys",
    "method",
    "scheme",
    "scope",
    "scopes",
    "index",
    "position",
    "pos",
    "estimate",
    "budget",
    "used",
    "remaining",
    "total",
    "stats",
    "helper",
    "generator",
    "class",
];

/// Whether an assigned value (`key` = `value`) is a credential rather than a placeholder, a
/// type, a variable or a path: tract's own rules' check (a secret-like key's value is a secret
/// whatever its shape, but `${VAR}`, `<password>`, `changeme`, `***`, `/run/secrets/db` are not).
fn plausible(key: Option<&[u8]>, value: &[u8], quoted: bool, next: Option<u8>) -> bool {
    let v = String::from_utf8_lossy(value);
    let v = v.trim();
    if v.len() < 6 {
        return false;
    }
    if let Some(key) = key {
        let key = String::from_utf8_lossy(key).to_ascii_lowercase();
        if key.contains("tokens") || key.contains("tokeniz") || key.starts_with("max") {
            return false;
        }
        let tail: String = key.rsplit(['_', '-', '.']).next().unwrap_or("").to_string();
        let squashed: String = key.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
        let secret_word_last = [
            "password",
            "passwd",
            "pwd",
            "passphrase",
            "secret",
            "token",
            "key",
            "credential",
            "credentials",
        ]
        .iter()
        .any(|w| squashed.ends_with(w));
        if !secret_word_last
            && NOT_SECRET_KEY_ENDS
                .iter()
                .any(|e| tail == *e || squashed.ends_with(e))
        {
            return false;
        }
        // `password_hash: …`, `token_url: …`: the secret word followed by what it is about.
        if NOT_SECRET_KEY_ENDS
            .iter()
            .any(|e| *e != "key" && tail == *e)
        {
            return false;
        }
    }
    let lower = v.to_ascii_lowercase();
    let first = v.as_bytes()[0];
    if NOT_VALUES.contains(&lower.as_str())
        || lower.starts_with("your")
        || lower.starts_with("[redacted")
        || lower.contains("...")
        || lower.contains("process.env")
        || lower.contains("environ")
        || lower.contains("getenv")
        || lower.contains("example")
        || lower.contains("placeholder")
        || lower.contains("changeme")
    {
        return false;
    }
    // `${VAR}`, `$VAR`, `{{ var }}`, `<password>`, `%VAR%`, `@VAR@`, `***`, `xxxx`.
    let last = v.as_bytes()[v.len() - 1];
    if first == b'$'
        || (first == b'{' && last == b'}')
        || (first == b'<' && last == b'>')
        || (first == b'%' && last == b'%')
        || (first == b'@' && last == b'@')
        || v.bytes()
            .all(|b| matches!(b, b'*' | b'x' | b'X' | b'.' | b'-' | b'_' | b'#'))
        || v.bytes().all(|b| b == first)
        || v.bytes().all(|b| b.is_ascii_digit())
    {
        return false;
    }
    // A path.
    if first == b'/'
        || v.starts_with("./")
        || v.starts_with("../")
        || v.starts_with("~/")
        || (v.len() > 2 && v.as_bytes()[1] == b':' && v.as_bytes()[2] == b'\\')
    {
        return false;
    }
    if !quoted {
        // A bare word in code: a call (`getpass()`), a variable or attribute
        // (`password=password`, `token=self.token`, `api_key: str`).
        if next == Some(b'(') {
            return false;
        }
        let word = v
            .bytes()
            .all(|b| b.is_ascii_alphabetic() || matches!(b, b'_' | b'.'));
        if word && (v.contains('.') || v.contains('_')) {
            return false;
        }
        if let (true, Some(key)) = (word, key) {
            let key = String::from_utf8_lossy(key).to_ascii_lowercase();
            if key.contains(&lower) || lower.contains("pass") || lower.contains("token") {
                return false;
            }
        }
    }
    true
}

/// Whether the byte before `at` in a JSON string (starting at `from`) leaves an escape open.
fn odd_backslashes_before(text: &[u8], from: usize, at: usize) -> bool {
    text[from..at]
        .iter()
        .rev()
        .take_while(|&&b| b == b'\\')
        .count()
        % 2
        == 1
}

/// A JSON string literal's content (between its quotes).
struct Literal {
    start: usize,
    end: usize,
    /// It is (inside) the value of a never-scrub key.
    protected: bool,
}

/// The string literals of valid JSON, in order, each marked protected when it is (inside) the
/// value of a never-scrub key.
fn string_literals(json: &[u8]) -> Vec<Literal> {
    // One frame per open container: (is an object, protected, the next string is a key).
    let mut stack: Vec<(bool, bool, bool)> = Vec::new();
    // The protection the next value takes from its key: None (no key), or Some(protect, key
    // is `data`).
    let mut pending: (bool, bool) = (false, false);
    let mut out = Vec::new();
    let mut i = 0;
    while i < json.len() {
        match json[i] {
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < json.len() && json[j] != b'"' {
                    j += if json[j] == b'\\' { 2 } else { 1 };
                }
                let end = j.min(json.len());
                let inherited = stack.last().is_some_and(|f| f.1);
                let is_key = stack.last().is_some_and(|f| f.0 && f.2);
                if is_key {
                    let key = &json[start..end];
                    let protect = NEVER_SCRUB_KEYS.iter().any(|k| k.as_bytes() == key);
                    pending = (protect, key == b"data");
                    if let Some(f) = stack.last_mut() {
                        f.2 = false;
                    }
                    out.push(Literal {
                        start,
                        end,
                        protected: inherited,
                    });
                } else {
                    let value = &json[start..end];
                    let data_blob = pending.1 && is_blob(value);
                    out.push(Literal {
                        start,
                        end,
                        protected: inherited || pending.0 || data_blob,
                    });
                    pending = (false, false);
                }
                i = end + 1;
                continue;
            }
            b'{' | b'[' => {
                let inherited = stack.last().is_some_and(|f| f.1);
                stack.push((json[i] == b'{', inherited || pending.0, json[i] == b'{'));
                pending = (false, false);
            }
            b'}' | b']' => {
                stack.pop();
            }
            b',' => {
                if let Some(f) = stack.last_mut() {
                    f.2 = f.0;
                }
                pending = (false, false);
            }
            b':' => {}
            _ => {
                // A number, `true`, `false`, `null`, or whitespace: a key's scalar value ends
                // its protection at the next `,` or `}`.
            }
        }
        i += 1;
    }
    out
}

/// Whether a `data` value is bytes (a data URI, or 64+ characters of base64 alone).
fn is_blob(value: &[u8]) -> bool {
    value.starts_with(b"data:")
        || (value.len() >= 64
            && value.iter().all(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'_' | b'-' | b'\\')
            }))
}
