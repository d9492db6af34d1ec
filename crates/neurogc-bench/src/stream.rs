//! Streams the samples a run records into a live dashboard (`POST /api/metrics`), as they are
//! written: the CSVs are the record, the dashboard a view of them, so a dashboard that goes away
//! never disturbs the run.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use neurogc_core::sample::read::{Header, Row};
use neurogc_dashboard::schema::cell_json;
use serde_json::{Map, Value};

use crate::http;
use crate::tail::Tail;

struct Source {
    server: String,
    tail: Tail,
    header: Option<Header>,
}

pub struct Streamer {
    addr: SocketAddr,
    sources: Arc<Mutex<Vec<Source>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Streamer {
    pub fn start(addr: SocketAddr) -> Streamer {
        let sources: Arc<Mutex<Vec<Source>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (sources, stop) = (sources.clone(), stop.clone());
            std::thread::Builder::new()
                .name("neurogc-stream".into())
                .spawn(move || {
                    let mut warned = false;
                    loop {
                        let done = stop.load(Ordering::Relaxed);
                        let batch = collect(&sources);
                        if !batch.is_empty() {
                            post(addr, batch, &mut warned);
                        }
                        if done {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(250));
                    }
                })
                .ok()
        };
        Streamer {
            addr,
            sources,
            stop,
            thread,
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Follows `csv` (a samples CSV, possibly not created yet) as the server `server`.
    pub fn add(&self, server: &str, csv: &Path) {
        if let Ok(mut s) = self.sources.lock() {
            s.push(Source {
                server: server.to_string(),
                tail: Tail::new(csv),
                header: None,
            });
        }
    }

    /// Sends what is left and stops.
    pub fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Streamer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn collect(sources: &Mutex<Vec<Source>>) -> Vec<Value> {
    let mut out = Vec::new();
    let Ok(mut sources) = sources.lock() else {
        return out;
    };
    for src in sources.iter_mut() {
        for line in src.tail.poll() {
            match &src.header {
                // The first line is the header; a file that has none is not followed.
                None => src.header = Header::new(line.split(',')).ok(),
                // The agent appends to an existing file without a second header.
                Some(h) if line.split(',').eq(h.columns.iter().map(String::as_str)) => {}
                // A row the reader refuses is left out of the view; the CSV keeps it.
                Some(h) => {
                    if let Ok(row) = h.parse_line(0, &line) {
                        out.push(sample_json(&src.server, h, &row));
                    }
                }
            }
        }
    }
    out
}

fn post(addr: SocketAddr, batch: Vec<Value>, warned: &mut bool) {
    let body = Value::Array(batch).to_string();
    let result = http::request(
        addr,
        "POST",
        "/api/metrics",
        Some(body.as_bytes()),
        Duration::from_secs(2),
    );
    let problem = match result {
        Ok((code, _)) if code < 300 => None,
        Ok((code, body)) => Some(format!("HTTP {code}: {}", String::from_utf8_lossy(&body))),
        Err(e) => Some(format!("{e:#}")),
    };
    if let Some(p) = problem {
        if !*warned {
            eprintln!("neurogc: the dashboard at {addr} refused samples ({p}); the run goes on");
            *warned = true;
        }
    }
}

/// One CSV row as the dashboard's sample, each cell read by the sample reader's rules.
fn sample_json(server: &str, header: &Header, row: &Row) -> Value {
    let mut obj = Map::new();
    obj.insert("server".into(), Value::String(server.to_string()));
    for (name, cell) in header.columns.iter().zip(&row.cells) {
        obj.insert(name.clone(), cell_json(cell));
    }
    Value::Object(obj)
}

/// A NeuroGC dashboard answering at `addr`?
pub fn dashboard_at(addr: SocketAddr) -> bool {
    matches!(
        http::request(addr, "GET", "/api/status", None, Duration::from_millis(500)),
        Ok((200, body)) if serde_json::from_slice::<Value>(&body).is_ok()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_become_typed_samples() {
        let header = Header::new(["time", "cpu", "gc_triggered", "policy_reason", "p95"]).unwrap();
        let row = header.parse_line(2, "12.5,3,True,\"a, b\",").unwrap();
        let v = sample_json("default", &header, &row);
        assert_eq!(v["server"], "default");
        assert_eq!(v["time"], 12.5);
        assert_eq!(v["cpu"], 3.0);
        assert_eq!(v["gc_triggered"], true);
        assert_eq!(v["policy_reason"], "a, b");
        assert!(v["p95"].is_null());
    }
}
