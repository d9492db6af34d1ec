//! The server replayed: one worker answering requests in order of arrival, each taking the work
//! the trace recorded, and stopped for the whole pause of every full collection a policy runs
//! (a collection holds the GIL: no request progresses meanwhile). Event-driven: it jumps from
//! one arrival, completion or policy look to the next.

use std::collections::VecDeque;

/// What the replayed server shows a policy.
pub struct World<'a> {
    /// Seconds of the server's time.
    pub now: f64,
    /// Requests arrived so far, and ended so far.
    pub arrived: usize,
    pub completed: usize,
    /// Arrived and not ended (waiting, or being served).
    pub in_flight: usize,
    /// Seconds of work the ended requests took (the server's busy time, pauses aside).
    pub served: f64,
    /// Every arrival of the trace (the first `arrived` are past).
    pub arrivals: &'a [f64],
}

/// A policy as the replay runs it: it may pause the server when it looks (its own thread's
/// ticks) or when a request ends (CPython collects inside the allocations of a request).
pub trait Collector {
    /// When it next wants to look (server seconds); `None`: never.
    fn next_look(&self) -> Option<f64>;
    /// Looks at the world at its `next_look`; a pause (ms) to take now, if any. Must move its
    /// `next_look` past `now`.
    fn look(&mut self, _w: &World) -> Option<f64> {
        None
    }
    /// A request just ended; a pause (ms) now, if any.
    fn request_done(&mut self, _w: &World) -> Option<f64> {
        None
    }
}

/// A replay's result.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Each request's latency (seconds), in arrival order.
    pub latency: Vec<f64>,
    /// Each request's end (server seconds).
    pub done: Vec<f64>,
    pub collections: usize,
    /// Of them, those that found requests in flight.
    pub met: usize,
    pub pause_total_ms: f64,
    pub pause_max_ms: f64,
}

/// Replays `arrivals` (ascending) and their `work` under `collector`.
pub fn replay(arrivals: &[f64], work: &[f64], collector: &mut dyn Collector) -> Outcome {
    assert_eq!(arrivals.len(), work.len());
    let n = arrivals.len();
    let mut out = Outcome {
        latency: vec![f64::NAN; n],
        done: vec![f64::NAN; n],
        ..Outcome::default()
    };
    let mut queue: VecDeque<usize> = VecDeque::new();
    let mut remaining = 0.0; // of the request at the front
    let mut now = arrivals.first().copied().unwrap_or(0.0).min(0.0);
    let mut paused_until = f64::NEG_INFINITY;
    let (mut next_arrival, mut completed, mut served) = (0usize, 0usize, 0.0);
    let pause = |out: &mut Outcome, now: f64, paused_until: &mut f64, ms: f64, busy: bool| {
        if ms <= 0.0 {
            return;
        }
        *paused_until = paused_until.max(now) + ms / 1e3;
        out.collections += 1;
        out.met += usize::from(busy);
        out.pause_total_ms += ms;
        out.pause_max_ms = out.pause_max_ms.max(ms);
    };
    loop {
        let t_arrival = arrivals.get(next_arrival).copied().unwrap_or(f64::INFINITY);
        let t_done = if queue.is_empty() {
            f64::INFINITY
        } else {
            now.max(paused_until) + remaining
        };
        let t_look = collector.next_look().unwrap_or(f64::INFINITY);
        if next_arrival == n && queue.is_empty() {
            break;
        }
        let t = t_arrival.min(t_done).min(t_look).max(now);
        if !queue.is_empty() {
            remaining -= (t - now.max(paused_until)).max(0.0);
        }
        now = t;
        let world = |arrived: usize, completed: usize, in_flight: usize, served: f64| World {
            now,
            arrived,
            completed,
            in_flight,
            served,
            arrivals,
        };
        if !queue.is_empty() && t_done <= t {
            let i = queue.pop_front().expect("not empty");
            out.done[i] = now;
            out.latency[i] = now - arrivals[i];
            completed += 1;
            served += work[i];
            remaining = queue.front().map_or(0.0, |&j| work[j]);
            let w = world(next_arrival, completed, queue.len(), served);
            if let Some(ms) = collector.request_done(&w) {
                pause(&mut out, now, &mut paused_until, ms, !queue.is_empty());
            }
        }
        while next_arrival < n && arrivals[next_arrival] <= now {
            if queue.is_empty() {
                remaining = work[next_arrival];
            }
            queue.push_back(next_arrival);
            next_arrival += 1;
        }
        if t_look <= now {
            let w = world(next_arrival, completed, queue.len(), served);
            if let Some(ms) = collector.look(&w) {
                pause(&mut out, now, &mut paused_until, ms, !queue.is_empty());
            }
        }
    }
    out
}

/// The `q` quantile (0–1) of `xs` as HdrHistogram reports it: the smallest value with at least
/// `q` of them at or below it.
pub fn quantile(xs: &[f64], q: f64) -> Option<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let rank = ((q.clamp(0.0, 1.0) * v.len() as f64).ceil() as usize).max(1);
    Some(v[rank - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Never;
    impl Collector for Never {
        fn next_look(&self) -> Option<f64> {
            None
        }
    }

    /// Pauses `ms` once, when it looks at `at`.
    struct Once {
        at: Option<f64>,
        ms: f64,
    }
    impl Collector for Once {
        fn next_look(&self) -> Option<f64> {
            self.at
        }
        fn look(&mut self, _w: &World) -> Option<f64> {
            self.at = None;
            Some(self.ms)
        }
    }

    #[test]
    fn a_free_server_answers_in_its_work_and_a_busy_one_queues() {
        // 10 ms of work every 20 ms: no wait. Then two at once: the second waits 10 ms.
        let arrivals = [0.0, 0.02, 0.04, 0.1, 0.1];
        let work = [0.01; 5];
        let o = replay(&arrivals, &work, &mut Never);
        let ms: Vec<f64> = o.latency.iter().map(|l| (l * 1e3).round()).collect();
        assert_eq!(ms, [10.0, 10.0, 10.0, 10.0, 20.0]);
        assert_eq!(o.collections, 0);
    }

    #[test]
    fn a_pause_delays_the_request_in_service_and_those_arriving_during_it() {
        // A 30 ms pause at 5 ms: the first request (0-10 ms) ends at 40 ms; the one due at
        // 20 ms waits for it; the one at 100 ms is untouched.
        let arrivals = [0.0, 0.02, 0.1];
        let work = [0.01; 3];
        let mut c = Once {
            at: Some(0.005),
            ms: 30.0,
        };
        let o = replay(&arrivals, &work, &mut c);
        let ms: Vec<f64> = o.latency.iter().map(|l| (l * 1e3).round()).collect();
        assert_eq!(ms, [40.0, 30.0, 10.0]);
        assert_eq!((o.collections, o.met), (1, 1));
        assert_eq!(o.pause_total_ms, 30.0);
        // The same pause in the idle gap at 60 ms delays no one.
        let mut c = Once {
            at: Some(0.06),
            ms: 30.0,
        };
        let o = replay(&arrivals, &work, &mut c);
        let ms: Vec<f64> = o.latency.iter().map(|l| (l * 1e3).round()).collect();
        assert_eq!(ms, [10.0, 10.0, 10.0]);
        assert_eq!((o.collections, o.met), (1, 0));
    }

    #[test]
    fn quantiles_as_hdrhistogram_gives_them() {
        let xs: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&xs, 0.99), Some(99.0));
        assert_eq!(quantile(&xs, 0.5), Some(50.0));
        assert_eq!(quantile(&xs, 1.0), Some(100.0));
        assert_eq!(quantile(&[], 0.5), None);
    }
}
