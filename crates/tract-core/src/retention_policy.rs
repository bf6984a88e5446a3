//! Retention policies: the rules a user sets for what `gc` may remove as a store ages (old
//! tool results replaced by their summary or a placeholder, idle branches deleted), scoped by
//! branch name patterns, with pinned branches exempt. The policy lives in the store like the
//! tool-summarization policy, so every process and `push --settings` carry it; nothing is
//! removed without a rule, and only `gc` applies them (`ops::retention`).

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// The store setting that holds the policy (JSON).
pub(crate) const SETTING: &str = "retention";

/// How the reason of a tombstone that retention left begins (`retention rule 'old-results':
/// …`): how `fsck` tells content removed for space, whose summary is meant to live on, from
/// content redacted, whose summaries must not.
pub const RETENTION_REASON: &str = "retention rule ";

/// The rules, applied in order by `gc`, and the branches no rule touches.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionPolicy {
    /// The rules, in the order they apply (a branch or a result is taken by the first rule
    /// that takes it; branches are deleted before results are replaced).
    pub rules: Vec<RetentionRule>,
    /// Branch name patterns no rule touches, nor any content they reach.
    pub pinned: Vec<String>,
}

/// One rule: the branches it covers and what it does to them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionRule {
    /// Its name, unique in the policy: reports, tombstones and reflog entries name it.
    pub name: String,
    /// Branch name patterns (`*` any run of characters, `/` included; `?` one character;
    /// `[abc]` one of them): the rule covers the branches matching one.
    pub branches: Vec<String>,
    /// Replace the branches' old tool results.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replace_tool_results: Option<ReplaceToolResults>,
    /// Delete the branches idle for long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_idle_branches: Option<DeleteIdleBranches>,
}

/// Tool results replaced (their content removed for good, as a redaction removes it; every id
/// stays valid): those older than `older_than_days`, outside the newest `keep_newest` messages
/// of each view. A result any branch the rule does not cover reaches is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplaceToolResults {
    /// Only results committed at least this many days ago.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub older_than_days: Option<u32>,
    /// The newest this many messages of each covered branch's view stay verbatim (with the
    /// versions they replaced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_newest: Option<u32>,
    /// What stands in their place.
    #[serde(default)]
    pub with: Replacement,
}

/// What a replaced tool result becomes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Replacement {
    /// Its summary: only results that have one (the tool policy's or a hook's summary of it,
    /// or a compression made of it) are replaced, by its text; the rest are kept. The view,
    /// which shows the summary already, does not change.
    #[default]
    Summary,
    /// A placeholder naming the rule: every result the rule takes, summaries included.
    Placeholder,
}

/// Branches deleted when nothing moved them for `idle_days` (their tip commit and their
/// newest reflog entry are that old). The deletion is logged, so their commits stay until the
/// reflog's grace period ends, and a deleted session is never captured again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeleteIdleBranches {
    /// Days without a move (1 or more).
    pub idle_days: u32,
}

/// What a rule does, as one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleAction<'a> {
    /// Replace old tool results.
    ReplaceToolResults(&'a ReplaceToolResults),
    /// Delete idle branches.
    DeleteIdleBranches(&'a DeleteIdleBranches),
}

fn pattern(p: &str, what: &str) -> Result<glob::Pattern> {
    if p.trim().is_empty() {
        return Err(Error::invalid_input(format!(
            "{what}: a branch pattern is empty"
        )));
    }
    glob::Pattern::new(p)
        .map_err(|e| Error::invalid_input(format!("{what}: branch pattern '{p}' is invalid: {e}")))
}

impl RetentionRule {
    /// What the rule does (a validated rule does exactly one thing).
    pub fn action(&self) -> Result<RuleAction<'_>> {
        match (&self.replace_tool_results, &self.delete_idle_branches) {
            (Some(r), None) => Ok(RuleAction::ReplaceToolResults(r)),
            (None, Some(d)) => Ok(RuleAction::DeleteIdleBranches(d)),
            (None, None) => Err(Error::invalid_input(format!(
                "retention rule '{}' does nothing: give it replace_tool_results or \
                 delete_idle_branches",
                self.name
            ))),
            (Some(_), Some(_)) => Err(Error::invalid_input(format!(
                "retention rule '{}' does two things: one rule replaces tool results or \
                 deletes branches, not both",
                self.name
            ))),
        }
    }

    /// Whether the rule covers branch `name` (pins aside).
    pub fn covers(&self, name: &str) -> bool {
        self.branches
            .iter()
            .any(|p| glob::Pattern::new(p).is_ok_and(|p| p.matches(name)))
    }

    fn validate(&self) -> Result<()> {
        let what = format!("retention rule '{}'", self.name);
        if self.name.trim().is_empty() {
            return Err(Error::invalid_input("a retention rule has no name"));
        }
        if self.branches.is_empty() {
            return Err(Error::invalid_input(format!(
                "{what} names no branches: give it branch patterns (`*` for every branch)"
            )));
        }
        for p in &self.branches {
            pattern(p, &what)?;
        }
        match self.action()? {
            RuleAction::ReplaceToolResults(r) => {
                if r.older_than_days.is_none() && r.keep_newest.is_none() {
                    return Err(Error::invalid_input(format!(
                        "{what} would replace every tool result: give it older_than_days or \
                         keep_newest"
                    )));
                }
            }
            RuleAction::DeleteIdleBranches(d) => {
                if d.idle_days == 0 {
                    return Err(Error::invalid_input(format!(
                        "{what}: idle_days must be 1 or more"
                    )));
                }
            }
        }
        Ok(())
    }
}

impl RetentionPolicy {
    /// Refuses a policy with a rule that is unnamed, named twice, covers no branch pattern,
    /// does nothing or two things, or an invalid pattern.
    pub fn validate(&self) -> Result<()> {
        let mut names = std::collections::HashSet::new();
        for rule in &self.rules {
            rule.validate()?;
            if !names.insert(rule.name.as_str()) {
                return Err(Error::invalid_input(format!(
                    "two retention rules are named '{}'",
                    rule.name
                )));
            }
        }
        for p in &self.pinned {
            pattern(p, "pinned")?;
        }
        Ok(())
    }

    /// Whether branch `name` is pinned.
    pub fn pinned(&self, name: &str) -> bool {
        self.pinned
            .iter()
            .any(|p| glob::Pattern::new(p).is_ok_and(|p| p.matches(name)))
    }

    /// Whether the policy has no rule (and so removes nothing).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Reads a policy from its JSON, validated.
    pub fn from_json(text: &str) -> Result<Self> {
        let p: RetentionPolicy = serde_json::from_str(text)
            .map_err(|e| Error::invalid_input(format!("the retention policy: {e}")))?;
        p.validate()?;
        Ok(p)
    }

    /// The policy as JSON.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string(self)
            .map_err(|e| Error::invalid_input(format!("the retention policy: {e}")))
    }

    /// The stored policy's bytes read back (none stored: the empty policy).
    pub(crate) fn decode(bytes: Option<&[u8]>) -> Result<Self> {
        match bytes {
            None => Ok(Self::default()),
            Some(b) => serde_json::from_slice(b)
                .map_err(|e| Error::corrupt(format!("the stored retention policy: {e}"))),
        }
    }

    /// The bytes to store (`None` for the empty policy: the setting is removed).
    pub(crate) fn encode(&self) -> Result<Option<Vec<u8>>> {
        if *self == Self::default() {
            return Ok(None);
        }
        self.validate()?;
        serde_json::to_vec(self)
            .map(Some)
            .map_err(|e| Error::invalid_input(format!("the retention policy: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_reads_back_from_its_json_and_patterns_match_across_slashes() {
        let text = r#"{"rules":[
            {"name":"old","branches":["claude/*"],
             "replace_tool_results":{"older_than_days":30,"keep_newest":50}},
            {"name":"idle","branches":["*"],"delete_idle_branches":{"idle_days":90}}],
            "pinned":["main"]}"#;
        let p = RetentionPolicy::from_json(text).unwrap();
        assert_eq!(
            p.rules[0].replace_tool_results.as_ref().unwrap().with,
            Replacement::Summary
        );
        assert!(p.rules[0].covers("claude/proj/abc"));
        assert!(!p.rules[0].covers("main"));
        assert!(p.pinned("main") && !p.pinned("mainline"));
        assert_eq!(
            RetentionPolicy::from_json(&p.to_json().unwrap()).unwrap(),
            p
        );
    }

    #[test]
    fn bad_policies_are_refused_with_the_reason() {
        for (text, says) in [
            (
                r#"{"rules":[{"name":"x","branches":["*"]}]}"#,
                "does nothing",
            ),
            (
                r#"{"rules":[{"name":"x","branches":[],"delete_idle_branches":{"idle_days":9}}]}"#,
                "names no branches",
            ),
            (
                r#"{"rules":[{"name":"x","branches":["["],"delete_idle_branches":{"idle_days":9}}]}"#,
                "invalid",
            ),
            (
                r#"{"rules":[{"name":"x","branches":["*"],"delete_idle_branches":{"idle_days":0}}]}"#,
                "1 or more",
            ),
            (
                r#"{"rules":[{"name":"x","branches":["*"],"replace_tool_results":{}}]}"#,
                "every tool result",
            ),
            (
                r#"{"rules":[{"name":"x","branches":["*"],"delete_idle_branches":{"idle_days":1},"replace_tool_results":{"keep_newest":1}}]}"#,
                "two things",
            ),
            (
                r#"{"rules":[{"name":"x","branches":["*"],"delete_idle_branches":{"idle_days":1}},{"name":"x","branches":["*"],"delete_idle_branches":{"idle_days":1}}]}"#,
                "named 'x'",
            ),
            (r#"{"rules":[],"pined":[]}"#, "unknown field"),
        ] {
            let e = RetentionPolicy::from_json(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
