//! What the scheduler knows of the service's traffic between samples: request arrivals, kept in
//! a lock-free ring the middleware writes (one atomic add and one store per request), and read
//! back without the interpreter to estimate the chance of a quiet window.
//!
//! A quiet window is a stretch with nothing in flight and no arrival: a collection that fits in
//! one delays no one. Its probability is estimated from the recent inter-arrival gaps: having
//! seen `s` of silence, the chance that it lasts another `d` is `S(s + d) / S(s)`, with `S` the
//! empirical survival function of the gaps. Poisson traffic has no memory (a long silence means
//! nothing); bursty traffic does (a silence longer than the gaps inside a burst means the burst
//! is over), and the empirical `S` sees both without assuming either.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Arrivals remembered.
pub const RING: usize = 1024;

/// The most recent arrival times (ns on the agent's clock), written by request starts.
#[derive(Debug)]
pub struct ArrivalRing {
    next: AtomicU64,
    times: [AtomicU64; RING],
}

impl Default for ArrivalRing {
    fn default() -> Self {
        ArrivalRing {
            next: AtomicU64::new(0),
            times: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

impl ArrivalRing {
    /// Records an arrival at `now_ns` (monotonic, since the agent started; never 0).
    pub fn record(&self, now_ns: u64) {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        self.times[(i % RING as u64) as usize].store(now_ns.max(1), Ordering::Relaxed);
    }

    /// Arrivals recorded so far.
    pub fn count(&self) -> u64 {
        self.next.load(Ordering::Relaxed)
    }

    /// The remembered arrival times, oldest first (a concurrent write may leave one slot out of
    /// order: it is dropped).
    pub fn snapshot(&self) -> Vec<u64> {
        let n = self.next.load(Ordering::Relaxed);
        let start = n.saturating_sub(RING as u64);
        let mut out: Vec<u64> = (start..n)
            .map(|i| self.times[(i % RING as u64) as usize].load(Ordering::Relaxed))
            .filter(|&t| t > 0)
            .collect();
        let mut last = 0;
        out.retain(|&t| {
            let keep = t >= last;
            last = last.max(t);
            keep
        });
        out
    }
}

/// Arrivals the current rate is measured over.
pub const RATE_ARRIVALS: usize = 64;

/// The traffic as a decision sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Traffic<'a> {
    /// Requests in flight now (the middleware's count).
    pub in_flight: i64,
    /// Now, on the arrivals' clock (ns since the agent started).
    pub now_ns: u64,
    /// Recent arrival times, oldest first.
    pub arrivals: &'a [u64],
    /// Arrivals since the agent started.
    pub total: u64,
}

impl Traffic<'_> {
    /// Time since the last arrival (None before any).
    pub fn silence(&self) -> Option<Duration> {
        self.arrivals
            .last()
            .map(|&t| Duration::from_nanos(self.now_ns.saturating_sub(t)))
    }

    /// Arrivals per second now: over the most recent [`RATE_ARRIVALS`] arrivals up to now (0
    /// with fewer than two). Recent, so an idle or stopped stretch long ago does not dilute it.
    pub fn rate(&self) -> f64 {
        let recent = &self.arrivals[self.arrivals.len().saturating_sub(RATE_ARRIVALS)..];
        match (recent.first(), recent.last()) {
            (Some(&a), Some(&b)) if recent.len() > 1 => {
                let span = self.now_ns.max(b).saturating_sub(a) as f64 / 1e9;
                (recent.len() - 1) as f64 / span.max(1e-9)
            }
            _ => 0.0,
        }
    }

    /// The chance that nothing arrives in the next `pause` (and nothing is in flight now): the
    /// empirical survival of the recent gaps, conditioned on the silence so far, with one gap
    /// as long as the whole history added so an unseen long gap is never impossible. Without
    /// history (fewer than 8 gaps) it is the Poisson estimate at the recent rate.
    pub fn quiet_chance(&self, pause: Duration) -> f64 {
        if self.in_flight > 0 {
            return 0.0;
        }
        let Some(silence) = self.silence() else {
            return 1.0;
        };
        let gaps: Vec<u64> = self.arrivals.windows(2).map(|w| w[1] - w[0]).collect();
        let (s, d) = (silence.as_nanos() as u64, pause.as_nanos() as u64);
        if gaps.len() < 8 {
            let rate = self.rate();
            return (-rate * pause.as_secs_f64()).exp();
        }
        let span = self.now_ns.saturating_sub(self.arrivals[0]);
        // Survival counts, plus the pseudo-gap of the whole span (longer than any seen).
        let survive = |x: u64| gaps.iter().filter(|&&g| g > x).count() as f64 + f64::from(span > x);
        let alive = survive(s);
        if alive == 0.0 {
            return 0.0;
        }
        (survive(s + d) / alive).clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn the_ring_keeps_the_most_recent_in_order() {
        let r = ArrivalRing::default();
        for i in 1..=(RING as u64 + 10) {
            r.record(i * MS);
        }
        let s = r.snapshot();
        assert_eq!(s.len(), RING);
        assert_eq!(*s.first().unwrap(), 11 * MS);
        assert_eq!(*s.last().unwrap(), (RING as u64 + 10) * MS);
        assert!(s.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(r.count(), RING as u64 + 10);
    }

    #[test]
    fn poisson_like_traffic_has_no_memory_and_bursts_do() {
        // Steady arrivals every 5 ms: after 4 ms of silence, a 2 ms quiet window is unlikely.
        let steady: Vec<u64> = (0..200).map(|i| i * 5 * MS).collect();
        let t = Traffic {
            in_flight: 0,
            now_ns: 995 * MS + 4 * MS,
            arrivals: &steady,
            total: 0,
        };
        assert!(
            t.quiet_chance(Duration::from_millis(2)) < 0.1,
            "{}",
            t.quiet_chance(Duration::from_millis(2))
        );
        // 63 gaps over the last 64 arrivals and the 4 ms since.
        assert!((t.rate() - 200.0).abs() < 3.0, "{}", t.rate());
        // A stretch without arrivals long ago (a stopped or idle service) does not dilute it.
        let mut resumed: Vec<u64> = (0..100).map(|i| i * 5 * MS).collect();
        resumed.extend((0..100).map(|i| 60_000 * MS + i * 5 * MS));
        let r = Traffic {
            now_ns: 60_000 * MS + 500 * MS,
            arrivals: &resumed,
            ..t
        };
        assert!((r.rate() - 200.0).abs() < 4.0, "{}", r.rate());
        // Bursts of 20 arrivals 2 ms apart, then 500 ms of silence: after 20 ms of silence the
        // burst is over, and a 50 ms window is very likely quiet.
        let mut bursty = Vec::new();
        for b in 0..20u64 {
            for i in 0..20u64 {
                bursty.push(b * 540 * MS + i * 2 * MS);
            }
        }
        let last = *bursty.last().unwrap();
        let in_burst = Traffic {
            in_flight: 0,
            now_ns: last + MS,
            arrivals: &bursty,
            total: 0,
        };
        let after = Traffic {
            in_flight: 0,
            now_ns: last + 20 * MS,
            arrivals: &bursty,
            total: 0,
        };
        let d = Duration::from_millis(50);
        assert!(
            in_burst.quiet_chance(d) < 0.1,
            "{}",
            in_burst.quiet_chance(d)
        );
        assert!(after.quiet_chance(d) > 0.85, "{}", after.quiet_chance(d));
        // Anything in flight: no quiet window.
        let busy = Traffic {
            in_flight: 1,
            ..after
        };
        assert_eq!(busy.quiet_chance(d), 0.0);
    }

    #[test]
    fn no_history_is_poisson_and_no_traffic_is_quiet() {
        let none = Traffic::default();
        assert_eq!(none.quiet_chance(Duration::from_millis(100)), 1.0);
        let few = [0, 100 * MS, 200 * MS];
        let t = Traffic {
            in_flight: 0,
            now_ns: 250 * MS,
            arrivals: &few,
            total: 0,
        };
        let p = t.quiet_chance(Duration::from_millis(100));
        assert!((p - (-0.8f64).exp()).abs() < 0.01, "{p}");
    }
}
