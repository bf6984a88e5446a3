//! The tool-summarization policy: which tool results are summarized as they are recorded.
//! It lives in the store, so every process and the CLI apply the same one.

use crate::error::{Error, Result};
use crate::repo::Repo;
use crate::tools::decision::Decision;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The store setting that holds the policy (JSON).
pub(crate) const SETTING: &str = "tool_summarization";

/// Per-tool instructions, an automatic token threshold and the instructions it uses. The
/// default `tool_result` handler applies it: a tool with instructions is summarized with them;
/// else a result over `auto_threshold` tokens is summarized with `default_instructions` (or
/// the tool prompt alone); else the result passes through unchanged.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolPolicy {
    /// Tool name to the instructions for summarizing its results.
    pub instructions: BTreeMap<String, String>,
    /// Results over this many tokens are summarized even without per-tool instructions.
    pub auto_threshold: Option<u32>,
    /// Instructions for results summarized because of the threshold.
    pub default_instructions: Option<String>,
}

impl ToolPolicy {
    /// Whether the policy holds instructions (per tool, or for results over the threshold),
    /// which only an LLM summarizer reads: the extractive one shortens results without them.
    pub fn has_instructions(&self) -> bool {
        !self.instructions.is_empty() || self.default_instructions.is_some()
    }

    /// Refuses a policy that names a tool with no name or no instructions.
    pub fn validate(&self) -> Result<()> {
        for (tool, text) in &self.instructions {
            if tool.trim().is_empty() {
                return Err(Error::invalid_input("a tool name in the policy is empty"));
            }
            if text.trim().is_empty() {
                return Err(Error::invalid_input(format!(
                    "the instructions for tool '{tool}' are empty"
                )));
            }
        }
        if self
            .default_instructions
            .as_deref()
            .is_some_and(|d| d.trim().is_empty())
        {
            return Err(Error::invalid_input("default_instructions is empty"));
        }
        Ok(())
    }

    /// Whether the policy summarizes nothing.
    pub fn is_empty(&self) -> bool {
        self.instructions.is_empty() && self.auto_threshold.is_none()
    }

    /// What the default handler decides for a result of `tool` with `tokens` payload tokens.
    pub fn decide(&self, tool: &str, tokens: u32) -> Decision {
        if let Some(text) = self.instructions.get(tool) {
            return Decision::Summarize {
                instructions: Some(text.clone()),
                target_tokens: None,
            };
        }
        match self.auto_threshold {
            Some(limit) if tokens > limit => Decision::Summarize {
                instructions: self.default_instructions.clone(),
                target_tokens: None,
            },
            _ => Decision::Approve,
        }
    }
}

/// The store's policy (empty when none was configured).
pub(crate) fn load(repo: &Repo) -> Result<ToolPolicy> {
    match repo.read()?.setting(SETTING)? {
        None => Ok(ToolPolicy::default()),
        Some(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| Error::corrupt(format!("the stored tool-summarization policy: {e}"))),
    }
}

/// Replaces the store's policy (durably). An invalid policy is refused and the stored one
/// kept.
pub(crate) fn store(repo: &Repo, policy: &ToolPolicy) -> Result<()> {
    policy.validate()?;
    let bytes = serde_json::to_vec(policy)
        .map_err(|e| Error::invalid_input(format!("the policy cannot be stored: {e}")))?;
    let mut w = repo.store.write()?;
    let value = (*policy != ToolPolicy::default()).then_some(bytes.as_slice());
    w.set_setting(SETTING, value)?;
    w.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> ToolPolicy {
        ToolPolicy {
            instructions: [("grep".to_string(), "files and lines".to_string())].into(),
            auto_threshold: Some(100),
            default_instructions: None,
        }
    }

    #[test]
    fn per_tool_instructions_win_then_the_threshold_then_pass_through() {
        let p = policy();
        assert_eq!(
            p.decide("grep", 1),
            Decision::Summarize {
                instructions: Some("files and lines".into()),
                target_tokens: None
            }
        );
        assert_eq!(
            p.decide("bash", 101),
            Decision::Summarize {
                instructions: None,
                target_tokens: None
            }
        );
        assert_eq!(p.decide("bash", 100), Decision::Approve);
        assert_eq!(
            ToolPolicy::default().decide("grep", 1_000_000),
            Decision::Approve
        );
    }

    #[test]
    fn empty_names_and_instructions_are_refused() {
        let mut p = policy();
        p.instructions.insert("bash".into(), "  ".into());
        assert!(p.validate().is_err());
        let mut p = policy();
        p.instructions.insert(String::new(), "x".into());
        assert!(p.validate().is_err());
        let mut p = policy();
        p.default_instructions = Some(String::new());
        assert!(p.validate().is_err());
        assert!(policy().validate().is_ok());
    }
}
