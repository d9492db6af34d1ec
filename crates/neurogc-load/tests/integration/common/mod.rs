//! Test fixtures: real local HTTP servers (hyper, independent of our client) and a helper that
//! runs the generator through its command-line flags and reads back its JSON-lines output.
#![allow(dead_code)]
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use neurogc_fuzzkit::ScratchDir;
use neurogc_load::{LoadArgs, Row, Summary};

/// What a test server does besides answering 200.
#[derive(Clone, Copy, Default)]
pub struct Behavior {
    /// (period, length): every `period` since start, hold all requests for `length` — a
    /// stop-the-world pause like a full GC collection.
    pub stall: Option<(Duration, Duration)>,
    /// Every request is answered this much later (requests overlap: no queue).
    pub delay: Option<Duration>,
}

/// What the server saw.
#[derive(Default)]
pub struct Log {
    pub paths: HashMap<String, u64>,
    pub accepted: Vec<Instant>,
    /// When each request arrived.
    pub requests: Vec<Instant>,
}

pub struct Server {
    pub url: String,
    pub log: Arc<Mutex<Log>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Routes: /missing → 404, /error → 500, /slow → 200 after 2 s, anything else → 200 "ok".
async fn handle(
    req: Request<Incoming>,
    started: Instant,
    b: Behavior,
    log: Arc<Mutex<Log>>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path().to_string();
    {
        let mut log = log.lock().unwrap();
        *log.paths.entry(path.clone()).or_default() += 1;
        log.requests.push(Instant::now());
    }
    if let Some((period, length)) = b.stall {
        let phase = Duration::from_nanos((started.elapsed().as_nanos() % period.as_nanos()) as u64);
        if phase < length {
            tokio::time::sleep(length - phase).await;
        }
    }
    if let Some(delay) = b.delay {
        tokio::time::sleep(delay).await;
    }
    let status = match path.as_str() {
        "/missing" => StatusCode::NOT_FOUND,
        "/error" => StatusCode::INTERNAL_SERVER_ERROR,
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(2)).await;
            StatusCode::OK
        }
        _ => StatusCode::OK,
    };
    let mut resp = Response::new(Full::new(Bytes::from_static(b"ok\n")));
    *resp.status_mut() = status;
    Ok(resp)
}

impl Server {
    pub fn start(behavior: Behavior) -> Server {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        std_listener.set_nonblocking(true).unwrap();
        let addr: SocketAddr = std_listener.local_addr().unwrap();
        let log = Arc::new(Mutex::new(Log::default()));
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel();
        let log2 = log.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(std_listener).unwrap();
                let started = Instant::now();
                let accept = async {
                    loop {
                        let Ok((stream, _)) = listener.accept().await else {
                            continue;
                        };
                        log2.lock().unwrap().accepted.push(Instant::now());
                        let log = log2.clone();
                        tokio::spawn(async move {
                            let svc = hyper::service::service_fn(move |req| {
                                handle(req, started, behavior, log.clone())
                            });
                            let _ = hyper::server::conn::http1::Builder::new()
                                .serve_connection(TokioIo::new(stream), svc)
                                .await;
                        });
                    }
                };
                tokio::select! { _ = accept => {}, _ = stop_rx => {} }
            });
            // Dropping the runtime closes the listener and every open connection.
            rt.shutdown_background();
        });
        Server {
            url: format!("http://{addr}"),
            log,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }

    /// Closes the listener and all connections: later connects are refused.
    pub fn stop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }

    pub fn count(&self, path: &str) -> u64 {
        self.log
            .lock()
            .unwrap()
            .paths
            .get(path)
            .copied()
            .unwrap_or(0)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A port with nothing listening (bound, then released).
pub fn closed_port_url() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    drop(l);
    format!("http://127.0.0.1:{port}")
}

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: LoadArgs,
}

/// A fresh temporary directory per call, removed when dropped.
pub fn temp_dir(name: &str) -> ScratchDir {
    ScratchDir::new(&format!("load-test-{name}"))
}

pub fn parse(argv: &[&str]) -> LoadArgs {
    Cli::try_parse_from(std::iter::once("load").chain(argv.iter().copied()))
        .unwrap()
        .args
}

/// The run's per-second rows and its summary, as read back from `--json-out`.
pub struct Output {
    pub seconds: Vec<Row>,
    /// With --alternate: one row per host and turn.
    pub turns: Vec<Row>,
    pub summary: Summary,
    pub returned: Summary,
    pub exit_code: i32,
}

impl Output {
    pub fn total(&self, host: &str, task: &str) -> &Row {
        self.summary
            .rows
            .iter()
            .find(|r| r.host == host && r.task == task)
            .unwrap_or_else(|| panic!("no total row for {host} {task}"))
    }
}

/// Runs `neurogc load` with `flags` (split on whitespace) plus `--quiet --json-out FILE` and
/// parses what it wrote.
pub fn run_load(flags: &str) -> Output {
    let dir = temp_dir("json");
    let json = dir.join("out.jsonl");
    let mut all: Vec<&str> = flags.split_whitespace().collect();
    let json_s = json.to_str().unwrap().to_string();
    all.extend(["--quiet", "--json-out", &json_s, "--seed", "12345"]);
    let cfg = neurogc_load::Config::from_args(parse(&all)).unwrap();
    let returned = neurogc_load::execute(cfg).unwrap();
    let exit_code = if returned.failures > 0 { 1 } else { 0 };
    let out = neurogc_load::read_json_lines(&json, "out.jsonl").unwrap();
    assert!(out.warnings.is_empty(), "{:?}", out.warnings);
    assert!(out.rows.iter().all(|r| r.kind == "second"));
    Output {
        seconds: out.rows,
        turns: out.turns,
        summary: out.summary.expect("a summary line"),
        returned,
        exit_code,
    }
}
