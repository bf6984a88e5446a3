//! The settings a surface reads from its process environment, in one place.
//!
//! tract's own variables are read here and nowhere else: the CLI and the Python binding call
//! [`Environment::from_process`] once and pass what it gives (store options, a summarizer,
//! Claude Code's projects folder) into the library as values. Tests build an [`Environment`]
//! from a list of variables. The library reads the environment elsewhere only where a
//! convention other programs share says so: opening a `postgresql://` store reads libpq's
//! `PG*` variables and `~/.pgpass` (`storage::postgres::connect`), and the HTTP client of an
//! OpenAI-compatible summarizer honours the proxy variables (docs/decisions.md, "The
//! environment is read in one place, and by libpq's rules at connection time").

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::storage::store::StoreOptions;
use crate::summarize::llm::OpenAiCompatible;
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::time::Duration;

/// How long a write waits for another process's write transaction, in milliseconds.
pub const LOCK_TIMEOUT_VAR: &str = "TRACT_LOCK_TIMEOUT_MS";
/// A fixed time for every commit and reflog entry (RFC 3339, e.g. `2026-01-01T00:00:00Z`), so
/// a scripted session gets the same ids on every run (tests, reproducible demos).
pub const TIMESTAMP_VAR: &str = "TRACT_TIMESTAMP";
/// How many commits a branch goes, on average, between two view checkpoints (0: none).
pub const CHECKPOINT_INTERVAL_VAR: &str = "TRACT_CHECKPOINT_INTERVAL";
/// How many commits a process writes before it indexes them for search (0: none).
pub const INDEX_BATCH_VAR: &str = "TRACT_INDEX_BATCH";
/// How many MiB the views cached in one process may take together.
pub const VIEW_CACHE_VAR: &str = "TRACT_VIEW_CACHE_MB";
/// The OpenAI-compatible server's base URL, model and key, each falling back to the second name.
pub const LLM_VARS: [(&str, &str); 3] = [
    ("TRACT_LLM_BASE_URL", "OPENAI_BASE_URL"),
    ("TRACT_LLM_MODEL", "OPENAI_MODEL"),
    ("TRACT_LLM_API_KEY", "OPENAI_API_KEY"),
];
/// Where requests go when neither the caller nor the environment names a base URL.
pub const DEFAULT_LLM_BASE_URL: &str = "https://api.openai.com/v1";
/// Claude Code's configuration folder, whose `projects/` holds its sessions.
pub const CLAUDE_CONFIG_DIR_VAR: &str = "CLAUDE_CONFIG_DIR";
/// The user's home folder: `~/.claude/projects` when `CLAUDE_CONFIG_DIR` is not set.
pub const HOME_VAR: &str = "HOME";
/// Codex CLI's home folder, whose `sessions/` holds its rollouts.
pub const CODEX_HOME_VAR: &str = "CODEX_HOME";
/// What Gemini CLI takes for the home folder, whose `.gemini/tmp/` holds its sessions.
pub const GEMINI_CLI_HOME_VAR: &str = "GEMINI_CLI_HOME";

/// Environment variables tract understands, captured once. Its `Debug` output names the
/// variables set, never their values (one of them is an API key).
#[derive(Clone, Default)]
pub struct Environment {
    /// Values as the OS gives them: a path need not be UTF-8.
    vars: BTreeMap<String, OsString>,
}

impl std::fmt::Debug for Environment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Environment")
            .field("set", &self.vars.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Environment {
    /// The variables of this process that tract reads.
    pub fn from_process() -> Self {
        let names = [
            LOCK_TIMEOUT_VAR,
            TIMESTAMP_VAR,
            VIEW_CACHE_VAR,
            CHECKPOINT_INTERVAL_VAR,
            INDEX_BATCH_VAR,
            CLAUDE_CONFIG_DIR_VAR,
            CODEX_HOME_VAR,
            GEMINI_CLI_HOME_VAR,
            HOME_VAR,
        ]
        .into_iter()
        .chain(LLM_VARS.iter().flat_map(|(a, b)| [*a, *b]));
        Environment {
            vars: names
                .filter_map(|n| std::env::var_os(n).map(|v| (n.to_string(), v)))
                .collect(),
        }
    }

    /// An environment holding exactly these variables.
    pub fn from_vars<K: Into<String>, V: Into<String>>(
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Environment {
            vars: vars
                .into_iter()
                .map(|(k, v)| (k.into(), OsString::from(v.into())))
                .collect(),
        }
    }

    /// A variable's value, when it is set, UTF-8 and not blank.
    fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .and_then(|v| v.to_str())
            .filter(|v| !v.trim().is_empty())
    }

    /// A variable's value as a path, when it is set and not empty.
    fn path(&self, name: &str) -> Option<&OsStr> {
        self.vars
            .get(name)
            .map(OsString::as_os_str)
            .filter(|v| !v.is_empty())
    }

    /// The folder Claude Code keeps its sessions in: `$CLAUDE_CONFIG_DIR/projects`, else
    /// `$HOME/.claude/projects`; `None` when neither is set.
    pub fn claude_projects_dir(&self) -> Option<PathBuf> {
        self.agent_dir(CLAUDE_CONFIG_DIR_VAR, ".claude", "projects")
    }

    /// The folder Codex CLI keeps its rollouts in: `$CODEX_HOME/sessions`, else
    /// `$HOME/.codex/sessions` (as Codex's `find_codex_home`); `None` when neither is set.
    pub fn codex_sessions_dir(&self) -> Option<PathBuf> {
        self.agent_dir(CODEX_HOME_VAR, ".codex", "sessions")
    }

    /// `$var/sub`, else `$HOME/dot/sub`: an agent's folder `sub`, in the folder its own
    /// variable names, else in its dot folder of the home folder.
    fn agent_dir(&self, var: &str, dot: &str, sub: &str) -> Option<PathBuf> {
        match self.path(var) {
            Some(dir) => Some(PathBuf::from(dir).join(sub)),
            None => self
                .path(HOME_VAR)
                .map(|home| PathBuf::from(home).join(dot).join(sub)),
        }
    }

    /// The folder Gemini CLI keeps its projects' sessions in (`<project>/chats/`):
    /// `$GEMINI_CLI_HOME/.gemini/tmp`, the variable standing for the home folder as in Gemini
    /// CLI's `homedir()`, else `$HOME/.gemini/tmp`; `None` when neither is set.
    pub fn gemini_tmp_dir(&self) -> Option<PathBuf> {
        self.path(GEMINI_CLI_HOME_VAR)
            .or_else(|| self.path(HOME_VAR))
            .map(|home| PathBuf::from(home).join(".gemini").join("tmp"))
    }

    /// Store options: the lock wait from `TRACT_LOCK_TIMEOUT_MS` (an unreadable value keeps the
    /// default), a fixed clock from `TRACT_TIMESTAMP`, the view checkpoints' interval from
    /// `TRACT_CHECKPOINT_INTERVAL` and the search index's batch from `TRACT_INDEX_BATCH` (a
    /// value of either that is not a whole number is an error).
    pub fn store_options(&self) -> Result<StoreOptions> {
        let mut options = StoreOptions::default();
        if let Some(ms) = self
            .get(LOCK_TIMEOUT_VAR)
            .and_then(|v| v.trim().parse::<u64>().ok())
        {
            options.lock_timeout = Duration::from_millis(ms);
        }
        if let Some(text) = self.get(TIMESTAMP_VAR) {
            let t = humantime::parse_rfc3339_weak(text.trim()).map_err(|e| {
                Error::invalid_input(format!(
                    "{TIMESTAMP_VAR}='{text}' is not an RFC 3339 time: {e}"
                ))
            })?;
            let us = t
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
                .unwrap_or(0);
            options.clock = Clock::Fixed(us);
        }
        if let Some(text) = self.get(CHECKPOINT_INTERVAL_VAR) {
            options.checkpoint_interval = text.trim().parse().map_err(|e| {
                Error::invalid_input(format!(
                    "{CHECKPOINT_INTERVAL_VAR}='{text}' is not a number of commits (0 or more): {e}"
                ))
            })?;
        }
        if let Some(text) = self.get(INDEX_BATCH_VAR) {
            options.index_batch = text.trim().parse().map_err(|e| {
                Error::invalid_input(format!(
                    "{INDEX_BATCH_VAR}='{text}' is not a number of commits (0 or more): {e}"
                ))
            })?;
        }
        Ok(options)
    }

    /// The budget for views cached in this process, from `TRACT_VIEW_CACHE_MB` (in bytes; an
    /// unreadable value is ignored).
    pub fn view_cache_budget(&self) -> Option<usize> {
        self.get(VIEW_CACHE_VAR)
            .and_then(|v| v.trim().parse::<usize>().ok())
            .map(|mb| mb.saturating_mul(1 << 20))
    }

    /// The LLM summarizer the environment names: `None` unless a model is set, so summarizing
    /// never goes to the network unless asked to.
    pub fn summarizer(&self) -> Option<OpenAiCompatible> {
        self.llm(None, None, None).ok()
    }

    /// An OpenAI-compatible client from explicit settings, each missing one taken from the
    /// environment (`TRACT_LLM_*`, then `OPENAI_*`); the base URL defaults to OpenAI's. Without
    /// a model anywhere it is an error.
    pub fn llm(
        &self,
        base_url: Option<String>,
        model: Option<String>,
        api_key: Option<String>,
    ) -> Result<OpenAiCompatible> {
        let var = |i: usize| {
            let (first, second) = LLM_VARS[i];
            self.get(first)
                .or_else(|| self.get(second))
                .map(str::to_string)
        };
        let model = model.or_else(|| var(1)).ok_or_else(|| {
            Error::invalid_input(
                "an OpenAI-compatible summarizer needs a model (TRACT_LLM_MODEL or OPENAI_MODEL)",
            )
        })?;
        let base = base_url
            .or_else(|| var(0))
            .unwrap_or_else(|| DEFAULT_LLM_BASE_URL.into());
        let mut client = OpenAiCompatible::new(base, model);
        client.api_key = api_key.or_else(|| var(2));
        Ok(client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llm_settings_fall_back_to_openai_names() {
        let env = Environment::from_vars([
            ("OPENAI_MODEL", "m1"),
            ("TRACT_LLM_BASE_URL", "http://127.0.0.1:9/v1/"),
            ("OPENAI_API_KEY", "k"),
        ]);
        let c = env.summarizer().unwrap();
        assert_eq!(
            (c.model.as_str(), c.base_url.as_str()),
            ("m1", "http://127.0.0.1:9/v1")
        );
        assert_eq!(c.api_key.as_deref(), Some("k"));
        assert!(Environment::default().summarizer().is_none());
        assert!(
            Environment::from_vars([("TRACT_LLM_MODEL", " ")])
                .summarizer()
                .is_none()
        );
    }

    #[test]
    fn codex_sessions_dir_from_its_home_else_the_users() {
        let both = Environment::from_vars([("CODEX_HOME", "/c"), ("HOME", "/h")]);
        assert_eq!(
            both.codex_sessions_dir(),
            Some(PathBuf::from("/c/sessions"))
        );
        let home = Environment::from_vars([("CODEX_HOME", ""), ("HOME", "/h")]);
        assert_eq!(
            home.codex_sessions_dir(),
            Some(PathBuf::from("/h/.codex/sessions"))
        );
        assert_eq!(Environment::default().codex_sessions_dir(), None);
    }

    #[test]
    fn gemini_tmp_dir_from_its_home_else_the_users() {
        let both = Environment::from_vars([("GEMINI_CLI_HOME", "/g"), ("HOME", "/h")]);
        assert_eq!(both.gemini_tmp_dir(), Some(PathBuf::from("/g/.gemini/tmp")));
        let home = Environment::from_vars([("HOME", "/h")]);
        assert_eq!(home.gemini_tmp_dir(), Some(PathBuf::from("/h/.gemini/tmp")));
    }

    #[test]
    fn claude_projects_dir_from_its_config_dir_else_home() {
        let both = Environment::from_vars([(CLAUDE_CONFIG_DIR_VAR, "/c"), (HOME_VAR, "/h")]);
        assert_eq!(
            both.claude_projects_dir(),
            Some(PathBuf::from("/c/projects"))
        );
        let home = Environment::from_vars([(CLAUDE_CONFIG_DIR_VAR, ""), (HOME_VAR, "/h")]);
        assert_eq!(
            home.claude_projects_dir(),
            Some(PathBuf::from("/h/.claude/projects"))
        );
        assert_eq!(Environment::default().claude_projects_dir(), None);
    }

    #[test]
    fn store_options_from_variables() {
        let env = Environment::from_vars([
            (LOCK_TIMEOUT_VAR, "250"),
            (TIMESTAMP_VAR, "2026-01-01T00:00:00Z"),
        ]);
        let o = env.store_options().unwrap();
        assert_eq!(o.lock_timeout, Duration::from_millis(250));
        assert_eq!(o.clock, Clock::Fixed(1_767_225_600_000_000));
        let bad = Environment::from_vars([(LOCK_TIMEOUT_VAR, "soon")]);
        assert_eq!(bad.store_options().unwrap(), StoreOptions::default());
        assert!(
            Environment::from_vars([(TIMESTAMP_VAR, "yesterday")])
                .store_options()
                .is_err()
        );
        let every = Environment::from_vars([(CHECKPOINT_INTERVAL_VAR, " 16 ")]);
        assert_eq!(every.store_options().unwrap().checkpoint_interval, 16);
        for bad in ["-1", "often", "1.5"] {
            let e = Environment::from_vars([(CHECKPOINT_INTERVAL_VAR, bad)])
                .store_options()
                .unwrap_err();
            assert!(e.to_string().contains(CHECKPOINT_INTERVAL_VAR), "{e}");
        }
    }
}
