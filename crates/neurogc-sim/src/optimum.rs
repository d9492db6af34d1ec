//! The best schedule in hindsight ("optimal choice of when to GC", as an offline dynamic
//! programme over the whole trace): knowing every arrival, the collections are placed right
//! after requests end where they delay the fewest requests by more than a tolerance (those in
//! flight, and those arriving during the pause), with at most `max_gap` requests between two
//! collections (the memory the garbage may take: the default's own spacing), each pausing as the
//! pause model says for the requests since the one before. Its schedule is then replayed like
//! any policy's.
//!
//! The tolerance is there for the p99: counting every delayed request alike favours few long
//! pauses (each delays fewer requests, by more), which a tail percentile punishes; counting only
//! those delayed beyond what the tail allows favours pauses short enough to pass unseen. The
//! caller tries several and keeps the best replayed p99.

use crate::model::PauseFit;
use crate::replay::{replay, Collector};

/// `(collect after this many requests have ended, pause ms)`, ascending.
pub type Plan = Vec<(usize, f64)>;

struct Idle;
impl Collector for Idle {
    fn next_look(&self) -> Option<f64> {
        None
    }
}

/// The schedule that delays the fewest requests by more than `tolerance_ms`, collections at most
/// `max_gap` requests apart.
pub fn optimum(
    arrivals: &[f64],
    work: &[f64],
    fit: PauseFit,
    max_gap: usize,
    tolerance_ms: f64,
) -> Plan {
    // The edge below only moves on if a pause never shrinks with more requests since the last.
    debug_assert!(fit.b >= 0.0, "{fit:?}");
    let n = arrivals.len();
    let gap = max_gap.clamp(1, n.max(1));
    if n <= gap {
        return Vec::new(); // no collection needed within the trace
    }
    // Where each request ends with nothing collected (a single server in order: the j-th end is
    // request j's).
    let done = replay(arrivals, work, &mut Idle).done;
    // Requests delayed by more than the tolerance by a pause of `ms` right after request j ends
    // (when it is longer than the tolerance): those arrived and not yet ended, and those arriving
    // before its last `tolerance_ms` (the edge).
    let arrived_by = |t: f64| arrivals.partition_point(|&a| a <= t);
    // best[j + 1]: the fewest requests delayed beyond the tolerance with a collection right
    // after request j (best[0]: the trace's start, as if one had just run); from[j + 1] the
    // previous one.
    let mut best = vec![f64::INFINITY; n + 1];
    let mut from = vec![usize::MAX; n + 1];
    best[0] = 0.0;
    for (j, &end) in done.iter().enumerate() {
        let base = j + 1; // requests ended by then
        let mut reached = arrived_by(end);
        // k: the previous collection, after k requests (k = 0: the start).
        for k in (base.saturating_sub(gap)..base).rev() {
            if !best[k].is_finite() {
                continue;
            }
            // The pause grows with the requests since `k` (b ≥ 0): the edge only moves on.
            let ms = fit.pause_ms((base - k) as f64);
            let edge = end + (ms - tolerance_ms) / 1e3;
            while reached < n && arrivals[reached] < edge {
                reached += 1;
            }
            let delayed = if ms > tolerance_ms {
                reached.saturating_sub(base)
            } else {
                0
            };
            // A hair per collection: of two schedules that delay as many, the sparser.
            let cost = best[k] + delayed as f64 + 1e-6;
            if cost < best[base] {
                best[base] = cost;
                from[base] = k;
            }
        }
    }
    // The last collection leaves at most `gap` requests after it.
    let last = ((n - gap)..=n)
        .filter(|&e| e > 0)
        .min_by(|&x, &y| best[x].total_cmp(&best[y]))
        .expect("n > gap");
    let mut plan = Vec::new();
    let mut e = last;
    while e > 0 {
        let k = from[e];
        plan.push((e, fit.pause_ms((e - k) as f64)));
        e = k;
    }
    plan.reverse();
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policies::Schedule;

    #[test]
    fn collects_in_the_gaps_and_keeps_the_spacing() {
        // Bursts of 10 requests 5 ms apart, then 200 ms of silence; 1 ms of work each.
        let mut arrivals = Vec::new();
        for burst in 0..6 {
            for i in 0..10 {
                arrivals.push(burst as f64 * 0.25 + i as f64 * 0.005);
            }
        }
        let work = vec![0.001; arrivals.len()];
        let fit = PauseFit {
            a: 50.0,
            b: 0.0,
            points: 1,
        };
        let plan = optimum(&arrivals, &work, fit, 20, 0.0);
        // Every collection in a silence (after the 10th, 20th, ... request), none more than 20
        // requests apart, and the replayed schedule delays no request.
        assert!(!plan.is_empty());
        let mut prev = 0;
        for &(after, ms) in &plan {
            assert_eq!(after % 10, 0, "{plan:?}");
            assert!(after - prev <= 20, "{plan:?}");
            assert_eq!(ms, 50.0);
            prev = after;
        }
        assert!(arrivals.len() - prev <= 20);
        let out = replay(&arrivals, &work, &mut Schedule::new(plan));
        assert_eq!(out.met, 0);
        assert!(out.latency.iter().all(|&l| l < 0.0011), "{:?}", out.latency);
    }

    #[test]
    fn a_short_trace_needs_no_collection() {
        let arrivals = [0.0, 0.01, 0.02];
        let fit = PauseFit {
            a: 5.0,
            b: 0.0,
            points: 1,
        };
        assert!(optimum(&arrivals, &[0.001; 3], fit, 10, 0.0).is_empty());
    }

    #[test]
    fn a_tolerance_prefers_short_pauses_to_few_long_ones() {
        // A steady request every 2 ms (1 ms of work): every pause over 1 ms delays someone. A
        // pause costs 1 ms + 0.2 ms per request since the last. Counting every delayed request,
        // collecting rarely wins (few long pauses, each delaying fewer per request); not
        // counting those delayed by 5 ms or less, collecting every ~25 requests (pauses of ~6 ms,
        // 1 ms of it idle) delays no one beyond it.
        let arrivals: Vec<f64> = (0..1000).map(|i| i as f64 * 0.002).collect();
        let work = vec![0.001; arrivals.len()];
        let fit = PauseFit {
            a: 1.0,
            b: 0.2,
            points: 2,
        };
        let longest = |plan: &Plan| plan.iter().map(|p| p.1).fold(0.0, f64::max);
        let every = optimum(&arrivals, &work, fit, 200, 0.0);
        let tolerant = optimum(&arrivals, &work, fit, 200, 5.0);
        assert!(longest(&every) > 20.0, "{every:?}");
        // At most the tolerance and the 1 ms the server idles before the next arrival.
        assert!(longest(&tolerant) <= 6.0 + 1e-9, "{tolerant:?}");
        let max_latency = |plan: Plan| {
            let out = replay(&arrivals, &work, &mut Schedule::new(plan));
            out.latency.iter().copied().fold(0.0, f64::max)
        };
        assert!(max_latency(tolerant) < max_latency(every));
    }
}
