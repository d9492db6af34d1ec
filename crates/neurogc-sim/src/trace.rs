//! A recorded trial as the replay needs it: on the server's own clock (its turns joined, the
//! time it was stopped between them left out), each request's arrival and the work it took the
//! server, and the full collections that paused it.
//!
//! Service times are inferred as a single server answering in order would have spent them: a
//! request starts when it arrived or when the one before it ended, whichever is later, and its
//! work is the time to its end less the full-collection pauses in between (young collections
//! stay part of the work: every policy replayed here leaves them as CPython runs them).

use anyhow::{bail, Context, Result};
use neurogc_core::gcstats::RecordedEvent;
use neurogc_report::rundir::TrialData;

use crate::tail::{self, Met, Pause};

/// One server's recorded traffic, on its own clock (seconds from the trace's start).
#[derive(Debug, Clone)]
pub struct Trace {
    pub label: String,
    pub spec: String,
    /// Arrival of each request, ascending.
    pub arrivals: Vec<f64>,
    /// The server's work for each request (seconds), full-collection pauses removed.
    pub work: Vec<f64>,
    /// Its latency as measured (seconds).
    pub latency: Vec<f64>,
    /// The longest collection (of any generation) that overlapped it, live, and the time
    /// (seconds) collections took of it.
    pub met: Vec<(Met, f64)>,
    /// The full collections in the window: (start, pause ms, objects collected, requests
    /// completed before it).
    pub full: Vec<FullCollection>,
    /// Young (gen 0) and middle (gen 1) collections per request, as recorded.
    pub per_request: [f64; 2],
    /// Seconds of the server's own time covered.
    pub length: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FullCollection {
    pub at: f64,
    pub pause_ms: f64,
    pub collected: Option<u64>,
    /// Requests that had ended before it started.
    pub after_requests: usize,
    /// Why a policy ran it (`None`: CPython's own, or a policy that does not say).
    pub trigger: Option<neurogc_core::policy::Trigger>,
}

/// The stretches of Unix time the server ran under load: its turns, or its measured window.
fn windows(t: &TrialData) -> Result<Vec<(f64, f64)>> {
    if !t.turns.is_empty() {
        // A turn line's `t` is its end.
        return Ok(t.turns.iter().map(|r| (r.t - r.interval_s, r.t)).collect());
    }
    let info = t.info.as_ref().context("no trial.json")?;
    match (info.measure_start, info.measure_end) {
        (Some(s), Some(e)) if e > s => Ok(vec![(s, e)]),
        _ => bail!("no measured window in trial.json"),
    }
}

/// Maps Unix time to the server's own clock: the stretches joined end to end. A moment between
/// stretches (a request that ended just after its turn) belongs to the stretch before it.
struct Clock {
    windows: Vec<(f64, f64)>,
    offsets: Vec<f64>,
}

impl Clock {
    fn new(mut windows: Vec<(f64, f64)>) -> Clock {
        windows.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut offsets = Vec::with_capacity(windows.len());
        let mut total = 0.0;
        for &(s, e) in &windows {
            offsets.push(total);
            total += e - s;
        }
        Clock { windows, offsets }
    }

    fn server_time(&self, unix: f64) -> f64 {
        let i = self
            .windows
            .partition_point(|&(s, _)| s <= unix)
            .saturating_sub(1);
        let (s, _) = self.windows[i];
        self.offsets[i] + (unix - s).max(0.0)
    }

    fn length(&self) -> f64 {
        self.windows.iter().map(|(s, e)| e - s).sum()
    }
}

impl Trace {
    /// Reads a trial's `requests.csv` and GC events (`shown` names the trial in errors).
    pub fn of_trial(t: &TrialData) -> Result<Trace> {
        let shown = t.dir.display().to_string();
        let path = t.dir.join(neurogc_record::files::REQUESTS);
        if !path.exists() {
            bail!(
                "{shown}: no {} (runs recorded before neurogc 0.1's request log cannot be \
                 replayed: run the bench again)",
                neurogc_record::files::REQUESTS
            );
        }
        let rows = neurogc_load::requests::read(&path, &format!("{shown}/requests.csv"))?;
        if rows.len() < 10 {
            bail!(
                "{shown}: {} requests recorded: too few to replay",
                rows.len()
            );
        }
        let clock = Clock::new(windows(t).with_context(|| shown.clone())?);
        let mut requests: Vec<(f64, f64)> = rows
            .iter()
            .map(|r| {
                let a = clock.server_time(r.intended);
                // A request ends on the clock of the stretch it arrived in.
                (a, a + r.latency_s().max(0.0))
            })
            .collect();
        requests.sort_by(|x, y| x.0.total_cmp(&y.0));
        let measured: Vec<&RecordedEvent> = t
            .gc_events
            .iter()
            .flatten()
            .filter(|e| {
                clock
                    .windows
                    .iter()
                    .any(|&(s, e2)| e.time >= s && e.time <= e2)
            })
            .collect();
        let met = tail::met(
            &requests,
            &measured
                .iter()
                .map(|e| {
                    let s = clock.server_time(e.time);
                    Pause {
                        start: s,
                        end: s + e.pause_ms / 1e3,
                        generation: e.generation,
                        trigger: e.trigger,
                    }
                })
                .collect::<Vec<_>>(),
        );
        let events: Vec<&RecordedEvent> =
            measured.into_iter().filter(|e| e.generation == 2).collect();
        let pauses: Vec<(f64, f64)> = events
            .iter()
            .map(|e| {
                let s = clock.server_time(e.time);
                (s, s + e.pause_ms / 1e3)
            })
            .collect();
        let mut ends: Vec<f64> = requests.iter().map(|r| r.1).collect();
        ends.sort_by(f64::total_cmp);
        let full = events
            .iter()
            .zip(&pauses)
            .map(|(e, &(s, _))| FullCollection {
                at: s,
                pause_ms: e.pause_ms,
                collected: e.collected,
                after_requests: ends.partition_point(|&d| d <= s),
                trigger: e.trigger,
            })
            .collect();
        let mut work = Vec::with_capacity(requests.len());
        let mut free_at = f64::NEG_INFINITY;
        for &(a, d) in &requests {
            let start = a.max(free_at);
            let paused: f64 = pauses
                .iter()
                .map(|&(ps, pe)| (pe.min(d) - ps.max(start)).max(0.0))
                .sum();
            work.push((d - start - paused).max(0.0));
            free_at = free_at.max(d);
        }
        // Young and middle collections in the window, as the samples counted them.
        let counted = |generation: usize| {
            t.samples
                .as_ref()
                .map(|s| {
                    s.rows
                        .iter()
                        .filter(|r| {
                            clock
                                .windows
                                .iter()
                                .any(|&(a, b)| r.time > a && r.time <= b)
                        })
                        .filter_map(|r| r.gc_collections[generation])
                        .sum::<f64>()
                })
                .unwrap_or(0.0)
        };
        Ok(Trace {
            label: t.label().to_string(),
            spec: t.info.as_ref().map_or_else(String::new, |i| i.spec.clone()),
            arrivals: requests.iter().map(|r| r.0).collect(),
            latency: requests.iter().map(|r| r.1 - r.0).collect(),
            met,
            work,
            full,
            per_request: [
                counted(0) / requests.len() as f64,
                counted(1) / requests.len() as f64,
            ],
            length: clock.length(),
        })
    }

    /// Requests served per second of the server's time.
    pub fn rate(&self) -> f64 {
        self.arrivals.len() as f64 / self.length.max(1e-9)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_join_into_one_clock() {
        let c = Clock::new(vec![(100.0, 102.0), (110.0, 112.0)]);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(close(c.server_time(101.0), 1.0));
        assert!(close(c.server_time(110.5), 2.5));
        // Just after a turn: still that turn's clock.
        assert!(close(c.server_time(102.2), 2.2));
        assert!(close(c.length(), 4.0));
    }
}
