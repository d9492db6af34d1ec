//! The sampler thread: one per agent, the only thread the agent adds to the host process.
//!
//! It reads `/proc` and writes CSV detached from the interpreter, and attaches only to read
//! `gc.get_count()` and let the policy act. It exits on stop, on failure, or when the interpreter is
//! finalizing (`Python::try_attach` returns `None`), restoring the collector's original settings.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use neurogc_core::csv_sink::CsvSink;
use neurogc_core::gcstats::GcWindow;
use neurogc_core::latency::RequestWindow;
use neurogc_core::policy::{Action, GcControl, Observation, Policy};
use neurogc_core::process::{ProcessCounters, ProcessReader};
use neurogc_core::sample::Sample;
use neurogc_core::traffic::{Stops, Traffic, STOP_GAP};
use pyo3::prelude::*;

use crate::logging;
use crate::pygc::{OriginalGc, PyGc};
use crate::shared::{lock, unix_now, Shared, FAULT_SAMPLER_PANIC};
use crate::shield::panic_text;

/// Whether the interpreter could still be attached to; when it cannot, it is finalizing.
#[derive(PartialEq)]
enum Interpreter {
    Alive,
    Gone,
}

pub struct Sampler {
    pub shared: Arc<Shared>,
    pub policy: Box<dyn Policy>,
    pub original: OriginalGc,
    pub reader: ProcessReader,
    pub csv: Option<CsvSink>,
    /// One row per collection, written at each sample (and at stop).
    pub gc_events: Option<CsvSink>,
    /// Events dropped by full windows and not yet reported in a warning, and when one last was.
    pub events_dropped_unreported: u64,
    pub last_drop_warning: Option<Instant>,
    pub interval: Duration,
    /// Agent start: the origin of the policy's clock.
    pub started: Instant,
    pub last_sample: Instant,
    pub last_counters: ProcessCounters,
    /// Actions taken since the last sample.
    pub actions: Vec<Action>,
    /// What the allocator holds free, read at most every 200 ms and less often where a read costs.
    pub heap_free: neurogc_core::process::HeapFree,
    /// The arrivals' buffer, reused from tick to tick.
    pub arrivals: Vec<u64>,
    /// RSS at the ticks between samples.
    pub rss: neurogc_core::process::RssReader,
    /// The last interval's requests (its histogram's memory is reused for every interval).
    pub requests: RequestWindow,
    /// When the process was stopped, as the ticks found it: the arrivals are closed over them.
    pub stops: Stops,
}

impl Sampler {
    pub fn run(self) {
        // One thread state for the thread's whole life: attach once, then run detached. Creating
        // and deleting a thread state at every tick takes CPython's runtime HEAD_LOCK without the
        // GIL, and a fork() landing then leaves it held in the child: CPython 3.11.7 and earlier
        // deadlock in PyOS_AfterFork_Child (gh-112275). The inner attaches below reuse this state.
        let mut sampler = Some(self);
        let ran = Python::try_attach(|py| {
            py.detach(|| {
                if let Some(s) = sampler.take() {
                    s.run_detached()
                }
            })
        });
        if ran.is_none() {
            eprintln!("neurogc: the interpreter is shutting down; the sampler did not start");
        }
    }

    fn run_detached(mut self) {
        let outcome = catch_unwind(AssertUnwindSafe(|| self.run_loop()));
        let interpreter = match outcome {
            Ok(Ok(interpreter)) => interpreter,
            Ok(Err(error)) => {
                self.shared.fail(error);
                Interpreter::Alive
            }
            Err(payload) => {
                self.shared.fail(format!(
                    "internal error in the sampler: {}",
                    panic_text(&payload)
                ));
                Interpreter::Alive
            }
        };
        if interpreter == Interpreter::Gone {
            return;
        }
        let failure = self.shared.failure();
        let restored = Python::try_attach(|py| {
            let restore = self.original.restore_in(py, &self.shared);
            if let Some(reason) = &failure {
                let mut message = format!(
                    "NeuroGC agent disabled after an internal failure ({reason}); the service keeps running with its original GC settings"
                );
                if let Err(e) = &restore {
                    message.push_str(&format!(" (restoring them failed: {e})"));
                }
                logging::warn(py, &message);
            }
        });
        if restored.is_none() {
            if let Some(reason) = failure {
                eprintln!("neurogc: agent disabled: {reason}");
            }
        }
    }

    fn run_loop(&mut self) -> Result<Interpreter, String> {
        loop {
            let next_sample = self.last_sample + self.interval;
            let next_policy = self.policy.next_tick().map(|t| self.started + t);
            let deadline = next_policy.map_or(next_sample, |p| p.min(next_sample));
            if self.shared.sleep_until(deadline) {
                if self.shared.is_failed() {
                    return Ok(Interpreter::Alive);
                }
                // On stop, keep the partial interval rather than lose it.
                if self.last_sample.elapsed() >= Duration::from_millis(1) {
                    return self.take_sample(true);
                }
                // Too short for a sample, but its collections still reach the events CSV (the
                // totals counted them as they ended).
                let window = self.shared.take_gc_window(true);
                self.write_gc_events(&window);
                return Ok(Interpreter::Alive);
            }
            self.notice_a_stop(deadline);
            if self.shared.fault.load(Ordering::Relaxed) == FAULT_SAMPLER_PANIC {
                panic!("injected sampler fault");
            }
            let interpreter = if Instant::now() >= next_sample {
                self.take_sample(false)?
            } else {
                self.policy_tick()?
            };
            if interpreter == Interpreter::Gone {
                return Ok(interpreter);
            }
        }
    }

    /// A wake-up far past its deadline: the process did not run meanwhile.
    fn notice_a_stop(&mut self, deadline: Instant) {
        let late = Instant::now().saturating_duration_since(deadline);
        if late > STOP_GAP {
            let now = self.shared.origin.ns();
            let late = u64::try_from(late.as_nanos()).unwrap_or(u64::MAX);
            self.stops.record(now.saturating_sub(late), now);
        }
    }

    /// A tick between samples (the guard's checks, a periodic collection, the scheduler's
    /// decisions). The policy is asked first without the interpreter; it is attached to only
    /// when the policy is ready to act.
    fn policy_tick(&mut self) -> Result<Interpreter, String> {
        let rss = self.rss.read();
        let heap_free = self.heap_free(rss);
        let arrivals = self.arrivals();
        let detached = Observation {
            elapsed: self.started.elapsed(),
            rss_bytes: rss,
            heap_free_bytes: heap_free,
            traffic: self.traffic(&arrivals),
            collections: Some(self.shared.collections()),
            ..Observation::default()
        };
        let attached = if self.policy.ready(&detached) {
            Python::try_attach(|py| self.decide(py, detached))
        } else {
            Some(Ok(()))
        };
        self.arrivals = arrivals;
        match attached {
            None => Ok(Interpreter::Gone),
            Some(r) => r.map(|_| Interpreter::Alive),
        }
    }

    /// What the allocator holds free; says once when reading it stopped (see [`HeapFree`]).
    ///
    /// [`HeapFree`]: neurogc_core::process::HeapFree
    fn heap_free(&mut self, rss: Option<u64>) -> Option<u64> {
        let value = self.heap_free.read(rss);
        if let Some(ms) = self.heap_free.take_stopped() {
            logging::warn_detached(&format!(
                "reading the allocator's free memory (mallinfo2) took {ms:.1} ms of CPU, with \
                 malloc locked for every thread (it walks each free chunk of a fragmented heap): \
                 no longer read; the scheduler goes on with the last value, {} MiB, or the \
                 lowest read once RSS grows",
                value.unwrap_or(0) >> 20
            ));
        }
        value
    }

    /// Recent arrivals, closed over the stops (empty where no middleware feeds requests), in the
    /// buffer of the last tick's (give it back with `self.arrivals = ...`).
    fn arrivals(&mut self) -> Vec<u64> {
        let mut arrivals = std::mem::take(&mut self.arrivals);
        arrivals.clear();
        if self.shared.serves_requests.load(Ordering::Relaxed) {
            self.shared.arrivals.snapshot_into(&mut arrivals);
            self.stops.close_over(&mut arrivals);
        }
        arrivals
    }

    /// The traffic now, where a middleware counts it.
    fn traffic<'a>(&self, arrivals: &'a [u64]) -> Option<Traffic<'a>> {
        self.shared
            .serves_requests
            .load(Ordering::Relaxed)
            .then(|| Traffic {
                in_flight: self.shared.in_flight.load(Ordering::Relaxed),
                now_ns: self.shared.origin.ns(),
                arrivals,
                total: self.shared.arrivals.count(),
            })
    }

    /// Lets the policy act at a tick between samples.
    fn decide(&mut self, py: Python<'_>, detached: Observation<'_>) -> Result<(), String> {
        let shared = self.shared.clone();
        let mut gc = PyGc::new(py, &shared)?;
        let obs = Observation {
            gc_count: gc.count()?,
            // In flight now, not when the policy was asked.
            traffic: detached.traffic.map(|t| Traffic {
                in_flight: self.shared.in_flight.load(Ordering::Relaxed),
                ..t
            }),
            ..detached
        };
        self.act(&mut gc, &obs)
    }

    fn act(&mut self, gc: &mut PyGc<'_, '_>, obs: &Observation<'_>) -> Result<(), String> {
        let actions = self
            .policy
            .tick(gc, obs)
            .map_err(|e| format!("policy {} failed: {e}", self.policy.spec()))?;
        self.shared
            .policy_actions
            .fetch_add(actions.len() as u64, Ordering::Relaxed);
        log_loud(gc, &actions);
        self.actions.extend(actions);
        Ok(())
    }

    /// Takes the interval's sample; `last` at stop (collections after it are not recorded).
    fn take_sample(&mut self, last: bool) -> Result<Interpreter, String> {
        let counters = self.reader.read();
        let (mut sample, gc_window) = self.close_interval(counters, last);
        // Detached, and before the policy runs: the events need no interpreter.
        self.write_gc_events(&gc_window);
        // Model inference, if the policy has a model, runs here: detached from the interpreter.
        self.policy.observe(&sample);
        let Some(decided) = Python::try_attach(|py| self.decide_on_sample(py, &mut sample, last))
        else {
            return Ok(Interpreter::Gone);
        };
        decided?;
        if let Some(csv) = &mut self.csv {
            if let Err(e) = csv.write(&sample) {
                let message = format!(
                    "cannot write samples to {}: {e}; CSV output stopped, sampling goes on",
                    csv.path().display()
                );
                self.csv = None;
                logging::warn_detached(&message);
            }
        }
        *lock(&self.shared.latest) = Some(sample);
        Ok(Interpreter::Alive)
    }

    /// Appends the window's collections to the events CSV (one write, flushed) and reports
    /// events a full window dropped: in a warning at most once a minute, and always in the totals.
    fn write_gc_events(&mut self, window: &GcWindow) {
        let Some(sink) = &mut self.gc_events else {
            return;
        };
        let pid = std::process::id();
        if let Err(e) = sink.write_rows(window.events.iter().map(|e| e.csv_fields(pid))) {
            let message = format!(
                "cannot write GC events to {}: {e}; GC events CSV output stopped, sampling goes on",
                sink.path().display()
            );
            self.gc_events = None;
            logging::warn_detached(&message);
            return;
        }
        self.events_dropped_unreported += window.dropped_events;
        let due = self
            .last_drop_warning
            .is_none_or(|t| t.elapsed() >= Duration::from_secs(60));
        if self.events_dropped_unreported > 0 && due {
            let message = format!(
                "{} collections are missing from the GC events CSV {} (more than {} in one \
                 interval; a shorter interval keeps them); the samples' gcN_collections count them",
                self.events_dropped_unreported,
                sink.path().display(),
                GcWindow::MAX_EVENTS
            );
            self.events_dropped_unreported = 0;
            self.last_drop_warning = Some(Instant::now());
            logging::warn_detached(&message);
        }
    }

    /// Closes the interval into a sample (all but the GC-state fields, which need the
    /// interpreter) and adds it to the totals. Pure Rust: agent locks only for the swaps.
    fn close_interval(&mut self, counters: ProcessCounters, last: bool) -> (Sample, GcWindow) {
        let now = Instant::now();
        let elapsed = (now - self.last_sample).as_secs_f64().max(1e-9);
        // Last interval's window, emptied, is where this one's requests are swapped in.
        self.requests.clear();
        self.shared.swap_request_window(&mut self.requests);
        let requests = &self.requests;
        let gc_window = self.shared.take_gc_window(last);
        let rates = self.reader.rates(&self.last_counters, &counters, elapsed);
        let latency = requests.summary();
        // Request figures exist only where a middleware counts them.
        let served = self.shared.serves_requests.load(Ordering::Relaxed);
        let per_s = |n: u64| served.then_some(n as f64 / elapsed);
        // The request and GC totals were counted as each request and collection ended.
        self.shared.samples.fetch_add(1, Ordering::Relaxed);
        self.last_sample = now;
        self.last_counters = counters;
        let sample = Sample {
            time: unix_now(),
            cpu: rates.cpu_percent,
            mem: rates.mem_percent,
            disk_read: rates.disk_read_per_s,
            disk_write: rates.disk_write_per_s,
            net_sent: per_s(requests.bytes_out),
            net_recv: per_s(requests.bytes_in),
            rps: per_s(requests.requests),
            p95: latency.p95,
            p99: latency.p99,
            gc_triggered: gc_window.any(),
            interval_s: elapsed,
            pid: std::process::id(),
            rss_bytes: rates.rss_bytes,
            requests: served.then_some(requests.requests),
            errors: served.then_some(requests.errors),
            in_flight: self.shared.in_flight.load(Ordering::Relaxed),
            p50: latency.p50,
            max_latency: latency.max,
            gc: gc_window.generations,
            policy: self.policy.spec().to_string(),
            requests_gc_overlap: requests.gc_overlap,
            requests_gc2_overlap: requests.gc2_overlap,
            ..Sample::default()
        };
        (sample, gc_window)
    }

    /// With the interpreter: reads the collector's state into the sample and lets the policy
    /// act on it, except on the `last` sample, at stop: a collection then would come after the
    /// last window of GC events was written, and the run is over. The policy's own collection
    /// shows in the next interval's statistics.
    fn decide_on_sample(
        &mut self,
        py: Python<'_>,
        sample: &mut Sample,
        last: bool,
    ) -> Result<(), String> {
        let shared = self.shared.clone();
        let mut gc = PyGc::new(py, &shared)?;
        sample.gc_count = gc.count()?;
        sample.gc_enabled = gc.is_enabled()?;
        if !last {
            let heap_free = self.heap_free(sample.rss_bytes);
            let arrivals = self.arrivals();
            let obs = Observation {
                elapsed: self.started.elapsed(),
                rss_bytes: sample.rss_bytes,
                heap_free_bytes: heap_free,
                gc_count: sample.gc_count,
                collections: Some(self.shared.collections()),
                sample: Some(sample),
                traffic: self.traffic(&arrivals),
            };
            let acted = self.act(&mut gc, &obs);
            self.arrivals = arrivals;
            acted?;
        }
        if let Some(decision) = self.policy.last_decision() {
            sample.model_output = Some(decision.output);
            sample.model_fired = decision.fired;
        }
        if let Some(last) = self.actions.last() {
            sample.policy_action = last.action.clone();
            sample.policy_reason = last.reason.clone();
        }
        sample.policy_actions = self.actions.len() as u64;
        self.actions.clear();
        Ok(())
    }
}

/// Runs the policy's start with the thread attached; used at start and in a fork child.
pub fn start_policy(
    py: Python<'_>,
    shared: &Shared,
    policy: &mut dyn Policy,
    reader: &ProcessReader,
) -> Result<Vec<Action>, String> {
    let mut gc = PyGc::new(py, shared)?;
    let obs = Observation {
        elapsed: Duration::ZERO,
        rss_bytes: reader.read().rss_bytes,
        heap_free_bytes: neurogc_core::process::malloc_free_bytes(),
        gc_count: gc.count()?,
        ..Observation::default()
    };
    let actions = policy.start(&mut gc, &obs)?;
    log_loud(&gc, &actions);
    Ok(actions)
}

/// Logs the actions that are warnings for the service's owner (Python's `logging`).
fn log_loud(gc: &PyGc<'_, '_>, actions: &[Action]) {
    for loud in actions.iter().filter(|a| a.loud) {
        logging::warn(gc.py(), &format!("{}: {}", loud.action, loud.reason));
    }
}

/// Captures the collector's settings with the thread attached.
pub fn capture_original(py: Python<'_>, shared: &Shared) -> Result<OriginalGc, String> {
    let mut gc = PyGc::new(py, shared)?;
    OriginalGc::capture(&mut gc as &mut dyn GcControl)
}
