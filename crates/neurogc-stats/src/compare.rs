//! A baseline-vs-candidate summary of one metric over repeated runs, with a hyperfine-style
//! sentence: `neurogc-seed: p99 1.31 ± 0.08 × lower than default`.

use std::fmt;

use crate::bootstrap::{
    median_ci, median_difference_and_ratio, BootstrapConfig, ConfidenceInterval,
};
use crate::error::{Result, StatsError};
use crate::paired::{paired_ratio_and_difference, paired_t_test, PairedTest};
use crate::welch::{welch_t_test, WelchTest};

/// A difference is called significant only when Welch's p is below this and the bootstrap
/// interval excludes "no change".
pub const SIGNIFICANCE_LEVEL: f64 = 0.05;

/// One metric (e.g. p99 per repetition) of a candidate compared with a baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// The metric's name as it appears in the sentence ("p99").
    pub metric: String,
    /// Name of the baseline ("default").
    pub baseline: String,
    /// Name of the candidate ("neurogc-seed").
    pub candidate: String,
    /// Median of the baseline's runs with its bootstrap interval.
    pub baseline_median: ConfidenceInterval,
    /// Median of the candidate's runs with its bootstrap interval.
    pub candidate_median: ConfidenceInterval,
    /// median(candidate) − median(baseline) with its bootstrap interval.
    pub difference: ConfidenceInterval,
    /// median(candidate) / median(baseline) with its bootstrap interval; `None` when a baseline
    /// median (original or resampled) is zero.
    pub ratio: Option<ConfidenceInterval>,
    /// Welch's test with a = baseline, b = candidate (t > 0: the candidate's mean is lower);
    /// `None` when a side has fewer than two runs, or for a paired comparison.
    pub welch: Option<WelchTest>,
    /// A paired comparison ([`Comparison::paired`]): the paired t-test, on log ratios when
    /// every value is positive; `None` for independent samples or fewer than two pairs.
    pub paired: Option<PairedTest>,
    /// Whether `difference` and `ratio` are medians of per-pair values (paired) or differences
    /// and ratios of the two medians (independent).
    pub is_paired: bool,
}

/// Which way the candidate's median moved relative to the baseline's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Lower,
    Higher,
    Same,
}

impl Direction {
    fn word(self) -> &'static str {
        match self {
            Direction::Lower => "lower",
            Direction::Higher => "higher",
            Direction::Same => "same",
        }
    }
}

/// The hyperfine-style factor: "`value` ± `half_width` × `direction`".
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Factor {
    /// max(r, 1/r) with r = median(candidate) / median(baseline): always ≥ 1.
    pub value: f64,
    /// Half the width of the bootstrap interval of `value` (the ratio's interval, inverted to
    /// 1/r when the candidate is lower). May be ∞ when a resampled candidate median is 0.
    pub half_width: f64,
    pub direction: Direction,
}

/// The noise floor of a method: relative differences (|Δ| / baseline) below it are not results.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NoiseFloor {
    relative: f64,
}

impl NoiseFloor {
    /// A floor given as a fraction of the baseline (0.05 = 5 %).
    pub fn new(relative: f64) -> Result<Self> {
        if relative.is_finite() && relative >= 0.0 {
            Ok(NoiseFloor { relative })
        } else {
            Err(StatsError::InvalidArgument {
                name: "noise floor",
                value: relative,
                expected: "a finite fraction ≥ 0",
            })
        }
    }

    /// The floor measured by an A/A comparison (the same policy against itself): the largest
    /// relative deviation from 1 of its ratio interval, max(|lower − 1|, |upper − 1|). That
    /// covers both the method's bias (a non-1 estimate) and its run-to-run spread. `None` when
    /// the A/A comparison has no ratio (zero baseline median).
    pub fn from_aa(aa: &Comparison) -> Option<Self> {
        Self::from_ratio_interval(&aa.ratio?)
    }

    /// The floor from an A/A ratio interval however it was estimated (per-run values, pooled
    /// requests): max(|lower − 1|, |upper − 1|). `None` when a bound is not finite.
    pub fn from_ratio_interval(r: &ConfidenceInterval) -> Option<Self> {
        let relative = (r.lower - 1.0).abs().max((r.upper - 1.0).abs());
        relative.is_finite().then_some(NoiseFloor { relative })
    }

    /// The floor as a fraction of the baseline.
    pub fn relative(&self) -> f64 {
        self.relative
    }
}

impl Comparison {
    /// Compares the per-run values of one metric: `baseline_runs` (e.g. p99 of each repetition
    /// of the default policy) against `candidate_runs`. All bootstrap intervals use `config`.
    ///
    /// Errors when a side is empty or holds NaN/±∞. One run per side is accepted: the
    /// intervals are then points and there is no t-test (never significant).
    pub fn new(
        metric: &str,
        baseline: &str,
        baseline_runs: &[f64],
        candidate: &str,
        candidate_runs: &[f64],
        config: &BootstrapConfig,
    ) -> Result<Self> {
        let (difference, ratio) =
            median_difference_and_ratio(baseline_runs, candidate_runs, config)?;
        let welch = match welch_t_test(baseline_runs, candidate_runs) {
            Ok(w) => Some(w),
            Err(StatsError::TooFew { .. }) => None,
            Err(e) => return Err(e),
        };
        Ok(Comparison {
            metric: metric.to_string(),
            baseline: baseline.to_string(),
            candidate: candidate.to_string(),
            baseline_median: median_ci(baseline_runs, config)?,
            candidate_median: median_ci(candidate_runs, config)?,
            difference,
            ratio,
            welch,
            paired: None,
            is_paired: false,
        })
    }

    /// Compares paired runs: `candidate_runs[i]` ran in the same window as `baseline_runs[i]`
    /// (a round of an alternating or turns run). The ratio and difference are the medians of
    /// the per-pair ratios and differences, with intervals from resampling pairs; the test is
    /// the paired t-test (on log ratios when every value is positive: effects are relative).
    ///
    /// Errors when the sides differ in length, are empty or hold NaN/±∞.
    pub fn paired(
        metric: &str,
        baseline: &str,
        baseline_runs: &[f64],
        candidate: &str,
        candidate_runs: &[f64],
        config: &BootstrapConfig,
    ) -> Result<Self> {
        let (difference, ratio) =
            paired_ratio_and_difference(baseline_runs, candidate_runs, config)?;
        let positive = baseline_runs.iter().chain(candidate_runs).all(|&x| x > 0.0);
        let test = if positive {
            let ln = |xs: &[f64]| xs.iter().map(|x| x.ln()).collect::<Vec<_>>();
            paired_t_test(&ln(baseline_runs), &ln(candidate_runs))
        } else {
            paired_t_test(baseline_runs, candidate_runs)
        };
        let paired = match test {
            Ok(t) => Some(t),
            Err(StatsError::TooFew { .. }) => None,
            Err(e) => return Err(e),
        };
        Ok(Comparison {
            metric: metric.to_string(),
            baseline: baseline.to_string(),
            candidate: candidate.to_string(),
            baseline_median: median_ci(baseline_runs, config)?,
            candidate_median: median_ci(candidate_runs, config)?,
            difference,
            ratio,
            welch: None,
            paired,
            is_paired: true,
        })
    }

    /// The test's two-sided p-value (Welch's, or the paired test's), if there were at least
    /// two runs per side.
    pub fn p_value(&self) -> Option<f64> {
        self.paired.map(|t| t.p).or(self.welch.map(|w| w.p))
    }

    /// (median(candidate) − median(baseline)) / |median(baseline)|; 0 when both are 0, `None`
    /// when only the baseline's is.
    /// Paired: the median per-pair ratio − 1.
    pub fn relative_change(&self) -> Option<f64> {
        if self.is_paired {
            if let Some(r) = self.ratio {
                return Some(r.estimate - 1.0);
            }
        }
        let (base, cand) = (
            self.baseline_median.estimate,
            self.candidate_median.estimate,
        );
        if base != 0.0 {
            Some((cand - base) / base.abs())
        } else if cand == 0.0 {
            Some(0.0)
        } else {
            None
        }
    }

    /// Significant when Welch's p < [`SIGNIFICANCE_LEVEL`] **and** the bootstrap interval of
    /// the ratio excludes 1 (of the difference excludes 0, when there is no ratio). Never with
    /// fewer than two runs on a side.
    pub fn is_significant(&self) -> bool {
        let p_ok = self.p_value().is_some_and(|p| p < SIGNIFICANCE_LEVEL);
        let ci_ok = match self.ratio {
            Some(r) => !r.contains(1.0),
            None => !self.difference.contains(0.0),
        };
        p_ok && ci_ok
    }

    /// Whether the relative change of the medians is smaller than the noise floor (or zero).
    /// A change relative to a zero baseline is never within noise.
    pub fn within_noise(&self, floor: NoiseFloor) -> bool {
        self.relative_change()
            .is_some_and(|c| c == 0.0 || c.abs() < floor.relative)
    }

    /// Which way the candidate's median moved (paired: the median per-pair ratio against 1, or
    /// without ratios the median per-pair difference against 0).
    pub fn direction(&self) -> Direction {
        if self.is_paired {
            let d = self
                .ratio
                .map_or(self.difference.estimate, |r| r.estimate - 1.0);
            return if d < 0.0 {
                Direction::Lower
            } else if d > 0.0 {
                Direction::Higher
            } else {
                Direction::Same
            };
        }
        let (base, cand) = (
            self.baseline_median.estimate,
            self.candidate_median.estimate,
        );
        if cand < base {
            Direction::Lower
        } else if cand > base {
            Direction::Higher
        } else {
            Direction::Same
        }
    }

    /// The "1.31 ± 0.08 × lower" factor; `None` unless both medians are positive and the ratio
    /// is defined (the sentence then falls back to the difference).
    pub fn factor(&self) -> Option<Factor> {
        let r = self.ratio?;
        if !(self.baseline_median.estimate > 0.0 && self.candidate_median.estimate > 0.0) {
            return None;
        }
        let direction = self.direction();
        let (value, lower, upper) = if direction == Direction::Lower {
            (1.0 / r.estimate, 1.0 / r.upper, 1.0 / r.lower)
        } else {
            (r.estimate, r.lower, r.upper)
        };
        Some(Factor {
            value,
            half_width: (upper - lower) / 2.0,
            direction,
        })
    }

    /// The hyperfine-style sentence, e.g. `neurogc-seed: p99 1.31 ± 0.08 × lower than default`.
    ///
    /// The factor is max(r, 1/r) of the ratio of medians r = candidate / baseline, and "±" is
    /// half the width of its 95 % (the configured level) bootstrap interval — the interval need
    /// not be symmetric; the exact bounds are in [`Comparison::ratio`]. Without a factor (a
    /// zero or negative median) the sentence gives the difference of medians with half its
    /// interval's width instead: `never: gc_events 12.0 ± 1.50 lower than default`. Appends
    /// ` (not significant)` unless [`Comparison::is_significant`].
    pub fn summary(&self) -> String {
        self.sentence(None)
    }

    /// [`Comparison::summary`], plus ` (within noise)` when [`Comparison::within_noise`].
    pub fn summary_with_noise(&self, floor: NoiseFloor) -> String {
        self.sentence(Some(floor))
    }

    fn sentence(&self, floor: Option<NoiseFloor>) -> String {
        let (cand, metric, base) = (&self.candidate, &self.metric, &self.baseline);
        let mut s = match (self.factor(), self.direction()) {
            (Some(f), Direction::Same) => format!(
                "{cand}: {metric} same as {base} (1.00 ± {} ×)",
                fixed2(f.half_width)
            ),
            (Some(f), dir) => format!(
                "{cand}: {metric} {} ± {} × {} than {base}",
                fixed2(f.value),
                fixed2(f.half_width),
                dir.word()
            ),
            (None, Direction::Same) => format!(
                "{cand}: {metric} same as {base} (Δ 0 ± {})",
                significant3(self.difference.half_width())
            ),
            (None, dir) => format!(
                "{cand}: {metric} {} ± {} {} than {base}",
                significant3(self.difference.estimate.abs()),
                significant3(self.difference.half_width()),
                dir.word()
            ),
        };
        let mut marks = Vec::new();
        if !self.is_significant() {
            marks.push("not significant");
        }
        if floor.is_some_and(|f| self.within_noise(f)) {
            marks.push("within noise");
        }
        if !marks.is_empty() {
            s.push_str(&format!(" ({})", marks.join(", ")));
        }
        s
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary())
    }
}

fn non_finite(x: f64) -> Option<&'static str> {
    if x.is_nan() {
        Some("NaN")
    } else if x == f64::INFINITY {
        Some("∞")
    } else if x == f64::NEG_INFINITY {
        Some("-∞")
    } else {
        None
    }
}

/// Two decimals, as hyperfine prints factors.
fn fixed2(x: f64) -> String {
    non_finite(x).map_or_else(|| format!("{x:.2}"), str::to_string)
}

/// Three significant digits (no exponent; large values keep all their integer digits).
fn significant3(x: f64) -> String {
    if let Some(s) = non_finite(x) {
        return s.to_string();
    }
    if x == 0.0 {
        return "0".to_string();
    }
    let magnitude = x.abs().log10().floor() as i32;
    let decimals = (2 - magnitude).max(0) as usize;
    format!("{x:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> BootstrapConfig {
        BootstrapConfig::default().with_resamples(2_000)
    }

    #[test]
    fn formats() {
        assert_eq!(significant3(0.0), "0");
        assert_eq!(significant3(12.0), "12.0");
        assert_eq!(significant3(0.012345), "0.0123");
        assert_eq!(significant3(123456.0), "123456");
        assert_eq!(significant3(f64::INFINITY), "∞");
        assert_eq!(fixed2(1.3149), "1.31");
        assert_eq!(fixed2(f64::INFINITY), "∞");
    }

    #[test]
    fn paired_comparisons_see_through_drift() {
        // Rounds drift 2× together; the candidate is 20 % lower in each round.
        let base = [10.0, 14.0, 20.0, 12.0, 18.0, 16.0];
        let cand: Vec<f64> = base.iter().map(|x| x * 0.8).collect();
        let c = Comparison::paired("p99", "default", &base, "freeze", &cand, &cfg()).unwrap();
        assert!(c.is_paired && c.welch.is_none());
        assert!(c.is_significant(), "{c:?}");
        assert_eq!(c.direction(), Direction::Lower);
        assert!((c.relative_change().unwrap() + 0.2).abs() < 1e-12);
        assert!(
            c.summary()
                .starts_with("freeze: p99 1.25 ± 0.00 × lower than default"),
            "{}",
            c.summary()
        );
        let independent =
            Comparison::new("p99", "default", &base, "freeze", &cand, &cfg()).unwrap();
        assert!(
            !independent.is_significant(),
            "the drift hides it from Welch"
        );
        // A/A in pairs: the floor is the spread of the per-pair ratios.
        let a2 = [10.2, 13.9, 20.4, 11.8, 18.1, 16.2];
        let aa = Comparison::paired("p99", "a", &base, "b", &a2, &cfg()).unwrap();
        let floor = NoiseFloor::from_aa(&aa).unwrap().relative();
        assert!(floor < 0.03, "{floor}");
        assert!(Comparison::paired("p99", "a", &base, "b", &a2[..3], &cfg()).is_err());
    }

    #[test]
    fn lower_and_higher_sentences() {
        let default = [0.300, 0.310, 0.295, 0.320, 0.305];
        let frozen = [0.038, 0.041, 0.037, 0.040, 0.039];
        let c =
            Comparison::new("p99", "default", &default, "neurogc-seed", &frozen, &cfg()).unwrap();
        assert_eq!(c.direction(), Direction::Lower);
        assert!(c.is_significant());
        let f = c.factor().unwrap();
        assert!((f.value - 0.305 / 0.039).abs() < 1e-12);
        let s = c.summary();
        assert!(s.starts_with("neurogc-seed: p99 7.82 ± "), "{s}");
        assert!(s.ends_with(" × lower than default"), "{s}");
        assert_eq!(s, c.to_string());

        let c = Comparison::new("p99", "frozen", &frozen, "default", &default, &cfg()).unwrap();
        let s = c.summary();
        assert!(s.starts_with("default: p99 7.82 ± "), "{s}");
        assert!(s.ends_with(" × higher than frozen"), "{s}");
        // The ratio's interval inverts into the lower-direction factor's interval.
        let up = c.factor().unwrap();
        assert!(up.half_width > 0.0);
    }

    #[test]
    fn not_significant_and_noise() {
        let a = [10.0, 10.4, 9.8, 10.1, 10.3];
        let b = [10.2, 9.9, 10.3, 10.0, 10.4];
        let c = Comparison::new("p50", "A", &a, "A'", &b, &cfg()).unwrap();
        assert!(!c.is_significant());
        let s = c.summary();
        assert!(s.ends_with(" (not significant)"), "{s}");
        assert!(c.ratio.unwrap().contains(1.0));

        let floor = NoiseFloor::from_aa(&c).unwrap();
        assert!(
            floor.relative() > 0.0 && floor.relative() < 0.1,
            "{floor:?}"
        );
        assert!(c.within_noise(floor));
        assert!(c
            .summary_with_noise(floor)
            .ends_with(" (not significant, within noise)"));

        // A real 30 % change is not within a 5 % floor.
        let big = [13.0, 13.4, 12.8, 13.1, 13.3];
        let c = Comparison::new("p50", "A", &a, "B", &big, &cfg()).unwrap();
        let five = NoiseFloor::new(0.05).unwrap();
        assert!(c.is_significant());
        assert!(!c.within_noise(five));
        assert!(c.within_noise(NoiseFloor::new(0.5).unwrap()));
        assert_eq!(c.summary_with_noise(five), c.summary());
        assert!(NoiseFloor::new(-0.1).is_err());
        assert!(NoiseFloor::new(f64::NAN).is_err());
    }

    #[test]
    fn identical_constant_runs() {
        let a = [5.0, 5.0, 5.0];
        let c = Comparison::new("rss", "x", &a, "y", &a, &cfg()).unwrap();
        let r = c.ratio.unwrap();
        assert_eq!((r.estimate, r.lower, r.upper), (1.0, 1.0, 1.0));
        assert_eq!(c.p_value(), Some(1.0));
        assert_eq!(c.direction(), Direction::Same);
        assert_eq!(
            c.summary(),
            "y: rss same as x (1.00 ± 0.00 ×) (not significant)"
        );
        assert!(c.within_noise(NoiseFloor::new(0.0).unwrap()));
    }

    #[test]
    fn zero_baseline_falls_back_to_difference() {
        let default = [12.0, 11.0, 13.0];
        let never = [0.0, 0.0, 0.0];
        let c = Comparison::new("gc_events", "never", &never, "default", &default, &cfg()).unwrap();
        assert!(c.ratio.is_none());
        assert!(c.factor().is_none());
        assert_eq!(c.relative_change(), None);
        assert!(!c.within_noise(NoiseFloor::new(0.5).unwrap()));
        let s = c.summary();
        assert!(s.starts_with("default: gc_events 12.0 ± "), "{s}");
        assert!(s.contains(" higher than never"), "{s}");

        // Candidate at zero: a ratio (0) but no factor; the sentence uses the difference.
        let c = Comparison::new("gc_events", "default", &default, "never", &never, &cfg()).unwrap();
        assert_eq!(c.ratio.unwrap().estimate, 0.0);
        assert!(c.factor().is_none());
        assert_eq!(c.relative_change(), Some(-1.0));
        assert!(c.summary().starts_with("never: gc_events 12.0 ± "));
    }

    #[test]
    fn single_runs_are_never_significant() {
        let c = Comparison::new("p99", "a", &[1.0], "b", &[2.0], &cfg()).unwrap();
        assert!(c.welch.is_none());
        assert!(!c.is_significant());
        assert_eq!(
            c.summary(),
            "b: p99 2.00 ± 0.00 × higher than a (not significant)"
        );
        assert_eq!(
            Comparison::new("p99", "a", &[], "b", &[2.0], &cfg()),
            Err(StatsError::Empty)
        );
        assert!(Comparison::new("p99", "a", &[1.0, f64::NAN], "b", &[2.0], &cfg()).is_err());
    }
}
