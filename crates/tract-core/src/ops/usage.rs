//! What a branch's model requests cost (`tract usage`): the totals of its first-parent history
//! (what a compaction took out of view was paid for too), read from the usage ledger's row
//! near its tip ([`crate::view::ledger`]), never from its messages; per day, or since a time,
//! from the requests themselves, walked back from the tip only as far as asked.

use crate::error::Result;
use crate::id::CommitId;
use crate::object::Op;
use crate::price_table::{Cost, PriceTable};
use crate::repo::Repo;
use crate::storage::store::snapshot::Snapshot;
use crate::usage::Ledger;
use crate::view::ledger;
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
#[derive(Debug, Clone, PartialEq)]
pub struct BranchUsage {
    /// The branch (`HEAD` for a detached position).
    pub branch: String,
    /// Its tip (`None`: no commit yet).
    pub tip: Option<CommitId>,
    /// The totals, overall and per model, and the token kinds reported that are not summed.
    pub ledger: Ledger,
    /// Per day (`YYYY-MM-DD`, UTC), when asked for.
    pub by_day: Option<BTreeMap<String, Ledger>>,
    /// The time the totals start from, when asked for.
    pub since_us: Option<u64>,
    /// What the requests cost, at the store's price table (`None`: it has none).
    pub cost: Option<Priced>,
}

/// What a branch's requests cost at the store's prices.
#[derive(Debug, Clone, PartialEq)]
pub struct Priced {
    /// The table's currency.
    pub currency: String,
    /// In all and per model.
    pub cost: Cost,
    /// Per day, when asked for.
    pub by_day: Option<BTreeMap<String, Cost>>,
}

/// The usage of the history at `tip`, named `branch`, priced by `table`.
fn of(
    snap: &Snapshot,
    branch: String,
    tip: Option<CommitId>,
    o: &UsageOptions,
    table: &PriceTable,
) -> Result<BranchUsage> {
    let walked = o.since_us.is_some() || o.by_day;
    let (ledger, by_day) = if walked {
        let (ledger, days) = walk(snap, tip.as_slice(), o.since_us)?;
        (ledger, o.by_day.then_some(days))
    } else {
        (ledger::at(snap, tip)?.ledger, None)
    };
    Ok(priced(branch, tip, ledger, by_day, o.since_us, table))
}

/// A report of `ledger`, priced by `table`.
fn priced(
    branch: String,
    tip: Option<CommitId>,
    ledger: Ledger,
    by_day: Option<BTreeMap<String, Ledger>>,
    since_us: Option<u64>,
    table: &PriceTable,
) -> BranchUsage {
    let cost = (!table.is_empty()).then(|| Priced {
        currency: table.currency.clone(),
        cost: table.cost(&ledger),
        by_day: by_day.as_ref().map(|days| {
            days.iter()
                .map(|(day, l)| (day.clone(), table.cost(l)))
                .collect()
        }),
    });
    BranchUsage {
        branch,
        tip,
        ledger,
        by_day,
        since_us,
        cost,
    }
}

/// The store's price table.
fn prices(snap: &Snapshot) -> Result<PriceTable> {
    PriceTable::decode(snap.setting(crate::price_table::SETTING)?.as_deref())
}

/// Counts the request commit `c` records, if any, in `ledger` and in its day's.
fn count(
    snap: &Snapshot,
    c: &crate::object::Commit,
    ledger: &mut Ledger,
    days: &mut BTreeMap<String, Ledger>,
) -> Result<()> {
    let (Some(blob), false) = (&c.blob, matches!(c.op, Op::Edit { .. })) else {
        return Ok(());
    };
    let (m, _) = snap.blob(blob)?;
    if let Some(u) = ledger::counted(c, &m) {
        ledger.add(&u);
        let day = crate::clock::rfc3339_micros(c.timestamp_us)
            .get(..10)
            .unwrap_or_default()
            .to_string();
        days.entry(day).or_default().add(&u);
    }
    Ok(())
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
    let table = prices(&snap)?;
    of(&snap, name, tip, o, &table)
}

/// What every branch's requests cost, each on its own history, and the store's: each request
/// once, however many branches reach it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreUsage {
    /// Each branch, by name.
    pub branches: Vec<BranchUsage>,
    /// Every branch's history together, each request once (`branch` is empty, `tip` none).
    pub total: BranchUsage,
}

/// The usage of every branch, by name, and of them all.
pub(crate) fn all(repo: &Repo, o: &UsageOptions) -> Result<StoreUsage> {
    let snap = repo.read()?;
    let table = prices(&snap)?;
    let tips = snap.branches()?;
    if o.since_us.is_some() || o.by_day {
        let branches = tips
            .iter()
            .map(|(name, tip)| of(&snap, name.clone(), Some(*tip), o, &table))
            .collect::<Result<Vec<_>>>()?;
        let ids: Vec<CommitId> = tips.iter().map(|(_, t)| *t).collect();
        let (ledger, days) = walk(&snap, &ids, o.since_us)?;
        let by_day = o.by_day.then_some(days);
        let total = priced(String::new(), None, ledger, by_day, o.since_us, &table);
        return Ok(StoreUsage { branches, total });
    }
    // Each branch's place, read once: its totals, and what the store's are made of.
    let places = tips
        .iter()
        .map(|(_, tip)| Ok((*tip, ledger::at(&snap, Some(*tip))?)))
        .collect::<Result<Vec<_>>>()?;
    let branches = tips
        .iter()
        .zip(&places)
        .map(|((name, tip), (_, place))| {
            priced(
                name.clone(),
                Some(*tip),
                place.ledger.clone(),
                None,
                None,
                &table,
            )
        })
        .collect();
    let ledger = ledger::union(&snap, places)?;
    let total = priced(String::new(), None, ledger, None, None, &table);
    Ok(StoreUsage { branches, total })
}

/// The requests of the first-parent histories of `tips` recorded at or after `since_us`,
/// summed, and per day: each commit once, however many of them reach it. First parents are in
/// time order, so each walk stops at the first commit before `since_us`.
fn walk(
    snap: &Snapshot,
    tips: &[CommitId],
    since_us: Option<u64>,
) -> Result<(Ledger, BTreeMap<String, Ledger>)> {
    let mut seen = std::collections::HashSet::new();
    let mut ledger = Ledger::default();
    let mut days: BTreeMap<String, Ledger> = BTreeMap::new();
    for tip in tips {
        let mut next = Some(*tip);
        while let Some(id) = next {
            if !seen.insert(id) {
                break;
            }
            let c = snap.commit(&id)?;
            if since_us.is_some_and(|s| c.timestamp_us < s) {
                break;
            }
            next = c.parents.first().copied();
            count(snap, &c, &mut ledger, &mut days)?;
        }
    }
    Ok((ledger, days))
}
