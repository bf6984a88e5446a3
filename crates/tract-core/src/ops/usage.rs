//! What a branch's model requests cost (`tract usage`): the totals of its first-parent history
//! (what a compaction took out of view was paid for too), read from the usage ledger's row
//! near its tip ([`crate::view::ledger`]), never from its messages; per day, or since a time,
//! from the requests themselves, walked back from the tip only as far as asked.

use crate::error::Result;
use crate::id::CommitId;
use crate::object::Op;
use crate::repo::Repo;
use crate::storage::store::snapshot::Snapshot;
use crate::view::ledger::{self, Ledger, Totals};
use crate::view::revision::Rev;
use std::collections::BTreeMap;

/// What a usage report covers besides the totals.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UsageOptions {
    /// Only the requests recorded at or after this time (microseconds since the Unix epoch):
    /// the history is walked back from the tip to it.
    pub since_us: Option<u64>,
    /// Also the totals of each day (UTC) a request was recorded: the whole history is walked
    /// (from `since_us` with it).
    pub by_day: bool,
}

/// What one branch's requests cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BranchUsage {
    /// The branch (`HEAD` for a detached position).
    pub branch: String,
    /// Its tip (`None`: no commit yet).
    pub tip: Option<CommitId>,
    /// The totals, overall and per model, and the token kinds reported that are not summed.
    pub ledger: Ledger,
    /// Per day (`YYYY-MM-DD`, UTC), when asked for.
    pub by_day: Option<BTreeMap<String, Totals>>,
    /// The time the totals start from, when asked for.
    pub since_us: Option<u64>,
}

/// The usage of the history at `tip`, named `branch`.
fn of(
    snap: &Snapshot,
    branch: String,
    tip: Option<CommitId>,
    o: &UsageOptions,
) -> Result<BranchUsage> {
    let walked = o.since_us.is_some() || o.by_day;
    let (ledger, by_day) = if walked {
        let (ledger, days) = walk(snap, tip, o.since_us)?;
        (ledger, o.by_day.then_some(days))
    } else {
        (ledger::at(snap, tip)?.0, None)
    };
    Ok(BranchUsage {
        branch,
        tip,
        ledger,
        by_day,
        since_us: o.since_us,
    })
}

/// The requests of `tip`'s first-parent history recorded at or after `since_us`, summed, and
/// per day. First parents are in time order, so the walk stops at the first commit before it.
fn walk(
    snap: &Snapshot,
    tip: Option<CommitId>,
    since_us: Option<u64>,
) -> Result<(Ledger, BTreeMap<String, Totals>)> {
    let mut ledger = Ledger::default();
    let mut days: BTreeMap<String, Totals> = BTreeMap::new();
    let mut next = tip;
    while let Some(id) = next {
        let c = snap.commit(&id)?;
        if since_us.is_some_and(|s| c.timestamp_us < s) {
            break;
        }
        next = c.parents.first().copied();
        let (Some(blob), false) = (&c.blob, matches!(c.op, Op::Edit { .. })) else {
            continue;
        };
        let (m, _) = snap.blob(blob)?;
        if let Some(u) = ledger::counted(&c, &m) {
            ledger.add(&u);
            let day = crate::clock::rfc3339_micros(c.timestamp_us)
                .get(..10)
                .unwrap_or_default()
                .to_string();
            days.entry(day).or_default().add(&u);
        }
    }
    Ok((ledger, days))
}

/// The usage of the branch `branch` names (`None`: the handle's position).
pub(crate) fn branch(repo: &Repo, branch: Option<&str>, o: &UsageOptions) -> Result<BranchUsage> {
    let snap = repo.read()?;
    let (name, tip) = match branch {
        Some(b) => (b.to_string(), Some(repo.resolve(&snap, &Rev::parse(b)?)?)),
        None => {
            let head = repo.head(&snap)?;
            let name = head.branch().unwrap_or("HEAD").to_string();
            (name, head.commit)
        }
    };
    of(&snap, name, tip, o)
}

/// The usage of every branch, by name.
pub(crate) fn all(repo: &Repo, o: &UsageOptions) -> Result<Vec<BranchUsage>> {
    let snap = repo.read()?;
    snap.branches()?
        .into_iter()
        .map(|(name, tip)| of(&snap, name, Some(tip), o))
        .collect()
}
