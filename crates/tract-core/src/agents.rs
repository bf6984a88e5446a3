//! Which agent wrote the session a branch holds (Claude Code, Codex CLI, Gemini CLI), the
//! version of it the session names, and when the session started: kept per branch beside its
//! refs (the metadata key `session/<branch>`), written by an import of the session, copied with
//! the branch by a transfer, dropped with the branch. A listing reads them all with one scan.
//!
//! Beside the refs, not in history: an agent's version is what a listing shows for every
//! branch, and a branch's first commit (where a record would sit) is a walk of its whole line
//! away.

use crate::error::Result;
use crate::storage::store::snapshot::Snapshot;
use crate::storage::store::writer::Writer;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The prefix of every branch's key.
const KEY_PREFIX: &str = "session/";

/// The agent that wrote a session, as its import read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSession {
    /// The agent, by the name of its transcript format: `claude-code`, `codex` or `gemini`.
    pub agent: String,
    /// The agent's version the session names: Claude Code's newest line's `version`, the
    /// thread's `session_meta` `cli_version` for Codex. `None` where the agent writes none
    /// (Gemini CLI's sessions do not say which version wrote them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// When the session started, as the agent wrote it (Codex's `session_meta` timestamp,
    /// Gemini CLI's `startTime`): two files that give one session id but different starts are
    /// two sessions, and the second is refused the first one's branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<String>,
}

impl AgentSession {
    /// The agent and its version as a listing shows them: `codex 0.125.0`, or `gemini`.
    pub fn label(&self) -> String {
        match &self.version {
            Some(v) => format!("{} {v}", self.agent),
            None => self.agent.clone(),
        }
    }
}

/// The metadata key of `branch`'s session.
pub(crate) fn key(branch: &str) -> String {
    format!("{KEY_PREFIX}{branch}")
}

/// The session branch `branch` holds, if an import said which. A value this tract cannot read
/// (written by a newer one) is no session: it only labels the branch.
pub(crate) fn of(snap: &Snapshot, branch: &str) -> Result<Option<AgentSession>> {
    Ok(snap.meta(&key(branch))?.and_then(|v| decode(&v)))
}

/// Every branch's session, by branch: one scan of the keys, one read of their values.
pub(crate) fn all(snap: &Snapshot) -> Result<BTreeMap<String, AgentSession>> {
    let keys = snap.meta_keys(KEY_PREFIX)?;
    let values = snap.metas(&keys)?;
    Ok(keys
        .iter()
        .zip(values)
        .filter_map(|(k, v)| Some((k[KEY_PREFIX.len()..].to_string(), decode(&v?)?)))
        .collect())
}

/// Sets (or with `None` drops) `branch`'s session in `w`.
pub(crate) fn set(w: &mut Writer, branch: &str, session: Option<&AgentSession>) -> Result<()> {
    match session {
        Some(s) => {
            let bytes = serde_json::to_vec(s)
                .map_err(|e| crate::error::Error::invalid_input(format!("session: {e}")))?;
            w.set_meta(&key(branch), Some(&bytes))
        }
        None => w.set_meta(&key(branch), None),
    }
}

fn decode(bytes: &[u8]) -> Option<AgentSession> {
    serde_json::from_slice(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_shows_the_version_when_there_is_one() {
        let mut s = AgentSession {
            agent: "codex".into(),
            version: Some("0.125.0".into()),
            started: None,
        };
        assert_eq!(s.label(), "codex 0.125.0");
        s.version = None;
        assert_eq!(s.label(), "codex");
    }

    #[test]
    fn a_value_written_by_a_newer_tract_still_reads_and_garbage_is_no_session() {
        let s = decode(br#"{"agent":"gemini","started":"t","model":"new field"}"#).unwrap();
        assert_eq!(s.agent, "gemini");
        assert_eq!(s.started.as_deref(), Some("t"));
        assert!(decode(b"\xff").is_none());
    }
}
