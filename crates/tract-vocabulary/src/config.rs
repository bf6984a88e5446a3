//! [`Config`]: the settings kept in the store.

use serde::Serialize;
use std::collections::BTreeMap;
use tract_core::{RetentionPolicy, SecretsPolicy, ToolPolicy};

/// The stored settings (`tract config show --json`).
#[derive(Debug, Clone, Serialize)]
pub struct Config {
    /// The tool-summarization policy every process applies (Python's `ToolSummarization`).
    tool_summarization: Policy,
    /// The retention policy `tract gc` applies (Python's `retention_policy()`), as stored.
    retention: RetentionPolicy,
    /// The secrets policy every write applies (Python's `secrets_policy()`), as stored: `null`
    /// for a store an older tract made, which scrubs nothing. Its fingerprint key is never
    /// shown.
    secrets: Option<SecretsPolicy>,
}

/// The tool-summarization policy.
#[derive(Debug, Clone, Serialize)]
struct Policy {
    /// Tool name to the instructions its results are summarized with.
    instructions: BTreeMap<String, String>,
    /// Results over this many tokens are summarized (`null`: no threshold).
    auto_threshold: Option<u32>,
    /// The instructions for results over the threshold (`null`: the tool prompt alone).
    default_instructions: Option<String>,
    /// Who summarizes in this process (from the environment, not stored): `extractive` (the
    /// built-in summarizer, which ignores instructions), or the LLM `TRACT_LLM_*` sets
    /// (`openai:MODEL@URL`).
    summarizer: String,
    /// Whether the instructions are read: an LLM summarizer is set.
    instructions_apply: bool,
}

impl Config {
    /// The settings: the tool-summarization and retention policies, and the LLM summarizer
    /// the environment sets, if any.
    pub fn new(
        policy: &ToolPolicy,
        retention: &RetentionPolicy,
        secrets: Option<&SecretsPolicy>,
        llm: Option<&str>,
    ) -> Self {
        Config {
            retention: retention.clone(),
            secrets: secrets.cloned(),
            tool_summarization: Policy {
                instructions: policy.instructions.clone(),
                auto_threshold: policy.auto_threshold,
                default_instructions: policy.default_instructions.clone(),
                summarizer: llm.unwrap_or("extractive").to_string(),
                instructions_apply: llm.is_some(),
            },
        }
    }
}
