//! The memory guard: a safety net around any policy that turns automatic collection off.
//!
//! It runs a full collection when RSS passes a byte budget or when the young generation's count
//! (`gc.get_count()[0]`: net container allocations since the last collection, which keeps growing
//! while automatic GC is off) passes an object budget. After an RSS-triggered collection the budget
//! re-arms above the post-collection RSS, so live (non-garbage) growth cannot cause a collection storm.

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

/// Headroom the RSS budget keeps above the post-collection RSS after it fires.
const REARM_FACTOR: f64 = 1.25;

/// Wraps `inner`, adding the guard's checks to every tick.
pub struct MemoryGuard {
    inner: Box<dyn Policy>,
    config: GuardConfig,
    rss_budget: u64,
    last_check: Duration,
}

impl MemoryGuard {
    pub fn new(inner: Box<dyn Policy>, config: GuardConfig) -> Self {
        MemoryGuard {
            inner,
            config,
            rss_budget: u64::MAX,
            last_check: Duration::ZERO,
        }
    }

    /// The RSS budget in force (after start).
    pub fn rss_budget(&self) -> u64 {
        self.rss_budget
    }

    fn check(
        &mut self,
        gc: &mut dyn GcControl,
        obs: &Observation,
    ) -> Result<Option<Action>, GcError> {
        self.last_check = obs.elapsed;
        let young = obs.gc_count[0];
        if young > 0 && young as u64 > self.config.young_budget {
            let reason = format!(
                "guard: young generation count {young} > budget {}",
                self.config.young_budget
            );
            return collect_full(gc, Trigger::Guard, reason).map(Some);
        }
        if let Some(rss) = obs.rss_bytes.filter(|&rss| rss > self.rss_budget) {
            let reason = format!(
                "guard: rss {} MiB > budget {} MiB",
                rss >> 20,
                self.rss_budget >> 20
            );
            let action = collect_full(gc, Trigger::Guard, reason)?;
            // Re-arm above what is live now; the next RSS reading is taken at the next check.
            self.rss_budget = self.rss_budget.max((rss as f64 * REARM_FACTOR) as u64);
            return Ok(Some(action));
        }
        Ok(None)
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
        let guard = self.last_check + self.config.check_every;
        Some(self.inner.next_tick().map_or(guard, |t| t.min(guard)))
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
    fn fires_on_rss_and_rearms_above_live_memory() {
        let mut gc = RecordingGc::default();
        let mut g = guarded(Some(200 << 20), 1_000_000);
        g.start(&mut gc, &at(0.0)).unwrap();
        let mut obs = at(1.0);
        obs.rss_bytes = Some(300 << 20);
        let a = g.tick(&mut gc, &obs).unwrap();
        assert_eq!(a.len(), 1);
        assert!(
            a[0].reason.contains("rss 300 MiB > budget 200 MiB"),
            "{a:?}"
        );
        assert_eq!(g.rss_budget(), 375 << 20);
        // Still 300 MiB live: no storm.
        obs.elapsed = Duration::from_secs(2);
        assert!(g.tick(&mut gc, &obs).unwrap().is_empty());
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
    fn asks_for_ticks_at_its_check_rate() {
        let mut gc = RecordingGc::default();
        let mut g = guarded(None, 1000);
        g.start(&mut gc, &at(0.0)).unwrap();
        assert_eq!(g.next_tick(), Some(Duration::from_millis(250)));
    }
}
