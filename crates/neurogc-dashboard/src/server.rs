//! The HTTP server: routes, request limits, binding, and shutdown.

use crate::ingest::{self, Rejection};
use crate::store::{render_message, HistoryQuery, Store, StoreConfig};
use crate::{assets, ws};
use anyhow::Context as _;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Where and how the dashboard serves.
#[derive(Clone, Debug)]
pub struct Config {
    pub bind: IpAddr,
    /// 0 picks a free port ([`Dashboard::addr`] tells which).
    pub port: u16,
    pub store: StoreConfig,
    /// Largest request body accepted; larger ones get 413.
    pub max_body: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 8003,
            store: StoreConfig::default(),
            max_body: 4 << 20,
        }
    }
}

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    pub store: Arc<Store>,
    /// Flips to `true` at shutdown, so open WebSockets close instead of holding the server up.
    pub shutdown: watch::Receiver<bool>,
}

/// A bound dashboard, not yet serving.
pub struct Dashboard {
    listener: TcpListener,
    addr: SocketAddr,
    store: Arc<Store>,
    max_body: usize,
}

impl Dashboard {
    /// Binds the port. Fails with a message naming the address when it is taken.
    pub async fn bind(config: &Config) -> anyhow::Result<Dashboard> {
        let want = SocketAddr::new(config.bind, config.port);
        let listener = TcpListener::bind(want).await.map_err(|e| {
            let hint = if e.kind() == std::io::ErrorKind::AddrInUse {
                " (another dashboard already running? pick another with --port)"
            } else {
                ""
            };
            anyhow::anyhow!("cannot listen on {want} (port {}): {e}{hint}", config.port)
        })?;
        let addr = listener.local_addr().context("reading the bound address")?;
        Ok(Dashboard {
            listener,
            addr,
            store: Arc::new(Store::new(config.store.clone())),
            max_body: config.max_body,
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn store(&self) -> Arc<Store> {
        self.store.clone()
    }

    /// Serves until `shutdown` completes, then closes WebSockets and returns.
    pub async fn serve(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let (stop_tx, stop_rx) = watch::channel(false);
        let app = router(
            AppState {
                store: self.store,
                shutdown: stop_rx,
            },
            self.max_body,
        );
        axum::serve(self.listener, app)
            .with_graceful_shutdown(async move {
                shutdown.await;
                let _ = stop_tx.send(true);
            })
            .await
            .context("serving the dashboard")
    }
}

/// The dashboard's routes.
pub fn router(state: AppState, max_body: usize) -> Router {
    Router::new()
        .route("/api/metrics", post(ingest_handler))
        .route("/api/history", get(history_handler))
        .route("/api/status", get(status_handler))
        .route("/ws", get(ws::handler))
        .fallback(get(assets::handler))
        .layer(DefaultBodyLimit::max(max_body))
        .layer(axum::middleware::from_fn(same_origin_only))
        .with_state(state)
}

/// What a web page open in the user's browser could otherwise do to a dashboard on their machine:
/// post samples to it (a form post needs no CORS preflight), open its WebSocket (browsers do not
/// apply the same-origin policy to WebSockets), or read every route under a hostile name that
/// resolves to 127.0.0.1 (DNS rebinding). So a request's Host must be an IP address or
/// `localhost`, and an Origin, which browsers send with those requests, must be the dashboard's
/// own. (Programs that send neither, such as the agent and `curl`, are not affected.)
async fn same_origin_only(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let headers = req.headers();
    let text = |name| headers.get(name).map(|v| v.to_str().unwrap_or("\u{fffd}"));
    let host = text(header::HOST);
    if let Some(host) = host.filter(|h| !host_is_an_address(h)) {
        return Rejection::new(
            403,
            format!(
                "Host {host:?} is not an IP address or localhost: the dashboard answers only \
                 under those (a name could point anywhere, DNS rebinding)"
            ),
        )
        .into_response();
    }
    if let Some(origin) = text(header::ORIGIN) {
        let own = host.is_some_and(|host| {
            ["http://", "https://"].iter().any(|s| {
                origin
                    .strip_prefix(s)
                    .is_some_and(|o| o.eq_ignore_ascii_case(host))
            })
        });
        if !own {
            return Rejection::new(
                403,
                format!("Origin {origin:?} is not this dashboard's own: cross-site requests are refused"),
            )
            .into_response();
        }
    }
    next.run(req).await
}

/// `127.0.0.1:8003`, `[::1]:8003`, `localhost`: an address (or localhost), with or without a port.
fn host_is_an_address(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split_once(']').map_or("", |(v6, _)| v6),
        None => host.rsplit_once(':').map_or(host, |(name, port)| {
            if port.chars().all(|c| c.is_ascii_digit()) {
                name
            } else {
                host
            }
        }),
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<IpAddr>().is_ok()
}

fn json_response(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::BAD_REQUEST);
        json_response(
            status,
            serde_json::json!({ "error": self.reason }).to_string(),
        )
    }
}

async fn ingest_handler(
    State(app): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match ingest(&app.store, &headers, body) {
        Ok(resp) => resp,
        Err(rejection) => {
            app.store.rejected.fetch_add(1, Ordering::Relaxed);
            rejection.into_response()
        }
    }
}

fn ingest(
    store: &Store,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, Rejection> {
    // Required: a form a web page posts cannot carry it without a CORS preflight.
    let ct = headers
        .get(header::CONTENT_TYPE)
        .map(|ct| ct.to_str().unwrap_or("").to_ascii_lowercase());
    let mime = ct
        .as_deref()
        .map(|ct| ct.split(';').next().unwrap_or("").trim());
    if !mime.is_some_and(|m| m == "application/json" || m.ends_with("+json")) {
        return Err(Rejection::new(
            415,
            format!(
                "Content-Type must be application/json, got {}",
                mime.map_or("none".to_string(), |m| format!("{m:?}"))
            ),
        ));
    }
    let body = body.map_err(|e| {
        let status = e.status();
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            Rejection::new(413, "request body too large (see --max-body)")
        } else {
            Rejection::new(
                status.as_u16(),
                format!("reading the body: {}", e.body_text()),
            )
        }
    })?;
    let parsed = ingest::parse_body_noting(&body)?;
    let mut accepted = store
        .ingest(parsed.samples)
        .map_err(|reason| Rejection::new(507, reason))?;
    if !parsed.truncated.is_empty() {
        store
            .truncated_fields
            .fetch_add(parsed.truncated.len() as u64, Ordering::Relaxed);
        const SHOWN: usize = 5;
        let more = parsed.truncated.len().saturating_sub(SHOWN);
        accepted
            .warnings
            .extend(parsed.truncated.iter().take(SHOWN).map(|t| t.to_string()));
        if more > 0 {
            accepted
                .warnings
                .push(format!("… and {more} more text values cut"));
        }
    }
    Ok(Json(accepted).into_response())
}

#[derive(Debug, Deserialize)]
struct HistoryParams {
    server: Option<String>,
    since: Option<f64>,
    after_seq: Option<u64>,
    limit: Option<usize>,
}

async fn history_handler(
    State(app): State<AppState>,
    params: Result<Query<HistoryParams>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Query(p) = match params {
        Ok(p) => p,
        Err(e) => return Rejection::new(400, e.body_text()).into_response(),
    };
    let (samples, last_seq) = app.store.history_and_last_seq(&HistoryQuery {
        server: p.server,
        since: p.since,
        after_seq: p.after_seq,
        limit: p.limit,
    });
    let instance = serde_json::to_string(app.store.instance()).expect("a string serialises");
    let extra = format!("\"instance\":{instance},\"last_seq\":{last_seq},");
    json_response(StatusCode::OK, render_message("history", &samples, &extra))
}

async fn status_handler(State(app): State<AppState>) -> Response {
    Json(app.store.status()).into_response()
}

/// A dashboard serving on its own thread and runtime, for commands that start one alongside
/// their work (`collect --dashboard`, `bench --dashboard`). Dropping it stops it.
pub struct Background {
    addr: SocketAddr,
    store: Arc<Store>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Background {
    /// Binds (errors, such as a taken port, are returned here) and starts serving.
    pub fn start(config: Config) -> anyhow::Result<Background> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the dashboard's runtime")?;
        let dashboard = runtime.block_on(Dashboard::bind(&config))?;
        let (addr, store) = (dashboard.addr(), dashboard.store());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("neurogc-dashboard".into())
            .spawn(move || {
                let served = runtime.block_on(dashboard.serve(async move {
                    let _ = stopped.await;
                }));
                if let Err(e) = served {
                    eprintln!("neurogc: dashboard stopped: {e:#}");
                }
            })
            .context("starting the dashboard's thread")?;
        Ok(Background {
            addr,
            store,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The store, to ingest into without HTTP.
    pub fn store(&self) -> Arc<Store> {
        self.store.clone()
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
