//! The policies that need no model: `default`, `threshold`, `periodic`, `freeze`.

use std::time::Duration;

use super::{collect_full, Action, GcControl, GcError, Observation, Policy, Trigger};

/// CPython as is: NeuroGC only observes.
pub struct DefaultPolicy {
    spec: String,
}

impl DefaultPolicy {
    pub fn new(spec: impl Into<String>) -> Self {
        DefaultPolicy { spec: spec.into() }
    }
}

impl Policy for DefaultPolicy {
    fn spec(&self) -> &str {
        &self.spec
    }
    fn start(&mut self, _: &mut dyn GcControl, _: &Observation) -> Result<Vec<Action>, GcError> {
        Ok(vec![])
    }
    fn tick(&mut self, _: &mut dyn GcControl, _: &Observation) -> Result<Vec<Action>, GcError> {
        Ok(vec![])
    }
}

/// `gc.set_threshold(...)` at start; values not given keep the runtime's current ones.
pub struct ThresholdPolicy {
    spec: String,
    values: Vec<u64>,
}

impl ThresholdPolicy {
    pub fn new(spec: impl Into<String>, values: Vec<u64>) -> Self {
        ThresholdPolicy {
            spec: spec.into(),
            values,
        }
    }
}

impl Policy for ThresholdPolicy {
    fn spec(&self) -> &str {
        &self.spec
    }
    fn start(&mut self, gc: &mut dyn GcControl, _: &Observation) -> Result<Vec<Action>, GcError> {
        let mut threshold = gc.threshold()?;
        for (slot, v) in threshold.iter_mut().zip(&self.values) {
            *slot = *v;
        }
        gc.set_threshold(threshold)?;
        Ok(vec![Action::new(
            format!(
                "set_threshold({}, {}, {})",
                threshold[0], threshold[1], threshold[2]
            ),
            "policy start",
        )])
    }
    fn tick(&mut self, _: &mut dyn GcControl, _: &Observation) -> Result<Vec<Action>, GcError> {
        Ok(vec![])
    }
}

/// Automatic collection off; a full collection every `every`.
pub struct PeriodicPolicy {
    spec: String,
    every: Duration,
    last: Duration,
}

impl PeriodicPolicy {
    pub fn new(spec: impl Into<String>, every: Duration) -> Self {
        PeriodicPolicy {
            spec: spec.into(),
            every,
            last: Duration::ZERO,
        }
    }
}

impl Policy for PeriodicPolicy {
    fn spec(&self) -> &str {
        &self.spec
    }
    fn start(&mut self, gc: &mut dyn GcControl, obs: &Observation) -> Result<Vec<Action>, GcError> {
        gc.set_enabled(false)?;
        self.last = obs.elapsed;
        Ok(vec![Action::new("gc.disable()", "policy start")])
    }
    fn tick(&mut self, gc: &mut dyn GcControl, obs: &Observation) -> Result<Vec<Action>, GcError> {
        if obs.elapsed < self.last + self.every {
            return Ok(vec![]);
        }
        self.last = obs.elapsed;
        Ok(vec![collect_full(
            gc,
            Trigger::Timer,
            format!("periodic: every {}s", self.every.as_secs_f64()),
        )?])
    }
    fn next_tick(&self) -> Option<Duration> {
        Some(self.last + self.every)
    }
}

/// `gc-off`: automatic collection off, no guard. A bound to measure against on bounded runs
/// (what a policy could gain at most by collecting less), never a policy for a service.
pub struct GcOffPolicy {
    spec: String,
}

impl GcOffPolicy {
    pub fn new(spec: impl Into<String>) -> Self {
        GcOffPolicy { spec: spec.into() }
    }
}

impl Policy for GcOffPolicy {
    fn spec(&self) -> &str {
        &self.spec
    }
    fn start(&mut self, gc: &mut dyn GcControl, _: &Observation) -> Result<Vec<Action>, GcError> {
        gc.set_enabled(false)?;
        // Said loudly: nothing bounds memory under it (every other policy that turns
        // collection off carries the guard).
        Ok(vec![Action::warning(
            "gc.disable()",
            "gc-off: a measuring bound with no memory guard, for bounded runs only; not a \
             policy for production",
        )])
    }
    fn tick(&mut self, _: &mut dyn GcControl, _: &Observation) -> Result<Vec<Action>, GcError> {
        Ok(vec![])
    }
}

/// After `warmup`: a full collection, then `gc.freeze()`, so the warm heap is never scanned again.
pub struct FreezePolicy {
    spec: String,
    warmup: Duration,
    frozen: bool,
}

impl FreezePolicy {
    pub fn new(spec: impl Into<String>, warmup: Duration) -> Self {
        FreezePolicy {
            spec: spec.into(),
            warmup,
            frozen: false,
        }
    }
}

impl Policy for FreezePolicy {
    fn spec(&self) -> &str {
        &self.spec
    }
    fn start(&mut self, gc: &mut dyn GcControl, obs: &Observation) -> Result<Vec<Action>, GcError> {
        self.tick(gc, obs)
    }
    fn tick(&mut self, gc: &mut dyn GcControl, obs: &Observation) -> Result<Vec<Action>, GcError> {
        if self.frozen || obs.elapsed < self.warmup {
            return Ok(vec![]);
        }
        self.frozen = true;
        let reason = format!("freeze: warm-up of {}s over", self.warmup.as_secs_f64());
        let collected = collect_full(gc, Trigger::Freeze, reason.clone())?;
        gc.freeze()?;
        Ok(vec![collected, Action::new("gc.freeze()", reason)])
    }
    fn next_tick(&self) -> Option<Duration> {
        (!self.frozen).then_some(self.warmup)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{at, RecordingGc};
    use super::*;

    #[test]
    fn threshold_sets_given_values_and_keeps_the_rest() {
        let mut gc = RecordingGc::default();
        let mut p = ThresholdPolicy::new("threshold:5000", vec![5000]);
        let actions = p.start(&mut gc, &at(0.0)).unwrap();
        assert_eq!(gc.threshold, [5000, 10, 10]);
        assert_eq!(actions[0].action, "set_threshold(5000, 10, 10)");
    }

    #[test]
    fn periodic_disables_then_collects_on_schedule() {
        let mut gc = RecordingGc::default();
        let mut p = PeriodicPolicy::new("periodic:2", Duration::from_secs(2));
        p.start(&mut gc, &at(0.0)).unwrap();
        assert!(!gc.enabled);
        assert!(p.tick(&mut gc, &at(1.0)).unwrap().is_empty());
        assert_eq!(p.next_tick(), Some(Duration::from_secs(2)));
        let a = p.tick(&mut gc, &at(2.1)).unwrap();
        assert_eq!(a.len(), 1);
        assert!(a[0].action.starts_with("collect(2)"));
        assert!(p.tick(&mut gc, &at(3.0)).unwrap().is_empty());
        assert_eq!(p.tick(&mut gc, &at(4.2)).unwrap().len(), 1);
        assert_eq!(gc.calls, ["set_enabled(false)", "collect(2)", "collect(2)"]);
    }

    #[test]
    fn freeze_waits_for_warmup_then_collects_and_freezes_once() {
        let mut gc = RecordingGc::default();
        let mut p = FreezePolicy::new("freeze:3", Duration::from_secs(3));
        assert!(p.start(&mut gc, &at(0.0)).unwrap().is_empty());
        assert!(p.tick(&mut gc, &at(2.0)).unwrap().is_empty());
        assert_eq!(p.tick(&mut gc, &at(3.0)).unwrap().len(), 2);
        assert!(p.tick(&mut gc, &at(9.0)).unwrap().is_empty());
        assert_eq!(gc.calls, ["collect(2)", "freeze"]);
        assert_eq!(p.next_tick(), None);
    }

    #[test]
    fn gc_off_disables_and_never_collects() {
        let mut gc = RecordingGc::default();
        let mut p = GcOffPolicy::new("gc-off");
        let a = p.start(&mut gc, &at(0.0)).unwrap();
        assert!(a[0].reason.contains("no memory guard"));
        assert!(p.tick(&mut gc, &at(1e6)).unwrap().is_empty());
        assert_eq!(gc.calls, ["set_enabled(false)"]);
        assert_eq!(p.next_tick(), None);
    }

    #[test]
    fn freeze_without_warmup_acts_at_start() {
        let mut gc = RecordingGc::default();
        let mut p = FreezePolicy::new("freeze:0", Duration::ZERO);
        assert_eq!(p.start(&mut gc, &at(0.0)).unwrap().len(), 2);
    }
}
