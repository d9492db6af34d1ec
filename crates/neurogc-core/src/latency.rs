//! Request latencies of one interval in an HDR histogram: recording is O(1) and percentiles need no
//! sort (the seed sorted 10,000 buffered latencies on every snapshot, 2.1 ms each).

use hdrhistogram::Histogram;

use crate::overlap::GcOverlap;

/// Highest latency the histogram tracks exactly: one hour, in microseconds. Longer values saturate.
const MAX_TRACKED_US: u64 = 3_600_000_000;

/// Requests finished in one interval.
#[derive(Clone, Debug)]
pub struct RequestWindow {
    /// Counts of one interval fit in 32 bits (saturating past them); half the memory of 64.
    histogram: Histogram<u32>,
    pub requests: u64,
    pub errors: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Requests that were in flight while a collection ran, and a full collection.
    pub gc_overlap: u64,
    pub gc2_overlap: u64,
}

/// Percentiles (ms) of a window; `None` when no request finished in it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LatencySummary {
    pub count: u64,
    pub p50: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    pub p999: Option<f64>,
    pub max: Option<f64>,
}

impl Default for RequestWindow {
    fn default() -> Self {
        Self::new()
    }
}

impl RequestWindow {
    pub fn new() -> Self {
        RequestWindow {
            // Microseconds, 3 significant digits: 0.1 % precision across the whole range.
            histogram: Histogram::new_with_bounds(1, MAX_TRACKED_US, 3)
                .expect("static histogram bounds are valid"),
            requests: 0,
            errors: 0,
            bytes_in: 0,
            bytes_out: 0,
            gc_overlap: 0,
            gc2_overlap: 0,
        }
    }

    /// Empties the window for reuse, keeping its histogram's memory. An empty histogram is left
    /// alone: zeroing its 94 KB took 0.5-1 ms after the sampler's second of sleep here (a
    /// new one each interval took as long to allocate), most of an idle agent's CPU.
    pub fn clear(&mut self) {
        if !self.histogram.is_empty() {
            self.histogram.reset();
        }
        self.requests = 0;
        self.errors = 0;
        self.bytes_in = 0;
        self.bytes_out = 0;
        self.gc_overlap = 0;
        self.gc2_overlap = 0;
    }

    /// Records one finished request.
    pub fn record(
        &mut self,
        latency_ns: u64,
        bytes_in: u64,
        bytes_out: u64,
        error: bool,
        overlap: GcOverlap,
    ) {
        let us = (latency_ns / 1_000).clamp(1, MAX_TRACKED_US);
        self.histogram.saturating_record(us);
        self.requests += 1;
        self.errors += u64::from(error);
        self.bytes_in += bytes_in;
        self.bytes_out += bytes_out;
        self.gc_overlap += u64::from(overlap.any);
        self.gc2_overlap += u64::from(overlap.full);
    }

    pub fn summary(&self) -> LatencySummary {
        if self.histogram.is_empty() {
            return LatencySummary::default();
        }
        let ms = |q: f64| Some(self.histogram.value_at_quantile(q) as f64 / 1_000.0);
        LatencySummary {
            count: self.histogram.len(),
            p50: ms(0.50),
            p95: ms(0.95),
            p99: ms(0.99),
            p999: ms(0.999),
            max: Some(self.histogram.max() as f64 / 1_000.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_match_a_known_distribution() {
        let mut w = RequestWindow::new();
        // 1..=1000 ms, one request each.
        for ms in 1..=1000u64 {
            let overlap = GcOverlap {
                any: ms % 10 == 0,
                full: ms % 20 == 0,
            };
            w.record(ms * 1_000_000, 10, 20, ms % 100 == 0, overlap);
        }
        assert_eq!(
            RequestWindow::new().summary().p99,
            None,
            "no request, no latency"
        );
        let s = w.summary();
        assert_eq!(s.count, 1000);
        assert!((s.p50.unwrap() - 500.0).abs() <= 1.0, "{s:?}");
        assert!((s.p95.unwrap() - 950.0).abs() <= 1.0, "{s:?}");
        assert!((s.p99.unwrap() - 990.0).abs() <= 1.0, "{s:?}");
        assert!((s.max.unwrap() - 1000.0).abs() <= 1.0, "{s:?}");
        assert_eq!(w.errors, 10);
        assert_eq!(w.bytes_in, 10_000);
        assert_eq!(w.bytes_out, 20_000);
        assert_eq!((w.gc_overlap, w.gc2_overlap), (100, 50));
    }

    #[test]
    fn a_cleared_window_counts_from_zero() {
        let mut w = RequestWindow::new();
        w.record(
            900_000_000,
            1,
            2,
            true,
            GcOverlap {
                any: true,
                full: true,
            },
        );
        w.clear();
        assert_eq!(w.summary(), LatencySummary::default());
        assert_eq!(
            (w.requests, w.errors, w.bytes_in, w.gc_overlap),
            (0, 0, 0, 0)
        );
        w.record(3_000_000, 0, 0, false, GcOverlap::default());
        let s = w.summary();
        assert_eq!(s.count, 1, "{s:?}");
        assert!((s.max.unwrap() - 3.0).abs() <= 0.003, "{s:?}");
        w.clear();
        w.clear(); // empty: nothing to zero
        assert_eq!(w.summary(), LatencySummary::default());
    }

    #[test]
    fn empty_window_is_all_zero() {
        assert_eq!(RequestWindow::new().summary(), LatencySummary::default());
    }
}
