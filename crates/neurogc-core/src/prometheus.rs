//! Prometheus text exposition (format 0.0.4) of the agent's counters, read live at scrape time.
//! Hand-written: a few dozen lines do not justify a metrics framework inside users' services.
//!
//! What is exposed follows Prometheus' conventions, so that it can be summed across workers and
//! `rate()`d: counters end in `_total` and only ever grow while the process lives; durations are
//! histograms in seconds (`_bucket{le}`, `_sum`, `_count`, cumulative since the agent started);
//! every series carries the worker's `pid`, because each worker of a multi-process server keeps
//! its own counters and a scrape reaches one worker at a time (docs/metrics.md).
//!
//! The process' own CPU time and memory use prometheus_client's `process_*` names, and only in the
//! agent's own exposition: in a registry (the Python `NeuroGCCollector`) the registry's process
//! collector reports them, so [`Live::process`] is `None` there and nothing is named twice.

use std::fmt::Write;

use crate::gcstats::GcTotals;
use crate::overlap::GcOverlap;

/// Upper bounds (seconds) of the request-duration buckets: 0.5 ms to 10 s.
pub const REQUEST_DURATION_BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Upper bounds (seconds) of the collection-pause buckets: 50 µs to 2.5 s.
pub const GC_PAUSE_BUCKETS: [f64; 15] = [
    0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0,
    2.5,
];

/// A histogram with fixed bucket bounds, as Prometheus exposes one: observations are counted in
/// the first bucket whose bound is at least the value (`le`), and one past the last bound (+Inf).
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    bounds: &'static [f64],
    /// Observations per bucket (not cumulative); the last slot is +Inf.
    counts: Vec<u64>,
    /// Sum of the observed values (seconds).
    pub sum: f64,
    pub count: u64,
}

impl Histogram {
    pub fn new(bounds: &'static [f64]) -> Self {
        Histogram {
            bounds,
            counts: vec![0; bounds.len() + 1],
            sum: 0.0,
            count: 0,
        }
    }

    /// Counts one observation; O(log buckets), no allocation.
    pub fn observe(&mut self, value: f64) {
        let i = self.bounds.partition_point(|&b| b < value);
        self.counts[i] += 1;
        self.sum += value;
        self.count += 1;
    }

    /// `(le, cumulative count)` per bucket, ending with `(+Inf, count)`.
    pub fn cumulative(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        self.bounds
            .iter()
            .copied()
            .chain([f64::INFINITY])
            .zip(self.counts.iter().scan(0, |acc, &n| {
                *acc += n;
                Some(*acc)
            }))
    }
}

/// Requests counted by the middleware since the agent started; updated as each one finishes.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestTotals {
    pub requests: u64,
    pub errors: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Requests in flight while a collection ran, and a full collection.
    pub gc_overlap: u64,
    pub gc2_overlap: u64,
    /// Request durations, seconds ([`REQUEST_DURATION_BUCKETS`]).
    pub duration: Histogram,
}

impl Default for RequestTotals {
    fn default() -> Self {
        RequestTotals {
            requests: 0,
            errors: 0,
            bytes_in: 0,
            bytes_out: 0,
            gc_overlap: 0,
            gc2_overlap: 0,
            duration: Histogram::new(&REQUEST_DURATION_BUCKETS),
        }
    }
}

impl RequestTotals {
    pub fn record(
        &mut self,
        latency_ns: u64,
        bytes_in: u64,
        bytes_out: u64,
        error: bool,
        overlap: GcOverlap,
    ) {
        self.requests += 1;
        self.errors += u64::from(error);
        self.bytes_in += bytes_in;
        self.bytes_out += bytes_out;
        self.gc_overlap += u64::from(overlap.any);
        self.gc2_overlap += u64::from(overlap.full);
        self.duration.observe(latency_ns as f64 / 1e9);
    }
}

/// Monotonic totals since the agent started.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AgentTotals {
    pub requests: RequestTotals,
    pub gc: GcTotals,
    pub policy_actions: u64,
    pub samples: u64,
    /// A middleware reports requests: the request counters and gauges are measured.
    pub serves_requests: bool,
}

/// What a scrape reads at that moment besides the totals.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Live {
    pub pid: u32,
    /// The policy in force.
    pub policy: String,
    pub in_flight: i64,
    /// `gc.isenabled()`, `gc.get_count()`, `gc.get_threshold()` (None if they could not be read).
    pub gc_enabled: Option<bool>,
    pub gc_count: Option<[i64; 3]>,
    pub gc_threshold: Option<[u64; 3]>,
    /// The process' own figures under prometheus_client's `process_*` names; None where a
    /// registry's process collector reports them.
    pub process: Option<ProcessFigures>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProcessFigures {
    pub cpu_seconds: Option<f64>,
    pub resident_memory_bytes: Option<u64>,
}

struct Exposition {
    text: String,
    /// `pid="N"`, the first label of every series.
    pid: String,
}

impl Exposition {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.text, "# HELP {name} {help}");
        let _ = writeln!(self.text, "# TYPE {name} {kind}");
    }
    fn value(&mut self, name: &str, labels: &str, value: f64) {
        let sep = if labels.is_empty() { "" } else { "," };
        let _ = writeln!(
            self.text,
            "{name}{{{}{sep}{labels}}} {}",
            self.pid,
            number(value)
        );
    }
    fn single(&mut self, name: &str, kind: &str, help: &str, value: f64) {
        self.family(name, kind, help);
        self.value(name, "", value);
    }
    fn histogram(&mut self, name: &str, labels: &str, h: &Histogram) {
        let sep = if labels.is_empty() { "" } else { "," };
        for (le, n) in h.cumulative() {
            let le = if le.is_infinite() {
                "+Inf".to_string()
            } else {
                number(le)
            };
            self.value(
                &format!("{name}_bucket"),
                &format!("{labels}{sep}le=\"{le}\""),
                n as f64,
            );
        }
        self.value(&format!("{name}_sum"), labels, h.sum);
        self.value(&format!("{name}_count"), labels, h.count as f64);
    }
}

/// A sample value as Prometheus writes it (`+Inf`, `NaN`; integers without a fraction).
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Renders the exposition. What cannot be measured (request figures without a middleware, a
/// value `/proc` did not give) is left out, never reported as zero.
pub fn render(totals: &AgentTotals, live: &Live) -> String {
    let mut e = Exposition {
        text: String::new(),
        pid: format!("pid=\"{}\"", live.pid),
    };
    e.family("neurogc_info", "gauge", "The GC policy in force.");
    e.value(
        "neurogc_info",
        &format!("policy=\"{}\"", escape_label(&live.policy)),
        1.0,
    );
    if totals.serves_requests {
        let r = &totals.requests;
        e.family(
            "neurogc_request_duration_seconds",
            "histogram",
            "Time from a request's start to its response's end, as the middleware measures it.",
        );
        e.histogram("neurogc_request_duration_seconds", "", &r.duration);
        let counters = [
            ("neurogc_requests_total", "Requests completed.", r.requests),
            (
                "neurogc_request_errors_total",
                "Requests answered 5xx or raised.",
                r.errors,
            ),
            (
                "neurogc_requests_gc_overlap_total",
                "Requests in flight while a collection ran.",
                r.gc_overlap,
            ),
            (
                "neurogc_requests_gc2_overlap_total",
                "Requests in flight while a full (generation 2) collection ran.",
                r.gc2_overlap,
            ),
            (
                "neurogc_received_bytes_total",
                "HTTP bytes received.",
                r.bytes_in,
            ),
            ("neurogc_sent_bytes_total", "HTTP bytes sent.", r.bytes_out),
        ];
        for (name, help, value) in counters {
            e.single(name, "counter", help, value as f64);
        }
        e.single(
            "neurogc_in_flight_requests",
            "gauge",
            "Requests in progress.",
            live.in_flight.max(0) as f64,
        );
    }
    e.single(
        "neurogc_policy_actions_total",
        "counter",
        "Actions taken by the policy.",
        totals.policy_actions as f64,
    );
    e.single(
        "neurogc_samples_total",
        "counter",
        "Samples taken.",
        totals.samples as f64,
    );
    type Field = fn(&crate::sample::GenerationSample) -> u64;
    let per_gen: [(&str, &str, Field); 3] = [
        (
            "neurogc_gc_collections_total",
            "Collections finished, by generation.",
            |g| g.collections,
        ),
        (
            "neurogc_gc_collected_objects_total",
            "Unreachable objects collected, by generation.",
            |g| g.collected,
        ),
        (
            "neurogc_gc_uncollectable_objects_total",
            "Unreachable objects found uncollectable (gc.garbage), by generation.",
            |g| g.uncollectable,
        ),
    ];
    for (name, help, field) in per_gen {
        e.family(name, "counter", help);
        for (i, g) in totals.gc.generations.iter().enumerate() {
            e.value(name, &format!("generation=\"{i}\""), field(g) as f64);
        }
    }
    e.family(
        "neurogc_gc_pause_seconds",
        "histogram",
        "Collection pauses (gc.callbacks start to stop), by generation.",
    );
    for (i, h) in totals.gc.pauses.iter().enumerate() {
        e.histogram(
            "neurogc_gc_pause_seconds",
            &format!("generation=\"{i}\""),
            h,
        );
    }
    e.single(
        "neurogc_gc_policy_collections_total",
        "counter",
        "Collections requested by the policy.",
        totals.gc.policy_collections as f64,
    );
    e.single(
        "neurogc_gc_events_dropped_total",
        "counter",
        "Collections missing from the GC events CSV (an interval's event cap was hit).",
        totals.gc.events_dropped as f64,
    );
    if let Some(enabled) = live.gc_enabled {
        e.single(
            "neurogc_gc_enabled",
            "gauge",
            "1 if automatic collection is on.",
            f64::from(u8::from(enabled)),
        );
    }
    if let Some(count) = live.gc_count {
        e.family(
            "neurogc_gc_count",
            "gauge",
            "gc.get_count(), by generation.",
        );
        for (i, c) in count.iter().enumerate() {
            e.value(
                "neurogc_gc_count",
                &format!("generation=\"{i}\""),
                *c as f64,
            );
        }
    }
    if let Some(threshold) = live.gc_threshold {
        e.family(
            "neurogc_gc_threshold",
            "gauge",
            "gc.get_threshold(), by generation.",
        );
        for (i, t) in threshold.iter().enumerate() {
            e.value(
                "neurogc_gc_threshold",
                &format!("generation=\"{i}\""),
                *t as f64,
            );
        }
    }
    if let Some(p) = live.process {
        if let Some(cpu) = p.cpu_seconds {
            e.single(
                "process_cpu_seconds_total",
                "counter",
                "Total user and system CPU time spent in seconds.",
                cpu,
            );
        }
        if let Some(rss) = p.resident_memory_bytes {
            e.single(
                "process_resident_memory_bytes",
                "gauge",
                "Resident memory size in bytes.",
                rss as f64,
            );
        }
    }
    e.text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live() -> Live {
        Live {
            pid: 42,
            policy: "threshold:\"x\"".into(),
            in_flight: 3,
            gc_enabled: Some(true),
            gc_count: Some([5, 1, 0]),
            gc_threshold: Some([700, 10, 10]),
            process: Some(ProcessFigures {
                cpu_seconds: Some(1.5),
                resident_memory_bytes: Some(1 << 20),
            }),
        }
    }

    #[test]
    fn histogram_buckets_are_cumulative_with_le_inclusive() {
        let mut h = Histogram::new(&[0.1, 1.0]);
        for v in [0.05, 0.1, 0.5, 2.0] {
            h.observe(v);
        }
        let buckets: Vec<_> = h.cumulative().collect();
        assert_eq!(buckets, [(0.1, 2), (1.0, 3), (f64::INFINITY, 4)]);
        assert_eq!(h.count, 4);
        assert!((h.sum - 2.65).abs() < 1e-12);
    }

    #[test]
    fn exposition_is_well_formed() {
        let mut totals = AgentTotals {
            serves_requests: true,
            ..Default::default()
        };
        let full = GcOverlap {
            any: true,
            full: true,
        };
        totals.requests.record(3_000_000, 10, 20, false, full);
        totals
            .requests
            .record(20_000_000_000, 10, 20, true, GcOverlap::default());
        totals.gc.generations[2].collections = 3;
        totals.gc.generations[2].uncollectable = 1;
        totals.gc.pauses[2].observe(0.002);
        let text = render(&totals, &live());
        for expected in [
            "neurogc_requests_total{pid=\"42\"} 2\n",
            "neurogc_request_errors_total{pid=\"42\"} 1\n",
            "neurogc_requests_gc_overlap_total{pid=\"42\"} 1\n",
            "neurogc_requests_gc2_overlap_total{pid=\"42\"} 1\n",
            "neurogc_request_duration_seconds_bucket{pid=\"42\",le=\"0.0025\"} 0\n",
            "neurogc_request_duration_seconds_bucket{pid=\"42\",le=\"0.005\"} 1\n",
            "neurogc_request_duration_seconds_bucket{pid=\"42\",le=\"10\"} 1\n",
            "neurogc_request_duration_seconds_bucket{pid=\"42\",le=\"+Inf\"} 2\n",
            "neurogc_request_duration_seconds_sum{pid=\"42\"} 20.003\n",
            "neurogc_request_duration_seconds_count{pid=\"42\"} 2\n",
            "neurogc_in_flight_requests{pid=\"42\"} 3\n",
            "neurogc_gc_events_dropped_total{pid=\"42\"} 0\n",
            "neurogc_gc_collections_total{pid=\"42\",generation=\"2\"} 3\n",
            "neurogc_gc_uncollectable_objects_total{pid=\"42\",generation=\"2\"} 1\n",
            "neurogc_gc_pause_seconds_bucket{pid=\"42\",generation=\"2\",le=\"0.0025\"} 1\n",
            "neurogc_gc_pause_seconds_count{pid=\"42\",generation=\"0\"} 0\n",
            "neurogc_info{pid=\"42\",policy=\"threshold:\\\"x\\\"\"} 1\n",
            "neurogc_gc_threshold{pid=\"42\",generation=\"0\"} 700\n",
            "process_resident_memory_bytes{pid=\"42\"} 1048576\n",
            "process_cpu_seconds_total{pid=\"42\"} 1.5\n",
        ] {
            assert!(text.contains(expected), "{expected:?} not in:\n{text}");
        }
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (_, value) = line.rsplit_once(' ').unwrap();
            value
                .parse::<f64>()
                .unwrap_or_else(|_| panic!("bad value in {line:?}"));
        }
        // Every family is declared once, before its samples.
        let mut declared = std::collections::HashSet::new();
        for line in text.lines().filter(|l| l.starts_with("# TYPE ")) {
            let name = line.split(' ').nth(2).unwrap();
            assert!(declared.insert(name.to_string()), "{name} declared twice");
        }
    }

    #[test]
    fn without_a_middleware_request_figures_are_absent_not_zero() {
        let text = render(&AgentTotals::default(), &live());
        for name in [
            "requests_total",
            "request_errors_total",
            "requests_gc_overlap_total",
            "received_bytes_total",
            "sent_bytes_total",
            "in_flight_requests",
            "request_duration_seconds",
        ] {
            assert!(
                !text.contains(&format!("neurogc_{name}")),
                "{name} in:\n{text}"
            );
        }
        // What the agent measures without one stays.
        assert!(text.contains("neurogc_gc_collections_total{pid=\"42\",generation=\"0\"} 0\n"));
    }

    #[test]
    fn a_registry_gets_no_process_figures_and_unread_gc_state_is_left_out() {
        let live = Live {
            process: None,
            gc_enabled: None,
            gc_count: None,
            gc_threshold: None,
            ..live()
        };
        let text = render(&AgentTotals::default(), &live);
        for name in [
            "process_",
            "neurogc_gc_enabled",
            "neurogc_gc_count{",
            "neurogc_gc_threshold",
        ] {
            assert!(!text.contains(name), "{name} in:\n{text}");
        }
    }
}
