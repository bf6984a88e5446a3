//! Replaying a recorded session on another model through a handle.

use super::{PyTract, invalid_input, rev_of};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::time::Duration;
use tract_core::{Api, BranchName, Divergence, Error, ReplayOptions, ToolDef};

/// How long every try of one request may take in all, retries and their waits included.
const DEADLINE: Duration = Duration::from_secs(115);

#[pymethods]
impl PyTract {
    /// Reruns the recorded session on `branch` on another model, onto a new branch
    /// (`new_branch`, default `replay/<branch>/<n>`) forked at `from_` (default: its first
    /// user message): each model answer is committed with its usage, each tool call it makes
    /// is answered with the result the session recorded for the same tool and canonical
    /// arguments, and the user messages the session was sent follow in order. A call with no
    /// recorded result is a divergence: the replay stops there, unless `on_divergence`
    /// (called with a dict of `step`, `tool`, `arguments`, `call_id`) returns the result's
    /// text (None stops). `provider` is `"openai"` (chat completions) or `"anthropic"`
    /// (Messages API); the key and defaults come from the environment as for
    /// `OpenAICompatible`. `system` replaces the system prompt; `tools` is a list of OpenAI or
    /// Anthropic tool definitions (default: inferred from the recorded calls). With
    /// `resume=True`, goes on with `new_branch` (default: the newest replay of `branch`) from
    /// its tip. Returns the fields of `tract replay --json`: `branch`, `request_count`,
    /// `matched_call_count`, `user_messages_sent`, `divergence`, `finished`, the tokens, and
    /// `diff_command`. A request that fails within its tries (all within 2 minutes) raises
    /// `UnavailableError`; every answer received before stays on the branch.
    #[pyo3(signature = (
        branch, *, model=None, base_url=None, api_key=None, provider="openai", from_=None,
        system=None, tools=None, new_branch=None, resume=false, max_requests=100,
        timeout=30.0, retries=3, on_divergence=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn replay<'py>(
        &self,
        py: Python<'py>,
        branch: &str,
        model: Option<String>,
        base_url: Option<String>,
        api_key: Option<String>,
        provider: &str,
        from_: Option<&Bound<'py, PyAny>>,
        system: Option<String>,
        tools: Option<&Bound<'py, PyAny>>,
        new_branch: Option<&str>,
        resume: bool,
        max_requests: u64,
        timeout: f64,
        retries: u32,
        on_divergence: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let api = match provider {
            "openai" => Api::ChatCompletions,
            "anthropic" => Api::Messages,
            other => {
                return Err(invalid_input(format!(
                    "unknown provider '{other}': use 'openai' or 'anthropic'"
                )));
            }
        };
        if !(timeout.is_finite() && timeout > 0.0) {
            return Err(invalid_input(
                "timeout must be a positive number of seconds",
            ));
        }
        let original = BranchName::new(branch).map_err(crate::errors::to_py)?;
        let new_branch = new_branch
            .map(BranchName::new)
            .transpose()
            .map_err(crate::errors::to_py)?;
        let from = from_.map(rev_of).transpose()?;
        let tools = match tools {
            Some(list) => {
                let value: serde_json::Value = pythonize::depythonize(list)
                    .map_err(|e| invalid_input(format!("tools: {e}")))?;
                Some(ToolDef::parse_all(&value).map_err(crate::errors::to_py)?)
            }
            None => None,
        };
        let env = tract_core::Environment::from_process();
        let o = self.with(py, move |t| {
            let model = match (model, resume) {
                (Some(m), _) => m,
                (None, true) => t.replay_model(&original, new_branch.as_ref())?,
                (None, false) => {
                    return Err(Error::InvalidInput {
                        message: "replay needs model= (the model to replay the session on)".into(),
                    });
                }
            };
            let mut client = env.llm(base_url, Some(model), api_key)?;
            client.api = api;
            client.timeout = Duration::from_secs_f64(timeout);
            client.retries = retries;
            client.deadline = Some(DEADLINE);
            let hook = |d: &Divergence| -> tract_core::Result<Option<String>> {
                let Some(f) = &on_divergence else {
                    return Ok(None);
                };
                // Called with the GIL released around the replay, so it takes the GIL itself.
                Python::attach(|py| -> PyResult<Option<String>> {
                    let arg = PyDict::new(py);
                    arg.set_item("step", d.step)?;
                    arg.set_item("tool", &d.tool)?;
                    arg.set_item("arguments", &d.arguments)?;
                    arg.set_item("call_id", &d.call_id)?;
                    f.bind(py).call1((arg,))?.extract::<Option<String>>()
                })
                // The hook's own exception goes back to the caller unchanged.
                .map_err(Error::handler)
            };
            let mut opts = ReplayOptions::new(original, client);
            opts.branch = new_branch;
            opts.from = from;
            opts.system = system;
            opts.tools = tools;
            opts.resume = resume;
            opts.max_requests = max_requests;
            opts.on_divergence = Some(&hook);
            t.replay(&opts)
        })?;
        crate::vocabulary::dict(py, &tract_vocabulary::ReplayReport::from(&o))
    }
}
