//! The sample: one row per interval.
//!
//! Column order is a contract: the seed's eleven columns come first, unchanged, so its datasets and
//! ours share one loader; our extended columns follow. Values that could not be measured (an
//! unreadable `/proc` file, say) are empty in CSV and `null` in JSON, never a made-up zero.

pub mod read;

use neurogc_model::{FEATURES, N_FEATURES};

use crate::gcstats::GENERATIONS;

/// The seed's columns, in the seed's order: `time`, then the model features.
pub const SEED_COLUMNS: [&str; 1 + N_FEATURES] = {
    let mut columns = ["time"; 1 + N_FEATURES];
    let mut i = 0;
    while i < N_FEATURES {
        columns[i + 1] = FEATURES[i];
        i += 1;
    }
    columns
};

/// Per-generation statistics of one interval.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GenerationSample {
    pub collections: u64,
    pub collected: u64,
    pub uncollectable: u64,
    pub pause_ms_sum: f64,
    pub pause_ms_max: f64,
}

/// One interval's measurements. `Option` marks what may be unmeasurable.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sample {
    /// Unix time (seconds) at the end of the interval.
    pub time: f64,
    /// This process's CPU use over the interval, % of one core.
    pub cpu: Option<f64>,
    /// This process's RSS as % of the machine's memory.
    pub mem: Option<f64>,
    /// Storage bytes/s read and written by this process (`/proc/<pid>/io`).
    pub disk_read: Option<f64>,
    pub disk_write: Option<f64>,
    /// HTTP bytes/s out of and into this service, counted by the middleware (`None` without
    /// one: a process that serves no requests through NeuroGC has no such measurement).
    pub net_sent: Option<f64>,
    pub net_recv: Option<f64>,
    /// Requests completed per second over the interval (`None` without a middleware).
    pub rps: Option<f64>,
    /// Latency percentiles (ms) of the interval's requests; `None` when none completed.
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    /// Any collection (of any generation, by anyone) ran in the interval.
    pub gc_triggered: bool,

    /// Length of the interval actually measured, seconds.
    pub interval_s: f64,
    pub pid: u32,
    pub rss_bytes: Option<u64>,
    /// Requests finished in the interval (`None` without a middleware).
    pub requests: Option<u64>,
    /// Requests answered with a 5xx status or that raised (`None` without a middleware).
    pub errors: Option<u64>,
    pub in_flight: i64,
    pub p50: Option<f64>,
    pub max_latency: Option<f64>,
    pub gc: [GenerationSample; GENERATIONS],
    /// `gc.get_count()` at the end of the interval.
    pub gc_count: [i64; GENERATIONS],
    /// Whether automatic collection was enabled at the end of the interval.
    pub gc_enabled: bool,
    /// The policy spec in force.
    pub policy: String,
    /// How many actions the policy took in the interval, and the last one with its reason.
    pub policy_actions: u64,
    pub policy_action: String,
    pub policy_reason: String,
    /// A model-driven policy's output at this sample (empty for other policies, or while its
    /// window fills) and whether it collected because of it.
    pub model_output: Option<f64>,
    pub model_fired: bool,
    /// Requests finished in the interval that were in flight while any collection ran, and while
    /// a full (oldest-generation) collection ran.
    pub requests_gc_overlap: u64,
    pub requests_gc2_overlap: u64,
}

/// One value of a row, typed so CSV and JSON can each render it their way.
#[derive(Clone, Debug, PartialEq)]
pub enum Value<'a> {
    Float(Option<f64>),
    Int(Option<i64>),
    Bool(bool),
    Text(&'a str),
}

impl Value<'_> {
    /// CSV text: empty for unmeasured values, `True`/`False` as the seed wrote booleans.
    pub fn to_csv(&self) -> String {
        match self {
            Value::Float(Some(v)) => format_float(*v),
            Value::Int(Some(v)) => v.to_string(),
            Value::Float(None) | Value::Int(None) => String::new(),
            Value::Bool(b) => if *b { "True" } else { "False" }.to_string(),
            Value::Text(s) => s.to_string(),
        }
    }
}

/// Shortest text that round-trips (Rust never writes an exponent here); non-finite is unmeasured.
fn format_float(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        String::new()
    }
}

fn opt_u64(v: Option<u64>) -> Option<i64> {
    v.map(|x| i64::try_from(x).unwrap_or(i64::MAX))
}

fn u(v: u64) -> Value<'static> {
    Value::Int(Some(i64::try_from(v).unwrap_or(i64::MAX)))
}

impl Sample {
    /// All column names in order: the seed's, then ours.
    pub fn columns() -> Vec<String> {
        let mut cols: Vec<String> = SEED_COLUMNS.iter().map(|c| c.to_string()).collect();
        for c in [
            "interval_s",
            "pid",
            "rss_bytes",
            "requests",
            "errors",
            "in_flight",
            "p50",
            "max_latency",
        ] {
            cols.push(c.to_string());
        }
        for g in 0..GENERATIONS {
            for field in [
                "collections",
                "collected",
                "uncollectable",
                "pause_ms_sum",
                "pause_ms_max",
            ] {
                cols.push(format!("gc{g}_{field}"));
            }
        }
        for g in 0..GENERATIONS {
            cols.push(format!("gc_count{g}"));
        }
        for c in [
            "gc_enabled",
            "policy",
            "policy_actions",
            "policy_action",
            "policy_reason",
            "model_output",
            "model_fired",
            "requests_gc_overlap",
            "requests_gc2_overlap",
        ] {
            cols.push(c.to_string());
        }
        cols
    }

    /// The row's values, in [`Sample::columns`] order.
    pub fn values(&self) -> Vec<Value<'_>> {
        let mut v = vec![
            Value::Float(Some(self.time)),
            Value::Float(self.cpu),
            Value::Float(self.mem),
            Value::Float(self.disk_read),
            Value::Float(self.disk_write),
            Value::Float(self.net_sent),
            Value::Float(self.net_recv),
            Value::Float(self.rps),
            Value::Float(self.p95),
            Value::Float(self.p99),
            Value::Bool(self.gc_triggered),
            Value::Float(Some(self.interval_s)),
            Value::Int(Some(i64::from(self.pid))),
            Value::Int(opt_u64(self.rss_bytes)),
            Value::Int(opt_u64(self.requests)),
            Value::Int(opt_u64(self.errors)),
            Value::Int(Some(self.in_flight)),
            Value::Float(self.p50),
            Value::Float(self.max_latency),
        ];
        for g in &self.gc {
            v.push(u(g.collections));
            v.push(u(g.collected));
            v.push(u(g.uncollectable));
            v.push(Value::Float(Some(g.pause_ms_sum)));
            v.push(Value::Float(Some(g.pause_ms_max)));
        }
        for c in self.gc_count {
            v.push(Value::Int(Some(c)));
        }
        v.push(Value::Bool(self.gc_enabled));
        v.push(Value::Text(&self.policy));
        v.push(u(self.policy_actions));
        v.push(Value::Text(&self.policy_action));
        v.push(Value::Text(&self.policy_reason));
        v.push(Value::Float(self.model_output));
        v.push(Value::Bool(self.model_fired));
        v.push(u(self.requests_gc_overlap));
        v.push(u(self.requests_gc2_overlap));
        v
    }

    /// Column names paired with values.
    pub fn fields(&self) -> Vec<(String, Value<'_>)> {
        Self::columns().into_iter().zip(self.values()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_columns_come_first_and_in_order() {
        assert_eq!(
            SEED_COLUMNS,
            [
                "time",
                "cpu",
                "mem",
                "disk_read",
                "disk_write",
                "net_sent",
                "net_recv",
                "rps",
                "p95",
                "p99",
                "gc_triggered"
            ]
        );
        let cols = Sample::columns();
        assert_eq!(&cols[..11], &SEED_COLUMNS.map(String::from)[..]);
        assert_eq!(cols.len(), Sample::default().values().len());
        // Extended columns are appended, never inserted.
        assert_eq!(
            &cols[cols.len() - 4..],
            [
                "model_output",
                "model_fired",
                "requests_gc_overlap",
                "requests_gc2_overlap"
            ]
        );
    }

    #[test]
    fn unmeasured_values_are_empty_not_zero() {
        let s = Sample {
            cpu: None,
            gc_triggered: true,
            ..Sample::default()
        };
        let f = s.fields();
        assert_eq!(f[1].0, "cpu");
        assert_eq!(f[1].1.to_csv(), "");
        assert_eq!(f[10].1.to_csv(), "True");
    }

    #[test]
    fn floats_render_plainly() {
        assert_eq!(format_float(1.5), "1.5");
        assert_eq!(format_float(1e-9), "0.000000001");
        assert_eq!(format_float(f64::NAN), "");
    }
}
