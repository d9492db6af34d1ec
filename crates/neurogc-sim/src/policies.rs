//! The policies the replay can run: CPython's own rule (as `default` and after a freeze ran it),
//! a timer (`periodic`), a fixed schedule (the offline optimum's), nothing (`gc-off`), and the
//! `neurogc` scheduler itself, its decisions taken by the same code the agent runs
//! ([`neurogc_core::policy::Scheduler`]) against a simulated collector.

use std::time::Duration;

use anyhow::{bail, Result};
use neurogc_core::policy::{
    Collector as Runtime, GcControl, GcError, Intent, Observation, Policy, PolicySpec, Scheduler,
};
use neurogc_core::sample::Sample;
use neurogc_core::traffic::{Traffic, RING};

use crate::model::{Calibration, PauseFit};
use crate::replay::{Collector, World};

/// CPython's rule as recorded: a full collection every `every` requests, the first after
/// `first` (where the rule's count stood when the window began), inside a request.
pub struct CpythonRule {
    every: f64,
    due: f64,
    fit: PauseFit,
    last: usize,
}

impl Collector for CpythonRule {
    fn next_look(&self) -> Option<f64> {
        None
    }
    fn request_done(&mut self, w: &World) -> Option<f64> {
        ((w.completed as f64) >= self.due).then(|| {
            let since = if self.last == 0 {
                self.every
            } else {
                (w.completed - self.last) as f64
            };
            self.last = w.completed;
            self.due += self.every;
            self.fit.pause_ms(since)
        })
    }
}

/// `periodic:S`: a full collection every `period` seconds of the server's time.
pub struct Timer {
    period: f64,
    next: f64,
    fit: PauseFit,
    last: usize,
}

impl Collector for Timer {
    fn next_look(&self) -> Option<f64> {
        Some(self.next)
    }
    fn look(&mut self, w: &World) -> Option<f64> {
        self.next = w.now + self.period;
        let since = (w.completed - self.last) as f64;
        self.last = w.completed;
        Some(self.fit.pause_ms(since))
    }
}

/// Collections right after given requests end: `(request count, pause ms)` ascending.
pub struct Schedule {
    pub at: Vec<(usize, f64)>,
    next: usize,
}

impl Schedule {
    pub fn new(at: Vec<(usize, f64)>) -> Schedule {
        Schedule { at, next: 0 }
    }
}

impl Collector for Schedule {
    fn next_look(&self) -> Option<f64> {
        None
    }
    fn request_done(&mut self, w: &World) -> Option<f64> {
        let &(after, ms) = self.at.get(self.next)?;
        (w.completed >= after).then(|| {
            self.next += 1;
            ms
        })
    }
}

/// Collections timed to the traffic without foresight: at the first request end that leaves
/// nothing waiting once `after` requests have ended since the last collection, and at `max_gap`
/// whatever is in flight (the garbage must be freed). What a policy that sees the requests in
/// flight can do short of predicting arrivals: unlike the optimum's, its pauses still meet the
/// requests that arrive during them.
pub struct IdleTimed {
    after: usize,
    max_gap: usize,
    fit: PauseFit,
    last: usize,
}

impl IdleTimed {
    pub fn new(after: usize, max_gap: usize, fit: PauseFit) -> IdleTimed {
        IdleTimed {
            after: after.max(1),
            max_gap: max_gap.max(1),
            fit,
            last: 0,
        }
    }
}

impl Collector for IdleTimed {
    fn next_look(&self) -> Option<f64> {
        None
    }
    fn request_done(&mut self, w: &World) -> Option<f64> {
        let since = w.completed - self.last;
        let due = (since >= self.after && w.in_flight == 0) || since >= self.max_gap;
        due.then(|| {
            self.last = w.completed;
            self.fit.pause_ms(since as f64)
        })
    }
}

/// Nothing collects (`gc-off`).
pub struct Off;

impl Collector for Off {
    fn next_look(&self) -> Option<f64> {
        None
    }
}

/// The collector the scheduler controls in the replay: its pauses come from the pause models
/// (of a frozen heap's remainder while it is frozen), its clock is the simulated one.
struct SimGc {
    frozen: bool,
    threshold: [u64; 3],
    unfrozen: PauseFit,
    frozen_fit: PauseFit,
    /// Objects a collection frees per request of garbage (the scheduler learns its yield).
    freed_per_request: f64,
    completed: usize,
    since: usize,
    full: u64,
    /// Simulated time consumed by collections (ms), and the pause owed to the replay.
    clock_ms: f64,
    owed_ms: f64,
}

impl GcControl for SimGc {
    fn collect(&mut self, generation: u8, _intent: Intent) -> Result<u64, GcError> {
        if generation < 2 {
            return Ok(0);
        }
        let w = (self.completed - self.since) as f64;
        let ms = if self.frozen {
            self.frozen_fit.pause_ms(w)
        } else {
            self.unfrozen.pause_ms(w)
        };
        self.clock_ms += ms;
        self.owed_ms += ms;
        self.since = self.completed;
        self.full += 1;
        Ok((self.freed_per_request * w) as u64)
    }
    fn is_enabled(&mut self) -> Result<bool, GcError> {
        Ok(true)
    }
    fn set_enabled(&mut self, _: bool) -> Result<(), GcError> {
        Ok(())
    }
    fn threshold(&mut self) -> Result<[u64; 3], GcError> {
        Ok(self.threshold)
    }
    fn set_threshold(&mut self, t: [u64; 3]) -> Result<(), GcError> {
        self.threshold = t;
        Ok(())
    }
    fn freeze(&mut self) -> Result<(), GcError> {
        self.frozen = true;
        Ok(())
    }
    fn unfreeze(&mut self) -> Result<(), GcError> {
        self.frozen = false;
        Ok(())
    }
    fn collector(&mut self) -> Result<Runtime, GcError> {
        Ok(Runtime::Generational)
    }
    fn cpu_ms(&mut self) -> f64 {
        self.clock_ms
    }
}

/// `neurogc`: the agent's scheduler, asked when it asks to be (every 10-50 ms) and at every
/// second's sample, seeing the replay's traffic (requests in flight, the last arrivals).
pub struct SchedulerSim {
    policy: Scheduler,
    gc: SimGc,
    /// The replay's time 0 on the agent's clock: after the warm-up (the scheduler took control
    /// and froze the heap before the trace begins, as in the live runs).
    origin: f64,
    next: f64,
    next_sample: f64,
    /// At the last sample: (server seconds, requests ended, seconds served, collections' ms).
    last_sample: (f64, usize, f64, f64),
    /// Young and middle collections per request, as recorded.
    per_request: [f64; 2],
    live_bytes: u64,
    ring: Vec<u64>,
}

impl SchedulerSim {
    fn observation<'a>(&self, w: &World, ring: &'a [u64], arrived: usize) -> Observation<'a> {
        let elapsed = Duration::from_secs_f64(self.origin + w.now.max(0.0));
        Observation {
            elapsed,
            rss_bytes: Some(self.live_bytes),
            collections: Some([
                (w.completed as f64 * self.per_request[0]) as u64,
                (w.completed as f64 * self.per_request[1]) as u64,
                self.gc.full,
            ]),
            traffic: Some(Traffic {
                in_flight: w.in_flight as i64,
                now_ns: elapsed.as_nanos() as u64,
                arrivals: ring,
                total: arrived as u64,
            }),
            ..Observation::default()
        }
    }

    /// The scheduler's own next tick, on the replay's clock.
    fn next_tick(&self, now: f64) -> f64 {
        let tick = self
            .policy
            .next_tick()
            .map_or(f64::INFINITY, |d| d.as_secs_f64() - self.origin);
        tick.max(now + 1e-4).min(self.next_sample)
    }
}

impl Collector for SchedulerSim {
    fn next_look(&self) -> Option<f64> {
        Some(self.next)
    }

    fn look(&mut self, w: &World) -> Option<f64> {
        self.gc.completed = w.completed;
        // The middleware's ring: the last arrivals, on the agent's clock (ns).
        let first = w.arrived.saturating_sub(RING);
        self.ring.clear();
        self.ring.extend(
            w.arrivals[first..w.arrived]
                .iter()
                .map(|a| ((self.origin + a.max(0.0)) * 1e9) as u64),
        );
        let ring = std::mem::take(&mut self.ring);
        let sample_due = w.now >= self.next_sample;
        // The sample's interval as the agent measures it: requests ended, and the CPU the
        // process spent (serving and collecting).
        let sample = sample_due.then(|| {
            let (t, completed, served, gc_ms) = self.last_sample;
            self.last_sample = (w.now, w.completed, w.served, self.gc.clock_ms);
            let interval_s = (w.now - t).max(1e-9);
            Sample {
                interval_s,
                requests: Some((w.completed - completed) as u64),
                cpu: Some(
                    100.0 * (w.served - served + (self.gc.clock_ms - gc_ms) / 1e3) / interval_s,
                ),
                ..Sample::default()
            }
        });
        let obs = Observation {
            sample: sample.as_ref(),
            ..self.observation(w, &ring, w.arrived)
        };
        if sample_due || self.policy.ready(&obs) {
            // A decision error is the simulated collector's, which has none.
            let _ = self.policy.tick(&mut self.gc, &obs);
        }
        self.ring = ring;
        if sample_due {
            self.next_sample += 1.0;
        }
        self.next = self.next_tick(w.now);
        let owed = std::mem::take(&mut self.gc.owed_ms);
        (owed > 0.0).then_some(owed)
    }
}

/// A policy the replay can run, built from its spec; an error names what it cannot model.
pub fn build(spec: &str, cal: &Calibration, per_request: [f64; 2]) -> Result<Box<dyn Collector>> {
    let need = |fit: Option<PauseFit>, what: &str| -> Result<PauseFit> {
        match fit {
            Some(f) => Ok(f),
            None => bail!(
                "{spec}: the run has no {what} to learn its pauses from (run the bench with \
                 `default` and `freeze:3` beside it)"
            ),
        }
    };
    let parsed: PolicySpec = spec
        .parse()
        .map_err(|e: neurogc_core::policy::SpecError| anyhow::anyhow!("{e}"))?;
    Ok(match parsed {
        PolicySpec::GcOff => Box::new(Off),
        PolicySpec::Default => Box::new(CpythonRule {
            every: cal.default_every.unwrap_or(f64::INFINITY),
            due: cal.default_first.unwrap_or(f64::INFINITY),
            fit: need(cal.unfrozen, "full collection of an unfrozen heap")?,
            last: 0,
        }),
        PolicySpec::Freeze { .. } => {
            let every = cal.frozen_every.unwrap_or(f64::INFINITY);
            let due = cal.frozen_first.unwrap_or(f64::INFINITY);
            Box::new(CpythonRule {
                every,
                due,
                // None in the window: no pause to model.
                fit: cal.frozen.unwrap_or(PauseFit {
                    a: 0.0,
                    b: 0.0,
                    points: 0,
                }),
                last: 0,
            })
        }
        PolicySpec::Periodic { every, .. } => Box::new(Timer {
            period: every.as_secs_f64(),
            next: every.as_secs_f64(),
            fit: need(cal.unfrozen, "full collection of an unfrozen heap")?,
            last: 0,
        }),
        PolicySpec::Neurogc { config: cfg, model } => {
            let unfrozen = need(cal.unfrozen, "full collection of an unfrozen heap")?;
            let frozen_fit = need(cal.frozen, "collection after a freeze (a `freeze` trial)")?;
            let mut policy = Scheduler::new(spec, cfg);
            if let Some(dir) = model {
                let m = neurogc_model::SchedulerModel::load(&dir)
                    .map_err(|e| anyhow::anyhow!("{spec}: {e}"))?;
                policy = policy.with_model(m);
            }
            let mut gc = SimGc {
                frozen: false,
                threshold: [700, 10, 10],
                unfrozen,
                frozen_fit,
                freed_per_request: cal.freed_per_request.unwrap_or(0.0),
                completed: 0,
                since: 0,
                full: 0,
                clock_ms: 0.0,
                owed_ms: 0.0,
            };
            let live = 100u64 << 20;
            // Its warm-up, before the trace: it takes control and freezes (not replayed).
            let warm = cfg.warmup.as_secs_f64();
            let at = |secs: f64| Observation {
                elapsed: Duration::from_secs_f64(secs),
                rss_bytes: Some(live),
                ..Observation::default()
            };
            let _ = policy.start(&mut gc, &at(0.0));
            let _ = policy.tick(&mut gc, &at(warm));
            gc.owed_ms = 0.0;
            // The freeze's collection is no part of the first second's CPU.
            let gc_ms = gc.clock_ms;
            Box::new(SchedulerSim {
                policy,
                gc,
                origin: warm + 1.0,
                next: 0.0,
                next_sample: 1.0,
                last_sample: (0.0, 0, 0.0, gc_ms),
                per_request,
                live_bytes: live,
                ring: Vec::with_capacity(RING),
            })
        }
        PolicySpec::Threshold(_) => bail!(
            "{spec}: not modelled: thresholds change the young collections, which the replay \
             takes as recorded"
        ),
        PolicySpec::NeurogcSeed { .. } => bail!(
            "{spec}: not modelled: the seed's model reads the process's samples, of which the \
             replay makes only the requests and the CPU"
        ),
        PolicySpec::Explore { .. } => {
            bail!("{spec}: not modelled: its collections come at random moments; replay `default`")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::replay;

    const FIT: PauseFit = PauseFit {
        a: 20.0,
        b: 0.0,
        points: 1,
    };

    #[test]
    fn idle_timed_collects_when_nothing_is_in_flight() {
        // Bursts of 10 requests 5 ms apart (1 ms of work each), then 200 ms of silence.
        let arrivals: Vec<f64> = (0..6)
            .flat_map(|b| (0..10).map(move |i| b as f64 * 0.25 + i as f64 * 0.005))
            .collect();
        let work = vec![0.001; arrivals.len()];
        // Every request ends with nothing waiting, so it collects at every 15th request's end:
        // nothing in flight then, but inside a burst, where the next arrivals wait out the pause
        // (the optimum, seeing them coming, would collect in the silences).
        let out = replay(&arrivals, &work, &mut IdleTimed::new(15, 100, FIT));
        assert_eq!(out.collections, 4, "{out:?}");
        assert!(out.latency.iter().any(|&l| l > 0.015), "{out:?}");
        assert_eq!(out.met, 0);
    }

    #[test]
    fn idle_timed_collects_at_the_spacing_when_the_server_is_never_idle() {
        // A request every 1 ms, each taking 2 ms: from the second on, one always waits.
        let arrivals: Vec<f64> = (0..100).map(|i| i as f64 * 0.001).collect();
        let work = vec![0.002; arrivals.len()];
        // Forced every 30 requests, meeting the queue; then once more after the last request,
        // the first moment nothing waits.
        let out = replay(&arrivals, &work, &mut IdleTimed::new(5, 30, FIT));
        assert_eq!(out.collections, 4, "{out:?}");
        assert_eq!(out.met, 3);
        assert!(
            (out.done[30] - out.done[29] - 0.022).abs() < 1e-9,
            "{out:?}"
        );
    }
}
