//! The price table a user gives (`tract config prices`): what each model charges per million
//! tokens of each kind, so a usage report can say what requests cost. None is bundled (prices
//! change, and differ by contract); an example is in docs/cli.md. Kept in the store as a setting
//! (JSON), as the retention policy is.

use crate::error::{Error, Result};
use crate::usage::{Ledger, Totals};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The store setting that holds the table (JSON).
pub(crate) const SETTING: &str = "prices";

/// What each model charges.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceTable {
    /// The currency the prices are in (a name of the user's: `USD`, `EUR`), said with costs.
    #[serde(default = "usd")]
    pub currency: String,
    /// Model name, or a pattern of names (`*` any run of characters, `?` one: a dated model's
    /// versions), to its prices. A model takes the exact name's prices, else the longest
    /// pattern's that matches it.
    #[serde(default)]
    pub models: BTreeMap<String, Prices>,
}

fn usd() -> String {
    "USD".into()
}

impl Default for PriceTable {
    fn default() -> Self {
        PriceTable {
            currency: usd(),
            models: BTreeMap::new(),
        }
    }
}

/// What one model charges per million tokens of each kind.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    /// Input tokens neither read from the cache nor written to it.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Input tokens read from the cache (the input price when not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    /// Input tokens written to the cache (the input price when not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation: Option<f64>,
}

impl Prices {
    /// What `t` cost at these prices.
    pub fn cost(&self, t: &Totals) -> f64 {
        let per = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        per(t.input_tokens, self.input)
            + per(t.output_tokens, self.output)
            + per(
                t.cache_read_input_tokens,
                self.cache_read.unwrap_or(self.input),
            )
            + per(
                t.cache_creation_input_tokens,
                self.cache_creation.unwrap_or(self.input),
            )
    }
}

/// What requests cost at a table's prices, in its currency.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cost {
    /// In all (`None`: a model is not priced).
    pub total: Option<f64>,
    /// Per model (`None`: not priced).
    pub by_model: BTreeMap<String, Option<f64>>,
    /// The models the table does not price (`""`: requests that named none).
    pub unpriced: Vec<String>,
}

impl PriceTable {
    /// The table a setting holds (an empty one when none was set).
    pub fn decode(stored: Option<&[u8]>) -> Result<PriceTable> {
        match stored {
            None => Ok(PriceTable::default()),
            Some(bytes) => serde_json::from_slice(bytes)
                .map_err(|e| Error::corrupt(format!("the stored price table does not read: {e}"))),
        }
    }

    /// The table as a setting's value (`None`: an empty table, stored as none).
    pub fn encode(&self) -> Result<Option<Vec<u8>>> {
        self.validate()?;
        if self.models.is_empty() {
            return Ok(None);
        }
        serde_json::to_vec(self)
            .map(Some)
            .map_err(|e| Error::invalid_input(format!("price table: {e}")))
    }

    /// A table from its JSON (`{"currency": "USD", "models": {"claude-sonnet-4-5*": {"input":
    /// 3, "output": 15, "cache_read": 0.3, "cache_creation": 3.75}}}`), checked.
    pub fn from_json(text: &str) -> Result<PriceTable> {
        // A JSON object only (serde would read a struct from an array too).
        let value: serde_json::Value = serde_json::from_str(text)
            .map_err(|e| Error::invalid_input(format!("price table: {e}")))?;
        if !value.is_object() {
            return Err(Error::invalid_input(
                "price table: give a JSON object ({\"currency\": ..., \"models\": {...}})",
            ));
        }
        let t: PriceTable = serde_json::from_value(value).map_err(|e| {
            Error::invalid_input(format!(
                "price table: {e} (give {{\"currency\": \"USD\", \"models\": {{\"MODEL\": \
                 {{\"input\": N, \"output\": N, \"cache_read\": N, \"cache_creation\": N}}}}}}, \
                 prices per million tokens)"
            ))
        })?;
        t.validate()?;
        Ok(t)
    }

    /// Checks every price is a number of 0 or more and every pattern reads.
    pub fn validate(&self) -> Result<()> {
        if self.currency.trim().is_empty() {
            return Err(Error::invalid_input("price table: the currency is empty"));
        }
        for (model, p) in &self.models {
            if model.trim().is_empty() {
                return Err(Error::invalid_input("price table: a model name is empty"));
            }
            glob::Pattern::new(model).map_err(|e| {
                Error::invalid_input(format!("price table: model pattern '{model}': {e}"))
            })?;
            let prices = [
                ("input", Some(p.input)),
                ("output", Some(p.output)),
                ("cache_read", p.cache_read),
                ("cache_creation", p.cache_creation),
            ];
            for (kind, price) in prices {
                if let Some(v) = price
                    && !(v.is_finite() && v >= 0.0)
                {
                    return Err(Error::invalid_input(format!(
                        "price table: '{model}' {kind} must be a price of 0 or more per million \
                         tokens"
                    )));
                }
            }
        }
        Ok(())
    }

    /// The prices of `model`: its own, else the longest matching pattern's; `None` when the
    /// table has none (its cost is unknown, never taken as zero).
    pub fn of(&self, model: &str) -> Option<&Prices> {
        if let Some(p) = self.models.get(model) {
            return Some(p);
        }
        self.models
            .iter()
            .filter(|(k, _)| glob::Pattern::new(k).is_ok_and(|p| p.matches(model)))
            .max_by_key(|(k, _)| k.len())
            .map(|(_, p)| p)
    }

    /// What the requests of `ledger` cost: per model (`None` for a model the table does not
    /// price), and in all (`None` when a model is not priced: the cost is not known, and never
    /// taken as zero).
    pub fn cost(&self, ledger: &Ledger) -> Cost {
        let by_model: BTreeMap<String, Option<f64>> = ledger
            .by_model
            .iter()
            .map(|(model, t)| (model.clone(), self.of(model).map(|p| p.cost(t))))
            .collect();
        let unpriced: Vec<String> = by_model
            .iter()
            .filter(|(_, c)| c.is_none())
            .map(|(m, _)| m.clone())
            .collect();
        let total = by_model.values().copied().sum::<Option<f64>>();
        Cost {
            total,
            by_model,
            unpriced,
        }
    }

    /// Whether the table prices nothing.
    pub fn is_empty(&self) -> bool {
        self.models.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_takes_its_own_prices_else_the_longest_pattern() {
        let t = PriceTable::from_json(
            r#"{"models": {"claude-*": {"input": 1, "output": 1},
                "claude-sonnet-4-5*": {"input": 3, "output": 15, "cache_read": 0.3},
                "gpt-4.1": {"input": 2, "output": 8}}}"#,
        )
        .unwrap();
        assert_eq!(t.currency, "USD");
        assert_eq!(t.of("claude-sonnet-4-5-20250929").unwrap().input, 3.0);
        assert_eq!(t.of("claude-haiku-4-5").unwrap().input, 1.0);
        assert_eq!(t.of("gpt-4.1").unwrap().output, 8.0);
        assert!(t.of("gpt-4.1-mini").is_none());
        let used = Totals {
            requests: 1,
            input_tokens: 1_000_000,
            output_tokens: 100_000,
            cache_read_input_tokens: 2_000_000,
            cache_creation_input_tokens: 1_000_000,
            largest_input_tokens: 0,
        };
        let cost = t.of("claude-sonnet-4-5").unwrap().cost(&used);
        assert!((cost - (3.0 + 1.5 + 0.6 + 3.0)).abs() < 1e-9, "{cost}");
    }

    #[test]
    fn bad_tables_are_refused() {
        for bad in [
            r#"{"models": {"m": {"input": -1, "output": 1}}}"#,
            r#"{"models": {"m": {"input": 1}}}"#,
            r#"{"models": {"m": {"input": 1, "output": 1, "cached": 1}}}"#,
            r#"{"models": {"": {"input": 1, "output": 1}}}"#,
            r#"{"models": {"[": {"input": 1, "output": 1}}}"#,
            r#"{"currency": " ", "models": {}}"#,
            r#"[]"#,
        ] {
            assert!(
                matches!(PriceTable::from_json(bad), Err(Error::InvalidInput { .. })),
                "{bad}"
            );
        }
    }
}
