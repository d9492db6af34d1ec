//! The report's metrics: names, units, which way is better, where each comes from.

use std::fmt;

/// Which way a metric should move for a policy to be better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Lower,
    Higher,
    /// Set by the load, not by the policy (bytes on the wire): a change is reported, not judged.
    Neither,
}

/// Which table a metric belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// The seed's ten rows.
    Seed,
    /// Latency beyond the seed's two percentiles, failures.
    Latency,
    /// GC pauses, overlap with requests, GC's share of CPU.
    Gc,
    /// Memory.
    Memory,
}

macro_rules! metrics {
    ($($variant:ident => $key:literal, $label:literal, $unit:literal, $better:ident, $section:ident;)*) => {
        /// One per-trial number. Every metric is reduced to one value per trial, then to a
        /// median over the policy's trials.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Metric { $($variant),* }

        impl Metric {
            /// Every metric, in the order of the report's tables.
            pub const ALL: &'static [Metric] = &[$(Metric::$variant),*];

            /// The metric's key in noise-floor files and `--compare` output (`p99`, `rss_peak`).
            pub fn key(self) -> &'static str {
                match self { $(Metric::$variant => $key),* }
            }

            /// The row label (the seed's wording for the seed's rows).
            pub fn label(self) -> &'static str {
                match self { $(Metric::$variant => $label),* }
            }

            /// The unit of the row's values.
            pub fn unit(self) -> &'static str {
                match self { $(Metric::$variant => $unit),* }
            }

            pub fn better(self) -> Better {
                match self { $(Metric::$variant => Better::$better),* }
            }

            pub fn section(self) -> Section {
                match self { $(Metric::$variant => Section::$section),* }
            }
        }
    };
}

metrics! {
    Cpu => "cpu", "Avg CPU", "% of one core", Lower, Seed;
    Mem => "mem", "Avg Memory", "% of RAM", Lower, Seed;
    DiskRead => "disk_read", "Avg Disk Read", "B/s", Lower, Seed;
    DiskWrite => "disk_write", "Avg Disk Write", "B/s", Lower, Seed;
    NetSent => "net_sent", "Avg Net Sent", "B/s", Neither, Seed;
    NetRecv => "net_recv", "Avg Net Recv", "B/s", Neither, Seed;
    P95 => "p95", "P95", "ms", Lower, Seed;
    P99 => "p99", "P99", "ms", Lower, Seed;
    Rps => "rps", "Avg RPS", "req/s", Higher, Seed;
    GcEvents => "gc_events", "GC Events", "collections, all generations", Lower, Seed;
    P50 => "p50", "P50", "ms", Lower, Latency;
    P999 => "p999", "P99.9", "ms", Lower, Latency;
    Max => "max", "Max", "ms", Lower, Latency;
    Failures => "failures", "Failed requests", "requests", Lower, Latency;
    GcOverlap => "gc_overlap", "Requests overlapping a GC pause", "requests", Lower, Gc;
    Gc2Overlap => "gc2_overlap", "Requests overlapping a gen 2 pause", "requests", Lower, Gc;
    GcOverlapShare => "gc_overlap_share", "Share of requests overlapping a GC pause", "%", Lower, Gc;
    Gen0Count => "gc0_count", "Gen 0 collections", "collections", Lower, Gc;
    Gen0Total => "gc0_total_ms", "Gen 0 pause total", "ms", Lower, Gc;
    Gen0Max => "gc0_max_ms", "Gen 0 pause max", "ms", Lower, Gc;
    Gen1Count => "gc1_count", "Gen 1 collections", "collections", Lower, Gc;
    Gen1Total => "gc1_total_ms", "Gen 1 pause total", "ms", Lower, Gc;
    Gen1Max => "gc1_max_ms", "Gen 1 pause max", "ms", Lower, Gc;
    Gen2Count => "gc2_count", "Gen 2 collections", "collections", Lower, Gc;
    Gen2Total => "gc2_total_ms", "Gen 2 pause total", "ms", Lower, Gc;
    Gen2Max => "gc2_max_ms", "Gen 2 pause max", "ms", Lower, Gc;
    GcTotal => "gc_total_ms", "GC pause total", "ms, all generations", Lower, Gc;
    GcCpuShare => "gc_cpu_share", "GC share of CPU time", "% of process CPU time", Lower, Gc;
    CpuPerRequest => "cpu_per_request", "CPU per request", "ms of process CPU", Lower, Gc;
    RssPeak => "rss_peak", "Peak RSS", "MiB", Lower, Memory;
    RssMean => "rss_mean", "Mean RSS", "MiB", Lower, Memory;
}

impl Metric {
    /// The metric with this key.
    pub fn from_key(key: &str) -> Option<Metric> {
        Metric::ALL.iter().copied().find(|m| m.key() == key)
    }

    /// Per generation: (collections, pause total, pause max).
    pub fn generation(g: usize) -> (Metric, Metric, Metric) {
        match g {
            0 => (Metric::Gen0Count, Metric::Gen0Total, Metric::Gen0Max),
            1 => (Metric::Gen1Count, Metric::Gen1Total, Metric::Gen1Max),
            _ => (Metric::Gen2Count, Metric::Gen2Total, Metric::Gen2Max),
        }
    }

    /// The short name used in summary sentences (`p99`, `peak RSS`).
    pub fn short(self) -> &'static str {
        match self {
            Metric::P50 => "p50",
            Metric::P95 => "p95",
            Metric::P99 => "p99",
            Metric::P999 => "p99.9",
            Metric::Max => "max latency",
            Metric::Rps => "RPS",
            Metric::Cpu => "CPU",
            Metric::Mem => "memory",
            Metric::GcEvents => "GC events",
            Metric::Gen2Count => "gen 2 collections",
            Metric::GcTotal => "GC pause total",
            Metric::GcCpuShare => "GC share of CPU",
            Metric::CpuPerRequest => "CPU per request",
            Metric::GcOverlap => "requests overlapping GC",
            Metric::RssPeak => "peak RSS",
            Metric::RssMean => "mean RSS",
            other => other.key(),
        }
    }

    /// Whether the metric counts events (printed without decimals when whole).
    pub fn is_count(self) -> bool {
        matches!(
            self,
            Metric::GcEvents
                | Metric::Failures
                | Metric::GcOverlap
                | Metric::Gc2Overlap
                | Metric::Gen0Count
                | Metric::Gen1Count
                | Metric::Gen2Count
        )
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// The metrics of the hyperfine-style summary lines, in order.
pub const SUMMARY_METRICS: &[Metric] = &[
    Metric::P99,
    Metric::P95,
    Metric::P50,
    Metric::Rps,
    Metric::RssPeak,
    Metric::GcEvents,
    Metric::GcCpuShare,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_and_round_trip() {
        for m in Metric::ALL {
            assert_eq!(Metric::from_key(m.key()), Some(*m));
        }
        let mut keys: Vec<_> = Metric::ALL.iter().map(|m| m.key()).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), Metric::ALL.len());
        assert_eq!(
            Metric::ALL
                .iter()
                .filter(|m| m.section() == Section::Seed)
                .count(),
            10
        );
    }
}
