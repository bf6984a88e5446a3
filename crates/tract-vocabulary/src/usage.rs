//! [`UsageReport`]: what a branch's model requests cost (`tract usage`, Python's `usage()`).

use serde::Serialize;
use tract_core::{BranchUsage, StoreUsage, Totals};

/// The four token counts, in Anthropic's names, whichever provider reported them.
#[derive(Debug, Clone, Serialize)]
pub struct Tokens {
    /// Input tokens neither read from the cache nor written to it.
    input_tokens: u64,
    /// Output tokens.
    output_tokens: u64,
    /// Input tokens read from the provider's cache.
    cache_read_input_tokens: u64,
    /// Input tokens written to the provider's cache.
    cache_creation_input_tokens: u64,
}

/// Requests summed: their tokens and how well the cache served them.
#[derive(Debug, Clone, Serialize)]
pub struct Summed {
    /// The tokens.
    totals: Tokens,
    /// Model requests counted.
    request_count: u64,
    /// The largest input of one request, every kind together.
    largest_input_tokens: u64,
    /// Cache read ÷ every input token (`null` without input).
    cache_hit_rate: Option<f64>,
    /// Cache creation ÷ the largest input: how many times the context was written to the
    /// cache (`null` without input).
    rewrite_factor: Option<f64>,
    /// What the requests cost at the store's price table, in its `currency` (`null`: a model
    /// is not priced, so the cost is not known; absent without a table).
    #[serde(skip_serializing_if = "Option::is_none")]
    cost: Option<Option<f64>>,
}

impl Summed {
    /// `t`, with its cost when the store has a price table.
    fn new(t: &Totals, cost: Option<Option<f64>>) -> Self {
        Summed {
            totals: Tokens {
                input_tokens: t.input_tokens,
                output_tokens: t.output_tokens,
                cache_read_input_tokens: t.cache_read_input_tokens,
                cache_creation_input_tokens: t.cache_creation_input_tokens,
            },
            request_count: t.requests,
            largest_input_tokens: t.largest_input_tokens,
            cache_hit_rate: t.cache_hit_rate(),
            rewrite_factor: t.rewrite_factor(),
            cost,
        }
    }
}

/// The requests of one model.
#[derive(Debug, Clone, Serialize)]
pub struct ModelUsage {
    /// The model, as the provider named it (`""`: not named).
    model: String,
    /// Its requests.
    #[serde(flatten)]
    summed: Summed,
}

/// The requests of one day.
#[derive(Debug, Clone, Serialize)]
pub struct DayUsage {
    /// The day, `YYYY-MM-DD` (UTC), the requests were recorded.
    day: String,
    /// Its requests.
    #[serde(flatten)]
    summed: Summed,
}

/// What a branch's model requests cost: summed along its first parents (what a compaction took
/// out of view was paid for too).
#[derive(Debug, Clone, Serialize)]
pub struct UsageReport {
    /// The branch (`HEAD` for a detached position).
    branch: String,
    /// Its tip (`null`: no commit yet).
    commit_hash: Option<String>,
    /// Where the totals start (RFC 3339), when asked: only the requests since.
    since: Option<String>,
    /// Every request.
    #[serde(flatten)]
    summed: Summed,
    /// Per model, by name.
    by_model: Vec<ModelUsage>,
    /// Per day, oldest first, when asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    by_day: Option<Vec<DayUsage>>,
    /// The kinds of tokens reported that tract does not sum, by name.
    unknown_kinds: Vec<String>,
    /// The currency of the costs (absent without a price table).
    #[serde(skip_serializing_if = "Option::is_none")]
    currency: Option<String>,
    /// The models the price table does not price (absent without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    unpriced_models: Option<Vec<String>>,
}

impl From<&BranchUsage> for UsageReport {
    fn from(u: &BranchUsage) -> Self {
        let priced = u.cost.as_ref();
        let model_cost =
            |model: &str| priced.map(|p| p.cost.by_model.get(model).copied().flatten());
        UsageReport {
            branch: u.branch.clone(),
            commit_hash: u.tip.map(|t| t.to_hex()),
            since: u.since_us.map(tract_core::clock::rfc3339_micros),
            summed: Summed::new(&u.ledger.totals, priced.map(|p| p.cost.total)),
            by_model: u
                .ledger
                .by_model
                .iter()
                .map(|(model, t)| ModelUsage {
                    model: model.clone(),
                    summed: Summed::new(t, model_cost(model)),
                })
                .collect(),
            by_day: u.by_day.as_ref().map(|days| {
                days.iter()
                    .map(|(day, l)| DayUsage {
                        day: day.clone(),
                        summed: Summed::new(
                            &l.totals,
                            priced.map(|p| {
                                p.by_day
                                    .as_ref()
                                    .and_then(|d| d.get(day))
                                    .and_then(|c| c.total)
                            }),
                        ),
                    })
                    .collect()
            }),
            unknown_kinds: u.ledger.unknown_kinds.iter().cloned().collect(),
            currency: priced.map(|p| p.currency.clone()),
            unpriced_models: priced.map(|p| p.cost.unpriced.clone()),
        }
    }
}

/// Every branch's usage (`tract usage --all`), and the store's.
#[derive(Debug, Clone, Serialize)]
pub struct UsageReports {
    /// One per branch, by name.
    branches: Vec<UsageReport>,
    /// Every branch's history together, each request once however many branches reach it
    /// (`branch` is `""`, `commit_hash` null).
    total: UsageReport,
}

impl From<&StoreUsage> for UsageReports {
    fn from(all: &StoreUsage) -> Self {
        UsageReports {
            branches: all.branches.iter().map(UsageReport::from).collect(),
            total: UsageReport::from(&all.total),
        }
    }
}
