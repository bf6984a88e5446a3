//! Appending messages: one durable commit per message, or a batch in one transaction (all of
//! it, or none if any message is invalid).

use crate::error::{Error, Result};
use crate::object::{Message, Op};
use crate::repo::Repo;
use crate::view::info::CommitInfo;
use crate::write::txn::{self, AppendOptions, ChainStep, Prepared};

/// Appends one message at `HEAD`; durable when this returns.
pub(crate) fn append(repo: &Repo, message: Message, opts: &AppendOptions) -> Result<CommitInfo> {
    let prepared = Prepared::new(message, &repo.scrubber()?)?;
    txn::write(repo, opts, vec![(ChainStep::Op(Op::Append), prepared)])?
        .pop()
        .ok_or_else(|| Error::invalid_op("the append produced no commit"))
}

/// Appends messages in one transaction.
pub(crate) fn append_batch(
    repo: &Repo,
    messages: Vec<Message>,
    opts: &AppendOptions,
) -> Result<Vec<CommitInfo>> {
    let ops = messages.into_iter().map(|m| (Op::Append, m)).collect();
    write_ops(repo, opts, ops)
}

/// Commits operations that carry messages (appends, compressions) in one transaction.
pub(crate) fn write_ops(
    repo: &Repo,
    opts: &AppendOptions,
    ops: Vec<(Op, Message)>,
) -> Result<Vec<CommitInfo>> {
    let steps = ops
        .into_iter()
        .map(|(op, m)| (ChainStep::Op(op), m))
        .collect();
    txn::write(repo, opts, txn::prepare_all(steps, &repo.scrubber()?)?)
}
