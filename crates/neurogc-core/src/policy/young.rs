//! The young generation's threshold (`threshold0`), chosen by experiment on the service.
//!
//! With CPython's 700, request objects that outlive a few hundred allocations (a trace kept for a
//! second, a session, a cache entry) survive two young collections and reach the old generation,
//! where only a full collection frees them: the scheduler's collections of the unfrozen part then
//! pay for them, and the promoted garbage sets their size. A larger threshold0 lets such objects
//! die young, at the price of longer young pauses (a young collection scans what was allocated
//! since the last one). Services publish `set_threshold(50_000, ...)` for this (freqtrade, "20 %
//! faster Python with a single GC tweak"); on a service whose garbage dies young anyway it only
//! lengthens the young pauses. Which side wins is the service's, so the tuner measures it:
//!
//! after the freeze, and a first window that lets its aftermath pass (the first collections of
//! the unfrozen part find what was promoted during the warm-up), it measures a window at the
//! current threshold, then one at four times it, and keeps the larger when the largest frequent
//! pause fell by a tenth or more: the mean young pause, the mean middle (generation 1) pause, or
//! the mean full pause where the scheduler says its full collections meet enough requests to be
//! in the p99 (where they do not, a larger threshold can only lengthen the young pauses, which
//! then are the p99). The middle generation is judged on its own: it collects once per ten young
//! collections and scans what they promoted, so a larger threshold lengthens its pauses most, and
//! averaged with the young ones it was hidden (orm at 11200: young pauses 3 ms, middle ones 7 ms
//! on average, up to 13 ms, in a mean of 3.4 ms). Otherwise it
//! goes back and stops climbing. A larger threshold holds more young garbage at a time: a trial
//! whose peak memory in use exceeds the base window's by more than [`MEMORY_SHARE`] is not kept
//! either, whatever it gains (the scheduler keeps memory within a tenth of the live heap), and
//! a trial whose young or middle pauses alone are already longer than the base window's largest
//! ends as soon as that shows: it cannot be kept, and every second of it is in the p99.
//! A window lasts until it holds [`Window::MIN_FULL`] full and
//! [`Window::MIN_YOUNG`] young collections, counted from the samples' GC statistics (or
//! [`Window::MAX_SECONDS`] of samples with young collections, each counting at most
//! [`Window::MAX_SAMPLE_SECONDS`]: counts, not seconds, because a stopped or idle service makes
//! no garbage).

/// How the scheduler sets threshold0 (`young=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum YoungThreshold {
    /// Leave CPython's.
    Off,
    /// Tune by experiment (the default).
    Auto,
    /// Set it once.
    Fixed(u64),
}

/// The largest threshold0 tried: a young collection of ~100k objects pauses ~10 ms.
pub const MAX_THRESHOLD: u64 = 100_000;
/// Each trial multiplies threshold0 by this.
const STEP: u64 = 4;
/// A trial is kept when the largest frequent pause falls at least this much...
const GAIN: f64 = 0.9;
/// ... and its peak memory in use grows by at most this share of the base window's.
pub const MEMORY_SHARE: f64 = 0.05;

/// GC statistics summed over a window of samples.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Window {
    pub seconds: f64,
    pub work: f64,
    /// Generation 0's collections.
    pub young_count: u64,
    pub young_ms: f64,
    /// Generation 1's.
    pub middle_count: u64,
    pub middle_ms: f64,
    pub full_count: u64,
    pub full_ms: f64,
    /// The largest memory in use (bytes) at the window's samples; 0 where unknown.
    pub in_use_peak: f64,
}

impl Window {
    pub const MIN_FULL: u64 = 3;
    pub const MIN_YOUNG: u64 = 20;
    pub const MAX_SECONDS: f64 = 30.0;
    pub const MAX_SAMPLE_SECONDS: f64 = 5.0;

    /// One sample's: its interval, the work done in it, its per-generation collection counts
    /// and pause sums, and the memory in use at its end.
    pub fn of_sample(
        seconds: f64,
        work: f64,
        collections: [u64; 3],
        pause_ms: [f64; 3],
        in_use: Option<u64>,
    ) -> Self {
        Window {
            seconds,
            work,
            young_count: collections[0],
            young_ms: pause_ms[0],
            middle_count: collections[1],
            middle_ms: pause_ms[1],
            full_count: collections[2],
            full_ms: pause_ms[2],
            in_use_peak: in_use.map_or(0.0, |b| b as f64),
        }
    }

    fn merge(&mut self, w: &Window) {
        // Time without garbage says nothing: a sample without a young collection adds none, and
        // one adds at most `MAX_SAMPLE_SECONDS` (a sample that spans a SIGSTOP or a stall is
        // long: at large-heap's suite run one of 66 s, without a collection, closed a trial's
        // window empty, and "0.00 ms" was kept as a gain).
        if w.young_count > 0 {
            self.seconds += w.seconds.min(Self::MAX_SAMPLE_SECONDS);
        }
        self.work += w.work;
        self.young_count += w.young_count;
        self.young_ms += w.young_ms;
        self.middle_count += w.middle_count;
        self.middle_ms += w.middle_ms;
        self.full_count += w.full_count;
        self.full_ms += w.full_ms;
        self.in_use_peak = self.in_use_peak.max(w.in_use_peak);
    }

    /// Its peak memory in use grew past the base window's by more than [`MEMORY_SHARE`] (never,
    /// where either is unknown).
    fn costs_memory_against(&self, base: &Window) -> bool {
        base.in_use_peak > 0.0
            && self.in_use_peak > 0.0
            && self.in_use_peak > base.in_use_peak * (1.0 + MEMORY_SHARE)
    }

    /// Its young pauses (over [`Self::MIN_YOUNG`] of them) or middle ones (over two) are
    /// already longer on average than `base`'s largest frequent pause: it cannot be kept. (On
    /// churn a trial of 11200 ran 18 s, two of the suite's five turns, with young pauses of
    /// 2.27 ms and middle ones of 3.34 ms against 0.58 ms at 2800: those turns' p99 was
    /// 6.0-6.7 ms against 3.6-3.9 ms.)
    fn already_longer_than(&self, base: &Window, full_in_tail: bool) -> bool {
        if self.young_count < Self::MIN_YOUNG {
            return false;
        }
        let middle = if self.middle_count >= 2 {
            self.middle_mean()
        } else {
            0.0
        };
        self.young_mean().max(middle) > base.largest(full_in_tail)
    }

    fn complete(&self) -> bool {
        self.seconds >= Self::MAX_SECONDS
            || (self.full_count >= Self::MIN_FULL && self.young_count >= Self::MIN_YOUNG)
    }

    fn young_mean(&self) -> f64 {
        self.young_ms / self.young_count.max(1) as f64
    }

    fn middle_mean(&self) -> f64 {
        self.middle_ms / self.middle_count.max(1) as f64
    }

    fn full_mean(&self) -> f64 {
        self.full_ms / self.full_count.max(1) as f64
    }

    /// The largest pause frequent enough to set the p99: the young or the middle one, or the
    /// full one when `full_in_tail`.
    fn largest(&self, full_in_tail: bool) -> f64 {
        let full = if full_in_tail { self.full_mean() } else { 0.0 };
        self.young_mean().max(self.middle_mean()).max(full)
    }

    fn describe(&self, threshold: u64) -> String {
        format!(
            "at {threshold}: young pauses {:.2} ms, middle {:.2} ms, full {:.2} ms",
            self.young_mean(),
            self.middle_mean(),
            self.full_mean()
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    /// The first window after the freeze, not measured.
    Settling,
    /// Measuring the current threshold.
    Base,
    /// Measuring `from * STEP`, against `from`'s window.
    Trial { from: u64, base: Window },
    /// Done climbing.
    Settled,
}

/// What the tuner wants done: a threshold0 to set, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    pub threshold0: u64,
    pub why: String,
}

/// The experiment.
#[derive(Clone, Debug, PartialEq)]
pub struct YoungTuner {
    pub threshold0: u64,
    phase: Phase,
    window: Window,
}

impl YoungTuner {
    pub fn new(threshold0: u64) -> Self {
        YoungTuner {
            threshold0,
            phase: Phase::Settling,
            window: Window::default(),
        }
    }

    pub fn settled(&self) -> bool {
        self.phase == Phase::Settled
    }

    /// Feeds one sample's statistics; returns a change of threshold0 when a window closes and
    /// calls for one. `full_in_tail`: the full collections delay enough requests to be in the
    /// p99 (the scheduler's judgement, see `Scheduler::cadence`).
    pub fn observe(&mut self, sample: Window, full_in_tail: bool) -> Option<Change> {
        if self.settled() {
            return None;
        }
        self.window.merge(&sample);
        // A trial that already holds too much memory, or whose young or middle pauses alone
        // are already longer than the base's largest, ends now, not at the end of its window.
        let lost = matches!(
            self.phase,
            Phase::Trial { base, .. } if self.window.costs_memory_against(&base)
                || self.window.already_longer_than(&base, full_in_tail)
        );
        if !self.window.complete() && !lost {
            return None;
        }
        let done = std::mem::take(&mut self.window);
        match self.phase {
            Phase::Settling => {
                self.phase = Phase::Base;
                None
            }
            Phase::Base => {
                let from = self.threshold0;
                let next = self.try_next(done)?;
                Some(Change {
                    threshold0: next,
                    why: format!(
                        "young threshold trial: {next} against {}",
                        done.describe(from)
                    ),
                })
            }
            Phase::Trial { from, base } => {
                let (before, after) = (base.largest(full_in_tail), done.largest(full_in_tail));
                let memory = done.costs_memory_against(&base);
                if after <= GAIN * before && !memory {
                    // Kept; its window is the base of the next trial.
                    let kept = self.threshold0;
                    let why = format!(
                        "young threshold {kept} kept ({}; {})",
                        done.describe(kept),
                        base.describe(from)
                    );
                    return Some(match self.try_next(done) {
                        Some(next) => Change {
                            threshold0: next,
                            why: format!("{why}; trying {next}"),
                        },
                        None => Change {
                            threshold0: kept,
                            why: format!("{why}; the largest tried"),
                        },
                    });
                }
                self.phase = Phase::Settled;
                self.threshold0 = from;
                let reason = if memory {
                    format!(
                        "memory in use peaked at {} MiB against {} MiB, over {:.0} % more",
                        done.in_use_peak as u64 >> 20,
                        base.in_use_peak as u64 >> 20,
                        MEMORY_SHARE * 100.0
                    )
                } else {
                    format!("the largest frequent pause is {after:.2} ms against {before:.2} ms")
                };
                Some(Change {
                    threshold0: from,
                    why: format!(
                        "young threshold back to {from}: {reason} ({}; {})",
                        done.describe(from * STEP),
                        base.describe(from)
                    ),
                })
            }
            Phase::Settled => None,
        }
    }

    /// Ends the experiment where it stands (the heap is left unfrozen: its windows, measured
    /// under the freeze, say nothing of the heap from then on). Returns the threshold0 to go back
    /// to where a trial was running: its base, the last one measured.
    pub fn stop(&mut self) -> Option<u64> {
        let running = match self.phase {
            Phase::Trial { from, .. } => Some(from),
            _ => None,
        };
        self.phase = Phase::Settled;
        if let Some(from) = running {
            self.threshold0 = from;
        }
        running
    }

    /// Starts a trial of the next threshold against `base` (the current one's window), or
    /// settles at the largest.
    fn try_next(&mut self, base: Window) -> Option<u64> {
        let next = self.threshold0 * STEP;
        if next > MAX_THRESHOLD || base.young_count == 0 {
            self.phase = Phase::Settled;
            return None;
        }
        self.phase = Phase::Trial {
            from: self.threshold0,
            base,
        };
        self.threshold0 = next;
        Some(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `seconds` of samples, one a second, each with young collections of `young_ms` each
    /// (`young_per_s` a second) and one full collection of `full_ms`.
    fn feed(
        t: &mut YoungTuner,
        seconds: u32,
        young_per_s: u64,
        young_ms: f64,
        full_ms: f64,
        full_in_tail: bool,
    ) -> Vec<Change> {
        feed_in_use(
            t,
            seconds,
            young_per_s,
            young_ms,
            full_ms,
            full_in_tail,
            0.0,
        )
    }

    /// As [`feed`], the memory in use at each sample `in_use_mib`.
    fn feed_in_use(
        t: &mut YoungTuner,
        seconds: u32,
        young_per_s: u64,
        young_ms: f64,
        full_ms: f64,
        full_in_tail: bool,
        in_use_mib: f64,
    ) -> Vec<Change> {
        (0..seconds)
            .filter_map(|_| {
                let sample = Window {
                    seconds: 1.0,
                    work: 100.0,
                    young_count: young_per_s,
                    young_ms: young_per_s as f64 * young_ms,
                    full_count: 1,
                    full_ms,
                    in_use_peak: in_use_mib * 1048576.0,
                    ..Window::default()
                };
                t.observe(sample, full_in_tail)
            })
            .collect()
    }

    /// A tuner at 700 that has just started its trial of 2800: a settling window and a measured
    /// one, each of 100 young collections of 0.1 ms and one full one of `full_ms` a second.
    fn trying_2800(full_ms: f64, in_use_mib: f64) -> YoungTuner {
        let mut t = YoungTuner::new(700);
        assert!(feed_in_use(&mut t, 3, 100, 0.1, full_ms, true, in_use_mib).is_empty());
        let c = feed_in_use(&mut t, 3, 100, 0.1, full_ms, true, in_use_mib);
        assert_eq!(c[0].threshold0, 2800, "{c:?}");
        t
    }

    #[test]
    fn a_trial_that_holds_more_memory_is_not_kept() {
        let mut t = trying_2800(18.0, 100.0);
        // Half the full pause, for 8 % more memory in use: back, and settled.
        // It ends at the first sample over: not at the end of its window.
        let c = feed_in_use(&mut t, 1, 25, 0.4, 9.0, true, 108.0);
        assert_eq!(c[0].threshold0, 700, "{c:?}");
        assert!(
            c[0].why
                .contains("memory in use peaked at 108 MiB against 100 MiB"),
            "{c:?}"
        );
        assert!(t.settled());
        // 4 % more is within its share: kept.
        let mut t = trying_2800(18.0, 100.0);
        let c = feed_in_use(&mut t, 3, 25, 0.4, 9.0, true, 104.0);
        assert!(c[0].why.contains("2800 kept"), "{c:?}");
    }

    #[test]
    fn climbs_while_the_full_pauses_in_the_tail_shrink() {
        let mut t = YoungTuner::new(700);
        // The aftermath of the freeze: large full collections, not measured.
        assert!(feed(&mut t, 3, 100, 0.1, 200.0, true).is_empty());
        // At 700: young pauses of 0.1 ms, full ones of 18 ms in the tail.
        let c = feed(&mut t, 3, 100, 0.1, 18.0, true);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(c[0].threshold0, 2800);
        assert!(c[0].why.contains("trial: 2800"), "{c:?}");
        // At 2800 less is promoted: full pauses of 9 ms: kept, and 11200 tried.
        let c = feed(&mut t, 3, 25, 0.4, 9.0, true);
        assert_eq!(c[0].threshold0, 11200, "{c:?}");
        assert!(c[0].why.contains("2800 kept"), "{c:?}");
        // At 11200 the full pauses stay at 8.5 ms: not a tenth less; back to 2800, settled.
        let c = feed(&mut t, 4, 6, 1.6, 8.5, true);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(c[0].threshold0, 2800, "{c:?}");
        assert!(c[0].why.contains("back to 2800"), "{c:?}");
        assert!(t.settled());
        assert!(feed(&mut t, 30, 6, 1.6, 1.0, true).is_empty());
    }

    #[test]
    fn the_middle_generation_is_judged_on_its_own() {
        // orm's suite run: at 11200 the young pauses were 3 ms and the middle ones 7.45 ms, one
        // per ten; their mean together, 3.4 ms, beat the 4.68 ms full pauses at 2800.
        let window = |young_ms: f64, middle_ms: f64, full_ms: f64| Window {
            seconds: 1.0,
            work: 100.0,
            young_count: 30,
            young_ms: 30.0 * young_ms,
            middle_count: 3,
            middle_ms: 3.0 * middle_ms,
            full_count: 3,
            full_ms: 3.0 * full_ms,
            in_use_peak: 0.0,
        };
        let mut t = YoungTuner::new(2800);
        assert_eq!(t.observe(window(0.2, 1.9, 9.3), true), None);
        let c = t.observe(window(0.7, 1.9, 4.68), true).unwrap();
        assert_eq!(c.threshold0, 11200, "{c:?}");
        let c = t.observe(window(3.0, 7.45, 1.42), true).unwrap();
        assert_eq!(c.threshold0, 2800, "{c:?}");
        assert!(
            c.why
                .contains("the largest frequent pause is 7.45 ms against 4.68 ms"),
            "{c:?}"
        );
        assert!(c.why.contains("middle 7.45 ms"), "{c:?}");
        assert!(t.settled());
    }

    #[test]
    fn full_pauses_out_of_the_tail_leave_the_young_ones_to_judge() {
        let mut t = YoungTuner::new(700);
        feed(&mut t, 3, 100, 0.1, 18.0, false);
        feed(&mut t, 3, 100, 0.1, 18.0, false);
        // Full pauses halved, but they are not in the p99; the young ones, which are, grew.
        let c = feed(&mut t, 3, 25, 0.4, 9.0, false);
        assert_eq!(c[0].threshold0, 700, "{c:?}");
        assert!(c[0].why.contains("0.40 ms against 0.10 ms"), "{c:?}");
    }

    #[test]
    fn a_trial_already_slower_than_the_base_ends_at_once() {
        let mut t = trying_2800(2.0, 0.0);
        // One sample: 25 young collections of 2.3 ms each, against a largest pause of 2 ms.
        let c = feed(&mut t, 1, 25, 2.3, 1.0, true);
        assert_eq!(c.len(), 1, "{c:?}");
        assert_eq!(c[0].threshold0, 700, "{c:?}");
        assert!(
            c[0].why
                .contains("the largest frequent pause is 2.30 ms against 2.00 ms"),
            "{c:?}"
        );
        assert!(t.settled());
        // Too few young collections to say: the window goes on.
        let mut t = trying_2800(2.0, 0.0);
        assert!(feed(&mut t, 1, 10, 2.3, 1.0, true).is_empty());
    }

    #[test]
    fn a_stopped_service_adds_no_time_to_a_window() {
        let mut t = YoungTuner::new(700);
        feed(&mut t, 3, 100, 0.1, 18.0, true);
        let c = feed(&mut t, 3, 100, 0.1, 18.0, true);
        assert_eq!(c[0].threshold0, 2800, "{c:?}");
        // The trial's first sample spans a stop of 66 s without a collection: no judgement.
        let stopped = Window {
            seconds: 66.0,
            work: 1.0,
            ..Window::default()
        };
        assert_eq!(t.observe(stopped, true), None);
        // Nor does one long sample with collections close it alone.
        let stalled = Window {
            seconds: 66.0,
            work: 100.0,
            young_count: 5,
            young_ms: 2.0,
            ..Window::default()
        };
        assert_eq!(t.observe(stalled, true), None);
        // The trial is judged on its collections.
        let c = feed(&mut t, 3, 25, 0.4, 9.0, true);
        assert!(c[0].why.contains("2800 kept"), "{c:?}");
    }

    #[test]
    fn a_window_waits_for_its_collections_up_to_its_longest() {
        let mut t = YoungTuner::new(700);
        let quiet = Window {
            seconds: 1.0,
            work: 10.0,
            young_count: 10,
            young_ms: 1.0,
            ..Window::default()
        };
        for _ in 0..59 {
            assert_eq!(t.observe(quiet, true), None);
        }
        assert_eq!(t.observe(quiet, true).map(|c| c.threshold0), Some(2800));
        // Nothing past the largest threshold.
        let mut t = YoungTuner::new(50_000);
        assert!(feed(&mut t, 40, 1, 1.0, 1.0, true).is_empty());
        assert!(t.settled());
    }
}
