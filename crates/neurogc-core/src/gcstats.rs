//! Per-generation GC statistics, accumulated from `gc.callbacks` start/stop pairs.

use crate::sample::GenerationSample;

/// CPython's generational GC has three generations (3.14.0–3.14.4 had two; they map onto 0 and 2).
pub const GENERATIONS: usize = 3;

/// Who asked for a collection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CollectionCause {
    /// Triggered by the runtime's thresholds or an explicit `gc.collect()` in the application.
    Other,
    /// Requested by the NeuroGC policy.
    Policy,
}

impl CollectionCause {
    pub fn as_str(self) -> &'static str {
        match self {
            CollectionCause::Other => "other",
            CollectionCause::Policy => "policy",
        }
    }
}

/// One finished collection.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GcEvent {
    /// Unix time (seconds) when the collection started.
    pub start_time: f64,
    pub generation: u8,
    pub pause_ns: u64,
    pub collected: u64,
    pub uncollectable: u64,
    pub cause: CollectionCause,
}

/// Collections finished since the window was last taken.
#[derive(Clone, Debug, Default)]
pub struct GcWindow {
    pub generations: [GenerationSample; GENERATIONS],
    /// The window's events, up to [`GcWindow::MAX_EVENTS`]; `dropped_events` counts the rest.
    pub events: Vec<GcEvent>,
    pub dropped_events: u64,
}

impl GcWindow {
    /// Bound on retained events per window, so a pathological gen0 storm cannot grow memory.
    pub const MAX_EVENTS: usize = 10_000;

    pub fn record(&mut self, event: GcEvent) {
        let g = usize::from(event.generation).min(GENERATIONS - 1);
        let gen = &mut self.generations[g];
        let pause_ms = event.pause_ns as f64 / 1e6;
        gen.collections += 1;
        gen.collected += event.collected;
        gen.uncollectable += event.uncollectable;
        gen.pause_ms_sum += pause_ms;
        gen.pause_ms_max = gen.pause_ms_max.max(pause_ms);
        if self.events.len() < Self::MAX_EVENTS {
            self.events.push(event);
        } else {
            self.dropped_events += 1;
        }
    }

    pub fn any(&self) -> bool {
        self.generations.iter().any(|g| g.collections > 0)
    }
}

/// Totals since the agent started, for the Prometheus counters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GcTotals {
    pub generations: [GenerationSample; GENERATIONS],
    pub policy_collections: u64,
}

impl GcTotals {
    pub fn add(&mut self, window: &GcWindow) {
        for (total, w) in self.generations.iter_mut().zip(window.generations.iter()) {
            total.collections += w.collections;
            total.collected += w.collected;
            total.uncollectable += w.uncollectable;
            total.pause_ms_sum += w.pause_ms_sum;
            total.pause_ms_max = total.pause_ms_max.max(w.pause_ms_max);
        }
        self.policy_collections += window
            .events
            .iter()
            .filter(|e| e.cause == CollectionCause::Policy)
            .count() as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(generation: u8, pause_ns: u64, collected: u64) -> GcEvent {
        GcEvent {
            start_time: 0.0,
            generation,
            pause_ns,
            collected,
            uncollectable: 0,
            cause: CollectionCause::Other,
        }
    }

    #[test]
    fn window_sums_and_maxes_per_generation() {
        let mut w = GcWindow::default();
        w.record(ev(0, 1_000_000, 3));
        w.record(ev(0, 3_000_000, 4));
        w.record(ev(2, 50_000_000, 100));
        assert_eq!(w.generations[0].collections, 2);
        assert_eq!(w.generations[0].collected, 7);
        assert!((w.generations[0].pause_ms_sum - 4.0).abs() < 1e-9);
        assert!((w.generations[0].pause_ms_max - 3.0).abs() < 1e-9);
        assert_eq!(w.generations[1].collections, 0);
        assert!((w.generations[2].pause_ms_max - 50.0).abs() < 1e-9);
        assert!(w.any());
    }

    #[test]
    fn events_are_bounded() {
        let mut w = GcWindow::default();
        for _ in 0..GcWindow::MAX_EVENTS + 5 {
            w.record(ev(0, 1, 0));
        }
        assert_eq!(w.events.len(), GcWindow::MAX_EVENTS);
        assert_eq!(w.dropped_events, 5);
        assert_eq!(
            w.generations[0].collections as usize,
            GcWindow::MAX_EVENTS + 5
        );
    }
}
