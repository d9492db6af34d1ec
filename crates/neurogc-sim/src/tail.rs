//! What the slowest 1 % of a live policy's requests met: for each request, the longest
//! collection whose pause overlapped it (from its intended start to its end), by who ran it and
//! why. It says, from the run's own records, what set a policy's p99: its own full collections
//! (and for which reason), CPython's, the young and middle collections that every policy here
//! leaves to CPython (and that the GC-off bound never runs), or none (the request waited
//! behind others, or the server was slow for another reason).

use neurogc_core::policy::Trigger;

use crate::replay::quantile;

/// What a request's pause-overlap was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Met {
    /// No collection overlapped it.
    Nothing,
    /// Only young or middle collections (generations 0 and 1).
    YoungOrMiddle,
    /// A full collection CPython started (or a policy that does not say why).
    CpythonFull,
    /// A full collection a policy ran, for this reason.
    Policy(Trigger),
}

impl Met {
    pub fn name(self) -> &'static str {
        match self {
            Met::Nothing => "nothing",
            Met::YoungOrMiddle => "young or middle",
            Met::CpythonFull => "CPython's full",
            Met::Policy(t) => t.as_str(),
        }
    }
}

/// One collection on the server's clock: (start, end) in seconds, its generation, and why a
/// policy ran it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pause {
    pub start: f64,
    pub end: f64,
    pub generation: u8,
    pub trigger: Option<Trigger>,
}

/// For each request (arrival, end), sorted by arrival, what it met, and how much of its time
/// (seconds) collections of any kind took; `pauses` in any order.
pub fn met(requests: &[(f64, f64)], pauses: &[Pause]) -> Vec<(Met, f64)> {
    let mut pauses = pauses.to_vec();
    pauses.sort_by(|a, b| a.start.total_cmp(&b.start));
    let longest = pauses
        .iter()
        .map(|p| p.end - p.start)
        .fold(0.0_f64, f64::max);
    requests
        .iter()
        .map(|&(arrival, end)| {
            // Only pauses that started after `arrival - longest` can reach past `arrival`.
            let from = pauses.partition_point(|p| p.start < arrival - longest);
            let overlapping = || {
                pauses[from..]
                    .iter()
                    .take_while(|p| p.start < end)
                    .filter(|p| p.end > arrival)
            };
            let paused = overlapping()
                .map(|p| p.end.min(end) - p.start.max(arrival))
                .fold(0.0, |a, b| a + b);
            let worst =
                overlapping().max_by(|a, b| (a.end - a.start).total_cmp(&(b.end - b.start)));
            let kind = match worst {
                None => Met::Nothing,
                Some(p) if p.generation < 2 => Met::YoungOrMiddle,
                Some(p) => p.trigger.map_or(Met::CpythonFull, Met::Policy),
            };
            (kind, paused)
        })
        .collect()
}

/// What some of the slowest requests met: how many, and the median of the time collections
/// took of each (seconds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Count {
    pub met: Met,
    pub requests: usize,
    pub paused_median: f64,
}

/// Of the slowest 1 % of requests (pooled over a policy's trials: the requests past the p99 of
/// `latency`, at least one), how many met each kind of collection, most first; and that p99
/// (seconds).
pub fn slowest(latency: &[f64], met: &[(Met, f64)]) -> Option<(f64, Vec<Count>)> {
    let p99 = quantile(latency, 0.99)?;
    let mut order: Vec<usize> = (0..latency.len().min(met.len())).collect();
    order.sort_by(|&a, &b| latency[b].total_cmp(&latency[a]));
    let past = (latency.len() as f64 * 0.99).ceil() as usize;
    let k = latency.len().saturating_sub(past).max(1);
    let mut groups: Vec<(Met, Vec<f64>)> = Vec::new();
    for (m, paused) in order.iter().take(k).map(|&i| met[i]) {
        match groups.iter_mut().find(|(k, _)| *k == m) {
            Some((_, p)) => p.push(paused),
            None => groups.push((m, vec![paused])),
        }
    }
    let mut counts: Vec<Count> = groups
        .into_iter()
        .map(|(met, paused)| Count {
            met,
            requests: paused.len(),
            paused_median: quantile(&paused, 0.5).unwrap_or(0.0),
        })
        .collect();
    counts.sort_by(|a, b| {
        b.requests
            .cmp(&a.requests)
            .then(a.met.name().cmp(b.met.name()))
    });
    Some((p99, counts))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pause(start: f64, ms: f64, generation: u8, trigger: Option<Trigger>) -> Pause {
        Pause {
            start,
            end: start + ms / 1e3,
            generation,
            trigger,
        }
    }

    #[test]
    fn each_request_meets_the_longest_pause_that_overlapped_it() {
        let pauses = [
            pause(1.000, 0.5, 0, None),
            pause(1.002, 1.0, 1, None),
            pause(2.000, 20.0, 2, Some(Trigger::Due)),
            pause(2.010, 0.2, 0, None),
            // Started long before the request below, and still running when it arrived.
            pause(2.900, 150.0, 2, None),
        ];
        let requests = [
            (0.990, 1.001), // the young one only
            (0.999, 1.010), // young and middle: the middle one is longer
            (1.990, 2.030), // the due one and a young one inside it
            (2.500, 2.505), // nothing
            (3.040, 3.060), // CPython's full one, started 140 ms before it arrived
        ];
        let m = met(&requests, &pauses);
        let kinds: Vec<Met> = m.iter().map(|x| x.0).collect();
        assert_eq!(
            kinds,
            [
                Met::YoungOrMiddle,
                Met::YoungOrMiddle,
                Met::Policy(Trigger::Due),
                Met::Nothing,
                Met::CpythonFull
            ]
        );
        // The time paused within each request: the young one's; the young and the middle one's;
        // the due one's and the young one's inside it; none; the last 10 ms of CPython's.
        let ms: Vec<f64> = m.iter().map(|x| (x.1 * 1e6).round() / 1e3).collect();
        assert_eq!(ms, [0.5, 1.5, 20.2, 0.0, 10.0]);
        // A pause that ended before the request arrived did not delay it.
        assert_eq!(met(&[(2.021, 2.03)], &pauses), [(Met::Nothing, 0.0)]);
    }

    #[test]
    fn the_slowest_one_percent_are_counted_by_what_they_met() {
        // 1000 requests: 990 of 1 ms that met nothing, 10 of 30 ms, 7 of them in due pauses.
        let mut latency = vec![0.001; 990];
        let mut met = vec![(Met::Nothing, 0.0); 990];
        latency.extend([0.030; 10]);
        met.extend([(Met::Policy(Trigger::Due), 0.025); 7]);
        met.extend([(Met::YoungOrMiddle, 0.001); 3]);
        let (p99, counts) = slowest(&latency, &met).unwrap();
        assert_eq!(p99, 0.001);
        let got: Vec<(Met, usize, f64)> = counts
            .iter()
            .map(|c| (c.met, c.requests, c.paused_median))
            .collect();
        assert_eq!(
            got,
            [
                (Met::Policy(Trigger::Due), 7, 0.025),
                (Met::YoungOrMiddle, 3, 0.001)
            ]
        );
        assert_eq!(slowest(&[], &[]), None);
    }
}
