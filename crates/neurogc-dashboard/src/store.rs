//! The recent window of samples per server, and the fan-out buffer that streams new ones.
//!
//! Every stored sample gets a global sequence number. Numbering, storing and appending to the
//! fan-out buffer happen under one lock, so the buffer holds batches in sequence order. A WebSocket
//! client is only a cursor (the newest `seq` it has taken): it takes the batch that starts right
//! after its cursor from the buffer or, when the buffer no longer holds it (the client fell
//! behind), pages what follows its cursor out of the store. Each sample is rendered to JSON once,
//! at ingest; WebSocket clients and `/api/history` only concatenate those strings.
//!
//! Memory: the store keeps at most `max_bytes` of samples, and the fan-out buffer at most a
//! quarter of that (and always the newest batch), whatever the clients do: a client that does
//! not read holds at most the one message it is stuck sending, and ingest never waits for a
//! client. A full server table makes room by evicting the least recently updated server.

use crate::ingest::Incoming;
use axum::extract::ws::Utf8Bytes;
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::watch;

/// How much the store keeps.
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// Seconds of sample time kept per server, counted back from its newest sample (not from
    /// the wall clock, so a replayed run from last month is kept like a live one).
    pub window_s: f64,
    /// Samples kept per server at most, whatever their times.
    pub max_per_server: usize,
    /// Batches the fan-out buffer keeps at most (its bytes are bounded too, by a quarter of
    /// `max_bytes`); a WebSocket client further behind lags and is caught up from the store.
    pub broadcast_capacity: usize,
    /// Servers kept at most: a new server evicts the least recently updated one; only a batch
    /// naming more servers than this is refused whole.
    pub max_servers: usize,
    /// Bytes of stored samples at most, all servers together: the oldest samples go first.
    /// The WebSocket fan-out buffer keeps at most a quarter of this on top.
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

/// What one ingest call streams: its `seq` range and the WebSocket message rendered once for all
/// clients (they share its bytes).
#[derive(Debug)]
pub struct Batch {
    pub first_seq: u64,
    pub last_seq: u64,
    pub message: Utf8Bytes,
}

/// Bytes a buffered batch costs besides its message (the batch, its `Arc`, the queue slot).
const BATCH_OVERHEAD: usize = 128;

impl Batch {
    fn cost(&self) -> usize {
        self.message.len() + BATCH_OVERHEAD
    }
}

/// The result of an ingest: how many samples were stored and the first one's sequence number,
/// and what else happened that the client should know (servers evicted, text cut short).
#[derive(Clone, Debug, Serialize)]
pub struct Accepted {
    pub accepted: usize,
    pub first_seq: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// One WebSocket client's place in the stream, shared with the store so that dropping a batch
/// from the fan-out buffer before the client took it is counted as the client lagging.
#[derive(Debug, Default)]
pub struct Cursor {
    /// The newest `seq` the client has taken (to send, or sent).
    taken: AtomicU64,
    /// Behind the fan-out buffer, and counted in `ws_lagged`, since it last took a batch from it.
    lagging: AtomicBool,
}

impl Cursor {
    pub fn taken(&self) -> u64 {
        self.taken.load(Ordering::Relaxed)
    }

    pub fn set_taken(&self, seq: u64) {
        self.taken.store(seq, Ordering::Relaxed);
    }
}

/// What a WebSocket client sends next ([`Store::next_after`]).
#[derive(Debug)]
pub enum Next {
    /// Nothing after its cursor yet.
    Idle,
    /// The buffered batch that starts right after its cursor.
    Batch(Arc<Batch>),
    /// The fan-out buffer no longer holds what follows its cursor: it pages from the store.
    Behind,
}

/// The stored samples right after a cursor ([`Store::page`]).
#[derive(Debug)]
pub struct Page {
    /// In `seq` order.
    pub samples: Vec<Arc<Stored>>,
    /// The cursor after this page: every stored sample up to it is in `samples`.
    pub end: u64,
    /// Samples in the page's range that are no longer stored (they left the window).
    pub lost: u64,
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
    /// The `seq` of its newest sample (kept or not): which server was updated least recently.
    last_seq: u64,
}

#[derive(Debug, Default)]
struct Inner {
    servers: BTreeMap<Arc<str>, ServerLog>,
    last_seq: u64,
    /// Samples stored since start (evicted servers' included).
    ingested: u64,
    /// Bytes of the stored samples' JSON.
    bytes: usize,
    /// Samples dropped, oldest first, to keep within `max_bytes`.
    dropped_for_bytes: u64,
    /// Servers evicted to make room for new ones, and the samples they still held.
    evicted_servers: u64,
    dropped_with_servers: u64,
    /// Recent batches for WebSocket clients, oldest first, and their bytes.
    fanout: VecDeque<Arc<Batch>>,
    fanout_bytes: usize,
    /// Batches dropped from `fanout` before every client had taken them.
    fanout_dropped: u64,
    /// Connected WebSocket clients.
    clients: Vec<Arc<Cursor>>,
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
    /// Times a WebSocket client fell behind the fan-out buffer (a batch it had not taken was
    /// dropped): it skips ahead to the store, which still holds the window.
    pub ws_lagged: u64,
    /// WebSocket clients behind the fan-out buffer now (a client that does not read stays so).
    pub ws_lagging_clients: usize,
    /// Samples lagging clients never got: they left the window before the client caught up.
    pub ws_missed: u64,
    /// Batches dropped from the fan-out buffer before every client had taken them.
    pub ws_dropped_batches: u64,
    /// Clients disconnected because one message took them longer than the send timeout.
    pub ws_disconnected_slow: u64,
    /// Bytes the fan-out buffer holds, and its bound (a quarter of `max_bytes`; it always keeps
    /// the newest batch, even a larger one).
    pub ws_buffer_bytes: usize,
    pub ws_buffer_max_bytes: usize,
    pub window_s: f64,
    pub max_per_server: usize,
    pub max_servers: usize,
    pub max_bytes: usize,
    /// Bytes of samples kept, and samples dropped (oldest first) to stay within `max_bytes`.
    pub bytes: usize,
    pub dropped_for_bytes: u64,
    /// Servers evicted (least recently updated first) to make room for new ones past
    /// `max_servers`, and the samples they still held.
    pub evicted_servers: u64,
    pub dropped_with_servers: u64,
    /// Text values cut to their first 1024 characters at ingest.
    pub truncated_fields: u64,
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
    /// The newest `seq`, to wake WebSocket clients (sending never waits).
    newest: watch::Sender<u64>,
    config: StoreConfig,
    instance: String,
    pub(crate) rejected: AtomicU64,
    pub(crate) ws_clients: AtomicU64,
    pub(crate) ws_lagged: AtomicU64,
    pub(crate) ws_missed: AtomicU64,
    pub(crate) ws_disconnected_slow: AtomicU64,
    pub(crate) truncated_fields: AtomicU64,
    replay: Mutex<Option<ReplayStatus>>,
}

impl Store {
    pub fn new(config: StoreConfig) -> Self {
        Store {
            inner: Mutex::default(),
            newest: watch::Sender::new(0),
            config,
            instance: instance_id(),
            rejected: AtomicU64::new(0),
            ws_clients: AtomicU64::new(0),
            ws_lagged: AtomicU64::new(0),
            ws_missed: AtomicU64::new(0),
            ws_disconnected_slow: AtomicU64::new(0),
            truncated_fields: AtomicU64::new(0),
            replay: Mutex::new(None),
        }
    }

    /// Bytes of batches the WebSocket fan-out buffer keeps at most (besides the newest one).
    pub fn fanout_max_bytes(&self) -> usize {
        self.config.max_bytes / 4
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

    /// Numbers, stores and streams validated samples. A batch naming servers the table has no
    /// room for evicts the least recently updated other servers (their samples go with them,
    /// and the reply says so); only a batch naming more servers than `max_servers` by itself is
    /// refused whole (naming the limit): no eviction could make room for it.
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
        let named: BTreeSet<&str> = bodies.iter().map(|(s, _)| s.server.as_str()).collect();
        if named.len() > self.config.max_servers {
            return Err(format!(
                "{} servers in one batch: the dashboard keeps at most {} (--max-servers)",
                named.len(),
                self.config.max_servers
            ));
        }
        let mut inner = self.lock();
        let new = named
            .iter()
            .filter(|name| !inner.servers.contains_key(**name))
            .count();
        let excess = (inner.servers.len() + new).saturating_sub(self.config.max_servers);
        let mut warnings = Vec::new();
        if excess > 0 {
            let evicted = inner.evict_servers(excess, &named);
            warnings.extend(evicted.iter().take(5).map(|(name, kept)| {
                format!(
                    "server {name:?} (the least recently updated; {kept} samples kept) was \
                     evicted to make room: the dashboard keeps at most {} (--max-servers)",
                    self.config.max_servers
                )
            }));
            if evicted.len() > 5 {
                warnings.push(format!("… and {} more servers evicted", evicted.len() - 5));
            }
        }
        drop(named);
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
        inner.ingested += stored.len() as u64;
        inner.keep_within(self.config.max_bytes);
        let accepted = stored.len();
        if accepted > 0 {
            let batch = Arc::new(Batch {
                first_seq,
                last_seq: inner.last_seq,
                message: render_message("samples", &stored, "").into(),
            });
            drop(stored);
            let lagged = inner.buffer(
                batch,
                self.fanout_max_bytes(),
                self.config.broadcast_capacity.max(1),
            );
            self.ws_lagged.fetch_add(lagged, Ordering::Relaxed);
            let last_seq = inner.last_seq;
            drop(inner);
            // Wakes the clients; never waits for them.
            self.newest.send_replace(last_seq);
        }
        Ok(Accepted {
            accepted,
            first_seq,
            warnings,
        })
    }

    /// Registers a WebSocket client at the newest `seq`: returns its cursor (at that `seq`; a
    /// client that resumes moves it back) and a receiver that changes on every ingest after it.
    /// Call [`Store::unregister`] when it leaves.
    pub fn register(&self) -> (Arc<Cursor>, watch::Receiver<u64>) {
        let rx = self.newest.subscribe();
        let mut inner = self.lock();
        let cursor = Arc::new(Cursor::default());
        cursor.set_taken(inner.last_seq);
        inner.clients.push(cursor.clone());
        (cursor, rx)
    }

    pub fn unregister(&self, cursor: &Arc<Cursor>) {
        self.lock().clients.retain(|c| !Arc::ptr_eq(c, cursor));
    }

    /// What the client at `cursor` sends next. Taking a batch moves the cursor past it and
    /// clears its lag; finding itself behind counts a lag (unless already counted).
    pub fn next_after(&self, cursor: &Cursor) -> Next {
        let taken = cursor.taken();
        let inner = self.lock();
        if taken >= inner.last_seq {
            return Next::Idle;
        }
        let i = inner.fanout.partition_point(|b| b.first_seq <= taken);
        match inner.fanout.get(i) {
            Some(b) if b.first_seq == taken + 1 => {
                cursor.set_taken(b.last_seq);
                cursor.lagging.store(false, Ordering::Relaxed);
                Next::Batch(b.clone())
            }
            _ => {
                if !cursor.lagging.swap(true, Ordering::Relaxed) {
                    self.ws_lagged.fetch_add(1, Ordering::Relaxed);
                }
                Next::Behind
            }
        }
    }

    /// The oldest stored samples with `after < seq <= upto`: at most `max_samples` of them and
    /// about `max_bytes` of JSON (at least one sample).
    pub fn page(&self, after: u64, upto: u64, max_samples: usize, max_bytes: usize) -> Page {
        let inner = self.lock();
        let upto = upto.min(inner.last_seq).max(after);
        // Each server's samples are in `seq` order: merge them from where each passes `after`.
        let logs: Vec<&VecDeque<Arc<Stored>>> =
            inner.servers.values().map(|l| &l.samples).collect();
        let mut heads = BinaryHeap::new();
        for (i, log) in logs.iter().enumerate() {
            let at = log.partition_point(|s| s.seq <= after);
            if let Some(s) = log.get(at) {
                heads.push(Reverse((s.seq, i, at)));
            }
        }
        let mut samples: Vec<Arc<Stored>> = Vec::new();
        let mut bytes = 0;
        let mut full = false;
        while let Some(Reverse((seq, i, at))) = heads.pop() {
            if seq > upto {
                break;
            }
            if samples.len() >= max_samples.max(1) || (bytes >= max_bytes && !samples.is_empty()) {
                full = true;
                break;
            }
            let s = &logs[i][at];
            bytes += s.json.len();
            samples.push(s.clone());
            if let Some(next) = logs[i].get(at + 1) {
                heads.push(Reverse((next.seq, i, at + 1)));
            }
        }
        let end = match samples.last() {
            Some(s) if full => s.seq,
            _ => upto,
        };
        let lost = end - after - samples.len() as u64;
        Page { samples, end, lost }
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
        let oldest_buffered = inner
            .fanout
            .front()
            .map_or(inner.last_seq + 1, |b| b.first_seq);
        let ws_lagging_clients = inner
            .clients
            .iter()
            .filter(|c| c.taken() + 1 < oldest_buffered)
            .count();
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
            ingested: inner.ingested,
            rejected_requests: self.rejected.load(Ordering::Relaxed),
            ws_clients: self.ws_clients.load(Ordering::Relaxed),
            ws_lagged: self.ws_lagged.load(Ordering::Relaxed),
            ws_lagging_clients,
            ws_missed: self.ws_missed.load(Ordering::Relaxed),
            ws_dropped_batches: inner.fanout_dropped,
            ws_disconnected_slow: self.ws_disconnected_slow.load(Ordering::Relaxed),
            ws_buffer_bytes: inner.fanout_bytes,
            ws_buffer_max_bytes: self.fanout_max_bytes(),
            window_s: self.config.window_s,
            max_per_server: self.config.max_per_server,
            max_servers: self.config.max_servers,
            max_bytes: self.config.max_bytes,
            bytes: inner.bytes,
            dropped_for_bytes: inner.dropped_for_bytes,
            evicted_servers: inner.evicted_servers,
            dropped_with_servers: inner.dropped_with_servers,
            truncated_fields: self.truncated_fields.load(Ordering::Relaxed),
            replay: self.replay(),
            servers,
        }
    }
}

impl Inner {
    /// Appends a batch to the fan-out buffer, then drops the oldest batches (never the newest)
    /// past `max_bytes` or `max_batches`. Returns how many clients started lagging for it (they
    /// had not taken a dropped batch, and were not lagging already).
    fn buffer(&mut self, batch: Arc<Batch>, max_bytes: usize, max_batches: usize) -> u64 {
        self.fanout_bytes += batch.cost();
        self.fanout.push_back(batch);
        let mut lagged = 0;
        while self.fanout.len() > 1
            && (self.fanout_bytes > max_bytes || self.fanout.len() > max_batches)
        {
            let gone = self.fanout.pop_front().expect("more than one");
            self.fanout_bytes -= gone.cost();
            let mut untaken = false;
            for c in &self.clients {
                if c.taken() < gone.last_seq {
                    untaken = true;
                    if !c.lagging.swap(true, Ordering::Relaxed) {
                        lagged += 1;
                    }
                }
            }
            self.fanout_dropped += u64::from(untaken);
        }
        lagged
    }

    /// Evicts `n` servers not named in `keep`: those holding no samples first, then the least
    /// recently updated. Returns their names and how many samples each held.
    fn evict_servers(&mut self, n: usize, keep: &BTreeSet<&str>) -> Vec<(Arc<str>, usize)> {
        let mut candidates: Vec<(bool, u64, Arc<str>)> = self
            .servers
            .iter()
            .filter(|(name, _)| !keep.contains(&***name))
            .map(|(name, log)| (!log.samples.is_empty(), log.last_seq, name.clone()))
            .collect();
        candidates.sort_unstable();
        let mut evicted = Vec::with_capacity(n);
        for (_, _, name) in candidates.into_iter().take(n) {
            let log = self.servers.remove(&name).expect("a candidate");
            self.bytes -= log.samples.iter().map(|s| s.json.len()).sum::<usize>();
            self.evicted_servers += 1;
            self.dropped_with_servers += log.samples.len() as u64;
            evicted.push((name, log.samples.len()));
        }
        evicted
    }

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
        self.last_seq = item.seq;
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
        // A batch naming more servers than the table holds: refused whole, naming the limit.
        let four = vec![
            sample("a", 2.0),
            sample("c", 2.0),
            sample("d", 2.0),
            sample("e", 2.0),
        ];
        let e = st.ingest(four).unwrap_err();
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

    /// A full table evicts the least recently updated server (not one the batch names) instead
    /// of refusing new servers until a restart; the reply and `/api/status` say so.
    #[test]
    fn a_full_server_table_evicts_the_least_recently_updated() {
        let st = Store::new(StoreConfig {
            max_servers: 3,
            ..StoreConfig::default()
        });
        st.ingest(vec![sample("a", 1.0), sample("b", 1.0), sample("c", 1.0)])
            .unwrap();
        st.ingest(vec![sample("a", 2.0)]).unwrap();
        // b is the least recently updated: d takes its place.
        let acc = st.ingest(vec![sample("d", 2.0)]).unwrap();
        let names = |st: &Store| -> Vec<String> {
            st.status().servers.into_iter().map(|s| s.name).collect()
        };
        assert_eq!(names(&st), vec!["a", "c", "d"]);
        assert_eq!(acc.warnings.len(), 1, "{:?}", acc.warnings);
        assert!(
            acc.warnings[0].contains("server \"b\""),
            "{:?}",
            acc.warnings
        );
        // A batch naming c (the least recently updated now) keeps it: a goes instead.
        st.ingest(vec![sample("c", 3.0), sample("e", 3.0)]).unwrap();
        assert_eq!(names(&st), vec!["c", "d", "e"]);
        let status = st.status();
        assert_eq!(
            (status.evicted_servers, status.dropped_with_servers),
            (2, 3)
        );
        assert_eq!(
            status.ingested, 7,
            "evicted servers' samples still count as ingested"
        );
        let kept = st.history(&HistoryQuery::default());
        assert_eq!(
            status.bytes,
            kept.iter().map(|s| s.json.len()).sum::<usize>()
        );
        assert!(kept.iter().all(|s| &*s.server != "a" && &*s.server != "b"));

        // Hundreds of servers come and go: the table never fills up for good.
        let st = Store::new(StoreConfig::default());
        for i in 0..1000 {
            st.ingest(vec![sample(&format!("s{i}"), 1.0)]).unwrap();
        }
        let status = st.status();
        assert_eq!(status.servers.len(), 256);
        assert_eq!(status.evicted_servers, 1000 - 256);
        assert_eq!(status.servers[0].name, "s744");
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

    fn seqs(samples: &[Arc<Stored>]) -> Vec<u64> {
        samples.iter().map(|s| s.seq).collect()
    }

    #[test]
    fn a_client_takes_each_batch_once_then_pages_when_behind() {
        let st = store(600.0, 100);
        st.ingest(vec![sample("a", 1.0)]).unwrap();
        let (cursor, _rx) = st.register();
        assert_eq!(cursor.taken(), 1);
        assert!(matches!(st.next_after(&cursor), Next::Idle));
        st.ingest(vec![sample("a", 2.0), sample("b", 2.0)]).unwrap();
        let Next::Batch(batch) = st.next_after(&cursor) else {
            panic!("the batch after the cursor")
        };
        assert_eq!((batch.first_seq, batch.last_seq, cursor.taken()), (2, 3, 3));
        let msg: Value = serde_json::from_str(batch.message.as_str()).unwrap();
        assert_eq!(msg["type"], json!("samples"));
        assert_eq!(msg["samples"].as_array().unwrap().len(), 2);
        assert!(matches!(st.next_after(&cursor), Next::Idle));

        // 20 more batches than the buffer keeps (16): the client lags, once, and pages.
        for t in 0..36 {
            st.ingest(vec![sample("a", 10.0 + f64::from(t))]).unwrap();
        }
        let status = st.status();
        assert_eq!((status.ws_lagged, status.ws_lagging_clients), (1, 1));
        assert_eq!(status.ws_dropped_batches, 20);
        assert!(matches!(st.next_after(&cursor), Next::Behind));
        assert_eq!(st.status().ws_lagged, 1, "one lag, counted once");
        let page = st.page(cursor.taken(), u64::MAX, 5, usize::MAX);
        assert_eq!(
            (seqs(&page.samples), page.end, page.lost),
            ((4..=8).collect(), 8, 0)
        );
        // Pages up to the buffer, then takes batches from it again.
        cursor.set_taken(23);
        let Next::Batch(batch) = st.next_after(&cursor) else {
            panic!("buffered")
        };
        assert_eq!(batch.first_seq, 24);
        assert_eq!(st.status().ws_lagging_clients, 0);
        st.unregister(&cursor);
        assert!(st.lock().clients.is_empty());
    }

    #[test]
    fn the_fanout_buffer_is_bounded_in_bytes() {
        let st = Store::new(StoreConfig {
            max_bytes: 4 << 20,
            ..StoreConfig::default()
        });
        let (_cursor, _rx) = st.register();
        let big: Vec<Incoming> = (0..2000).map(|t| sample("a", f64::from(t))).collect();
        for _ in 0..40 {
            st.ingest(big.clone()).unwrap();
        }
        let status = st.status();
        assert_eq!(status.ws_buffer_max_bytes, 1 << 20);
        let newest = st.lock().fanout.back().unwrap().cost();
        assert!(newest > 100_000, "{newest}");
        assert!(
            status.ws_buffer_bytes <= status.ws_buffer_max_bytes.max(newest),
            "{} > {}",
            status.ws_buffer_bytes,
            status.ws_buffer_max_bytes
        );
        assert!(status.bytes <= 4 << 20);
        assert_eq!(status.ws_lagged, 1);
    }

    #[test]
    fn pages_merge_servers_in_seq_order_and_count_what_left_the_window() {
        let st = store(100.0, 100);
        for t in 0..10 {
            let server = ["a", "b", "c"][t % 3];
            st.ingest(vec![sample(server, t as f64)]).unwrap();
        }
        let all = st.page(0, u64::MAX, 100, usize::MAX);
        assert_eq!(seqs(&all.samples), (1..=10).collect::<Vec<_>>());
        assert_eq!((all.end, all.lost), (10, 0));
        let some = st.page(2, 7, 3, usize::MAX);
        assert_eq!((seqs(&some.samples), some.end), (vec![3, 4, 5], 5));
        let rest = st.page(5, 7, 3, usize::MAX);
        assert_eq!((seqs(&rest.samples), rest.end), (vec![6, 7], 7));
        // By bytes: at least one sample, then as many as fit.
        let one = st.page(0, u64::MAX, 100, 1);
        assert_eq!((seqs(&one.samples), one.end), (vec![1], 1));
        // "a" at time 200 drops a's older samples (window 100 s): 1, 4, 7 and 10 are gone.
        st.ingest(vec![sample("a", 200.0)]).unwrap();
        let after = st.page(0, u64::MAX, 100, usize::MAX);
        assert_eq!(seqs(&after.samples), vec![2, 3, 5, 6, 8, 9, 11]);
        assert_eq!((after.end, after.lost), (11, 4));
    }
}
