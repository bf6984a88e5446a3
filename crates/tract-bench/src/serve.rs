//! The web view's API: `tract-bench --serve [--sizes 10000,100000]` builds a store of the
//! seeded workload per size, starts the real `tract serve` (the `tract` binary beside this
//! one) on it and times HTTP requests of the API, as the page makes them.

use crate::workload::Workload;
use crate::{SEED, median, ms};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tract_core::Tract;

/// Requests timed per endpoint (the first, which builds the view, is reported apart).
const RUNS: usize = 21;

/// The server, stopped when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(tract: &Path, store: &Path) -> Result<Server, String> {
    let mut child = Command::new(tract)
        .args(["--store"])
        .arg(store)
        .args(["serve", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", tract.display()))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    let url = line
        .trim()
        .strip_prefix("tract serve: ")
        .ok_or_else(|| format!("unexpected first line: {line:?}"))?
        .trim_end_matches('/')
        .to_string();
    Ok(Server { child, url })
}

/// The first request's time, then the median and slowest of the next `RUNS - 1`.
fn time(agent: &ureq::Agent, url: &str) -> Result<Value, String> {
    let mut times = Vec::new();
    let mut bytes = 0;
    for _ in 0..RUNS {
        let start = Instant::now();
        let body = agent
            .get(url)
            .call()
            .map_err(|e| format!("{url}: {e}"))?
            .body_mut()
            .read_to_string()
            .map_err(|e| format!("{url}: {e}"))?;
        times.push(start.elapsed());
        bytes = body.len();
    }
    let first = times.remove(0);
    let slowest = times.iter().max().copied().unwrap_or_default();
    Ok(json!({
        "first_ms": ms(first),
        "median_ms": ms(median(times)),
        "max_ms": ms(slowest),
        "bytes": bytes,
    }))
}

/// One size: a store of `n` messages in view, the server on it, each endpoint timed.
fn one(tract: &Path, n: usize) -> Result<Value, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = dir.path().join("store.redb");
    {
        let t = Tract::open(&path).map_err(|e| e.to_string())?;
        t.append_batch(Workload::new(SEED).messages(n))
            .map_err(|e| e.to_string())?;
    }
    let server = start(tract, &path)?;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into();
    let base = &server.url;
    Ok(json!({
        "messages": n,
        "view_last_page_100": time(&agent, &format!("{base}/api/view?branch=main&limit=100"))?,
        "view_first_page_100": time(&agent, &format!("{base}/api/view?branch=main&offset=0&limit=100"))?,
        "view_middle_page_100": time(&agent, &format!("{base}/api/view?branch=main&offset={}&limit=100", n / 2))?,
        "sessions": time(&agent, &format!("{base}/api/sessions"))?,
        "history_200": time(&agent, &format!("{base}/api/history?branch=main&limit=200"))?,
        "search_view_50": time(&agent, &format!("{base}/api/search?branch=main&q=session_token&limit=50"))?,
    }))
}

/// Every size, with the `tract` binary that sits beside this one.
pub fn measure(sizes: &[usize]) -> Result<Value, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let tract = exe.with_file_name(format!("tract{}", std::env::consts::EXE_SUFFIX));
    if !tract.exists() {
        return Err(format!(
            "{} not found: build it first (cargo build --release -p tract-cli)",
            tract.display()
        ));
    }
    let results = sizes
        .iter()
        .map(|&n| one(&tract, n))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(json!({
        "serve": {
            "runs": RUNS,
            "note": "HTTP GET to `tract serve` on 127.0.0.1; first_ms is the first request (it builds the branch's view), median_ms and max_ms the next runs",
            "results": results,
        }
    }))
}
