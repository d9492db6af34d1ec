//! The memory guard: a safety net around any policy that turns automatic collection off.
//!
//! It runs a full collection when RSS passes a byte budget or when the young generation's count
//! (`gc.get_count()[0]`: net container allocations since the last collection, which keeps growing
//! while automatic GC is off) passes an object budget. The RSS budget is a budget: it is never
//! raised. RSS is read every 50 ms (or `check=`, if shorter) without the interpreter, which is
//! attached only to collect or, every `check=`, to read the young count: garbage arriving at
//! 100 MiB/s overshoots the budget by a few MiB, not by a quarter of a second's worth.
//! A collection that brings RSS back under the budget freed garbage (memory the allocator keeps
//! free is handed back first, `malloc_trim`): the next may follow at once. One that leaves RSS
//! above it met live memory:
//! that is logged as a warning, once, and while RSS stays above the budget the guard's
//! collections are paced so that their pauses take at most 5 % of the time, so live memory above
//! the budget cannot make a collection storm. Collections for the young count are paced the same
//! way (a budget of a few objects checked every millisecond would otherwise collect every
//! millisecond).

use std::time::Duration;

use super::{collect_full, Action, GcControl, GcError, Observation, Policy, Trigger};

/// When the guard collects.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GuardConfig {
    /// RSS budget in bytes; `None`: twice the RSS at start, and at least 256 MiB above it.
    pub rss_budget: Option<u64>,
    /// Young-generation count budget.
    pub young_budget: u64,
    /// How often the guard checks between samples.
    pub check_every: Duration,
}

impl Default for GuardConfig {
    fn default() -> Self {
        GuardConfig {
            rss_budget: None,
            young_budget: 1_000_000,
            check_every: Duration::from_millis(250),
        }
    }
}

/// While RSS stays above the budget, RSS-triggered collections are at least this many times
/// their own pause apart (5 % of the time); young-count collections always are.
const GAP_PER_PAUSE: u32 = 20;

/// How often RSS is read (without the interpreter), unless `check=` is shorter.
const RSS_CHECK_EVERY: Duration = Duration::from_millis(50);

/// Wraps `inner`, adding the guard's checks to every tick.
pub struct MemoryGuard {
    inner: Box<dyn Policy>,
    config: GuardConfig,
    rss_budget: u64,
    /// The last full check (young count and RSS, with the interpreter).
    last_check: Duration,
    /// The last RSS reading.
    last_rss_check: Duration,
    /// The last check collected because of RSS; when the next such collection may run.
    collected_last: bool,
    rss_next: Duration,
    /// When the next young-count collection may run.
    young_next: Duration,
    /// Reported once: live memory above the budget.
    over_said: bool,
}

impl MemoryGuard {
    pub fn new(inner: Box<dyn Policy>, config: GuardConfig) -> Self {
        MemoryGuard {
            inner,
            config,
            rss_budget: u64::MAX,
            last_check: Duration::ZERO,
            last_rss_check: Duration::ZERO,
            collected_last: false,
            rss_next: Duration::ZERO,
            young_next: Duration::ZERO,
            over_said: false,
        }
    }

    /// The RSS budget in force (after start).
    pub fn rss_budget(&self) -> u64 {
        self.rss_budget
    }

    fn rss_every(&self) -> Duration {
        self.config.check_every.min(RSS_CHECK_EVERY)
    }

    fn over_budget_report(&mut self, rss: u64) -> Option<Action> {
        if self.over_said {
            return None;
        }
        self.over_said = true;
        Some(Action::warning(
            "over budget",
            format!(
                "rss {} MiB is still above the budget {} MiB after a full collection: live \
                 memory (or freed memory the allocator keeps) exceeds it; the guard keeps \
                 collecting within 5 % of the time, and the budget stays",
                rss >> 20,
                self.rss_budget >> 20
            ),
        ))
    }

    fn check(&mut self, gc: &mut dyn GcControl, obs: &Observation) -> Result<Vec<Action>, GcError> {
        self.last_check = obs.elapsed;
        self.last_rss_check = obs.elapsed;
        let young = obs.gc_count[0];
        if young > 0 && young as u64 > self.config.young_budget && obs.elapsed >= self.young_next {
            let reason = format!(
                "guard: young generation count {young} > budget {}",
                self.config.young_budget
            );
            let started = std::time::Instant::now();
            let action = collect_full(gc, Trigger::Guard, reason)?;
            self.young_next = obs.elapsed + started.elapsed() * GAP_PER_PAUSE;
            return Ok(vec![action]);
        }
        let Some(rss) = obs.rss_bytes.filter(|&rss| rss > self.rss_budget) else {
            self.collected_last = false;
            return Ok(Vec::new());
        };
        let mut actions = Vec::new();
        if self.collected_last {
            // Where RSS cannot be read right after a collection: still above at the next check.
            actions.extend(self.over_budget_report(rss));
        }
        if obs.elapsed >= self.rss_next {
            let reason = format!(
                "guard: rss {} MiB > budget {} MiB",
                rss >> 20,
                self.rss_budget >> 20
            );
            let started = std::time::Instant::now();
            actions.push(collect_full(gc, Trigger::Guard, reason)?);
            let pause = started.elapsed();
            let mut after = gc.rss_bytes();
            if after.is_some_and(|rss| rss > self.rss_budget) {
                // Freed payloads the allocator keeps (glibc returns little of its heap by
                // itself) are not live memory: hand them back before judging.
                gc.release_free_memory();
                after = gc.rss_bytes();
            }
            match after {
                // Garbage, and it is gone: the next collection may follow as soon as needed.
                Some(after) if after <= self.rss_budget => {
                    self.rss_next = obs.elapsed;
                    self.collected_last = false;
                }
                Some(after) => {
                    actions.extend(self.over_budget_report(after));
                    self.rss_next = obs.elapsed + pause * GAP_PER_PAUSE;
                    self.collected_last = false;
                }
                None => {
                    self.rss_next = obs.elapsed + pause * GAP_PER_PAUSE;
                    self.collected_last = true;
                }
            }
        }
        Ok(actions)
    }
}

impl Policy for MemoryGuard {
    fn spec(&self) -> &str {
        self.inner.spec()
    }

    fn start(&mut self, gc: &mut dyn GcControl, obs: &Observation) -> Result<Vec<Action>, GcError> {
        let start_rss = obs.rss_bytes.unwrap_or(0);
        self.rss_budget = self
            .config
            .rss_budget
            .unwrap_or_else(|| (start_rss * 2).max(start_rss + (256 << 20)));
        self.last_check = obs.elapsed;
        let mut actions = self.inner.start(gc, obs)?;
        actions.push(Action::new(
            format!(
                "guard armed: rss {} MiB, young {}",
                self.rss_budget >> 20,
                self.config.young_budget
            ),
            "automatic GC is off",
        ));
        Ok(actions)
    }

    fn tick(&mut self, gc: &mut dyn GcControl, obs: &Observation) -> Result<Vec<Action>, GcError> {
        let mut actions = self.inner.tick(gc, obs)?;
        // A collection by the inner policy already did what the guard would.
        if actions.is_empty() {
            actions.extend(self.check(gc, obs)?);
        } else {
            self.last_check = obs.elapsed;
        }
        Ok(actions)
    }

    fn next_tick(&self) -> Option<Duration> {
        let guard =
            (self.last_check + self.config.check_every).min(self.last_rss_check + self.rss_every());
        Some(self.inner.next_tick().map_or(guard, |t| t.min(guard)))
    }

    fn ready(&mut self, obs: &Observation) -> bool {
        if self.inner.ready(obs) {
            return true;
        }
        if obs.elapsed >= self.last_check + self.config.check_every {
            return true; // the young count needs the interpreter
        }
        if obs.elapsed < self.last_rss_check + self.rss_every() {
            return false;
        }
        self.last_rss_check = obs.elapsed;
        let over = obs.rss_bytes.is_some_and(|rss| rss > self.rss_budget);
        if !over {
            self.collected_last = false;
        }
        over && obs.elapsed >= self.rss_next
    }

    fn observe(&mut self, sample: &crate::sample::Sample) {
        self.inner.observe(sample)
    }

    fn last_decision(&self) -> Option<super::Decision> {
        self.inner.last_decision()
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{at, RecordingGc};
    use super::super::PeriodicPolicy;
    use super::*;

    fn at_rss(secs: f64, mib: u64) -> Observation<'static> {
        Observation {
            rss_bytes: Some(mib << 20),
            ..at(secs)
        }
    }

    fn guarded(rss_budget: Option<u64>, young: u64) -> MemoryGuard {
        MemoryGuard::new(
            Box::new(PeriodicPolicy::new(
                "periodic:100",
                Duration::from_secs(100),
            )),
            GuardConfig {
                rss_budget,
                young_budget: young,
                check_every: Duration::from_millis(250),
            },
        )
    }

    #[test]
    fn default_budget_is_twice_start_rss_and_at_least_256_mib_more() {
        let mut gc = RecordingGc::default();
        let mut g = guarded(None, 1000);
        g.start(&mut gc, &at(0.0)).unwrap();
        assert_eq!(g.rss_budget(), (100 << 20) + (256 << 20));
    }

    #[test]
    fn keeps_its_budget_and_says_when_live_memory_exceeds_it() {
        let mut gc = RecordingGc::default();
        let mut g = guarded(Some(200 << 20), 1_000_000);
        g.start(&mut gc, &at(0.0)).unwrap();
        let a = g.tick(&mut gc, &at_rss(1.0, 300)).unwrap();
        assert_eq!(a.len(), 1);
        assert!(
            a[0].reason.contains("rss 300 MiB > budget 200 MiB"),
            "{a:?}"
        );
        // Still above at the next check: said once, collected again, and the budget stays.
        let a = g.tick(&mut gc, &at_rss(1.25, 300)).unwrap();
        assert_eq!(a[0].action, "over budget", "{a:?}");
        assert!(a[1].reason.contains("guard: rss 300 MiB"), "{a:?}");
        assert_eq!(g.rss_budget(), 200 << 20);
        let a = g.tick(&mut gc, &at_rss(1.5, 300)).unwrap();
        assert!(a.iter().all(|x| x.action != "over budget"), "{a:?}");
        assert_eq!(gc.calls.iter().filter(|c| *c == "collect(2)").count(), 3);
        // Under the budget again: nothing.
        assert!(g.tick(&mut gc, &at_rss(5.0, 150)).unwrap().is_empty());
    }

    #[test]
    fn a_slow_collection_is_paced_to_five_percent_of_the_time() {
        let mut gc = RecordingGc {
            pause: Duration::from_millis(20),
            ..RecordingGc::default()
        };
        let mut g = guarded(Some(200 << 20), 1_000_000);
        g.start(&mut gc, &at(0.0)).unwrap();
        let over = |secs: f64| at_rss(secs, 300);
        g.tick(&mut gc, &over(1.0)).unwrap();
        // A pause of 20 ms or more: the next no sooner than 400 ms later.
        g.tick(&mut gc, &over(1.25)).unwrap();
        assert_eq!(gc.calls.iter().filter(|c| *c == "collect(2)").count(), 1);
        g.tick(&mut gc, &over(3.0)).unwrap();
        assert_eq!(gc.calls.iter().filter(|c| *c == "collect(2)").count(), 2);
    }

    #[test]
    fn fires_on_young_count() {
        let mut gc = RecordingGc::default();
        let mut g = guarded(None, 1000);
        g.start(&mut gc, &at(0.0)).unwrap();
        let mut obs = at(0.5);
        obs.gc_count = [1001, 0, 0];
        let a = g.tick(&mut gc, &obs).unwrap();
        assert!(a[0]
            .reason
            .contains("young generation count 1001 > budget 1000"));
        assert!(
            !gc.enabled,
            "the guard collects; it does not re-enable automatic GC"
        );
    }

    #[test]
    fn young_count_collections_are_paced_to_five_percent_of_the_time() {
        // young=1 checked every millisecond: without pacing, a full collection every check.
        let mut gc = RecordingGc {
            pause: Duration::from_millis(5),
            ..RecordingGc::default()
        };
        let mut g = guarded(None, 1);
        g.start(&mut gc, &at(0.0)).unwrap();
        for ms in 1..=200 {
            let mut obs = at(ms as f64 / 1000.0);
            obs.gc_count = [50, 0, 0];
            g.tick(&mut gc, &obs).unwrap();
        }
        let collections = gc.calls.iter().filter(|c| *c == "collect(2)").count();
        // 200 ms at one 5 ms pause per 100 ms or more.
        assert!((1..=2).contains(&collections), "{collections} collections");
    }

    #[test]
    fn reads_rss_often_without_the_interpreter_and_the_young_count_at_its_check_rate() {
        let mut gc = RecordingGc::default();
        let mut g = guarded(Some(200 << 20), 1000);
        g.start(&mut gc, &at(0.0)).unwrap();
        assert_eq!(g.next_tick(), Some(Duration::from_millis(50)));
        // Under the budget: no need for the interpreter until the young count is due.
        assert!(!g.ready(&at_rss(0.05, 100)));
        assert_eq!(g.next_tick(), Some(Duration::from_millis(100)));
        assert!(!g.ready(&at_rss(0.1, 100)));
        assert!(g.ready(&at_rss(0.15, 300)), "over the budget: collect");
        assert!(g.ready(&at_rss(0.25, 100)), "the young count is due");
    }

    #[test]
    fn a_collection_that_frees_the_excess_is_not_paced_and_one_that_does_not_says_so_loudly() {
        let mut gc = RecordingGc {
            pause: Duration::from_millis(20),
            rss: Some(150 << 20),
            ..RecordingGc::default()
        };
        let mut g = guarded(Some(200 << 20), 1_000_000);
        g.start(&mut gc, &at(0.0)).unwrap();
        let over = |secs: f64| at_rss(secs, 300);
        // Garbage arriving fast: each collection brings RSS back under, the next follows 50 ms
        // later although it paused 20 ms.
        g.tick(&mut gc, &over(1.0)).unwrap();
        assert!(g.ready(&over(1.05)));
        let a = g.tick(&mut gc, &over(1.05)).unwrap();
        assert_eq!(gc.calls.iter().filter(|c| *c == "collect(2)").count(), 2);
        assert!(a.iter().all(|x| !x.loud), "{a:?}");
        // Live memory above the budget: said at once, as a warning, after the collection (so
        // the sample shows it), once; then paced to 5 % of the time.
        gc.rss = Some(290 << 20);
        let a = g.tick(&mut gc, &over(1.1)).unwrap();
        assert_eq!(
            a.last().map(|x| (x.action.as_str(), x.loud)),
            Some(("over budget", true))
        );
        assert!(
            a[1].reason
                .contains("rss 290 MiB is still above the budget 200 MiB"),
            "{a:?}"
        );
        assert!(!g.ready(&over(1.15)), "paced: 20 x a 20 ms pause");
        let a = g.tick(&mut gc, &over(1.6)).unwrap();
        assert_eq!(gc.calls.iter().filter(|c| *c == "collect(2)").count(), 4);
        assert!(a.iter().all(|x| x.action != "over budget"), "{a:?}");
    }
}
