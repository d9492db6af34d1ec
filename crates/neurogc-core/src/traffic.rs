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

    /// The remembered arrival times, oldest first, into `out` (a concurrent write may leave one
    /// slot out of order: it is dropped). `out` is reused: the scheduler asks up to 100 times a
    /// second.
    pub fn snapshot_into(&self, out: &mut Vec<u64>) {
        let n = self.next.load(Ordering::Relaxed);
        let start = n.saturating_sub(RING as u64);
        out.clear();
        out.extend(
            (start..n)
                .map(|i| self.times[(i % RING as u64) as usize].load(Ordering::Relaxed))
                .filter(|&t| t > 0),
        );
        let mut last = 0;
        out.retain(|&t| {
            let keep = t >= last;
            last = last.max(t);
            keep
        });
    }
}

/// A tick that wakes this much past its deadline found the process stopped (SIGSTOP, a paused
/// VM, a starved core): its timed wait otherwise ends within a few ms of the deadline.
pub const STOP_GAP: Duration = Duration::from_millis(250);

/// Stretches the process was stopped, on the arrivals' clock. A stopped process sees no traffic,
/// and what queued meanwhile arrives when it resumes: a stop is not a quiet window. The arrival
/// times are closed over the stops ([`Stops::close_over`]) so that the silence, the gaps and the
/// rate are the running service's. (In the suite every server is stopped for a minute between
/// its turns; counted as silence, the first tick after each resume saw a window certain to be
/// quiet, collected into the arriving requests, and took it as evidence that quiet windows come.)
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stops {
    /// `(from, to)` ns, oldest first.
    stretches: std::collections::VecDeque<(u64, u64)>,
}

impl Stops {
    /// Stops remembered: the ring's arrivals span a few of them at most.
    const KEEP: usize = 8;

    /// Records that the process did not run from `from_ns` to `to_ns`.
    pub fn record(&mut self, from_ns: u64, to_ns: u64) {
        if to_ns <= from_ns {
            return;
        }
        if self.stretches.len() == Self::KEEP {
            self.stretches.pop_front();
        }
        self.stretches.push_back((from_ns, to_ns));
    }

    /// Moves the arrivals before each stop forward by the part of it that passed without one
    /// (an arrival recorded after the resume, before the tick noticed it, bounds that part), so
    /// they stay in order and the stop leaves no gap.
    pub fn close_over(&self, arrivals: &mut [u64]) {
        let shifts: Vec<(u64, u64)> = self
            .stretches
            .iter()
            .map(|&(from, to)| {
                let next = arrivals.iter().copied().find(|&t| t > from).unwrap_or(to);
                (from, next.min(to) - from)
            })
            .collect();
        for t in arrivals.iter_mut() {
            let shift: u64 = shifts
                .iter()
                .filter(|&&(from, _)| *t <= from)
                .map(|&(_, d)| d)
                .sum();
            *t += shift;
        }
    }
}

/// Arrivals the current rate is measured over.
pub const RATE_ARRIVALS: usize = 64;

/// A gap this many times the median gap or longer is an idle stretch between bursts, not
/// chance: in steady (Poisson) traffic a gap past 20 medians comes about once in a million.
pub const IDLE_GAP_MEDIANS: u64 = 20;

/// Bursts seen whole before the traffic counts as bursty: two idle gaps alone are as likely a
/// steady service stopped twice.
pub const MIN_BURSTS: usize = 2;

/// Traffic that comes in bursts with idle gaps between them ([`Traffic::bursts`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bursts {
    /// The longest burst remembered: the longest a wait for the next idle gap may take.
    pub longest: Duration,
    /// The silence that makes an idle gap: a silence shorter than it may be a gap inside a
    /// burst.
    pub idle_gap: Duration,
}

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

    /// Where the traffic comes in bursts with idle gaps between them: the longest burst
    /// remembered (the stretch between two idle gaps, each at least `min_gap` and
    /// [`IDLE_GAP_MEDIANS`] median gaps long), how long a wait for the next idle gap may take,
    /// and that idle gap's length. `None` for steady traffic, and unless the ring holds
    /// [`MIN_BURSTS`] bursts whole whose median ends `within` the wait allowed: steady traffic
    /// that stops now and then (a server paused between a benchmark's turns, a nightly lull)
    /// has idle gaps too, a stretch of many seconds apart, and waiting for the next of them
    /// only lets the pause grow.
    pub fn bursts(&self, min_gap: Duration, within: Duration) -> Option<Bursts> {
        let gaps: Vec<u64> = self.arrivals.windows(2).map(|w| w[1] - w[0]).collect();
        if gaps.len() < 8 {
            return None;
        }
        let mut sorted = gaps.clone();
        sorted.sort_unstable();
        let idle = (sorted[sorted.len() / 2] * IDLE_GAP_MEDIANS).max(min_gap.as_nanos() as u64);
        // Gap i runs from arrival i to arrival i + 1: a burst from the arrival after one idle
        // gap to the arrival that starts the next.
        let ends: Vec<usize> = (0..gaps.len()).filter(|&i| gaps[i] >= idle).collect();
        let mut bursts: Vec<u64> = ends
            .windows(2)
            .map(|w| self.arrivals[w[1]] - self.arrivals[w[0] + 1])
            .collect();
        if bursts.len() < MIN_BURSTS {
            return None;
        }
        bursts.sort_unstable();
        let median = bursts[(bursts.len() - 1) / 2];
        (median <= within.as_nanos() as u64).then(|| Bursts {
            longest: Duration::from_nanos(*bursts.last().expect("MIN_BURSTS > 0")),
            idle_gap: Duration::from_nanos(idle),
        })
    }

    /// The chance that nothing arrives in the next `pause` (and nothing is in flight now): the
    /// empirical survival of the recent gaps, conditioned on the silence so far, with one gap
    /// as long as the whole history added so an unseen long gap is never impossible; past
    /// every gap seen, `s / (s + pause)` for a silence `s`. Without history (fewer than 8 gaps)
    /// it is the Poisson estimate at the recent rate.
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
        if alive == 1.0 {
            // A silence longer than every gap seen: the history says nothing of it, only the
            // silence itself does. Having lasted `s`, it lasts another `d` with chance
            // `s / (s + d)` (no arrival in `s` at an unknown rate). The pseudo-gap alone made it
            // 1: a server resumed 10 ms before its load saw a window certain to be quiet for a
            // 19.5 ms collection, which paused 89 ms into the arriving requests.
            return s as f64 / (s + d) as f64;
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
        let mut s = vec![7; 3];
        r.snapshot_into(&mut s);
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
    fn bursts_are_told_from_steady_traffic_by_their_idle_gaps() {
        let at = |arrivals: &[u64]| {
            Traffic {
                in_flight: 0,
                now_ns: arrivals.last().unwrap() + MS,
                arrivals,
                total: 0,
            }
            .bursts(Duration::from_millis(10), Duration::from_secs(2))
            .map(|b| b.longest)
        };
        // Poisson arrivals at 150 a second (exponential gaps from a fixed LCG): no idle gap.
        let mut x: u64 = 12345;
        let mut t = 0u64;
        let poisson: Vec<u64> = (0..1024)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let u = ((x >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
                t += (-u.ln() / 150.0 * 1e9) as u64;
                t
            })
            .collect();
        assert_eq!(at(&poisson), None);
        // Bursts of 50, 100 and 150 arrivals 8 ms apart, 300 ms of silence after each: the
        // longest burst is the 150 arrivals' 1.192 s.
        let mut bursty = Vec::new();
        let mut t = 0;
        for n in [50, 100, 150, 50, 100] {
            for _ in 0..n {
                bursty.push(t);
                t += 8 * MS;
            }
            t += 300 * MS;
        }
        assert_eq!(at(&bursty), Some(Duration::from_millis(149 * 8)));
        // Past 20 median gaps (160 ms) of silence the burst is over.
        let idle = Traffic {
            in_flight: 0,
            now_ns: t,
            arrivals: &bursty,
            total: 0,
        }
        .bursts(Duration::from_millis(10), Duration::from_secs(2))
        .map(|b| b.idle_gap);
        assert_eq!(idle, Some(Duration::from_millis(160)));
        // Idle gaps shorter than the pause asked about are no windows for it.
        let short = Traffic {
            in_flight: 0,
            now_ns: t,
            arrivals: &bursty,
            total: 0,
        };
        assert_eq!(
            short.bursts(Duration::from_millis(400), Duration::from_secs(2)),
            None
        );
        // One burst alone between two idle gaps: not yet a pattern.
        assert_eq!(at(&bursty[..50 + 100 + 10]), None);
        // Steady traffic in turns of 6 s with a stop between them, as the suite runs it: at
        // 96 a second the ring holds one turn whole (two idle gaps, one burst); at 30 a second
        // several, but a wait of 2 s would end inside most of them.
        let turns = |rate: u64| {
            let mut v = Vec::new();
            let mut t = 0;
            while v.len() < 300 + 1024 {
                for _ in 0..6 * rate {
                    v.push(t);
                    t += 1_000 * MS / rate;
                }
                t += 500 * MS;
            }
            v[300..300 + 1024].to_vec()
        };
        assert_eq!(at(&turns(96)), None);
        assert_eq!(at(&turns(30)), None);
    }

    #[test]
    fn a_stop_is_not_a_quiet_window() {
        // Arrivals every 4 ms, then the process stopped for 60 s: the first look after the resume
        // (2 ms after it, nothing arrived yet) sees 2 ms of silence plus the 1 ms before the stop,
        // not a minute; the rate is the running service's.
        let arrivals: Vec<u64> = (0..500).map(|i| i * 4 * MS).collect();
        let last = *arrivals.last().unwrap();
        let (from, to) = (last + MS, last + MS + 60_000 * MS);
        let now = to + 2 * MS;
        let open = Traffic {
            in_flight: 0,
            now_ns: now,
            arrivals: &arrivals,
            total: 0,
        };
        assert!(open.quiet_chance(Duration::from_millis(10)) > 0.9);
        let mut stops = Stops::default();
        stops.record(from, to);
        let mut closed_arrivals = arrivals.clone();
        stops.close_over(&mut closed_arrivals);
        let closed = Traffic {
            arrivals: &closed_arrivals,
            ..open
        };
        assert_eq!(closed.silence(), Some(Duration::from_millis(3)));
        assert!(closed.quiet_chance(Duration::from_millis(10)) < 0.1);
        // 10 ms of silence, longer than any gap seen: only the silence itself is evidence.
        let silent = Traffic {
            now_ns: to + 9 * MS,
            ..closed
        };
        let p = silent.quiet_chance(Duration::from_millis(20));
        assert!((p - 10.0 / 30.0).abs() < 1e-9, "{p}");
        // An idle second: a short collection is very likely free.
        let idle = Traffic {
            now_ns: to + 999 * MS,
            ..closed
        };
        assert!(idle.quiet_chance(Duration::from_millis(5)) > 0.99);
        assert!((closed.rate() - 250.0).abs() < 5.0, "{}", closed.rate());
        // An arrival after the resume, before the tick noticed the stop, stays where it is and
        // the earlier ones close up to it, in order.
        let mut with_one: Vec<u64> = vec![0, 4 * MS, 8 * MS, to - 5 * MS];
        let mut stops = Stops::default();
        stops.record(9 * MS, to);
        stops.close_over(&mut with_one);
        let shift = to - 5 * MS - 9 * MS;
        assert_eq!(
            with_one,
            vec![shift, 4 * MS + shift, 8 * MS + shift, to - 5 * MS]
        );
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
