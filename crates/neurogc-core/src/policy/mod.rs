//! GC policies: what NeuroGC does to CPython's collector.
//!
//! A policy is written as a spec string (`default`, `threshold:T0,T1,T2`, `periodic:SECS`,
//! `freeze[:WARMUP_SECS]`), parsed and validated by [`PolicySpec`], and built into a [`Policy`].
//! Policies act only through [`GcControl`], which the agent implements over CPython's `gc` module,
//! so their logic is testable here without Python. Any policy that turns automatic collection off
//! is wrapped in a [`guard::MemoryGuard`], so memory cannot grow without bound.

pub mod explore;
pub mod guard;
mod line;
pub mod scheduler;
pub mod seed;
mod simple;
pub mod spec;
pub mod stagger;
pub mod young;

use crate::process::thread_cpu_ms;
use std::sync::Arc;
use std::time::Duration;

pub use explore::ExplorePolicy;
pub use guard::{GuardConfig, MemoryGuard};
pub use scheduler::{
    BurstWindows, MiddleCollections, PauseDrift, Scheduler, SchedulerConfig, TailCadence,
};
pub use seed::SeedPolicy;
pub use simple::{DefaultPolicy, FreezePolicy, GcOffPolicy, PeriodicPolicy, ThresholdPolicy};
pub use spec::{PolicySpec, SpecError};

/// A failed call into the runtime's GC (a Python exception, rendered).
pub type GcError = String;

/// Why a policy runs a collection: recorded with the collection (the GC events' `trigger`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// The warm-up is over: collect, then freeze the warm heap.
    Freeze,
    /// A fixed period elapsed (`periodic`).
    Timer,
    /// The memory guard: RSS or the young count over budget.
    Guard,
    /// The seed's model output crossed its threshold.
    Model,
    /// The scheduler's cadence came due.
    Due,
    /// Nothing due, but a quiet window made the pause free.
    Quiet,
    /// Memory grew past its share since the last full collection.
    Growth,
    /// The frozen part went stale: unfreeze, collect, freeze.
    Stale,
    /// A collection at a random moment (`explore`), to learn from.
    Explore,
}

impl Trigger {
    pub const ALL: [Trigger; 9] = [
        Trigger::Freeze,
        Trigger::Timer,
        Trigger::Guard,
        Trigger::Model,
        Trigger::Due,
        Trigger::Quiet,
        Trigger::Growth,
        Trigger::Stale,
        Trigger::Explore,
    ];

    /// The `trigger` column of the GC events CSV.
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Freeze => "freeze",
            Trigger::Timer => "timer",
            Trigger::Guard => "guard",
            Trigger::Model => "model",
            Trigger::Due => "due",
            Trigger::Quiet => "quiet",
            Trigger::Growth => "growth",
            Trigger::Stale => "stale",
            Trigger::Explore => "explore",
        }
    }

    pub fn parse(s: &str) -> Option<Trigger> {
        Trigger::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// What a policy expects of a collection it runs: why, and the pause it predicts (if it does).
#[derive(Clone, Debug, PartialEq)]
pub struct Intent {
    pub trigger: Trigger,
    pub predicted_ms: Option<f64>,
    /// The objects it expects the collection to free.
    pub predicted_freed: Option<f64>,
    /// Its reason in words, as the policy's action gives it (the GC events' `why`): a sample
    /// keeps only the last action of its interval, and a collection's row keeps its own.
    pub why: Option<Arc<str>>,
}

impl From<Trigger> for Intent {
    fn from(trigger: Trigger) -> Intent {
        Intent {
            trigger,
            predicted_ms: None,
            predicted_freed: None,
            why: None,
        }
    }
}

/// The operations a policy may perform on the collector.
pub trait GcControl {
    /// Runs a collection of `generation` (0–2) for `intent`; returns objects collected.
    fn collect(&mut self, generation: u8, intent: Intent) -> Result<u64, GcError>;
    fn is_enabled(&mut self) -> Result<bool, GcError>;
    fn set_enabled(&mut self, enabled: bool) -> Result<(), GcError>;
    fn threshold(&mut self) -> Result<[u64; 3], GcError>;
    fn set_threshold(&mut self, threshold: [u64; 3]) -> Result<(), GcError>;
    /// Moves every tracked object to the permanent generation (`gc.freeze()`).
    fn freeze(&mut self) -> Result<(), GcError>;
    /// Moves the permanent generation back into the oldest one (`gc.unfreeze()`).
    fn unfreeze(&mut self) -> Result<(), GcError>;
    /// Objects in the permanent generation (`gc.get_freeze_count()`); `None` where unknown.
    fn freeze_count(&mut self) -> Option<u64> {
        None
    }
    /// Which collector the interpreter runs.
    fn collector(&mut self) -> Result<Collector, GcError> {
        Ok(Collector::Generational)
    }
    /// The process's resident set now (right after a collection, say); `None` where unknown.
    fn rss_bytes(&mut self) -> Option<u64> {
        None
    }
    /// Hands memory the allocator keeps free back to the system (glibc's `malloc_trim`), so
    /// that RSS after a collection shows live memory; a no-op where there is no such call.
    fn release_free_memory(&mut self) {}
    /// The clock a policy times its collections by, ms: this thread's CPU time (what a
    /// collection costs; a wall clock would also count a stopped or descheduled process). A
    /// simulated collector answers with its simulated clock.
    fn cpu_ms(&mut self) -> f64 {
        thread_cpu_ms()
    }
}

/// What a policy sees when it is asked to decide.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Observation<'a> {
    /// Time since the agent started.
    pub elapsed: Duration,
    pub rss_bytes: Option<u64>,
    /// Memory the C allocator holds free within the RSS (see
    /// [`crate::process::malloc_free_bytes`]); `None` where unknown.
    pub heap_free_bytes: Option<u64>,
    /// `gc.get_count()` (zeros when a policy is asked before attaching, see [`Policy::ready`]).
    pub gc_count: [i64; 3],
    /// Collections finished per generation since the agent started, counted by its GC callback
    /// (so known without the interpreter); `None` where nothing counts them.
    pub collections: Option<[u64; 3]>,
    /// The interval's sample, at sample ticks (None at the ticks a policy asked for in between).
    pub sample: Option<&'a crate::sample::Sample>,
    /// Requests in flight and recent arrivals (None where no middleware counts them).
    pub traffic: Option<crate::traffic::Traffic<'a>>,
}

impl Observation<'_> {
    /// The memory the process's heap uses: RSS less what the allocator holds free (freed memory
    /// glibc keeps, which the next allocations reuse before RSS grows); RSS where that is
    /// unknown. It falls after a collection that freed memory, where RSS stays at its peak.
    pub fn in_use_bytes(&self) -> Option<u64> {
        self.rss_bytes
            .map(|rss| rss.saturating_sub(self.heap_free_bytes.unwrap_or(0)))
    }
}

/// How the running interpreter collects, which decides what a policy can control safely.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Collector {
    /// Three generations (3.8–3.13, 3.14.5+): young collections automatic, full ones by the
    /// 25 % rule, which `threshold2` can hold back.
    Generational,
    /// 3.14.0–3.14.4: young collections scan an increment of the old generation each; no full
    /// collection can be held back without turning automatic collection off.
    Incremental,
    /// Free-threaded builds: every collection scans the whole heap.
    FreeThreaded,
}

/// A model-driven policy's latest output and whether it acted on it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decision {
    pub output: f64,
    pub fired: bool,
}

/// Something a policy did, and why; recorded in the sample.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Action {
    pub action: String,
    pub reason: String,
    /// A warning for the service's owner: the agent also logs it (Python's `logging`).
    pub loud: bool,
}

impl Action {
    pub fn new(action: impl Into<String>, reason: impl Into<String>) -> Self {
        Action {
            action: action.into(),
            reason: reason.into(),
            loud: false,
        }
    }

    /// An action the agent also logs as a warning.
    pub fn warning(action: impl Into<String>, reason: impl Into<String>) -> Self {
        Action {
            loud: true,
            ..Action::new(action, reason)
        }
    }
}

/// A GC policy. The agent calls `start` once (synchronously, so a failure surfaces at start-up),
/// then `tick` at every sample and whenever [`Policy::next_tick`] asks. The agent, not the policy,
/// restores the collector's original state when it stops.
pub trait Policy: Send {
    /// The spec this policy was built from.
    fn spec(&self) -> &str;
    fn start(&mut self, gc: &mut dyn GcControl, obs: &Observation) -> Result<Vec<Action>, GcError>;
    fn tick(&mut self, gc: &mut dyn GcControl, obs: &Observation) -> Result<Vec<Action>, GcError>;
    /// The next time (since agent start) at which the policy wants a tick besides the sample ticks.
    fn next_tick(&self) -> Option<Duration> {
        None
    }
    /// Sees each interval's sample before `tick`, with the interpreter released: a model's
    /// forward pass belongs here, so it never holds the GIL.
    fn observe(&mut self, _sample: &crate::sample::Sample) {}
    /// The model's output at the last sample tick, for policies that have a model.
    fn last_decision(&self) -> Option<Decision> {
        None
    }
    /// Asked without the interpreter at the ticks between samples (`gc_count` is not read):
    /// whether `tick` would act now. A policy that decides often says no cheaply, so the agent
    /// attaches only to act. By default: when the tick it asked for has come (a tick asked for
    /// by a wrapper, such as the guard's RSS checks, is not its own).
    fn ready(&mut self, obs: &Observation) -> bool {
        self.next_tick().is_some_and(|t| obs.elapsed >= t)
    }
}

/// Runs a full collection on behalf of a policy and describes it.
pub(crate) fn collect_full(
    gc: &mut dyn GcControl,
    trigger: Trigger,
    reason: impl Into<String>,
) -> Result<Action, GcError> {
    let collected = gc.collect(2, trigger.into())?;
    Ok(Action::new(
        format!("collect(2) -> {collected}"),
        reason.into(),
    ))
}

#[cfg(test)]
pub(crate) mod testing {
    //! A recording GcControl for unit tests of policy logic; end-to-end tests use real CPython.
    use super::*;

    #[derive(Debug)]
    pub struct RecordingGc {
        pub enabled: bool,
        pub threshold: [u64; 3],
        pub calls: Vec<String>,
        /// The collector it says it is.
        pub collector: Collector,
        /// How long each collection takes.
        pub pause: Duration,
        /// What `rss_bytes` answers (after a collection).
        pub rss: Option<u64>,
        /// What each collection frees.
        pub freed: u64,
        /// What `freeze_count` answers.
        pub frozen: Option<u64>,
        /// Why each collection ran.
        pub triggers: Vec<Trigger>,
        /// Times free memory was handed back to the system.
        pub released: usize,
    }

    impl Default for RecordingGc {
        fn default() -> Self {
            RecordingGc {
                enabled: true,
                threshold: [700, 10, 10],
                calls: Vec::new(),
                collector: Collector::Generational,
                pause: Duration::ZERO,
                rss: None,
                freed: 0,
                frozen: None,
                triggers: Vec::new(),
                released: 0,
            }
        }
    }

    impl GcControl for RecordingGc {
        fn collect(&mut self, generation: u8, intent: Intent) -> Result<u64, GcError> {
            self.calls.push(format!("collect({generation})"));
            self.triggers.push(intent.trigger);
            std::thread::sleep(self.pause);
            Ok(self.freed)
        }
        fn freeze_count(&mut self) -> Option<u64> {
            self.frozen
        }
        fn collector(&mut self) -> Result<Collector, GcError> {
            Ok(self.collector)
        }
        fn rss_bytes(&mut self) -> Option<u64> {
            self.rss
        }
        fn release_free_memory(&mut self) {
            self.released += 1;
        }
        fn is_enabled(&mut self) -> Result<bool, GcError> {
            Ok(self.enabled)
        }
        fn set_enabled(&mut self, enabled: bool) -> Result<(), GcError> {
            self.calls.push(format!("set_enabled({enabled})"));
            self.enabled = enabled;
            Ok(())
        }
        fn threshold(&mut self) -> Result<[u64; 3], GcError> {
            Ok(self.threshold)
        }
        fn set_threshold(&mut self, threshold: [u64; 3]) -> Result<(), GcError> {
            self.calls.push(format!("set_threshold({threshold:?})"));
            self.threshold = threshold;
            Ok(())
        }
        fn freeze(&mut self) -> Result<(), GcError> {
            self.calls.push("freeze".into());
            Ok(())
        }
        fn unfreeze(&mut self) -> Result<(), GcError> {
            self.calls.push("unfreeze".into());
            Ok(())
        }
    }

    pub fn at(secs: f64) -> Observation<'static> {
        Observation {
            elapsed: Duration::from_secs_f64(secs),
            rss_bytes: Some(100 << 20),
            heap_free_bytes: None,
            gc_count: [0, 0, 0],
            collections: None,
            sample: None,
            traffic: None,
        }
    }
}
