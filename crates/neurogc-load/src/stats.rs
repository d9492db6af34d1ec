//! Per-host, per-task counters and HDR latency histograms, rolled over every second.
//!
//! Every request is recorded once, into the current second's window of its (host, task) cell.
//! Each second the windows are moved out (they become that second's rows and histograms), merged
//! into the cell's running total, and replaced by empty ones. "all" rows are the merge of a
//! host's task windows. Every percentile anywhere comes from these histograms.
use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::client::FailKind;

/// Latencies are recorded in microseconds, 3 significant digits, up to one hour.
pub const HIGHEST_US: u64 = 3_600_000_000;

pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, HIGHEST_US, 3).expect("valid histogram bounds")
}

/// Counts and latencies over some span of time.
#[derive(Clone)]
pub struct Window {
    pub hist: Histogram<u64>,
    pub requests: u64,
    pub failures: u64,
    pub by_kind: BTreeMap<FailKind, u64>,
    pub late_starts: u64,
    pub dropped: u64,
}

impl Window {
    pub fn new() -> Self {
        Window {
            hist: new_histogram(),
            requests: 0,
            failures: 0,
            by_kind: BTreeMap::new(),
            late_starts: 0,
            dropped: 0,
        }
    }

    pub fn merge(&mut self, other: &Window) {
        self.hist.add(&other.hist).expect("histograms share bounds");
        self.requests += other.requests;
        self.failures += other.failures;
        for (k, n) in &other.by_kind {
            *self.by_kind.entry(*k).or_default() += n;
        }
        self.late_starts += other.late_starts;
        self.dropped += other.dropped;
    }
}

impl Default for Window {
    fn default() -> Self {
        Self::new()
    }
}

struct HostStats {
    current: Vec<Window>,
    total: Vec<Window>,
    /// Hosts taking turns: each of this host's slices (by slice index), all tasks together.
    turns: BTreeMap<u64, Window>,
    users: u64,
    in_flight: u64,
}

/// One second's (or the whole run's) window of one host and one task, or `task: None` for all.
pub struct Snapshot {
    pub host: usize,
    pub task: Option<usize>,
    pub users: u64,
    pub in_flight: u64,
    pub window: Window,
}

/// All statistics of a run.
pub struct Stats {
    hosts: Vec<HostStats>,
}

impl Stats {
    pub fn new(hosts: usize, tasks: usize) -> Self {
        let host = || HostStats {
            current: (0..tasks).map(|_| Window::new()).collect(),
            total: (0..tasks).map(|_| Window::new()).collect(),
            turns: BTreeMap::new(),
            users: 0,
            in_flight: 0,
        };
        Stats {
            hosts: (0..hosts).map(|_| host()).collect(),
        }
    }

    /// Records one finished request: its latency, and its failure kind if it failed. With
    /// hosts taking turns, `slice` is the slice it was sent in, whose window also gets it.
    pub fn record(
        &mut self,
        host: usize,
        task: usize,
        latency: Duration,
        result: Result<u16, FailKind>,
        slice: Option<u64>,
    ) {
        let h = &mut self.hosts[host];
        let windows = [
            Some(&mut h.current[task]),
            slice.map(|s| h.turns.entry(s).or_default()),
        ];
        for w in windows.into_iter().flatten() {
            w.requests += 1;
            w.hist
                .saturating_record(latency.as_micros().min(HIGHEST_US as u128) as u64);
            if let Err(kind) = result {
                w.failures += 1;
                *w.by_kind.entry(kind).or_default() += 1;
            }
        }
    }

    /// Takes the turn windows of slices `done` says are over: `(slice, snapshot)` in slice order.
    pub fn take_turns(&mut self, done: impl Fn(u64) -> bool) -> Vec<(u64, Snapshot)> {
        let mut out = Vec::new();
        for (h, host) in self.hosts.iter_mut().enumerate() {
            let finished: Vec<u64> = host.turns.keys().copied().filter(|&s| done(s)).collect();
            for s in finished {
                let window = host.turns.remove(&s).expect("key just listed");
                out.push((s, snapshot(h, None, host.users, 0, window)));
            }
        }
        out.sort_by_key(|(s, _)| *s);
        out
    }

    pub fn late_start(&mut self, host: usize, task: usize) {
        self.hosts[host].current[task].late_starts += 1;
    }

    pub fn dropped(&mut self, host: usize, task: usize) {
        self.hosts[host].current[task].dropped += 1;
    }

    pub fn add_user(&mut self, host: usize) {
        self.hosts[host].users += 1;
    }

    pub fn set_in_flight(&mut self, host: usize, n: u64) {
        self.hosts[host].in_flight = n;
    }

    /// Closes the current second: returns its windows (tasks, then "all", per host) and folds
    /// them into the totals.
    pub fn roll(&mut self) -> Vec<Snapshot> {
        let mut out = Vec::new();
        for (h, host) in self.hosts.iter_mut().enumerate() {
            let mut all = Window::new();
            for (t, (cur, total)) in host.current.iter_mut().zip(&mut host.total).enumerate() {
                let w = std::mem::take(cur);
                total.merge(&w);
                all.merge(&w);
                out.push(snapshot(h, Some(t), host.users, host.in_flight, w));
            }
            out.push(snapshot(h, None, host.users, host.in_flight, all));
        }
        out
    }

    /// The totals so far (call [`Stats::roll`] first to include the current second).
    pub fn totals(&self) -> Vec<Snapshot> {
        let mut out = Vec::new();
        for (h, host) in self.hosts.iter().enumerate() {
            let mut all = Window::new();
            for (t, w) in host.total.iter().enumerate() {
                all.merge(w);
                out.push(snapshot(h, Some(t), host.users, host.in_flight, w.clone()));
            }
            out.push(snapshot(h, None, host.users, host.in_flight, all));
        }
        out
    }
}

fn snapshot(
    host: usize,
    task: Option<usize>,
    users: u64,
    in_flight: u64,
    window: Window,
) -> Snapshot {
    Snapshot {
        host,
        task,
        users,
        in_flight,
        window,
    }
}

/// The JSON shape shared by per-second lines (`"type": "second"`), turn lines (`"type": "turn"`,
/// one per slice a host held with `--alternate`, `t` its end) and summary rows
/// (`"type": "total"`). Latencies in milliseconds; `null` when there were no requests.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct Row {
    #[serde(rename = "type")]
    pub kind: String,
    /// Turn lines: the round (every host's n-th turn is round n, from 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u64>,
    pub t: f64,
    pub elapsed_s: f64,
    pub interval_s: f64,
    pub host: String,
    pub task: String,
    pub users: Option<u64>,
    pub in_flight: u64,
    pub requests: u64,
    pub failures: u64,
    pub failures_by_kind: BTreeMap<String, u64>,
    pub rps: f64,
    pub p50_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub p999_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub mean_ms: Option<f64>,
    pub late_starts: u64,
    pub dropped: u64,
}

/// Where and when a row was taken, and what to call it.
pub struct RowContext<'a> {
    pub kind: &'a str,
    pub unix_time: f64,
    pub elapsed_s: f64,
    pub interval_s: f64,
    pub host: &'a str,
    pub task: &'a str,
    pub closed_loop: bool,
}

impl Row {
    /// The same counts over a different length of time (a host's share of an alternating run).
    pub fn over(mut self, interval_s: f64) -> Row {
        self.interval_s = round3(interval_s);
        self.rps = if interval_s > 0.0 {
            round3(self.requests as f64 / interval_s)
        } else {
            0.0
        };
        self
    }

    pub fn new(ctx: &RowContext, s: &Snapshot) -> Row {
        let w = &s.window;
        let h = &w.hist;
        let ms = |us: u64| us as f64 / 1000.0;
        let q = |q: f64| (w.requests > 0).then(|| ms(h.value_at_quantile(q)));
        Row {
            kind: ctx.kind.to_string(),
            turn: None,
            t: round3(ctx.unix_time),
            elapsed_s: round3(ctx.elapsed_s),
            interval_s: round3(ctx.interval_s),
            host: ctx.host.to_string(),
            task: ctx.task.to_string(),
            users: ctx.closed_loop.then_some(s.users),
            in_flight: s.in_flight,
            requests: w.requests,
            failures: w.failures,
            failures_by_kind: w.by_kind.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
            rps: if ctx.interval_s > 0.0 {
                round3(w.requests as f64 / ctx.interval_s)
            } else {
                0.0
            },
            p50_ms: q(0.5),
            p90_ms: q(0.9),
            p95_ms: q(0.95),
            p99_ms: q(0.99),
            p999_ms: q(0.999),
            max_ms: (w.requests > 0).then(|| ms(h.max())),
            mean_ms: (w.requests > 0).then(|| round3(h.mean() / 1000.0)),
            late_starts: w.late_starts,
            dropped: w.dropped,
        }
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roll_moves_seconds_into_totals_and_all() {
        let mut s = Stats::new(2, 2);
        for i in 1..=100 {
            s.record(0, 0, Duration::from_millis(i), Ok(200), None);
        }
        s.record(
            0,
            1,
            Duration::from_millis(500),
            Err(FailKind::Status(500)),
            None,
        );
        s.record(1, 0, Duration::from_millis(1), Err(FailKind::Connect), None);
        s.dropped(1, 1);
        let sec = s.roll();
        assert_eq!(sec.len(), 6);
        let all0 = &sec[2];
        assert_eq!((all0.host, all0.task), (0, None));
        assert_eq!((all0.window.requests, all0.window.failures), (101, 1));
        assert_eq!(sec[5].window.dropped, 1);
        let ctx = RowContext {
            kind: "second",
            unix_time: 0.0,
            elapsed_s: 1.0,
            interval_s: 1.0,
            host: "h",
            task: "t",
            closed_loop: false,
        };
        let row = Row::new(&ctx, &sec[0]);
        assert!((row.p50_ms.unwrap() - 50.0).abs() < 0.05, "{row:?}");
        assert!((row.p99_ms.unwrap() - 99.0).abs() < 0.1, "{row:?}");
        assert!((row.max_ms.unwrap() - 100.0).abs() < 0.1);
        assert_eq!(row.rps, 100.0);
        assert_eq!(
            Row::new(&ctx, &sec[1]).failures_by_kind.get("http_500"),
            Some(&1)
        );
        // The next second starts empty; totals keep everything.
        let next = s.roll();
        assert_eq!(next[2].window.requests, 0);
        assert_eq!(Row::new(&ctx, &next[2]).p99_ms, None);
        s.record(0, 0, Duration::from_millis(7), Ok(200), None);
        s.roll();
        assert_eq!(s.totals()[2].window.requests, 102);
        assert_eq!(
            s.totals()[3].window.by_kind.get(&FailKind::Connect),
            Some(&1)
        );
    }

    #[test]
    fn latencies_beyond_an_hour_saturate() {
        let mut s = Stats::new(1, 1);
        s.record(0, 0, Duration::from_secs(10_000), Ok(200), None);
        let snap = s.roll();
        assert!(snap[0].window.hist.max() >= HIGHEST_US - HIGHEST_US / 1000);
    }
}
