//! `explore[:MEAN]`: CPython's collector as it is, plus collections at random moments, so that a
//! collect run records what a collection costs and frees at moments the default would never
//! have chosen (`neurogc collect --explore`). The scheduler's model learns from them how a full
//! collection's pause and yield grow with the work since the one before
//! (`neurogc train --model scheduler`).
//!
//! The moments are a Poisson process (exponential gaps of mean MEAN, at least
//! [`MIN_GAP`] apart), each a full collection or, one time in four, a middle-generation one.
//! Every one is recorded with the trigger `explore`.

use std::time::Duration;

use neurogc_rng::Rng;

use super::{Action, GcControl, GcError, Observation, Policy, Trigger};

/// The mean gap between explored collections when the spec gives none.
pub const DEFAULT_EXPLORE_MEAN: Duration = Duration::from_secs(2);
/// Explored collections come at least this far apart.
pub const MIN_GAP: Duration = Duration::from_millis(100);

pub struct ExplorePolicy {
    spec: String,
    mean: Duration,
    next: Duration,
    rng: Rng,
}

impl ExplorePolicy {
    /// `seed` makes the moments reproducible (the agent seeds it from the process id).
    pub fn new(spec: impl Into<String>, mean: Duration, seed: u64) -> Self {
        ExplorePolicy {
            spec: spec.into(),
            mean,
            next: Duration::MAX,
            rng: Rng::new(seed),
        }
    }

    fn gap(&mut self) -> Duration {
        // Exponential: −mean·ln(U), U in (0, 1].
        let u = 1.0 - self.rng.next_f64();
        Duration::from_secs_f64(-self.mean.as_secs_f64() * u.ln()).max(MIN_GAP)
    }
}

impl Policy for ExplorePolicy {
    fn spec(&self) -> &str {
        &self.spec
    }

    fn start(&mut self, _: &mut dyn GcControl, obs: &Observation) -> Result<Vec<Action>, GcError> {
        self.next = obs.elapsed + self.gap();
        Ok(vec![Action::new(
            "explore",
            format!(
                "CPython collects as it would, and at random moments {:.1} s apart on average \
                 a full or middle-generation collection is added (trigger explore)",
                self.mean.as_secs_f64()
            ),
        )])
    }

    fn tick(&mut self, gc: &mut dyn GcControl, obs: &Observation) -> Result<Vec<Action>, GcError> {
        if obs.elapsed < self.next {
            return Ok(vec![]);
        }
        let generation = if self.rng.next_f64() < 0.25 { 1 } else { 2 };
        self.next = obs.elapsed + self.gap();
        let collected = gc.collect(generation, Trigger::Explore.into())?;
        Ok(vec![Action::new(
            format!("collect({generation}) -> {collected}"),
            "explore: a collection at a random moment",
        )])
    }

    fn next_tick(&self) -> Option<Duration> {
        Some(self.next)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{at, RecordingGc};
    use super::*;

    #[test]
    fn collects_at_random_moments_of_the_mean_gap() {
        let mut gc = RecordingGc::default();
        let mut p = ExplorePolicy::new("explore:1", Duration::from_secs(1), 7);
        p.start(&mut gc, &at(0.0)).unwrap();
        let mut collections = 0;
        let mut full = 0;
        for i in 1..=60_000 {
            let t = f64::from(i) * 0.01;
            for a in p.tick(&mut gc, &at(t)).unwrap() {
                collections += 1;
                full += usize::from(a.action.starts_with("collect(2)"));
            }
        }
        // 600 s at one a second on average (the 100 ms floor adds a little).
        assert!((500..=650).contains(&collections), "{collections}");
        // About three in four are full collections.
        let share = full as f64 / collections as f64;
        assert!((0.65..=0.85).contains(&share), "{share}");
        assert!(gc.triggers.iter().all(|&t| t == Trigger::Explore));
        assert_eq!(gc.triggers.len(), collections);
    }
}
