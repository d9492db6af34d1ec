//! State shared between the Python threads that feed the agent and its sampler thread.
//!
//! Every lock here is held for a few instructions and never across a call into Python.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Instant;

use crate::fork::ForkGate;
use neurogc_core::gcstats::{self, CollectionCause, GcEvent, GcTotals, GcWindow};
use neurogc_core::latency::RequestWindow;
use neurogc_core::overlap::GcEpochs;
use neurogc_core::policy::Intent;
use neurogc_core::process::thread_cpu_ms;
use neurogc_core::prometheus::{AgentTotals, RequestTotals};
use neurogc_core::sample::Sample;
use neurogc_core::traffic::ArrivalRing;
pub use neurogc_units::unix_now;

/// A collection whose "start" callback has fired but not its "stop".
#[derive(Clone, Copy, Debug)]
struct Pending {
    started: Instant,
    /// The collecting thread's CPU time then, ms, for a full collection (see
    /// [`neurogc_core::gcstats::pause_ns`]). Not for young and middle ones: the clock is a
    /// system call (about 0.5 µs), and a loop can run thousands of them a second.
    cpu_ms: Option<f64>,
    start_time: f64,
    generation: u8,
    in_flight: Option<u32>,
}

#[derive(Default)]
pub struct GcState {
    pending: Option<Pending>,
    pub window: GcWindow,
    /// Since the agent started: counted with the window, so a scrape reads them current.
    pub totals: GcTotals,
    /// Set when the sampler took its last window: later collections are not recorded, so every
    /// recorded one reaches a sample and the events CSV.
    closed: bool,
}

/// Fault injection for the tests of containment (see `NativeAgent::_inject_fault`).
pub const FAULT_SAMPLER_PANIC: u8 = 1;
pub const FAULT_REQUEST_PANIC: u8 = 2;

/// Finished requests: the interval's window (taken by the sampler) and the totals since start,
/// both counted under one lock as each request ends.
#[derive(Default)]
pub struct Requests {
    pub window: RequestWindow,
    pub totals: RequestTotals,
}

/// What the policy set the collector to, as read back right after it set it: at stop, a setting
/// is restored only if the policy changed it and it still reads so (the application may have
/// changed it since). Atomics, so a fork child can read its parent's without a lock.
#[derive(Default)]
pub struct Applied {
    threshold_set: AtomicBool,
    threshold: [AtomicU64; 3],
    /// 0: never set; 1: disabled; 2: enabled.
    enabled: AtomicU8,
}

impl Applied {
    pub fn set_threshold(&self, threshold: [u64; 3]) {
        for (slot, t) in self.threshold.iter().zip(threshold) {
            slot.store(t, Ordering::Relaxed);
        }
        self.threshold_set.store(true, Ordering::Relaxed);
    }

    pub fn threshold(&self) -> Option<[u64; 3]> {
        self.threshold_set
            .load(Ordering::Relaxed)
            .then(|| std::array::from_fn(|i| self.threshold[i].load(Ordering::Relaxed)))
    }

    pub fn set_enabled(&self, enabled: bool) {
        self.enabled.store(1 + u8::from(enabled), Ordering::Relaxed);
    }

    pub fn enabled(&self) -> Option<bool> {
        match self.enabled.load(Ordering::Relaxed) {
            0 => None,
            v => Some(v == 2),
        }
    }

    /// Takes over another's record (a fork child inherits what its parent's policy set).
    pub fn copy_from(&self, other: &Applied) {
        if let Some(t) = other.threshold() {
            self.set_threshold(t);
        }
        if let Some(e) = other.enabled() {
            self.set_enabled(e);
        }
    }
}

#[derive(Default)]
pub struct Shared {
    pub requests: Mutex<Requests>,
    pub gc: Mutex<GcState>,
    pub in_flight: AtomicI64,
    /// A middleware feeds this agent requests: without one, request columns are unmeasured.
    pub serves_requests: AtomicBool,
    /// Recent request arrivals, on `origin`'s clock (the scheduler's quiet windows).
    pub arrivals: ArrivalRing,
    pub origin: Origin,
    /// Collection epochs, for the requests that overlapped a collection.
    pub epochs: GcEpochs,
    /// Collections finished per generation since start: what a policy may know without the
    /// interpreter (`Observation::collections`).
    pub collections: [AtomicU64; 3],
    /// Which thread is in a collection, and whether a fork is about to happen.
    pub fork_gate: ForkGate,
    /// Set while the sampler runs a collection for the policy, so the callback can attribute it.
    pub policy_collecting: AtomicBool,
    /// Why the policy runs the collection under way (set with `policy_collecting`).
    pub policy_intent: Mutex<Option<Intent>>,
    pub latest: Mutex<Option<Sample>>,
    /// Samples taken and policy actions, since start.
    pub samples: AtomicU64,
    pub policy_actions: AtomicU64,
    /// What the policy set the collector to (see [`Applied`]).
    pub applied: Applied,
    stop_requested: Mutex<bool>,
    wake: Condvar,
    failed_flag: AtomicBool,
    failure: Mutex<Option<String>>,
    pub fault: AtomicU8,
}

/// The origin of the arrivals' clock: when the shared state was made.
pub struct Origin(Instant);

impl Default for Origin {
    fn default() -> Self {
        Origin(Instant::now())
    }
}

impl Origin {
    /// Nanoseconds since the origin.
    pub fn ns(&self) -> u64 {
        self.0.elapsed().as_nanos() as u64
    }
}

/// Locks ignoring poison: a panic elsewhere must not cascade into every later caller.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Shared {
    pub fn is_failed(&self) -> bool {
        self.failed_flag.load(Ordering::Relaxed)
    }

    /// Records the first failure and wakes the sampler, which logs it and restores the collector.
    pub fn fail(&self, reason: String) {
        let mut failure = lock(&self.failure);
        if failure.is_none() {
            *failure = Some(reason);
        }
        drop(failure);
        self.failed_flag.store(true, Ordering::Relaxed);
        self.wake.notify_all();
    }

    pub fn failure(&self) -> Option<String> {
        lock(&self.failure).clone()
    }

    pub fn request_stop(&self) {
        *lock(&self.stop_requested) = true;
        self.wake.notify_all();
    }

    /// Sleeps until `deadline`, a stop request or a failure; returns true if the sampler should exit.
    pub fn sleep_until(&self, deadline: Instant) -> bool {
        let mut stop = lock(&self.stop_requested);
        loop {
            if *stop || self.is_failed() {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            stop = self
                .wake
                .wait_timeout(stop, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Records a finished request; `token` is what [`GcEpochs::token`] gave at its start (`None`:
    /// unknown, counted as no overlap).
    pub fn record_request(
        &self,
        latency_ns: u64,
        bytes_in: u64,
        bytes_out: u64,
        error: bool,
        token: Option<u64>,
    ) {
        let overlap = token.map(|t| self.epochs.overlap(t)).unwrap_or_default();
        let mut requests = lock(&self.requests);
        requests
            .window
            .record(latency_ns, bytes_in, bytes_out, error, overlap);
        requests
            .totals
            .record(latency_ns, bytes_in, bytes_out, error, overlap);
    }

    /// The totals since start, as they are now (each read under its own lock: a value never
    /// moves between them, so a reading is never lower than an earlier one).
    pub fn totals(&self) -> AgentTotals {
        AgentTotals {
            requests: lock(&self.requests).totals.clone(),
            gc: lock(&self.gc).totals.clone(),
            policy_actions: self.policy_actions.load(Ordering::Relaxed),
            samples: self.samples.load(Ordering::Relaxed),
            serves_requests: self.serves_requests.load(Ordering::Relaxed),
        }
    }

    pub fn gc_started(&self, generation: u8) {
        self.fork_gate.collection_started();
        self.epochs.started(generation);
        let in_flight = self.serves_requests.load(Ordering::Relaxed).then(|| {
            u32::try_from(self.in_flight.load(Ordering::Relaxed).max(0)).unwrap_or(u32::MAX)
        });
        // The wall clock first: a span written as `time` + `pause_ms` then lies inside the
        // collection even when the thread is preempted between the clock reads (the CPU clock is
        // a system call, whose return is a preemption point). Read after, a preemption there put
        // the span's end past the collection's, and staggered workers' spans seemed to overlap.
        let start_time = unix_now();
        let started = Instant::now();
        let pending = Pending {
            started,
            cpu_ms: (generation == 2).then(thread_cpu_ms),
            start_time,
            generation,
            in_flight,
        };
        let mut gc = lock(&self.gc);
        if !gc.closed {
            gc.pending = Some(pending);
        }
    }

    pub fn gc_stopped(&self, generation: u8, collected: u64, uncollectable: u64) {
        let stopped = Instant::now();
        let cpu_at_stop = (generation == 2).then(thread_cpu_ms);
        self.fork_gate.collection_stopped();
        self.epochs.stopped();
        if let Some(n) = self.collections.get(usize::from(generation)) {
            n.fetch_add(1, Ordering::Relaxed);
        }
        let (cause, intent) = if self.policy_collecting.load(Ordering::Relaxed) {
            (CollectionCause::Policy, lock(&self.policy_intent).clone())
        } else {
            (CollectionCause::Runtime, None)
        };
        let mut gc = lock(&self.gc);
        if gc.closed {
            return;
        }
        // A stop without its start (the agent began mid-collection) has no measurable pause.
        let (pause_ns, start_time, in_flight) = match gc.pending.take() {
            Some(p) if p.generation == generation => {
                let wall = u64::try_from((stopped - p.started).as_nanos()).unwrap_or(u64::MAX);
                let pause = match (p.cpu_ms, cpu_at_stop) {
                    (Some(start), Some(stop)) => {
                        gcstats::pause_ns(wall, ((stop - start).max(0.0) * 1e6) as u64)
                    }
                    _ => wall,
                };
                (pause, p.start_time, p.in_flight)
            }
            _ => (0, unix_now(), None),
        };
        let event = GcEvent {
            start_time,
            generation,
            pause_ns,
            collected,
            uncollectable,
            cause,
            in_flight,
            intent,
        };
        // The totals first: the window keeps the event itself.
        let dropped = gc.window.events.len() >= GcWindow::MAX_EVENTS;
        gc.totals.record(&event, dropped);
        gc.window.record(event);
    }

    /// Collections finished per generation since start.
    pub fn collections(&self) -> [u64; 3] {
        self.collections
            .each_ref()
            .map(|n| n.load(Ordering::Relaxed))
    }

    /// Takes the window's collections; with `last`, later collections are no longer recorded.
    pub fn take_gc_window(&self, last: bool) -> GcWindow {
        let mut gc = lock(&self.gc);
        gc.closed |= last;
        std::mem::take(&mut gc.window)
    }

    /// Swaps the interval's requests into `window`, which must come in empty: the request path
    /// waits on the lock for a swap, never for an allocation.
    pub fn swap_request_window(&self, window: &mut RequestWindow) {
        std::mem::swap(&mut lock(&self.requests).window, window);
    }
}
