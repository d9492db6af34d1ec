//! Prometheus text exposition (format 0.0.4) of the agent's counters and latest gauges.
//! Hand-written: a few dozen lines do not justify a metrics framework inside users' services.

use std::fmt::Write;

use crate::gcstats::GcTotals;
use crate::sample::Sample;

/// Monotonic totals since the agent started.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AgentTotals {
    pub requests: u64,
    pub errors: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub gc: GcTotals,
    pub policy_actions: u64,
    pub samples: u64,
    /// Requests in flight while a collection ran, and a full collection.
    pub requests_gc_overlap: u64,
    pub requests_gc2_overlap: u64,
    /// A middleware reports requests: the request counters and gauges are measured.
    pub serves_requests: bool,
}

struct Exposition(String);

impl Exposition {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP neurogc_{name} {help}");
        let _ = writeln!(self.0, "# TYPE neurogc_{name} {kind}");
    }
    fn value(&mut self, name: &str, labels: &str, value: f64) {
        if labels.is_empty() {
            let _ = writeln!(self.0, "neurogc_{name} {value}");
        } else {
            let _ = writeln!(self.0, "neurogc_{name}{{{labels}}} {value}");
        }
    }
    fn single(&mut self, name: &str, kind: &str, help: &str, value: f64) {
        self.family(name, kind, help);
        self.value(name, "", value);
    }
}

fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Renders the exposition. Gauges from the latest sample are omitted until one exists, and
/// unmeasurable ones are omitted rather than reported as zero.
pub fn render(totals: &AgentTotals, latest: Option<&Sample>, policy: &str) -> String {
    let mut e = Exposition(String::new());
    e.family("info", "gauge", "The policy in force.");
    e.value("info", &format!("policy=\"{}\"", escape_label(policy)), 1.0);
    // Request counters only where a middleware counts requests: elsewhere they are unmeasured,
    // not zero.
    if totals.serves_requests {
        e.single(
            "requests_total",
            "counter",
            "Requests completed.",
            totals.requests as f64,
        );
        e.single(
            "request_errors_total",
            "counter",
            "Requests answered 5xx or raised.",
            totals.errors as f64,
        );
        e.single(
            "requests_gc_overlap_total",
            "counter",
            "Requests in flight while a collection ran.",
            totals.requests_gc_overlap as f64,
        );
        e.single(
            "requests_gc2_overlap_total",
            "counter",
            "Requests in flight while a full (generation 2) collection ran.",
            totals.requests_gc2_overlap as f64,
        );
        e.single(
            "received_bytes_total",
            "counter",
            "HTTP bytes received.",
            totals.bytes_in as f64,
        );
        e.single(
            "sent_bytes_total",
            "counter",
            "HTTP bytes sent.",
            totals.bytes_out as f64,
        );
    }
    e.single(
        "policy_actions_total",
        "counter",
        "Actions taken by the policy.",
        totals.policy_actions as f64,
    );
    e.single(
        "samples_total",
        "counter",
        "Samples taken.",
        totals.samples as f64,
    );
    type Field = fn(&crate::sample::GenerationSample) -> f64;
    let per_gen: [(&str, &str, &str, Field); 4] = [
        (
            "gc_collections_total",
            "counter",
            "Collections finished, by generation.",
            |g| g.collections as f64,
        ),
        (
            "gc_collected_objects_total",
            "counter",
            "Objects collected, by generation.",
            |g| g.collected as f64,
        ),
        (
            "gc_pause_seconds_total",
            "counter",
            "Time spent in collections, by generation.",
            |g| g.pause_ms_sum / 1e3,
        ),
        (
            "gc_pause_max_seconds",
            "gauge",
            "Longest collection since start, by generation.",
            |g| g.pause_ms_max / 1e3,
        ),
    ];
    for (name, kind, help, field) in per_gen {
        e.family(name, kind, help);
        for (i, g) in totals.gc.generations.iter().enumerate() {
            e.value(name, &format!("generation=\"{i}\""), field(g));
        }
    }
    e.single(
        "gc_policy_collections_total",
        "counter",
        "Collections requested by the policy.",
        totals.gc.policy_collections as f64,
    );
    e.single(
        "gc_events_dropped_total",
        "counter",
        "Collections missing from the GC events CSV (an interval's event cap was hit).",
        totals.gc.events_dropped as f64,
    );
    if let Some(s) = latest {
        if let Some(rss) = s.rss_bytes {
            e.single("rss_bytes", "gauge", "Resident set size.", rss as f64);
        }
        if let Some(cpu) = s.cpu {
            e.single(
                "cpu_percent",
                "gauge",
                "CPU use over the last interval, % of one core.",
                cpu,
            );
        }
        if totals.serves_requests {
            e.single(
                "in_flight_requests",
                "gauge",
                "Requests in progress.",
                s.in_flight as f64,
            );
        }
        e.single(
            "gc_enabled",
            "gauge",
            "1 if automatic collection is on.",
            f64::from(u8::from(s.gc_enabled)),
        );
        e.family("gc_count", "gauge", "gc.get_count(), by generation.");
        for (i, c) in s.gc_count.iter().enumerate() {
            e.value("gc_count", &format!("generation=\"{i}\""), *c as f64);
        }
        e.family(
            "latency_ms",
            "gauge",
            "Request latency percentiles over the last interval.",
        );
        // Unmeasured quantiles (no request finished in the interval) are left out.
        for (q, v) in [("0.5", s.p50), ("0.95", s.p95), ("0.99", s.p99)] {
            if let Some(v) = v {
                e.value("latency_ms", &format!("quantile=\"{q}\""), v);
            }
        }
    }
    e.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_is_well_formed() {
        let mut totals = AgentTotals {
            requests: 12,
            requests_gc_overlap: 5,
            requests_gc2_overlap: 2,
            serves_requests: true,
            ..Default::default()
        };
        totals.gc.generations[2].collections = 3;
        let sample = Sample {
            rss_bytes: Some(1 << 20),
            cpu: None,
            ..Default::default()
        };
        let text = render(&totals, Some(&sample), "threshold:\"x\"");
        assert!(text.contains("neurogc_requests_total 12\n"));
        assert!(text.contains("neurogc_requests_gc_overlap_total 5\n"));
        assert!(text.contains("neurogc_requests_gc2_overlap_total 2\n"));
        assert!(text.contains("neurogc_gc_events_dropped_total 0\n"));
        assert!(text.contains("neurogc_gc_collections_total{generation=\"2\"} 3\n"));
        assert!(text.contains("neurogc_info{policy=\"threshold:\\\"x\\\"\"} 1\n"));
        assert!(text.contains("neurogc_rss_bytes 1048576\n"));
        assert!(
            !text.contains("cpu_percent"),
            "unmeasured gauges are omitted"
        );
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (_, value) = line.rsplit_once(' ').unwrap();
            value
                .parse::<f64>()
                .unwrap_or_else(|_| panic!("bad value in {line:?}"));
        }
    }

    #[test]
    fn without_a_middleware_request_counters_are_absent_not_zero() {
        let totals = AgentTotals::default();
        let text = render(&totals, Some(&Sample::default()), "default");
        for name in [
            "requests_total",
            "request_errors_total",
            "requests_gc_overlap_total",
            "received_bytes_total",
            "sent_bytes_total",
            "in_flight_requests",
            "latency_ms{",
        ] {
            assert!(
                !text.contains(&format!("neurogc_{name}")),
                "{name} in:\n{text}"
            );
        }
        // What the agent measures without one stays.
        assert!(text.contains("neurogc_gc_collections_total{generation=\"0\"} 0\n"));
    }
}
