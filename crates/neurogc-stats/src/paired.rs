//! Paired comparisons: when trial k of the baseline and trial k of the candidate ran in the same
//! window (the rounds of `--mode alternating` or `turns`), the machine's drift is common to both,
//! so the per-pair ratios vary far less than the trials themselves. Testing the pairs, not the
//! two samples, is what the design allows.
//!
//! - [`paired_t_test`]: one-sample t-test of per-pair differences against 0, as
//!   `scipy.stats.ttest_rel(b, a)` (equivalently `ttest_1samp(b − a, 0)`).
//! - [`paired_ratio_and_difference`]: bootstrap intervals (resampling pairs) of the median of
//!   per-pair ratios b/a and of the median of per-pair differences b − a.

use crate::bootstrap::{interval, BootstrapConfig, ConfidenceInterval};
use crate::descriptive::{check, mean_unchecked, median_in_place, variance_unchecked};
use crate::error::{Result, StatsError};
use crate::student_t::two_sided_unchecked;
use neurogc_rng::Rng;

/// The result of [`paired_t_test`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedTest {
    /// t = mean(d) / (sd(d) / √n), d the per-pair differences.
    pub t: f64,
    /// n − 1.
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
    pub mean_difference: f64,
    pub n: usize,
}

fn pairs(a: &[f64], b: &[f64]) -> Result<()> {
    check(a)?;
    check(b)?;
    if a.len() != b.len() {
        return Err(StatsError::InvalidArgument {
            name: "pairs",
            value: b.len() as f64,
            expected: "as many candidate values as baseline values",
        });
    }
    Ok(())
}

/// The paired t-test of `b` against `a` on the differences `b[i] − a[i]` (two-sided).
///
/// Errors: unequal lengths, NaN/±∞, fewer than two pairs. Constant differences: `p = 1` when
/// they are all zero, `p = 0` (t = ±∞) otherwise.
pub fn paired_t_test(a: &[f64], b: &[f64]) -> Result<PairedTest> {
    pairs(a, b)?;
    if a.len() < 2 {
        return Err(StatsError::TooFew {
            needed: 2,
            got: a.len(),
        });
    }
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| y - x).collect();
    let n = d.len();
    let mean = mean_unchecked(&d);
    let var = variance_unchecked(&d);
    let df = (n - 1) as f64;
    let t = if var == 0.0 {
        if mean == 0.0 {
            0.0
        } else {
            f64::INFINITY.copysign(mean)
        }
    } else {
        mean / (var / n as f64).sqrt()
    };
    Ok(PairedTest {
        t,
        df,
        p: two_sided_unchecked(t, df),
        mean_difference: mean,
        n,
    })
}

/// Bootstrap intervals, resampling whole pairs, of the median of per-pair differences
/// `b[i] − a[i]` and (when every `a[i]` is nonzero) of the median of per-pair ratios `b[i] / a[i]`.
pub fn paired_ratio_and_difference(
    a: &[f64],
    b: &[f64],
    config: &BootstrapConfig,
) -> Result<(ConfidenceInterval, Option<ConfidenceInterval>)> {
    config.validate()?;
    pairs(a, b)?;
    let diffs: Vec<f64> = a.iter().zip(b).map(|(x, y)| y - x).collect();
    let ratios: Option<Vec<f64>> = a
        .iter()
        .zip(b)
        .map(|(x, y)| (*x != 0.0).then(|| y / x))
        .collect();
    let mut rng = Rng::new(config.seed);
    let n = a.len();
    let mut idx = vec![0usize; n];
    let mut buf = vec![0.0; n];
    let mut diff_stats = Vec::with_capacity(config.resamples);
    let mut ratio_stats = Vec::with_capacity(config.resamples);
    for _ in 0..config.resamples {
        for slot in idx.iter_mut() {
            *slot = rng.index(n);
        }
        for (slot, &i) in buf.iter_mut().zip(&idx) {
            *slot = diffs[i];
        }
        diff_stats.push(median_in_place(&mut buf));
        if let Some(r) = &ratios {
            for (slot, &i) in buf.iter_mut().zip(&idx) {
                *slot = r[i];
            }
            ratio_stats.push(median_in_place(&mut buf));
        }
    }
    let difference = interval(
        median_in_place(&mut diffs.clone()),
        diff_stats,
        config.confidence,
    );
    let ratio = ratios.map(|mut r| {
        let estimate = median_in_place(&mut r);
        interval(estimate, ratio_stats, config.confidence)
    });
    Ok((difference, ratio))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_test_matches_scipy() {
        // ttest_rel([0,0,0,0,0], [1,2,3,4,5]): t = 3√2, df 4, p = 0.0132355995637 (the
        // t-distribution's tail integrated numerically to 1e-12).
        let t = paired_t_test(&[0.0; 5], &[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert!((t.t - 4.242640687119285).abs() < 1e-12, "{t:?}");
        assert_eq!(t.df, 4.0);
        assert!((t.p - 0.013235599563694).abs() < 1e-9, "{t:?}");
        // Differences [1, 0.5, 1, 0.2]: t = mean / (sd / 2) = 3.4198226804580676.
        let t = paired_t_test(&[10.0, 12.0, 9.0, 11.0], &[11.0, 12.5, 10.0, 11.2]).unwrap();
        assert!((t.t - 3.4198226804580676).abs() < 1e-9, "{t:?}");
    }

    #[test]
    fn degenerate_and_bad_input() {
        assert_eq!(paired_t_test(&[1.0, 2.0], &[1.0, 2.0]).unwrap().p, 1.0);
        assert_eq!(paired_t_test(&[1.0, 2.0], &[2.0, 3.0]).unwrap().p, 0.0);
        assert!(paired_t_test(&[1.0], &[2.0]).is_err());
        assert!(paired_t_test(&[1.0, 2.0], &[2.0]).is_err());
        assert!(paired_t_test(&[1.0, f64::NAN], &[2.0, 3.0]).is_err());
    }

    #[test]
    fn pairs_remove_the_drift_that_hides_a_difference() {
        // The machine's speed drifts 2× across rounds; the candidate is 10 % faster in each.
        let base = [10.0, 14.0, 20.0, 12.0, 18.0, 16.0];
        let cand: Vec<f64> = base.iter().map(|x| x * 0.9).collect();
        let cfg = BootstrapConfig::default().with_resamples(2000);
        let (_, ratio) = paired_ratio_and_difference(&base, &cand, &cfg).unwrap();
        let ratio = ratio.unwrap();
        assert!((ratio.estimate - 0.9).abs() < 1e-12);
        assert!(
            ratio.upper - ratio.lower < 1e-9,
            "every pair says 0.9: {ratio:?}"
        );
        assert!(paired_t_test(&base, &cand).unwrap().p < 0.01);
        // Tested as independent samples the drift swamps it.
        let welch = crate::welch_t_test(&base, &cand).unwrap();
        assert!(welch.p > 0.3, "{welch:?}");
        // A zero baseline has no ratio.
        let (_, none) = paired_ratio_and_difference(&[0.0, 1.0], &[1.0, 1.0], &cfg).unwrap();
        assert!(none.is_none());
    }
}
