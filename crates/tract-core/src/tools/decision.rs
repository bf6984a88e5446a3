//! What happens to a tool result before it is recorded: the [`Decision`] a `tool_result`
//! handler or the store's policy makes, and the rule that a result is decided at most once.

use crate::error::{Error, Result};
use std::num::NonZeroU32;

/// What happens to a pending tool result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Record it as it is.
    Approve,
    /// Record it, then an edit holding its summary (the tool prompt plus `instructions`).
    Summarize {
        /// Instructions for the summarizer, after the tool prompt.
        instructions: Option<String>,
        /// The length to aim for, in tokens.
        target_tokens: Option<NonZeroU32>,
    },
    /// Record it, then an edit holding this text.
    Edit(String),
    /// Record nothing; the call fails with [`Error::Rejected`].
    Reject(String),
}

impl Decision {
    /// `approve`, `summarize`, `edit` or `reject`.
    pub fn name(&self) -> &'static str {
        match self {
            Decision::Approve => "approve",
            Decision::Summarize { .. } => "summarize",
            Decision::Edit(_) => "edit",
            Decision::Reject(_) => "reject",
        }
    }
}

/// Where a handler's decision goes: it takes one, and refuses a second.
#[derive(Debug, Clone, Default)]
pub struct DecisionSlot(Option<Decision>);

impl DecisionSlot {
    /// Records `d`, unless a decision was made already.
    pub fn decide(&mut self, d: Decision) -> Result<()> {
        if let Some(done) = &self.0 {
            return Err(Error::invalid_op(format!(
                "this tool result was already decided ({})",
                done.name()
            )));
        }
        self.0 = Some(d);
        Ok(())
    }

    /// The decision made so far.
    pub fn get(&self) -> Option<&Decision> {
        self.0.as_ref()
    }

    /// The decision made, taking it out.
    pub fn take(&mut self) -> Option<Decision> {
        self.0.take()
    }
}

/// A target length in tokens from a surface's integer: positive, or an error naming the value.
pub fn target_tokens(n: i64) -> Result<NonZeroU32> {
    u32::try_from(n)
        .ok()
        .and_then(NonZeroU32::new)
        .ok_or_else(|| Error::invalid_input(format!("target_tokens must be positive, not {n}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_is_decided_once() {
        let mut slot = DecisionSlot::default();
        slot.decide(Decision::Approve).unwrap();
        let err = slot.decide(Decision::Edit("x".into())).unwrap_err();
        assert!(
            err.to_string().contains("already decided (approve)"),
            "{err}"
        );
        assert_eq!(slot.take(), Some(Decision::Approve));
    }

    #[test]
    fn target_tokens_must_be_positive() {
        assert_eq!(target_tokens(5).unwrap().get(), 5);
        for bad in [0, -1, i64::from(u32::MAX) + 1] {
            assert!(target_tokens(bad).is_err(), "{bad}");
        }
    }
}
