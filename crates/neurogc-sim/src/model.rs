//! What a full collection costs, learned from the run's own trials: a collection that comes
//! after `w` requests pauses about `a + b·w` ms (`a`: scanning what is live, `b`: the garbage each
//! request leaves), fitted by least squares to the collections the recorded policies ran; and
//! how many requests CPython's own rule lets pass between two of them.

use neurogc_core::policy::Trigger;

use crate::trace::{FullCollection, Trace};

/// `pause_ms ≈ a + b·w`, with how many collections it was fitted to.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PauseFit {
    pub a: f64,
    pub b: f64,
    pub points: usize,
}

impl PauseFit {
    pub fn pause_ms(&self, requests_since: f64) -> f64 {
        (self.a + self.b * requests_since.max(0.0)).max(0.0)
    }

    /// Least squares over (requests since the previous collection, pause ms); a flat mean where
    /// the requests do not vary (or one point); `None` without points.
    pub fn fit(points: &[(f64, f64)]) -> Option<PauseFit> {
        let n = points.len() as f64;
        if points.is_empty() {
            return None;
        }
        let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
        let my = points.iter().map(|p| p.1).sum::<f64>() / n;
        let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
        let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
        let (a, b) = if sxx > 1e-9 && sxy > 0.0 {
            let b = sxy / sxx;
            (my - b * mx, b)
        } else {
            (my, 0.0)
        };
        // A negative intercept is the fit's, not the collector's: no pause is below 0 at w = 0.
        let (a, b) = if a < 0.0 {
            (0.0, my / mx.max(1e-9))
        } else {
            (a, b)
        };
        Some(PauseFit {
            a,
            b,
            points: points.len(),
        })
    }
}

/// (requests since the previous full collection, pause ms) of a trace's collections that `keep`
/// selects; the first is left out where nothing says when the one before it was.
pub fn points(t: &Trace, keep: impl Fn(&FullCollection) -> bool) -> Vec<(f64, f64)> {
    t.full
        .windows(2)
        .filter(|w| keep(&w[1]))
        .map(|w| {
            (
                (w[1].after_requests - w[0].after_requests) as f64,
                w[1].pause_ms,
            )
        })
        .collect()
}

/// The `neurogc` scheduler's collections of what its freeze leaves (not its freezes and
/// re-freezes, which collect the whole heap).
fn of_frozen_remainder(c: &FullCollection) -> bool {
    matches!(
        c.trigger,
        Some(Trigger::Due | Trigger::Quiet | Trigger::Growth)
    )
}

/// The mean number of requests between a trace's full collections, so that the replay runs as
/// many as the trace did (`None` with fewer than two: then at least its whole length, which the
/// caller may use as a floor).
pub fn cadence(t: &Trace) -> Option<f64> {
    let (first, last) = (t.full.first()?, t.full.last()?);
    (t.full.len() >= 2)
        .then(|| (last.after_requests - first.after_requests) as f64 / (t.full.len() - 1) as f64)
}

/// Everything the replay knows of the service's collector, from a run's traces.
#[derive(Debug, Clone)]
pub struct Calibration {
    /// Full collections of a heap that is not frozen (CPython's own, or a timer's).
    pub unfrozen: Option<PauseFit>,
    /// Collections of what a frozen heap leaves (after `gc.freeze()`).
    pub frozen: Option<PauseFit>,
    /// Requests between CPython's full collections, as the default ran them, and after a freeze.
    pub default_every: Option<f64>,
    pub frozen_every: Option<f64>,
    /// Requests before the first of them in the window (where the rule's count stood when the
    /// window began).
    pub default_first: Option<f64>,
    pub frozen_first: Option<f64>,
    /// Objects a collection freed per request since the one before (the median).
    pub freed_per_request: Option<f64>,
    /// Where each came from, for the report.
    pub sources: Vec<String>,
}

impl Calibration {
    /// From traces labelled by their specs: the unfrozen model from `default`, `threshold` and
    /// `periodic` trials, the frozen one from `freeze` trials.
    pub fn of(traces: &[(Trace, Kind)]) -> Calibration {
        let mut unfrozen = Vec::new();
        let mut frozen = Vec::new();
        let mut default_every = None;
        let mut frozen_every = None;
        let mut sources = Vec::new();
        let mut freed: Vec<f64> = traces
            .iter()
            .filter(|(_, k)| *k != Kind::Other)
            .flat_map(|(t, _)| {
                t.full.windows(2).filter_map(|w| {
                    let since = w[1].after_requests.checked_sub(w[0].after_requests)?;
                    (since > 0).then(|| w[1].collected.map(|c| c as f64 / since as f64))?
                })
            })
            .collect();
        freed.sort_by(f64::total_cmp);
        let (mut default_first, mut frozen_first) = (None, None);
        // A rule's cadence, and where it stood: with none in the window, at least the window.
        let first = |t: &Trace| {
            Some(
                t.full
                    .first()
                    .map_or(t.arrivals.len() as f64, |c| c.after_requests as f64),
            )
        };
        for (t, kind) in traces {
            match kind {
                Kind::Unfrozen => unfrozen.extend(points(t, |_| true)),
                Kind::Frozen => frozen.extend(points(t, |_| true)),
                Kind::Scheduler => frozen.extend(points(t, of_frozen_remainder)),
                Kind::Other => continue,
            }
            if t.spec == "default" && default_every.is_none() {
                default_every = cadence(t).or(Some(t.arrivals.len() as f64));
                default_first = first(t);
            }
            if *kind == Kind::Frozen && frozen_every.is_none() {
                frozen_every = cadence(t).or(Some(t.arrivals.len() as f64));
                frozen_first = first(t);
            }
            sources.push(format!("{} ({} full collections)", t.label, t.full.len()));
        }
        // Too few collections for a line (each trace's first has no known spacing): the mean
        // pause of all of them, flat.
        let flat = |kind: Kind| {
            let all: Vec<(f64, f64)> = traces
                .iter()
                .filter(|(_, k)| *k == kind)
                .flat_map(|(t, _)| t.full.iter().map(|c| (0.0, c.pause_ms)))
                .collect();
            PauseFit::fit(&all)
        };
        let fit_or_flat = |points: &[(f64, f64)], kind: Kind| {
            if points.len() >= 2 {
                PauseFit::fit(points)
            } else {
                flat(kind)
            }
        };
        Calibration {
            unfrozen: fit_or_flat(&unfrozen, Kind::Unfrozen),
            frozen: fit_or_flat(&frozen, Kind::Frozen),
            default_every,
            frozen_every,
            default_first,
            frozen_first,
            freed_per_request: freed.get(freed.len() / 2).copied(),
            sources,
        }
    }
}

/// The pauses the optimum and the idle-timed schedule take: the cheap ones of what a freeze
/// leaves only where a freeze keeps the memory bound. Where every freeze of the run held more
/// than that (the heap turns over: what was frozen dies, and only a collection of the whole heap
/// frees it), those cheap collections do not free the garbage, and any schedule within the bound
/// pauses as the whole heap does.
#[derive(Debug, Clone, PartialEq)]
pub struct OptimumPauses {
    /// As what a freeze leaves (`true`), or as the whole heap.
    pub frozen: bool,
    /// Why, as a clause of its own, for the report.
    pub why: String,
}

impl OptimumPauses {
    /// What the collections pause as, for the report.
    pub fn noun(&self) -> &'static str {
        if self.frozen {
            "what a freeze leaves"
        } else {
            "the whole heap"
        }
    }

    /// `freezes`: each `freeze` trial's label and its run's peak RSS over the default's;
    /// `bound`: the memory bound (the scoreboard's); `frozen_measured`: whether the run measured
    /// any collection after a freeze.
    pub fn choose(freezes: &[(String, f64)], bound: f64, frozen_measured: bool) -> OptimumPauses {
        if !frozen_measured {
            return OptimumPauses {
                frozen: false,
                why: "the run measured no collection after a freeze".into(),
            };
        }
        let Some((label, ratio)) = freezes
            .iter()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(l, r)| (l.as_str(), *r))
        else {
            return OptimumPauses {
                frozen: true,
                why: "the memory a freeze holds was not measured against the default's".into(),
            };
        };
        if ratio <= bound {
            OptimumPauses {
                frozen: true,
                why: format!(
                    "`{label}` kept the run's peak RSS at {ratio:.2}× the default's, within the \
                     {bound:.2}× bound"
                ),
            }
        } else {
            OptimumPauses {
                frozen: false,
                why: format!(
                    "every freeze held more than the {bound:.2}× bound of the default's peak RSS, \
                     `{label}` {ratio:.2}×: what it froze dies, and only a collection of the \
                     whole heap frees it"
                ),
            }
        }
    }
}

/// Which model a trial's full collections teach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Unfrozen,
    Frozen,
    /// `neurogc`: its collections after the freeze teach the frozen model.
    Scheduler,
    Other,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fit_recovers_a_line_and_never_goes_below_zero() {
        let line: Vec<(f64, f64)> = (1..=5)
            .map(|w| (w as f64 * 100.0, 10.0 + 0.05 * w as f64 * 100.0))
            .collect();
        let f = PauseFit::fit(&line).unwrap();
        assert!(
            (f.a - 10.0).abs() < 1e-9 && (f.b - 0.05).abs() < 1e-12,
            "{f:?}"
        );
        assert_eq!(f.pause_ms(200.0), 20.0);
        // One point: flat.
        let f = PauseFit::fit(&[(300.0, 42.0)]).unwrap();
        assert_eq!((f.a, f.b), (42.0, 0.0));
        // A falling cloud is no cost per request.
        let f = PauseFit::fit(&[(100.0, 50.0), (200.0, 40.0)]).unwrap();
        assert_eq!((f.a, f.b), (45.0, 0.0));
        assert!(PauseFit::fit(&[]).is_none());
    }

    #[test]
    fn the_optimum_pauses_as_a_frozen_heap_only_where_a_freeze_keeps_the_memory_bound() {
        let within = OptimumPauses::choose(&[("freeze:3".into(), 0.99)], 1.10, true);
        assert!(within.frozen, "{within:?}");
        assert!(within.why.contains("0.99×"), "{within:?}");
        // The heap turns over: the freeze held 1.38× the default's memory.
        let over = OptimumPauses::choose(&[("freeze:3".into(), 1.38)], 1.10, true);
        assert!(!over.frozen, "{over:?}");
        assert!(
            over.why.contains("`freeze:3`") && over.why.contains("1.38×"),
            "{over:?}"
        );
        // Of two freezes, one within the bound is enough.
        let either = OptimumPauses::choose(
            &[("freeze:3".into(), 1.38), ("freeze:10".into(), 1.05)],
            1.10,
            true,
        );
        assert!(
            either.frozen && either.why.contains("`freeze:10`"),
            "{either:?}"
        );
        // No frozen collections measured: nothing else to take.
        assert!(!OptimumPauses::choose(&[("freeze:3".into(), 1.0)], 1.10, false).frozen);
        // No freeze's memory measured (the scheduler's own collections only): as before.
        assert!(OptimumPauses::choose(&[], 1.10, true).frozen);
    }
}
