//! Percentiles of all of a policy's requests, pooled over its units (the rounds of a turns run,
//! the trials elsewhere), with bootstrap intervals that resample whole units.
//!
//! Why pool: the median over units of each unit's own p99 is the p99 of a *typical* unit. When
//! a policy's long pauses are rarer than one per unit (CPython's default runs a full collection
//! of a large heap every other 4-6 s turn), half of its units never see one and that median hides
//! them, while a policy with a smaller pause in every unit (a timer) shows its pause in each: the
//! typical-unit p99 then ranks them backwards. The p99 of all the requests is what the service's
//! users saw over the whole measured time, as a single long run would measure it.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use neurogc_stats::{statistic_ci, BootstrapConfig, ConfidenceInterval};

use crate::aggregate::{Analysis, PolicyStats};

/// Recorded latencies (µs) as (value, count) pairs in value order: what a histogram holds,
/// small enough to keep one per second of a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts(Vec<(u64, u64)>);

impl Counts {
    pub fn of(h: &Histogram<u64>) -> Counts {
        Counts(
            h.iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect(),
        )
    }

    /// All the parts' requests as one.
    pub fn merge<'a>(parts: impl IntoIterator<Item = &'a Counts>) -> Counts {
        let mut by_value: BTreeMap<u64, u64> = BTreeMap::new();
        for part in parts {
            for &(v, n) in &part.0 {
                *by_value.entry(v).or_default() += n;
            }
        }
        Counts(by_value.into_iter().collect())
    }

    pub fn total(&self) -> u64 {
        self.0.iter().map(|&(_, n)| n).sum()
    }

    /// The latency (ms) at quantile `q` of all the parts' requests together.
    pub fn quantile_ms(parts: &[&Counts], q: f64) -> Option<f64> {
        let all: Vec<usize> = (0..parts.len()).collect();
        Pool::new(parts).quantile_ms(&all, q)
    }
}

/// Units prepared for many quantiles of resampled pools: each unit's cumulative counts over the
/// values any of them recorded, so a quantile is a binary search over the values summing one
/// count per drawn unit (a bootstrap draws thousands of pools).
pub struct Pool {
    values: Vec<u64>,
    /// Per unit, per value: its requests at or below the value.
    cumulative: Vec<Vec<u64>>,
}

impl Pool {
    pub fn new(units: &[&Counts]) -> Pool {
        let mut values: Vec<u64> = units
            .iter()
            .flat_map(|c| c.0.iter().map(|&(v, _)| v))
            .collect();
        values.sort_unstable();
        values.dedup();
        let cumulative = units
            .iter()
            .map(|c| {
                let mut cum = vec![0; values.len()];
                for &(v, n) in &c.0 {
                    cum[values
                        .binary_search(&v)
                        .expect("every value is in the grid")] += n;
                }
                for i in 1..cum.len() {
                    cum[i] += cum[i - 1];
                }
                cum
            })
            .collect();
        Pool { values, cumulative }
    }

    /// The latency (ms) at quantile `q` of the units `idx` (repeats count again) together, as
    /// HdrHistogram's `value_at_quantile` gives it for their merged histogram; `None` without
    /// requests.
    pub fn quantile_ms(&self, idx: &[usize], q: f64) -> Option<f64> {
        let at = |g: usize| -> u64 { idx.iter().map(|&u| self.cumulative[u][g]).sum() };
        let last = self.values.len().checked_sub(1)?;
        let total = at(last);
        if total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        // The first value whose cumulative count reaches the rank.
        let (mut lo, mut hi) = (0, last);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if at(mid) >= rank {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        Some(self.values[lo] as f64 / 1000.0)
    }
}

/// A unit's requests, keyed by the pair it ran in (see `TrialMetrics::pair`).
pub type Unit<'a> = ((u32, u32), &'a Counts);

/// The policy's units (those its medians use) that recorded latencies.
pub fn units<'a>(a: &'a Analysis, p: &PolicyStats) -> Vec<Unit<'a>> {
    p.used
        .iter()
        .filter_map(|&i| Some((a.trials[i].pair, a.trials[i].latency.as_ref()?)))
        .filter(|(_, c)| c.total() > 0)
        .collect()
}

/// "neurogc: p99 3.10 ± 0.40 × lower than default", worded as the bench report's comparisons:
/// the factor max(r, 1/r) of the ratio r = candidate / baseline, ± half its interval's width,
/// "(not significant)" when the interval holds 1.
pub fn sentence(metric: &str, cand: &str, base: &str, r: &ConfidenceInterval) -> String {
    // Below 1 the factor's interval is the inverse of the ratio's.
    let (factor, lo, hi, word) = if r.estimate < 1.0 {
        (1.0 / r.estimate, 1.0 / r.upper, 1.0 / r.lower, "lower")
    } else {
        (r.estimate, r.lower, r.upper, "higher")
    };
    let half = (hi - lo) / 2.0;
    let mut s = if r.estimate == 1.0 {
        format!("{cand}: {metric} same as {base} (1.00 ± {half:.2} ×)")
    } else {
        format!("{cand}: {metric} {factor:.2} ± {half:.2} × {word} than {base}")
    };
    if r.contains(1.0) {
        s.push_str(" (not significant)");
    }
    s
}

/// The pooled quantile `q` of `units` with its interval (units resampled).
pub fn quantile_ci(
    units: &[Unit<'_>],
    q: f64,
    cfg: &BootstrapConfig,
) -> Option<ConfidenceInterval> {
    let pool = Pool::new(&units.iter().map(|u| u.1).collect::<Vec<_>>());
    let statistic = |idx: &[usize]| pool.quantile_ms(idx, q).unwrap_or(f64::NAN);
    statistic_ci(units.len(), statistic, cfg).ok().flatten()
}

/// Pooled quantile `q` of `cand` over that of `base`, on the pairs both ran (units resampled
/// by pair, the same for both sides).
pub fn ratio_ci(
    base: &[Unit<'_>],
    cand: &[Unit<'_>],
    q: f64,
    cfg: &BootstrapConfig,
) -> Option<ConfidenceInterval> {
    let cand_by_pair: BTreeMap<_, _> = cand.iter().copied().collect();
    let pairs: Vec<(&Counts, &Counts)> = base
        .iter()
        .filter_map(|(k, b)| Some((*b, *cand_by_pair.get(k)?)))
        .collect();
    let b = Pool::new(&pairs.iter().map(|p| p.0).collect::<Vec<_>>());
    let c = Pool::new(&pairs.iter().map(|p| p.1).collect::<Vec<_>>());
    let statistic = |idx: &[usize]| match (c.quantile_ms(idx, q), b.quantile_ms(idx, q)) {
        (Some(c), Some(b)) if b > 0.0 => c / b,
        _ => f64::NAN,
    };
    statistic_ci(pairs.len(), statistic, cfg).ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values_us: &[u64]) -> Histogram<u64> {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for &v in values_us {
            h.record(v).unwrap();
        }
        h
    }

    #[test]
    fn quantiles_are_the_merged_histograms() {
        let a: Vec<u64> = (1..=900).map(|i| 1000 + i * 7).collect();
        let b: Vec<u64> = (1..=100).map(|i| 250_000 + i * 1000).collect();
        let (ha, hb) = (hist(&a), hist(&b));
        let mut merged = ha.clone();
        merged.add(&hb).unwrap();
        let (ca, cb) = (Counts::of(&ha), Counts::of(&hb));
        for q in [0.0, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0] {
            let want = merged.value_at_quantile(q) as f64 / 1000.0;
            assert_eq!(Counts::quantile_ms(&[&ca, &cb], q), Some(want), "q {q}");
        }
        assert_eq!(Counts::merge([&ca, &cb]).total(), 1000);
        assert_eq!(Counts::quantile_ms(&[], 0.99), None);
    }

    #[test]
    fn a_pause_in_every_other_unit_shows_in_the_pooled_p99() {
        // Eight units of 500 requests at 2 ms; every other one has 60 of them delayed by a
        // 300 ms pause instead. The typical unit's p99 is ~2 ms or ~300 ms by the toss of a coin;
        // the pooled one, over 6 % of the requests, is the pause's.
        let calm = Counts::of(&hist(&[2000; 500]));
        let mut paused = hist(&[2000; 440]);
        for i in 0..60 {
            paused.record(300_000 - i * 1000).unwrap();
        }
        let paused = Counts::of(&paused);
        let units: Vec<Unit> = (0..8)
            .map(|i| ((0, i), if i % 2 == 0 { &paused } else { &calm }))
            .collect();
        let cfg = BootstrapConfig::default().with_resamples(400);
        let p99 = quantile_ci(&units, 0.99, &cfg).unwrap();
        assert!(p99.estimate > 250.0, "{p99:?}");
        // Against a policy with a 20 ms pause in every unit: 10× lower, significantly.
        let mut small = hist(&[2000; 440]);
        for _ in 0..60 {
            small.record(20_000).unwrap();
        }
        let small = Counts::of(&small);
        let steady: Vec<Unit> = (0..8).map(|i| ((0, i), &small)).collect();
        let r = ratio_ci(&units, &steady, 0.99, &cfg).unwrap();
        assert!(r.estimate < 0.1 && r.upper < 1.0, "{r:?}");
        // Pairs only one side ran do not count.
        let none: Vec<Unit> = (10..12).map(|i| ((0, i), &small)).collect();
        assert_eq!(ratio_ci(&units, &none, 0.99, &cfg), None);
    }
}
