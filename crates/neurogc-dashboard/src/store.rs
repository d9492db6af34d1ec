//! The recent window of samples per server, and the broadcast that fans new ones out.
//!
//! Every stored sample gets a global sequence number. Numbering, storing and broadcasting happen
//! under one lock, so the broadcast carries samples in sequence order and a subscriber that takes
//! its history snapshot under the same lock sees every sample exactly once: the snapshot holds
//! everything up to some `seq`, the channel everything after it. Each sample is rendered to JSON
//! once, at ingest; WebSocket clients and `/api/history` only concatenate those strings.

use crate::ingest::Incoming;
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::broadcast;

/// How much the store keeps.
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// Seconds of sample time kept per server, counted back from its newest sample (not from
    /// the wall clock, so a replayed run from last month is kept like a live one).
    pub window_s: f64,
    /// Samples kept per server at most, whatever their times.
    pub max_per_server: usize,
    /// Batches the broadcast buffers for a slow WebSocket client before it lags.
    pub broadcast_capacity: usize,
    /// Servers kept at most: a batch naming more new ones than fit is refused whole.
    pub max_servers: usize,
    /// Bytes of stored samples at most, all servers together: the oldest samples go first.
    pub max_bytes: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            window_s: 600.0,
            max_per_server: 20_000,
            broadcast_capacity: 4096,
            max_servers: 256,
            max_bytes: 256 << 20,
        }
    }
}

/// One stored sample: its sequence number, server and time, and its JSON object.
#[derive(Debug)]
pub struct Stored {
    pub seq: u64,
    pub server: Arc<str>,
    pub time: f64,
    pub json: Box<str>,
}

/// What one ingest call broadcasts: its samples and the WebSocket message rendered once for all.
#[derive(Debug)]
pub struct Batch {
    pub samples: Vec<Arc<Stored>>,
    pub message: Arc<str>,
}

impl Batch {
    pub fn last_seq(&self) -> u64 {
        self.samples.last().map_or(0, |s| s.seq)
    }
}

/// The result of an ingest: how many samples were stored and the first one's sequence number.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Accepted {
    pub accepted: usize,
    pub first_seq: u64,
}

/// A `/api/history` filter.
#[derive(Clone, Debug, Default)]
pub struct HistoryQuery {
    pub server: Option<String>,
    /// Only samples with `time > since`.
    pub since: Option<f64>,
    /// Only samples with `seq > after_seq`.
    pub after_seq: Option<u64>,
    /// Only the newest `limit` samples (after the other filters).
    pub limit: Option<usize>,
}

#[derive(Debug, Default)]
struct ServerLog {
    samples: VecDeque<Arc<Stored>>,
    newest_time: f64,
    received: u64,
}

#[derive(Debug, Default)]
struct Inner {
    servers: BTreeMap<Arc<str>, ServerLog>,
    last_seq: u64,
    /// Bytes of the stored samples' JSON.
    bytes: usize,
    /// Samples dropped, oldest first, to keep within `max_bytes`.
    dropped_for_bytes: u64,
}

/// Per-server figures for `/api/status`.
#[derive(Clone, Debug, Serialize)]
pub struct ServerStatus {
    pub name: String,
    pub kept: usize,
    pub received: u64,
    pub first_time: Option<f64>,
    pub last_time: Option<f64>,
}

/// The store's figures for `/api/status`.
#[derive(Clone, Debug, Serialize)]
pub struct Status {
    pub instance: String,
    pub last_seq: u64,
    pub ingested: u64,
    pub rejected_requests: u64,
    pub ws_clients: u64,
    pub ws_lagged: u64,
    pub window_s: f64,
    pub max_per_server: usize,
    pub max_servers: usize,
    pub max_bytes: usize,
    /// Bytes of samples kept, and samples dropped (oldest first) to stay within `max_bytes`.
    pub bytes: usize,
    pub dropped_for_bytes: u64,
    /// What `--replay` is playing, or `null` when samples come only from ingest.
    pub replay: Option<ReplayStatus>,
    pub servers: Vec<ServerStatus>,
}

/// A recording being played into the store (the page shows it instead of "live").
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ReplayStatus {
    /// The recording's name as given (a run directory or a CSV).
    pub source: String,
    pub speed: f64,
    /// All of the recording has been played.
    pub done: bool,
}

/// The shared state behind every route.
pub struct Store {
    inner: Mutex<Inner>,
    tx: broadcast::Sender<Arc<Batch>>,
    config: StoreConfig,
    instance: String,
    pub(crate) rejected: AtomicU64,
    pub(crate) ws_clients: AtomicU64,
    pub(crate) ws_lagged: AtomicU64,
    replay: Mutex<Option<ReplayStatus>>,
}

impl Store {
    pub fn new(config: StoreConfig) -> Self {
        let (tx, _) = broadcast::channel(config.broadcast_capacity.max(1));
        Store {
            inner: Mutex::default(),
            tx,
            config,
            instance: instance_id(),
            rejected: AtomicU64::new(0),
            ws_clients: AtomicU64::new(0),
            ws_lagged: AtomicU64::new(0),
            replay: Mutex::new(None),
        }
    }

    /// Marks the store as fed by a replay (or its end); clients are told on (re)connect.
    pub fn set_replay(&self, status: ReplayStatus) {
        *self.replay.lock().unwrap_or_else(|e| e.into_inner()) = Some(status);
    }

    pub fn replay(&self) -> Option<ReplayStatus> {
        self.replay
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// Identifies this process's numbering: a client resuming after a reconnect asks for the
    /// samples after its last `seq` only if the instance is the one it saw.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves consistent data (every step is a push or pop).
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Numbers, stores and broadcasts validated samples; refuses them all (naming the limit) when
    /// they would take the store past `max_servers`.
    pub fn ingest(&self, samples: Vec<Incoming>) -> Result<Accepted, String> {
        let ingest_ms = now_ms();
        // Render outside the lock; only the numbering prefix is added under it.
        let bodies: Vec<(Incoming, String)> = samples
            .into_iter()
            .map(|s| {
                let body = render_body(&s, ingest_ms);
                (s, body)
            })
            .collect();
        let mut inner = self.lock();
        let new: std::collections::BTreeSet<&str> = bodies
            .iter()
            .map(|(s, _)| s.server.as_str())
            .filter(|name| !inner.servers.contains_key(*name))
            .collect();
        if inner.servers.len() + new.len() > self.config.max_servers {
            return Err(format!(
                "{} new servers would make {}: the dashboard keeps at most {} (--max-servers)",
                new.len(),
                inner.servers.len() + new.len(),
                self.config.max_servers
            ));
        }
        let first_seq = inner.last_seq + 1;
        let mut stored = Vec::with_capacity(bodies.len());
        for (s, body) in bodies {
            inner.last_seq += 1;
            let seq = inner.last_seq;
            let server: Arc<str> = match inner.servers.get_key_value(s.server.as_str()) {
                Some((k, _)) => k.clone(),
                None => Arc::from(s.server.as_str()),
            };
            let item = Arc::new(Stored {
                seq,
                server: server.clone(),
                time: s.time,
                json: format!("{{\"seq\":{seq},{body}").into_boxed_str(),
            });
            inner.bytes += item.json.len();
            let log = inner.servers.entry(server).or_default();
            let evicted = log.push(item.clone(), &self.config);
            inner.bytes -= evicted;
            stored.push(item);
        }
        inner.keep_within(self.config.max_bytes);
        let accepted = stored.len();
        if accepted > 0 {
            let message = render_message("samples", &stored, "").into();
            // An error only means nobody is listening.
            let _ = self.tx.send(Arc::new(Batch {
                samples: stored,
                message,
            }));
        }
        Ok(Accepted {
            accepted,
            first_seq,
        })
    }

    /// A receiver of every batch after the returned history (all kept samples, in `seq` order).
    pub fn subscribe(&self) -> (broadcast::Receiver<Arc<Batch>>, Vec<Arc<Stored>>) {
        let (rx, mut all) = {
            let inner = self.lock();
            let rx = self.tx.subscribe();
            let all: Vec<Arc<Stored>> = inner
                .servers
                .values()
                .flat_map(|log| log.samples.iter().cloned())
                .collect();
            (rx, all)
        };
        all.sort_unstable_by_key(|s| s.seq);
        (rx, all)
    }

    /// Kept samples matching `q`, in `seq` order.
    pub fn history(&self, q: &HistoryQuery) -> Vec<Arc<Stored>> {
        self.history_and_last_seq(q).0
    }

    /// [`Store::history`], and the newest `seq` at the same instant.
    pub fn history_and_last_seq(&self, q: &HistoryQuery) -> (Vec<Arc<Stored>>, u64) {
        let keep = |s: &Stored| {
            q.since.is_none_or(|t| s.time > t) && q.after_seq.is_none_or(|n| s.seq > n)
        };
        let (mut out, last_seq): (Vec<Arc<Stored>>, u64) = {
            let inner = self.lock();
            let out = inner
                .servers
                .iter()
                .filter(|(name, _)| q.server.as_deref().is_none_or(|want| want == &***name))
                .flat_map(|(_, log)| log.samples.iter().filter(|s| keep(s)).cloned())
                .collect();
            (out, inner.last_seq)
        };
        out.sort_unstable_by_key(|s| s.seq);
        if let Some(limit) = q.limit {
            let skip = out.len().saturating_sub(limit);
            out.drain(..skip);
        }
        (out, last_seq)
    }

    pub fn last_seq(&self) -> u64 {
        self.lock().last_seq
    }

    pub fn status(&self) -> Status {
        let inner = self.lock();
        let servers = inner
            .servers
            .iter()
            .map(|(name, log)| ServerStatus {
                name: name.to_string(),
                kept: log.samples.len(),
                received: log.received,
                first_time: log.samples.front().map(|s| s.time),
                last_time: log.samples.back().map(|s| s.time),
            })
            .collect();
        Status {
            instance: self.instance.clone(),
            last_seq: inner.last_seq,
            ingested: inner.servers.values().map(|l| l.received).sum(),
            rejected_requests: self.rejected.load(Ordering::Relaxed),
            ws_clients: self.ws_clients.load(Ordering::Relaxed),
            ws_lagged: self.ws_lagged.load(Ordering::Relaxed),
            window_s: self.config.window_s,
            max_per_server: self.config.max_per_server,
            max_servers: self.config.max_servers,
            max_bytes: self.config.max_bytes,
            bytes: inner.bytes,
            dropped_for_bytes: inner.dropped_for_bytes,
            replay: self.replay(),
            servers,
        }
    }
}

impl Inner {
    /// Drops the oldest samples (lowest `seq`, whichever server) until the rest fit in `max`.
    fn keep_within(&mut self, max: usize) {
        while self.bytes > max {
            let oldest = self
                .servers
                .iter()
                .filter_map(|(name, log)| Some((log.samples.front()?.seq, name.clone())))
                .min();
            let Some((_, name)) = oldest else { break };
            let log = self.servers.get_mut(&name).expect("just found");
            let gone = log.samples.pop_front().expect("just found");
            self.bytes -= gone.json.len();
            self.dropped_for_bytes += 1;
        }
    }
}

impl ServerLog {
    /// Appends `item`, dropping what falls out of the window; returns the bytes dropped.
    fn push(&mut self, item: Arc<Stored>, config: &StoreConfig) -> usize {
        self.received += 1;
        self.newest_time = if self.samples.is_empty() {
            item.time
        } else {
            self.newest_time.max(item.time)
        };
        self.samples.push_back(item);
        let oldest_kept = self.newest_time - config.window_s;
        let mut dropped = 0;
        while let Some(front) = self.samples.front() {
            if self.samples.len() > config.max_per_server || front.time < oldest_kept {
                dropped += self.samples.pop_front().map_or(0, |s| s.json.len());
            } else {
                break;
            }
        }
        dropped
    }
}

/// `"ingest_ms":…,"server":…,"time":…,<fields>}`: a sample's JSON after its `seq`.
fn render_body(s: &Incoming, ingest_ms: f64) -> String {
    let mut out = String::with_capacity(64 + 24 * s.fields.len());
    let server = serde_json::to_string(&s.server).expect("a string serialises");
    let _ = write!(
        out,
        "\"ingest_ms\":{},\"server\":{server},\"time\":{}",
        json_num(ingest_ms),
        json_num(s.time)
    );
    for (k, v) in &s.fields {
        out.push(',');
        out.push_str(&serde_json::to_string(k).expect("a string serialises"));
        out.push(':');
        out.push_str(&v.to_string());
    }
    out.push('}');
    out
}

fn json_num(x: f64) -> String {
    serde_json::Number::from_f64(x).map_or_else(|| "null".into(), |n| n.to_string())
}

/// `{"type":kind,<extra>"samples":[…]}` from stored samples; `extra` is `"key":value,` pairs.
pub fn render_message(kind: &str, samples: &[Arc<Stored>], extra: &str) -> String {
    let len: usize = samples.iter().map(|s| s.json.len() + 1).sum();
    let mut out = String::with_capacity(len + 64 + extra.len());
    let _ = write!(out, "{{\"type\":\"{kind}\",{extra}\"samples\":[");
    for (i, s) in samples.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&s.json);
    }
    out.push_str("]}");
    out
}

/// Milliseconds since the epoch, with sub-millisecond precision (for delay measurements).
pub fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

fn instance_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{:x}-{:x}", std::process::id(), nanos & 0xffff_ffff_ffff)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Map, Value};

    fn sample(server: &str, time: f64) -> Incoming {
        let mut fields = Map::new();
        fields.insert("cpu".into(), json!(time * 2.0));
        Incoming {
            server: server.into(),
            time,
            fields,
        }
    }

    fn store(window_s: f64, max: usize) -> Store {
        Store::new(StoreConfig {
            window_s,
            max_per_server: max,
            broadcast_capacity: 16,
            ..StoreConfig::default()
        })
    }

    #[test]
    fn stored_json_is_valid_and_numbered() {
        let st = store(600.0, 100);
        let acc = st.ingest(vec![sample("a", 1.0), sample("b", 2.0)]).unwrap();
        assert_eq!((acc.accepted, acc.first_seq), (2, 1));
        let h = st.history(&HistoryQuery::default());
        let v: Value = serde_json::from_str(&h[1].json).unwrap();
        assert_eq!(v["seq"], json!(2));
        assert_eq!(v["server"], json!("b"));
        assert_eq!(v["cpu"], json!(4.0));
        assert!(v["ingest_ms"].as_f64().unwrap() > 1e12);
    }

    #[test]
    fn window_evicts_by_sample_time_and_count() {
        let st = store(10.0, 5);
        st.ingest((0..8).map(|t| sample("a", f64::from(t))).collect())
            .unwrap();
        let kept: Vec<f64> = st
            .history(&HistoryQuery::default())
            .iter()
            .map(|s| s.time)
            .collect();
        assert_eq!(kept, vec![3.0, 4.0, 5.0, 6.0, 7.0]);
        st.ingest(vec![sample("a", 15.0)]).unwrap();
        let kept: Vec<f64> = st
            .history(&HistoryQuery::default())
            .iter()
            .map(|s| s.time)
            .collect();
        assert_eq!(kept, vec![5.0, 6.0, 7.0, 15.0]);
    }

    #[test]
    fn servers_and_bytes_are_bounded_and_what_was_dropped_is_counted() {
        let st = Store::new(StoreConfig {
            max_servers: 3,
            ..StoreConfig::default()
        });
        st.ingest(vec![sample("a", 1.0), sample("b", 1.0)]).unwrap();
        // Two more new servers than fit: the whole batch is refused, naming the limit.
        let e = st
            .ingest(vec![sample("a", 2.0), sample("c", 2.0), sample("d", 2.0)])
            .unwrap_err();
        assert!(e.contains("at most 3 (--max-servers)"), "{e}");
        assert_eq!(st.history(&HistoryQuery::default()).len(), 2);
        st.ingest(vec![sample("c", 2.0)]).unwrap();
        assert_eq!(st.status().servers.len(), 3);

        // Bytes: room for about four samples; the oldest go first, whichever server.
        let one = st.history(&HistoryQuery::default())[0].json.len();
        let st = Store::new(StoreConfig {
            max_bytes: 4 * one + one / 2,
            ..StoreConfig::default()
        });
        for t in 0..6 {
            let server = if t % 2 == 0 { "a" } else { "b" };
            st.ingest(vec![sample(server, f64::from(t))]).unwrap();
        }
        let kept: Vec<u64> = st
            .history(&HistoryQuery::default())
            .iter()
            .map(|s| s.seq)
            .collect();
        assert_eq!(kept, vec![3, 4, 5, 6]);
        let status = st.status();
        assert_eq!(status.dropped_for_bytes, 2);
        assert!(status.bytes <= 4 * one + one / 2, "{}", status.bytes);
    }

    #[test]
    fn history_filters() {
        let st = store(600.0, 100);
        for t in 0..6 {
            st.ingest(vec![sample(
                if t % 2 == 0 { "a" } else { "b" },
                f64::from(t),
            )])
            .unwrap();
        }
        let q = |server: Option<&str>, since, after_seq, limit| {
            st.history(&HistoryQuery {
                server: server.map(String::from),
                since,
                after_seq,
                limit,
            })
            .iter()
            .map(|s| s.seq)
            .collect::<Vec<_>>()
        };
        assert_eq!(q(None, None, None, None), vec![1, 2, 3, 4, 5, 6]);
        assert_eq!(q(Some("a"), None, None, None), vec![1, 3, 5]);
        assert_eq!(q(None, Some(3.0), None, None), vec![5, 6]);
        assert_eq!(q(None, None, Some(4), None), vec![5, 6]);
        assert_eq!(q(None, None, None, Some(2)), vec![5, 6]);
    }

    #[test]
    fn subscriber_sees_each_sample_once() {
        let st = store(600.0, 100);
        st.ingest(vec![sample("a", 1.0)]).unwrap();
        let (mut rx, hist) = st.subscribe();
        st.ingest(vec![sample("a", 2.0), sample("b", 2.0)]).unwrap();
        assert_eq!(hist.iter().map(|s| s.seq).collect::<Vec<_>>(), vec![1]);
        let batch = rx.try_recv().unwrap();
        assert_eq!(
            batch.samples.iter().map(|s| s.seq).collect::<Vec<_>>(),
            vec![2, 3]
        );
        let msg: Value = serde_json::from_str(&batch.message).unwrap();
        assert_eq!(msg["type"], json!("samples"));
        assert_eq!(msg["samples"].as_array().unwrap().len(), 2);
    }
}
