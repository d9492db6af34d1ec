//! Percentile-bootstrap confidence intervals for medians, their difference and their ratio.
//!
//! Each resample draws n values with replacement from the sample (independently for each of two
//! samples), the statistic is computed on it, and the interval is the (1 − c)/2 and (1 + c)/2
//! percentiles (linear interpolation) of the resampled statistics. The generator is
//! `neurogc_rng::Rng::new(config.seed)`, so a given seed, configuration and input give the same
//! interval bit for bit. With only a handful of runs per side (the usual 3–5 repetitions) the
//! interval is coarse — it can only take values the resampled medians can take — which is the
//! honest answer for so few runs.

use neurogc_rng::Rng;

use crate::descriptive::{check, median_in_place, percentile_sorted};
use crate::error::{Result, StatsError};

/// Resamples per interval unless configured otherwise.
pub const DEFAULT_RESAMPLES: usize = 10_000;
/// Confidence level unless configured otherwise.
pub const DEFAULT_CONFIDENCE: f64 = 0.95;
/// Seed unless configured otherwise (ASCII "neurogcs").
pub const DEFAULT_SEED: u64 = 0x6E65_7572_6F67_6373;

/// How to bootstrap: number of resamples, confidence level, seed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BootstrapConfig {
    /// Number of resamples (≥ 1); default [`DEFAULT_RESAMPLES`].
    pub resamples: usize,
    /// Confidence level in (0, 1); default [`DEFAULT_CONFIDENCE`] (0.95).
    pub confidence: f64,
    /// Seed of the resampling generator; default [`DEFAULT_SEED`].
    pub seed: u64,
}

impl Default for BootstrapConfig {
    fn default() -> Self {
        BootstrapConfig {
            resamples: DEFAULT_RESAMPLES,
            confidence: DEFAULT_CONFIDENCE,
            seed: DEFAULT_SEED,
        }
    }
}

impl BootstrapConfig {
    pub fn with_seed(self, seed: u64) -> Self {
        BootstrapConfig { seed, ..self }
    }

    pub fn with_resamples(self, resamples: usize) -> Self {
        BootstrapConfig { resamples, ..self }
    }

    pub fn with_confidence(self, confidence: f64) -> Self {
        BootstrapConfig { confidence, ..self }
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.resamples == 0 {
            return Err(StatsError::InvalidArgument {
                name: "resamples",
                value: 0.0,
                expected: "at least 1",
            });
        }
        if !(self.confidence > 0.0 && self.confidence < 1.0) {
            return Err(StatsError::InvalidArgument {
                name: "confidence",
                value: self.confidence,
                expected: "a level in (0, 1), e.g. 0.95",
            });
        }
        Ok(())
    }
}

/// A point estimate with its bootstrap confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ConfidenceInterval {
    /// The statistic on the original sample(s).
    pub estimate: f64,
    pub lower: f64,
    pub upper: f64,
    /// The level, e.g. 0.95.
    pub confidence: f64,
}

impl ConfidenceInterval {
    /// `upper − lower`.
    pub fn width(&self) -> f64 {
        self.upper - self.lower
    }

    /// Half the width: the "±" of a summary. The percentile interval need not be symmetric
    /// around the estimate; `lower`/`upper` are the exact bounds.
    pub fn half_width(&self) -> f64 {
        self.width() / 2.0
    }

    /// Whether `x` lies in the closed interval.
    pub fn contains(&self, x: f64) -> bool {
        self.lower <= x && x <= self.upper
    }
}

/// Median of `buf.len()` values drawn with replacement from `xs`.
fn resampled_median(rng: &mut Rng, xs: &[f64], buf: &mut [f64]) -> f64 {
    for slot in buf.iter_mut() {
        *slot = xs[rng.index(xs.len())];
    }
    median_in_place(buf)
}

pub(crate) fn interval(estimate: f64, mut stats: Vec<f64>, confidence: f64) -> ConfidenceInterval {
    stats.sort_unstable_by(f64::total_cmp);
    let tail = (1.0 - confidence) / 2.0 * 100.0;
    ConfidenceInterval {
        estimate,
        lower: percentile_sorted(&stats, tail),
        upper: percentile_sorted(&stats, 100.0 - tail),
        confidence,
    }
}

fn median_of(xs: &[f64]) -> f64 {
    median_in_place(&mut xs.to_vec())
}

/// Bootstrap interval of the median of one sample.
pub fn median_ci(xs: &[f64], config: &BootstrapConfig) -> Result<ConfidenceInterval> {
    config.validate()?;
    check(xs)?;
    let mut rng = Rng::new(config.seed);
    let mut buf = vec![0.0; xs.len()];
    let stats = (0..config.resamples)
        .map(|_| resampled_median(&mut rng, xs, &mut buf))
        .collect();
    Ok(interval(median_of(xs), stats, config.confidence))
}

/// Bootstrap interval of any statistic of `n` units (`n` ≥ 1): each resample draws `n` unit
/// indices with replacement and hands them to `statistic`, whose value on `0..n` is the estimate.
/// For statistics that need every unit at once, such as a percentile of all the units' requests
/// pooled; for paired units, index both sides with the same indices. Resamples on which the
/// statistic is not finite are left out (`None` if all are, or if the estimate is not).
pub fn statistic_ci(
    n: usize,
    statistic: impl Fn(&[usize]) -> f64,
    config: &BootstrapConfig,
) -> Result<Option<ConfidenceInterval>> {
    config.validate()?;
    if n == 0 {
        return Err(StatsError::Empty);
    }
    let all: Vec<usize> = (0..n).collect();
    let estimate = statistic(&all);
    let mut rng = Rng::new(config.seed);
    let mut idx = vec![0; n];
    let mut stats = Vec::with_capacity(config.resamples);
    for _ in 0..config.resamples {
        for slot in idx.iter_mut() {
            *slot = rng.index(n);
        }
        let s = statistic(&idx);
        if s.is_finite() {
            stats.push(s);
        }
    }
    if !estimate.is_finite() || stats.is_empty() {
        return Ok(None);
    }
    Ok(Some(interval(estimate, stats, config.confidence)))
}

/// Both two-sample intervals from one set of resamples: the difference median(b) − median(a)
/// and, unless some baseline median (original or resampled) is zero, the ratio
/// median(b) / median(a).
pub(crate) fn median_difference_and_ratio(
    a: &[f64],
    b: &[f64],
    config: &BootstrapConfig,
) -> Result<(ConfidenceInterval, Option<ConfidenceInterval>)> {
    config.validate()?;
    check(a)?;
    check(b)?;
    let (med_a, med_b) = (median_of(a), median_of(b));
    let mut ratio_defined = med_a != 0.0;

    let mut rng = Rng::new(config.seed);
    let (mut buf_a, mut buf_b) = (vec![0.0; a.len()], vec![0.0; b.len()]);
    let mut diffs = Vec::with_capacity(config.resamples);
    let mut ratios = Vec::with_capacity(if ratio_defined { config.resamples } else { 0 });
    for _ in 0..config.resamples {
        let ra = resampled_median(&mut rng, a, &mut buf_a);
        let rb = resampled_median(&mut rng, b, &mut buf_b);
        diffs.push(rb - ra);
        if ratio_defined {
            if ra == 0.0 {
                ratio_defined = false;
            } else {
                ratios.push(rb / ra);
            }
        }
    }
    let diff = interval(med_b - med_a, diffs, config.confidence);
    let ratio = ratio_defined.then(|| interval(med_b / med_a, ratios, config.confidence));
    Ok((diff, ratio))
}

/// Bootstrap interval of the difference of medians, median(b) − median(a) (candidate `b`
/// minus baseline `a`).
pub fn median_difference_ci(
    a: &[f64],
    b: &[f64],
    config: &BootstrapConfig,
) -> Result<ConfidenceInterval> {
    median_difference_and_ratio(a, b, config).map(|(diff, _)| diff)
}

/// Bootstrap interval of the ratio of medians, median(b) / median(a) (candidate `b` over
/// baseline `a`). Meant for positive metrics (latencies, memory, counts).
///
/// [`StatsError::ZeroDenominator`] when the median of `a`, or of any of its resamples, is zero.
pub fn median_ratio_ci(
    a: &[f64],
    b: &[f64],
    config: &BootstrapConfig,
) -> Result<ConfidenceInterval> {
    median_difference_and_ratio(a, b, config)?
        .1
        .ok_or(StatsError::ZeroDenominator)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_is_validated() {
        let xs = [1.0, 2.0];
        let zero = BootstrapConfig::default().with_resamples(0);
        assert!(median_ci(&xs, &zero).is_err());
        for c in [0.0, 1.0, f64::NAN, -0.5] {
            let cfg = BootstrapConfig::default().with_confidence(c);
            assert!(median_ci(&xs, &cfg).is_err(), "confidence {c}");
        }
    }

    #[test]
    fn zero_baseline_median_has_no_ratio() {
        let cfg = BootstrapConfig::default().with_resamples(200);
        assert_eq!(
            median_ratio_ci(&[0.0, 0.0, 1.0], &[1.0, 2.0], &cfg),
            Err(StatsError::ZeroDenominator)
        );
        // Median 1 but resamples with median 0 exist.
        assert_eq!(
            median_ratio_ci(&[0.0, 1.0, 1.0], &[1.0, 2.0], &cfg),
            Err(StatsError::ZeroDenominator)
        );
        // The difference is still defined.
        let d = median_difference_ci(&[0.0, 0.0, 1.0], &[1.0, 2.0], &cfg).unwrap();
        assert_eq!(d.estimate, 1.5);
    }

    #[test]
    fn any_statistic_resamples_as_the_median_does() {
        let xs = [3.0, 9.0, 1.0, 4.0, 7.0, 2.0, 8.0];
        let cfg = BootstrapConfig::default().with_resamples(500);
        let by_index = statistic_ci(
            xs.len(),
            |idx| median_of(&idx.iter().map(|&i| xs[i]).collect::<Vec<_>>()),
            &cfg,
        )
        .unwrap()
        .unwrap();
        assert_eq!(by_index, median_ci(&xs, &cfg).unwrap());
        assert_eq!(statistic_ci(0, |_| 1.0, &cfg), Err(StatsError::Empty));
        assert_eq!(statistic_ci(3, |_| f64::NAN, &cfg), Ok(None));
    }

    #[test]
    fn single_values_give_point_intervals() {
        let cfg = BootstrapConfig::default().with_resamples(50);
        let ci = median_ci(&[4.0], &cfg).unwrap();
        assert_eq!((ci.estimate, ci.lower, ci.upper), (4.0, 4.0, 4.0));
        let r = median_ratio_ci(&[4.0], &[2.0], &cfg).unwrap();
        assert_eq!((r.estimate, r.lower, r.upper), (0.5, 0.5, 0.5));
    }
}
