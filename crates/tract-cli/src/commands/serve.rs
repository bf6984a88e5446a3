//! `tract serve`: a read-only web view of the store, served from the binary itself.
//!
//! The page (`serve/assets/`: its HTML, its stylesheet and its script's ES modules) is compiled
//! in and talks to the JSON API under `/api/` (`serve/api.rs`, documented in docs/serve.md).
//! Every response carries a Content-Security-Policy that lets the page run only its own script,
//! so message text, which is untrusted, can never run as code even if it reached the page as
//! markup.

mod answers;
mod api;

use crate::context::Context;
use crate::error::CommandError;
use crate::ui::Ui;
use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::serve::ListenerExt;
use std::collections::HashMap;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use tract_core::{Bind, BranchName, ErrorCategory, Tract};

/// Serve a read-only web view of the store (sessions, views with tool cards, history,
/// search) and its JSON API under /api/.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The address to listen on; anything but loopback exposes the store's history to the
    /// network.
    #[arg(long, default_value = "127.0.0.1")]
    bind: IpAddr,
    /// The port (0: any free port).
    #[arg(long, default_value_t = 8484)]
    port: u16,
    /// Also open the page in the default browser.
    #[arg(long)]
    open: bool,
}

const INDEX_HTML: &str = include_str!("serve/assets/index.html");

const JS: &str = "text/javascript; charset=utf-8";
const CSS: &str = "text/css; charset=utf-8";

/// `(name, content type, content)` for each file in `serve/assets/`.
macro_rules! assets {
    ($($name:literal: $content_type:expr),* $(,)?) => {
        &[$(($name, $content_type, include_str!(concat!("serve/assets/", $name)))),*]
    };
}

/// The files served under `/assets/`: the stylesheet and the script's ES modules, which the
/// page's `app.js` and the modules it imports name by these paths. A new module is a line here
/// (tests/cli/serve.rs fails on a module the page imports that is not).
const ASSETS: &[(&str, &str, &str)] = assets![
    "app.css": CSS,
    "app.js": JS,
    "api.js": JS,
    "commit.js": JS,
    "diff.js": JS,
    "context-bar.js": JS,
    "dom.js": JS,
    "entry.js": JS,
    "entry-list.js": JS,
    "errors.js": JS,
    "format.js": JS,
    "graph.js": JS,
    "history.js": JS,
    "provenance.js": JS,
    "routes.js": JS,
    "search.js": JS,
    "session.js": JS,
    "session-list.js": JS,
    "topbar.js": JS,
];

/// Only the server's own script, styles and connections; nothing inline, nothing framed.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
enum ServeError {
    #[error("cannot start the server: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("the server stopped: {0}")]
    Stopped(#[source] std::io::Error),
}

/// Runs the server until the process is stopped.
pub fn run(ctx: &Context, ui: &mut Ui<'_>, a: &Args) -> Result<(), CommandError> {
    // Opened (and checked to exist) before anything is served.
    let head = ctx.open_head()?;
    let state = Arc::new(State {
        head: Arc::new(head),
        handles: Mutex::new(HashMap::new()),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CommandError::other(ErrorCategory::of_io(e.kind()), ServeError::Runtime(e)))?;
    runtime.block_on(async move {
        let addr = SocketAddr::new(a.bind, a.port);
        let listen = |source: std::io::Error| {
            let busy = source.kind() == std::io::ErrorKind::AddrInUse;
            let category = ErrorCategory::of_io(source.kind());
            let e = CommandError::other(category, ServeError::Listen { addr, source });
            if busy {
                e.with_hint(
                    "another program listens there: pick another --port, or --port 0 for any free one",
                )
            } else {
                e
            }
        };
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(listen)?;
        let local = listener.local_addr().map_err(listen)?;
        let url = format!("http://{local}/");
        // Written at once (a command's output is otherwise written when it ends). The first
        // line is the address, for scripts that start the server on port 0.
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "tract serve: {url}");
        let _ = writeln!(
            out,
            "read-only view of {}; Ctrl-C stops it",
            state.head.store().location().unwrap_or_default()
        );
        let _ = out.flush();
        drop(out);
        if a.open {
            open_browser(&url, ui);
        }
        // Small JSON answers go out at once instead of waiting for the client's ACK (Nagle).
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let app = if a.bind.is_loopback() {
            router(state).layer(axum::middleware::from_fn(loopback_host_only))
        } else {
            router(state)
        };
        axum::serve(listener, app)
            .await
            .map_err(|e| CommandError::other(ErrorCategory::of_io(e.kind()), ServeError::Stopped(e)))
    })
}

/// The routes: the page and its assets, the API, and a JSON 404 for anything else.
fn router(state: Arc<State>) -> Router {
    // Every module, named with the page so the browser fetches them all at once rather than
    // one level of imports after another.
    let modules: Vec<String> = ASSETS
        .iter()
        .filter(|&&(_, content_type, _)| content_type == JS)
        .map(|(name, ..)| format!("</assets/{name}>; rel=modulepreload"))
        .collect();
    let preload = HeaderValue::from_str(&modules.join(", ")).expect("asset names are ASCII");
    let mut page = Router::new().route(
        "/",
        get(|| async move {
            let html = asset("text/html; charset=utf-8", INDEX_HTML);
            ([(header::LINK, preload)], html).into_response()
        }),
    );
    for &(name, content_type, body) in ASSETS {
        page = page.route(
            &format!("/assets/{name}"),
            get(move || async move { asset(content_type, body) }),
        );
    }
    page.nest("/api", api::routes())
        .fallback(|| async { api::ApiError::not_found("no such page or endpoint").into_response() })
        .layer(axum::middleware::map_response(secure))
        .with_state(state)
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

/// On a loopback address, only requests naming a loopback host are answered: a web page
/// elsewhere that points its own name at 127.0.0.1 (DNS rebinding) cannot read the history.
async fn loopback_host_only(req: Request, next: Next) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
        .to_string();
    // The name without its port: `[::1]:8484`, `127.0.0.1:8484`, `localhost`.
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => host.rsplit_once(':').map_or(host.as_str(), |(n, _)| n),
    };
    let loopback = name.eq_ignore_ascii_case("localhost")
        || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if loopback {
        next.run(req).await
    } else {
        secure(api::ApiError::forbidden_host(&host).into_response()).await
    }
}

/// The headers every response carries.
async fn secure(r: Response) -> Response {
    let mut r = if r.status() == StatusCode::METHOD_NOT_ALLOWED {
        api::ApiError::method_not_allowed().into_response()
    } else {
        r
    };
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        HeaderName::from_static("cross-origin-resource-policy"),
        HeaderValue::from_static("same-origin"),
    );
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    r
}

/// Opens `url` in the default browser, or says that none could be opened, with the address
/// to open by hand; the server runs either way. The opener (`xdg-open`, `open`) may fail after
/// it started (no browser, no display), or run the browser in the foreground for as long as
/// it is open: it is waited for on a thread of its own, beside the server.
fn open_browser(url: &str, ui: &mut Ui<'_>) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        "xdg-open"
    };
    let no_browser = {
        let url = url.to_string();
        move |why: String| {
            format!(
                "no browser could be opened ({opener}: {why}); open {url} yourself, the view is served there"
            )
        }
    };
    match std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Err(e) => ui.warning(&no_browser(e.to_string())),
        // explorer.exe ends with 1 when it did open the page: its status says nothing.
        Ok(_) if cfg!(windows) => {}
        Ok(mut child) => {
            std::thread::spawn(move || match child.wait() {
                Ok(status) if status.success() => {}
                Ok(status) => crate::ui::warning_now(&no_browser(status.to_string())),
                Err(e) => crate::ui::warning_now(&no_browser(e.to_string())),
            });
        }
    }
}

/// What the handlers share: the store (through the handle on its `HEAD`) and a handle per
/// branch asked for, each keeping its branch's view cached between requests.
struct State {
    head: Arc<Tract>,
    handles: Mutex<HashMap<String, Arc<Tract>>>,
}

impl State {
    /// The handle on `branch`; a branch that does not exist is a 404 naming the closest that
    /// do (as the CLI says it).
    fn on(&self, branch: &str) -> Result<Arc<Tract>, api::ApiError> {
        let name = BranchName::new(branch).map_err(api::ApiError::from)?;
        let mut handles = self.handles.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = handles.get(name.as_str()) {
            return Ok(Arc::clone(t));
        }
        self.head.require_branch(&name)?;
        let t = Arc::new(Tract::from_store(
            self.head.store().clone(),
            &Bind::Branch(name.clone()),
        )?);
        handles.insert(name.to_string(), Arc::clone(&t));
        Ok(t)
    }

    /// Forgets the handle on `branch` (after it was deleted), so the next request looks again.
    fn forget(&self, branch: &str) {
        let mut handles = self.handles.lock().unwrap_or_else(|e| e.into_inner());
        handles.remove(branch);
    }
}
